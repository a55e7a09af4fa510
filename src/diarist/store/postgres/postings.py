"""The BM25 index's PostgreSQL side: posting blocks (bytea) read and written a statement per
batch through ``unnest`` of arrays. What both backends do alike is in ``store/sql/postings.py``.
Every function that writes runs inside a write transaction, under the store's write lock.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..sql import postings as sql_postings

if TYPE_CHECKING:
    import psycopg

# New terms get the largest id + 1, in the sorted order they are given (SQLite's rowid rule for
# INSERT OR IGNORE of sorted terms): every backend numbers terms alike, and BM25 sums a query's
# terms in ascending id, so rankings agree to the last bit. Safe only under the write lock.
_NEW_TERMS = """
INSERT INTO lex_terms (id, term)
SELECT (SELECT coalesce(max(id), 0) FROM lex_terms) + row_number() OVER (ORDER BY u.ord), u.term
FROM unnest(%s::text[]) WITH ORDINALITY AS u(term, ord)
WHERE NOT EXISTS (SELECT 1 FROM lex_terms t WHERE t.term = u.term)
"""


def term_ids(cur: psycopg.Cursor, terms: Collection[str], create: bool) -> dict[str, int]:
    ordered = sorted(set(terms))
    if not ordered:
        return {}
    if create:
        cur.execute(_NEW_TERMS, (ordered,))
    rows = cur.execute("SELECT term, id FROM lex_terms WHERE term = ANY(%s::text[])", (ordered,)).fetchall()
    return {term: term_id for term, term_id in rows}


class Blocks(sql_postings.Blocks):
    """Blocks read, upserted and deleted a statement per batch (``unnest`` of arrays)."""

    def term_ids(self, terms: Collection[str], *, create: bool) -> dict[str, int]:
        return term_ids(self.cur, terms, create)

    def read_blocks(self, keys: Collection[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        keys = self.may_exist(keys)
        if not keys:
            return {}
        rows = self.cur.execute(
            "SELECT p.term_id, p.block, p.data FROM unnest(%s::int[], %s::int[]) AS k(term_id, block) "
            "JOIN lex_postings p ON p.app_id = %s AND p.term_id = k.term_id AND p.block = k.block",
            ([t for t, _ in keys], [b for _, b in keys], self.app_id),
        ).fetchall()
        return {(term_id, block): bytes(data) for term_id, block, data in rows}

    def write_blocks(self, blocks: Mapping[tuple[int, int], bytes]) -> None:
        kept = [(t, b, bytes(d)) for (t, b), d in blocks.items() if d]
        gone = [(t, b) for (t, b), d in blocks.items() if not d]
        if kept:
            self.cur.execute(
                "INSERT INTO lex_postings (app_id, term_id, block, data) "
                "SELECT %s::bigint, k.term_id, k.block, k.data FROM unnest(%s::int[], %s::int[], %s::bytea[]) "
                "AS k(term_id, block, data) "
                "ON CONFLICT (app_id, term_id, block) DO UPDATE SET data = excluded.data",
                (self.app_id, [t for t, _, _ in kept], [b for _, b, _ in kept], [d for _, _, d in kept]),
            )
        if gone:
            self.cur.execute(
                "DELETE FROM lex_postings p USING unnest(%s::int[], %s::int[]) AS k(term_id, block) "
                "WHERE p.app_id = %s AND p.term_id = k.term_id AND p.block = k.block",
                ([t for t, _ in gone], [b for _, b in gone], self.app_id),
            )

    def drop_unused_terms(self, term_ids: Collection[int]) -> None:
        ids = sorted(set(int(t) for t in term_ids))
        if not ids:
            return
        # Probe each app's (app_id, term_id) primary-key prefix: no index on term_id alone.
        self.cur.execute(
            "DELETE FROM lex_terms t WHERE t.id = ANY(%s::int[]) AND NOT EXISTS "
            "(SELECT 1 FROM apps a JOIN lex_postings p ON p.app_id = a.id AND p.term_id = t.id)",
            (ids,),
        )


def read_blocks_for_terms(cur: psycopg.Cursor, app_id: int, terms: Collection[str]) -> dict[int, list[tuple[int, bytes]]]:
    ordered = sorted(set(terms))
    if not ordered:
        return {}
    out: dict[int, list[tuple[int, bytes]]] = {}
    for term_id, block, data in cur.execute(
        "SELECT p.term_id, p.block, p.data FROM lex_terms t "
        "JOIN lex_postings p ON p.app_id = %s AND p.term_id = t.id "
        "WHERE t.term = ANY(%s::text[]) ORDER BY p.term_id, p.block",
        (app_id, ordered),
        binary=True,
    ):
        out.setdefault(term_id, []).append((block, bytes(data)))
    return out


def doc_lengths(cur: psycopg.Cursor, app_id: int) -> tuple[np.ndarray, np.ndarray]:
    rows = cur.execute(
        "SELECT id, lex_len FROM chunks WHERE app_id = %s AND in_lexical ORDER BY id", (app_id,), binary=True
    ).fetchall()
    arr = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0].copy(), arr[:, 1].astype(np.float64)
