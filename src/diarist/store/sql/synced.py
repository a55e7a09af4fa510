"""Rows of ``synced_files``: what ``diarist sync`` read from each file of a folder (SQLite
migration 9, PostgreSQL migration 5), the same SQL on both through the dialect."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..base import SyncedFile
from .dialect import Dialect


def read_all(d: Dialect, cur: Any, app_id: int) -> list[SyncedFile]:
    rows = cur.execute(
        d.sql("SELECT root, path, sha256, size, mtime_ns, items FROM synced_files WHERE app_id = ? ORDER BY root, path"),
        (app_id,),
    ).fetchall()
    return [SyncedFile(d.from_db(root), d.from_db(path), sha, int(size), int(mtime),
                       tuple((k, i) for k, i in json.loads(d.from_db(items))))
            for root, path, sha, size, mtime, items in rows]


def write(d: Dialect, cur: Any, app_id: int, put: Sequence[SyncedFile], drop: Sequence[tuple[str, str]]) -> None:
    if drop:
        cur.executemany(d.sql("DELETE FROM synced_files WHERE app_id = ? AND root = ? AND path = ?"),
                        [(app_id, d.to_db(root), d.to_db(path)) for root, path in drop])
    if put:
        cur.executemany(
            d.sql("INSERT INTO synced_files (app_id, root, path, sha256, size, mtime_ns, items) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (app_id, root, path) DO UPDATE SET "
                  "sha256 = excluded.sha256, size = excluded.size, mtime_ns = excluded.mtime_ns, items = excluded.items"),
            [(app_id, d.to_db(f.root), d.to_db(f.path), f.sha256, f.size, f.mtime_ns,
              d.to_db(json.dumps([list(i) for i in f.items]))) for f in put],
        )
