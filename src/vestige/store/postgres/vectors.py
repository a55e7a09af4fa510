"""Vectors beside their chunk rows: the int8 bytes the exact dense channel reads (the pgvector
column beside them is for an HNSW index, see the package docstring)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import psycopg


def read_vectors(cur: psycopg.Cursor, app_id: int, after_id: int) -> tuple[np.ndarray, np.ndarray]:
    rows = cur.execute(
        "SELECT id, vector_i8 FROM chunks WHERE app_id = %s AND id > %s AND vector_i8 IS NOT NULL ORDER BY id",
        (app_id, max(min(int(after_id), 2**63 - 1), -(2**63))),
        binary=True,
    ).fetchall()
    if not rows:
        return np.zeros(0, np.int64), np.zeros((0, 0), np.int8)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8).reshape(len(rows), -1)
    return ids, matrix
