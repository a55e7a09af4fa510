"""Reading conversation files: JSON or JSONL, plain or gzipped, in the formats vestige knows.

- one session per line (JSONL) or a JSON list of sessions:
  ``{"session_id": ..., "date": ..., "messages": [{"role": ..., "content": ...}]}``
- an OpenAI-style message list (``[{"role": ..., "content": ...}, ...]``): one session
- LongMemEval (records with ``haystack_sessions``): each distinct haystack session once
- LoCoMo (records with ``conversation``): each session of each conversation; speaker A is the
  "user", speaker B the "assistant", and each turn keeps its speaker's name and photo caption.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import InvalidInput
from .write.validate import SessionInput


def read_text(path: str | Path) -> str:
    path = Path(path)
    if not path.exists():
        raise InvalidInput(f"{path}: no such file")
    raw = path.read_bytes()
    if path.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise InvalidInput(f"{path}: not a valid gzip file ({exc})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: invalid UTF-8 at byte {exc.start}") from None


def load_json_records(path: str | Path) -> list[Any]:
    """A JSON document as a list of records, or JSONL as one record per non-empty line."""
    text = read_text(path)
    stripped = text.lstrip()
    if not stripped:
        raise InvalidInput(f"{path}: file is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as whole_error:
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                if number == 1 and stripped[0] == "[":
                    exc = whole_error
                    number = exc.lineno
                raise InvalidInput(f"{path} line {number}: invalid JSON ({exc.msg})") from None
        return records
    if isinstance(data, dict):
        return data["sessions"] if isinstance(data.get("sessions"), list) else [data]
    if isinstance(data, list):
        return data
    raise InvalidInput(f"{path}: expected a JSON object or list, got {type(data).__name__}")


def detect_format(records: list[Any]) -> str:
    first = records[0] if records else None
    if not isinstance(first, dict):
        raise InvalidInput(f"record 1: expected an object, got {type(first).__name__}")
    if "haystack_sessions" in first:
        return "longmemeval"
    if "conversation" in first and "qa" in first:
        return "locomo"
    if "role" in first and ("content" in first or "text" in first):
        return "messages"
    return "sessions"


def _session_from_record(record: Any, number: int) -> SessionInput:
    if not isinstance(record, dict):
        raise InvalidInput(f"record {number}: expected an object, got {type(record).__name__}")
    messages = record.get("messages")
    if messages is None:
        raise InvalidInput(f"record {number}: missing field 'messages'")
    sid = record.get("session_id", record.get("id"))
    meta = record.get("metadata") or {}
    return SessionInput(messages, None if sid is None else str(sid), record.get("date"), meta)


def longmemeval_sessions(records: list[dict[str, Any]]) -> Iterator[SessionInput]:
    """Each distinct haystack session once; turns with empty content are skipped."""
    seen: set[str] = set()
    for record in records:
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


LOCOMO_SESSION = re.compile(r"^session_(\d+)$")


def locomo_turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo of {turn['blip_caption']}]"
    return text


def locomo_sessions(record: dict[str, Any]) -> Iterator[SessionInput]:
    conversation = record["conversation"]
    speaker_a = conversation["speaker_a"]
    keys = sorted(
        (int(m.group(1)), key)
        for key in conversation
        if (m := LOCOMO_SESSION.match(key)) and isinstance(conversation[key], list)
    )
    for number, key in keys:
        turns = conversation[key]
        if not turns:
            continue
        messages = [
            {
                "role": "user" if turn["speaker"] == speaker_a else "assistant",
                "content": locomo_turn_text(turn),
            }
            for turn in turns
        ]
        yield SessionInput(
            messages,
            f"{record['sample_id']}:{key}",
            conversation.get(f"{key}_date_time"),
            {"dia_ids": [t["dia_id"] for t in turns]},
        )


def sessions_from_file(path: str | Path, limit: int | None = None) -> tuple[str, list[SessionInput]]:
    """(format name, sessions) from any supported file; raises InvalidInput naming the record."""
    records = load_json_records(path)
    fmt = detect_format(records)
    if fmt == "longmemeval":
        sessions = list(longmemeval_sessions(records[:limit] if limit else records))
    elif fmt == "locomo":
        sessions = [s for r in (records[:limit] if limit else records) for s in locomo_sessions(r)]
    elif fmt == "messages":
        sessions = [SessionInput(records, None, None, {})]
    else:
        chosen = records[:limit] if limit else records
        sessions = [_session_from_record(r, i) for i, r in enumerate(chosen, start=1)]
    return fmt, sessions
