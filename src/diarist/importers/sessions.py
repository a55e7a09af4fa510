"""diarist's own sessions: JSONL (one per line), a JSON list, ``{"sessions": [...]}`` or one object.

Each record is ``{"session_id" (or "id"), "date", "metadata", "messages": [{"role", "content",
"time"}]}``; a record ``{"kind": "fact", "fact_id", "text", "date", "metadata"}`` is a fact (what
``diarist export`` writes for facts). Messages are handed on exactly as written: validation (roles user, assistant,
system, tool; non-empty string content) happens before anything is stored, and a bad record is
named (``record 3 (session 'x') message 2: unknown role 'bot'``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import InvalidInput
from ..write.validate import FactInput, SessionInput
from .base import JSON_SUFFIXES, Source, record_shape


def session_from_record(record: Any, where: str, messages: Any = None) -> SessionInput:
    """A record's session; ``messages`` replaces the record's own when given (already converted)."""
    if not isinstance(record, dict):
        raise InvalidInput(f"{where}: expected an object, got {type(record).__name__}")
    if messages is None:
        messages = record.get("messages")
        if messages is None:
            raise InvalidInput(f"{where}: missing field 'messages'")
    sid = record.get("session_id", record.get("id"))
    meta = record.get("metadata")
    return SessionInput(messages, None if sid is None else sid, record.get("date"), {} if meta is None else meta)


def fact_from_record(record: dict[str, Any], where: str) -> FactInput:
    if "text" not in record:
        raise InvalidInput(f"{where}: a fact record needs a 'text'")
    meta = record.get("metadata")
    return FactInput(record["text"], record.get("fact_id", record.get("id")), record.get("date"),
                     {} if meta is None else meta)


class SessionsImporter:
    name = "sessions"
    title = "diarist sessions, JSON or JSONL"
    suffixes = JSON_SUFFIXES
    unit = "record"

    def detect(self, source: Source, *, forced: bool = False) -> bool | str:
        if (why := record_shape(source)) is not None:
            return why
        first = source.records[0]
        if "messages" not in first and first.get("kind") != "fact":
            return "missing field 'messages' in record 1"
        return True

    def read(self, source: Source, limit: int | None = None) -> Iterator[SessionInput | FactInput]:
        for number, record in enumerate(source.iter_records(limit), start=1):
            where = f"{source.name} record {number}"
            if isinstance(record, dict) and record.get("kind") == "fact":
                yield fact_from_record(record, where)
            else:
                yield session_from_record(record, where)


IMPORTER = SessionsImporter()
