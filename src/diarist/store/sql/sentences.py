"""The vectors of short memories' sentences (table ``sentence_vectors``), for the read path's
sentences stage (``diarist.read.sentences``).

One row per sentence of a short memory's chunk: the chunk it belongs to (deleted with it: the
foreign key cascades), the app (so a lookup stays inside the app) and its float32 unit vector. A
chunk of a long memory has none.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .dialect import Cursor, Dialect

COLUMNS = ("chunk_id", "app_id", "vector")

#: (chunk id, its sentences' float32 vectors) per chunk.
ChunkSentences = Sequence[tuple[int, Sequence[np.ndarray]]]


def rows(app_id: int, chunks: ChunkSentences) -> list[tuple[int, int, bytes]]:
    return [(chunk_id, app_id, np.ascontiguousarray(vector, dtype=np.float32).tobytes())
            for chunk_id, vectors in chunks for vector in vectors]


def lookup(d: Dialect, cur: Cursor, app_id: int, chunk_ids: Sequence[int]) -> dict[int, np.ndarray]:
    """Chunk id -> its sentences' vectors, one row each (chunks with none left out): views of one
    matrix, read from the blobs joined once (a search reads ~1,000 rows for 200 short memories)."""
    owners: list[int] = []
    blobs: list[bytes] = []
    for test, params in d.in_list("chunk_id", d.bigints(list(dict.fromkeys(chunk_ids))), "bigint"):
        for chunk_id, vector in cur.execute(d.sql(f"SELECT chunk_id, vector FROM sentence_vectors WHERE app_id = ? "
                                                  f"AND {test} ORDER BY chunk_id"), [app_id, *params]).fetchall():
            owners.append(int(chunk_id))
            blobs.append(bytes(vector))
    if not blobs:
        return {}
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    starts = [0] + [n for n in range(1, len(owners)) if owners[n] != owners[n - 1]] + [len(owners)]
    return {owners[a]: matrix[a:b] for a, b in zip(starts, starts[1:])}


def put(d: Dialect, cur: Cursor, app_id: int, chunks: ChunkSentences) -> int:
    """Insert the sentences of chunks that exist in the app and have none yet; how many got theirs."""
    ids = [chunk_id for chunk_id, vectors in chunks if len(vectors)]
    present: set[int] = set()
    for test, params in d.in_list("c.id", d.bigints(ids), "bigint"):
        present |= {int(r[0]) for r in cur.execute(
            d.sql(f"SELECT c.id FROM chunks c WHERE c.app_id = ? AND {test} AND NOT EXISTS "
                  "(SELECT 1 FROM sentence_vectors s WHERE s.chunk_id = c.id)"), [app_id, *params]).fetchall()}
    todo = [(chunk_id, vectors) for chunk_id, vectors in chunks if chunk_id in present and len(vectors)]
    if todo:
        d.insert_rows(cur, "sentence_vectors", COLUMNS, rows(app_id, todo))
    return len(todo)
