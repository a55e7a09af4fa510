"""Vectors beside their chunk rows, as normalised int8 blobs."""

from __future__ import annotations

import sqlite3

import numpy as np


def read_vectors(cur: sqlite3.Cursor, app_id: int, after_id: int) -> tuple[np.ndarray, np.ndarray]:
    rows = cur.execute(
        "SELECT id, vector FROM chunks WHERE app_id = ? AND id > ? AND vector IS NOT NULL ORDER BY id",
        (app_id, after_id),
    ).fetchall()
    if not rows:
        return np.zeros(0, np.int64), np.zeros((0, 0), np.int8)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8).reshape(len(rows), -1)
    return ids, matrix
