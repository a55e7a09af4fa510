"""Rows of ``synced_files``: what ``vestige sync`` read from each file of a folder (migration 5),
as in SQLite (``store/sqlite/synced.py``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..base import SyncedFile
from .text import from_db, to_db

if TYPE_CHECKING:
    import psycopg


def read_all(cur: psycopg.Cursor, app_id: int) -> list[SyncedFile]:
    rows = cur.execute(
        "SELECT root, path, sha256, size, mtime_ns, items FROM synced_files WHERE app_id = %s ORDER BY root, path",
        (app_id,),
    ).fetchall()
    return [SyncedFile(from_db(root), from_db(path), sha, int(size), int(mtime),  # type: ignore[arg-type]
                       tuple((k, i) for k, i in json.loads(from_db(items))))  # type: ignore[arg-type]
            for root, path, sha, size, mtime, items in rows]


def write(cur: psycopg.Cursor, app_id: int, put: Sequence[SyncedFile], drop: Sequence[tuple[str, str]]) -> None:
    if drop:
        cur.executemany("DELETE FROM synced_files WHERE app_id = %s AND root = %s AND path = %s",
                        [(app_id, to_db(root), to_db(path)) for root, path in drop])
    if put:
        cur.executemany(
            "INSERT INTO synced_files (app_id, root, path, sha256, size, mtime_ns, items) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (app_id, root, path) DO UPDATE SET "
            "sha256 = excluded.sha256, size = excluded.size, mtime_ns = excluded.mtime_ns, items = excluded.items",
            [(app_id, to_db(f.root), to_db(f.path), f.sha256, f.size, f.mtime_ns,
              to_db(json.dumps([list(i) for i in f.items]))) for f in put],
        )
