"""LongMemEval (``longmemeval_s`` / ``_m`` / ``_oracle``): a list of questions, each with its
haystack (``haystack_session_ids``, ``haystack_dates``, ``haystack_sessions``).

What it becomes: each distinct haystack session once (a session shared by many questions is
imported once), id its haystack id, date its haystack date, messages as written (user and
assistant turns); turns with empty content are skipped. The questions themselves are not
imported (the benchmark, ``diarist bench``, asks them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..write.validate import SessionInput
from .base import JSON_SUFFIXES, Source, each_record, record_shape


def longmemeval_sessions(records: list[dict[str, Any]]) -> Iterator[SessionInput]:
    """Each distinct haystack session once; turns with empty content are skipped."""
    seen: set[str] = set()
    for record in records:
        yield from longmemeval_record(record, seen)


def longmemeval_record(record: dict[str, Any], seen: set[str]) -> Iterator[SessionInput]:
    """The haystack sessions of one question not in ``seen`` (which it extends)."""
    for sid, date, turns in zip(
        record["haystack_session_ids"], record["haystack_dates"], record["haystack_sessions"]
    ):
        if sid in seen:
            continue
        seen.add(sid)
        messages = [
            {"role": t["role"], "content": t["content"]} for t in turns if t["content"].strip()
        ]
        if messages:
            yield SessionInput(messages, sid, date, {})


class LongMemEvalImporter:
    name = "longmemeval"
    title = "LongMemEval benchmark file"
    suffixes = JSON_SUFFIXES
    unit = "session"

    def detect(self, source: Source, *, forced: bool = False) -> bool | str:
        if (why := record_shape(source)) is not None:
            return why
        if "haystack_sessions" not in source.records[0]:
            return "no 'haystack_sessions' in record 1"
        return True

    def read(self, source: Source, limit: int | None = None) -> Iterator[SessionInput]:
        seen: set[str] = set()
        records = source.iter_records(limit)
        return each_record(records, source, "LongMemEval", lambda r: longmemeval_record(r, seen))


IMPORTER = LongMemEvalImporter()
