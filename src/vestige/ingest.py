"""Reading conversation files: JSON or JSONL, plain or gzipped (``read_text``,
``load_json_records``: the one JSON reader, which ``vestige.importers`` uses too), and the names
this module has always offered. The format readers live in ``vestige.importers`` (one module per
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
# The readers live in vestige.importers, one module per format; these names stay importable here.
from .importers.locomo import LOCOMO_SESSION, locomo_sessions, locomo_turn_text
from .importers.longmemeval import longmemeval_sessions
from .write.validate import SessionInput

__all__ = [
    "LOCOMO_SESSION", "detect_format", "load_json_records", "locomo_sessions", "locomo_turn_text",
    "longmemeval_sessions", "parse_json_records", "read_text", "sessions_from_file",
]


def read_text(path: str | Path, max_bytes: int | None = None) -> str:
    """A file's text: gunzipped when it ends in .gz, UTF-8, a byte-order mark dropped; refused
    unless it is a regular file, and past ``max_bytes`` bytes (``importers.reading``)."""
    from .importers.reading import DEFAULT_MAX_BYTES, file_chunks

    return "".join(file_chunks(Path(path), DEFAULT_MAX_BYTES if max_bytes is None else max_bytes))


def load_json_records(path: str | Path, max_bytes: int | None = None) -> list[Any]:
    """A JSON document as a list of records, or JSONL as one record per non-empty line."""
    from .importers.reading import DEFAULT_MAX_BYTES, file_chunks, iter_records

    chunks = file_chunks(Path(path), DEFAULT_MAX_BYTES if max_bytes is None else max_bytes)
    return list(iter_records(chunks, str(path)))


def parse_json_records(text: str, path: str | Path) -> list[Any]:
    """``load_json_records`` of text already read (standard input); ``path`` names it in errors."""
    from .importers.base import parse_json_records as parse

    return parse(text, path)


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
    the file and the record. ``vestige.importers.read_sessions`` with the names this module used
    ("messages" for an OpenAI message list); it also reads folders, "-" and every new format."""
    from .importers import read_sessions

    fmt, sessions = read_sessions(path, limit=limit)
    return LEGACY_NAMES.get(fmt, fmt), sessions
