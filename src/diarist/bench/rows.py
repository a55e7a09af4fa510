"""A run's rows, as every benchmark writes and every report reads them, and the paired sign test.
Kept apart from report.py so that the benchmarks report.py dispatches to (context_bench) can use
them without a circle.

A run's rows are ``rows.jsonl.gz``: one JSON object a line, gzipped so that the same rows give
the same bytes (no name or time in the header, one compression level; the same zlib), so a
re-run that changes nothing changes no committed byte. ``rows.jsonl``, what runs written before
held, is still read, through the same path.
"""

from __future__ import annotations

import gzip
import io
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROWS = "rows.jsonl.gz"
PLAIN_ROWS = "rows.jsonl"  # a run written before rows were compressed
LEVEL = 9  # gzip's compression level, fixed: another level gives other bytes for the same rows


def rows_path(run: Path) -> Path:
    """The file holding a run's rows: ``rows.jsonl.gz``, or an older run's plain ``rows.jsonl``."""
    plain = run / PLAIN_ROWS
    return plain if plain.exists() and not (run / ROWS).exists() else run / ROWS


def has_rows(folder: Path) -> bool:
    return (folder / ROWS).exists() or (folder / PLAIN_ROWS).exists()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One JSON object a line, from a gzip file (a name ending in .gz) or a plain one."""
    opened = gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")
    with opened as f:
        return [json.loads(line) for line in f if line.strip()]


def read_rows(run: Path) -> list[dict[str, Any]]:
    return read_jsonl(rows_path(run))


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzipped the same way every time: no file name or time in the header, level ``LEVEL``."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=LEVEL, mtime=0) as f:
        f.write(data)
    return buffer.getvalue()


def jsonl_gz(records: Iterable[Any]) -> bytes:
    """``records`` one JSON object a line, gzipped; the same records give the same bytes."""
    return gzip_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8"))


def write_jsonl_gz(path: Path, records: Iterable[Any]) -> None:
    path.write_bytes(jsonl_gz(records))


def dump(obj: Any) -> str:
    """A JSON file of a run (config, summary, manifest): indented, text as is, numpy numbers as floats."""
    return json.dumps(obj, indent=2, ensure_ascii=False, default=float) + "\n"


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test (= exact McNemar on the discordant pairs); ties dropped."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(0, min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)
