"""The vectors of chunks' lines (table ``line_vectors``), for the lines-by-meaning trim.

One row per line of a chunk: the chunk it belongs to (deleted with it: the foreign key
cascades), the app (so a lookup stays inside the app), a digest of the line's text, and its
float32 unit vector, the very bytes the trim would compute, so a block reads the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .dialect import Cursor, Dialect

COLUMNS = ("chunk_id", "app_id", "digest", "vector")

#: (chunk id, lines as (digest, float32 vector)) per chunk.
ChunkLines = Sequence[tuple[int, Sequence[tuple[bytes, np.ndarray]]]]


def rows(app_id: int, chunks: ChunkLines) -> list[tuple[int, int, bytes, bytes]]:
    return [(chunk_id, app_id, digest, np.ascontiguousarray(vector, dtype=np.float32).tobytes())
            for chunk_id, lines in chunks for digest, vector in lines]


def lookup(d: Dialect, cur: Cursor, app_id: int, digests: Sequence[bytes]) -> dict[bytes, np.ndarray]:
    out: dict[bytes, np.ndarray] = {}
    for test, params in d.in_list("digest", list(dict.fromkeys(digests)), "bytea"):
        for digest, vector in cur.execute(d.sql(f"SELECT digest, vector FROM line_vectors WHERE app_id = ? AND {test}"),
                                          [app_id, *params]).fetchall():
            out.setdefault(bytes(digest), np.frombuffer(bytes(vector), dtype=np.float32))
    return out


def chunks_without(d: Dialect, cur: Cursor, app_id: int, after_id: int, limit: int) -> list[tuple[int, str]]:
    found = cur.execute(
        d.sql("SELECT c.id, c.text FROM chunks c WHERE c.app_id = ? AND c.id > ? AND NOT EXISTS "
              "(SELECT 1 FROM line_vectors l WHERE l.chunk_id = c.id) ORDER BY c.id LIMIT ?"),
        (app_id, d.bigint(after_id), limit),
    ).fetchall()
    return [(int(i), d.from_db(text)) for i, text in found]


def put(d: Dialect, cur: Cursor, app_id: int, chunks: ChunkLines) -> int:
    """Insert the lines of chunks that exist in the app and have none yet; how many got theirs."""
    ids = [chunk_id for chunk_id, _ in chunks]
    present: set[int] = set()
    for test, params in d.in_list("c.id", d.bigints(ids), "bigint"):
        present |= {int(r[0]) for r in cur.execute(
            d.sql(f"SELECT c.id FROM chunks c WHERE c.app_id = ? AND {test} AND NOT EXISTS "
                  "(SELECT 1 FROM line_vectors l WHERE l.chunk_id = c.id)"), [app_id, *params]).fetchall()}
    todo = [(chunk_id, lines) for chunk_id, lines in chunks if chunk_id in present and lines]
    if todo:
        d.insert_rows(cur, "line_vectors", COLUMNS, rows(app_id, todo))
    return len(todo)
