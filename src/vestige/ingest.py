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

import gzip
import json
import zlib
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


def read_text(path: str | Path) -> str:
    path = Path(path)
    if not path.exists():
        raise InvalidInput(f"{path}: no such file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if path.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise InvalidInput(f"{path}: not a valid gzip file ({exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InvalidInput(f"{path} line {line}: invalid UTF-8 at byte {exc.start}") from None
    return text[1:] if text.startswith("\ufeff") else text  # a byte-order mark is not content


def _parse(text: str, where: str) -> Any:
    """json.loads, with what it raises besides JSONDecodeError turned into InvalidInput."""
    try:
        return json.loads(text)
    except RecursionError:
        raise InvalidInput(f"{where}: JSON nested too deeply") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # an integer of more than 4,300 digits
        reason = "a number has too many digits" if "digits" in str(exc) else str(exc)
        raise InvalidInput(f"{where}: JSON value out of range ({reason})") from None


def load_json_records(path: str | Path) -> list[Any]:
    """A JSON document as a list of records, or JSONL as one record per non-empty line."""
    return parse_json_records(read_text(path), path)


def parse_json_records(text: str, path: str | Path) -> list[Any]:
    """``load_json_records`` of text already read (standard input); ``path`` names it in errors."""
    stripped = text.lstrip()
    if not stripped:
        raise InvalidInput(f"{path}: file is empty")
    try:
        data = _parse(text, str(path))
    except json.JSONDecodeError as whole_error:
        records = []
        # "\n" only: str.splitlines() also splits at U+2028, U+0085..., which JSON strings may hold
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                records.append(_parse(line, f"{path} line {number}"))
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


#: Format names this module has always returned, where the importer is named otherwise.
LEGACY_NAMES = {"openai": "messages"}


def sessions_from_file(path: str | Path, limit: int | None = None) -> tuple[str, list[SessionInput]]:
    """(format name, sessions) from any supported file, by detection; raises InvalidInput naming
    the file and the record. ``vestige.importers.read_sessions`` with the names this module used
    ("messages" for an OpenAI message list); it also reads folders, "-" and every new format."""
    from .importers import read_sessions

    fmt, sessions = read_sessions(path, limit=limit)
    return LEGACY_NAMES.get(fmt, fmt), sessions
