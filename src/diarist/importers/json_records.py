"""The one reader of conversation files: JSON or JSONL, plain or gzipped, as text or records,
always bounded (``importers.reading``: regular files only, ``max_bytes`` after gunzipping, JSON
records parsed one at a time).

The benchmark's data loaders read the dev sets through it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .reading import DEFAULT_MAX_BYTES, file_chunks, iter_records


def _bound(max_bytes: int | None) -> int:
    return DEFAULT_MAX_BYTES if max_bytes is None else max_bytes


def read_text(path: str | Path, max_bytes: int | None = None) -> str:
    """A file's text: gunzipped when it ends in .gz, UTF-8, a byte-order mark dropped; refused
    unless it is a regular file, and past ``max_bytes`` bytes."""
    return "".join(file_chunks(Path(path), _bound(max_bytes)))


def load_json_records(path: str | Path, max_bytes: int | None = None) -> list[Any]:
    """A JSON document as a list of records, or JSONL as one record per non-empty line."""
    return list(iter_records(file_chunks(Path(path), _bound(max_bytes)), str(path)))


def parse_json_records(text: str, path: str | Path) -> list[Any]:
    """``load_json_records`` of text already read (standard input); ``path`` names it in errors."""
    return list(iter_records(iter([text]), str(path)))
