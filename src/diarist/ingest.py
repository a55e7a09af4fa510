"""Reading conversation files: JSON or JSONL, plain or gzipped (``read_text``,
``load_json_records``: the one JSON reader, ``diarist.importers.reader``), and the names
this module has always offered. The format readers live in ``diarist.importers`` (one module per
format, chosen by detection); ``sessions_from_file`` is ``importers.read_sessions``.

- one session per line (JSONL) or a JSON list of sessions:
  ``{"session_id": ..., "date": ..., "messages": [{"role": ..., "content": ...}]}``
- an OpenAI-style message list (``[{"role": ..., "content": ...}, ...]``): one session
- LongMemEval (records with ``haystack_sessions``): each distinct haystack session once
- LoCoMo (records with ``conversation``): each session of each conversation; speaker A is the
  "user", speaker B the "assistant", and each turn keeps its speaker's name and photo caption.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import InvalidInput
# The readers live in diarist.importers, one module per format; these names stay importable here.
from .importers.locomo import LOCOMO_SESSION, locomo_sessions, locomo_turn_text
from .importers.longmemeval import longmemeval_sessions
from .importers.reader import load_json_records, parse_json_records, read_text
from .write.validate import SessionInput

__all__ = [
    "LOCOMO_SESSION", "detect_format", "load_json_records", "locomo_sessions", "locomo_turn_text",
    "longmemeval_sessions", "parse_json_records", "read_text", "sessions_from_file",
]


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


#: Format names this module has always returned, where the importer is named otherwise.
LEGACY_NAMES = {"openai": "messages"}


def sessions_from_file(path: str | Path, limit: int | None = None) -> tuple[str, list[SessionInput]]:
    """(format name, sessions) from any supported file, by detection; raises InvalidInput naming
    the file and the record. ``diarist.importers.read_sessions`` with the names this module used
    ("messages" for an OpenAI message list); it also reads folders, "-" and every new format."""
    from .importers import read_sessions

    fmt, sessions = read_sessions(path, limit=limit)
    return LEGACY_NAMES.get(fmt, fmt), sessions
