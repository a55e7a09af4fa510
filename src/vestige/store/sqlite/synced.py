"""Rows of ``synced_files``: what ``vestige sync`` read from each file of a folder (migration 9)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from ..base import SyncedFile


def read_all(cur: sqlite3.Cursor, app_id: int) -> list[SyncedFile]:
    rows = cur.execute(
        "SELECT root, path, sha256, size, mtime_ns, items FROM synced_files WHERE app_id = ? ORDER BY root, path",
        (app_id,),
    ).fetchall()
    return [SyncedFile(root, path, sha, size, mtime, tuple((k, i) for k, i in json.loads(items)))
            for root, path, sha, size, mtime, items in rows]


def write(cur: sqlite3.Cursor, app_id: int, put: Sequence[SyncedFile], drop: Sequence[tuple[str, str]]) -> None:
    cur.executemany("DELETE FROM synced_files WHERE app_id = ? AND root = ? AND path = ?",
                    [(app_id, root, path) for root, path in drop])
    cur.executemany(
        "INSERT OR REPLACE INTO synced_files (app_id, root, path, sha256, size, mtime_ns, items) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(app_id, f.root, f.path, f.sha256, f.size, f.mtime_ns, json.dumps([list(i) for i in f.items]))
         for f in put],
    )
