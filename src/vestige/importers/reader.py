"""The one reader of conversation files: JSON or JSONL, plain or gzipped, as text or records.

Every importer reads through it (``base.Source``), and ``vestige.ingest`` re-exports it.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

from ..errors import InvalidInput


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
