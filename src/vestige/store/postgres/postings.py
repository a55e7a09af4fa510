"""The BM25 index as PostgreSQL tables, in the shape of SQLite's: the term dictionary, posting
blocks (bytea), lengths and counts.

This module only moves bytes and counts; what a block holds is decided by
``vestige.lexical.postings`` (upkeep) and ``vestige.lexical.bm25`` (scoring). Every function
that writes runs inside a write transaction, under the store's write lock.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

import numpy as np

from ... import lexical
from ...lexical import postings as lexical_postings
from ..base import LexicalStats
from .text import from_db

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


def stats(cur: psycopg.Cursor, app_id: int) -> LexicalStats | None:
    row = cur.execute("SELECT version, n_docs, total_len FROM lex_stats WHERE app_id = %s", (app_id,)).fetchone()
    return LexicalStats(int(row[0]), int(row[1]), int(row[2])) if row else None


def indexed_count(cur: psycopg.Cursor, app_id: int) -> int:
    return int(cur.execute("SELECT count(*) FROM chunks WHERE app_id = %s AND in_lexical", (app_id,)).fetchone()[0])


def reset_stats(cur: psycopg.Cursor, app_id: int) -> None:
    cur.execute(
        "INSERT INTO lex_stats (app_id, version, n_docs, total_len) VALUES (%s, %s, 0, 0) "
        "ON CONFLICT (app_id) DO UPDATE SET version = excluded.version, n_docs = 0, total_len = 0",
        (app_id, lexical.VERSION),
    )


def app_terms(cur: psycopg.Cursor, app_id: int) -> list[int]:
    return [r[0] for r in cur.execute("SELECT DISTINCT term_id FROM lex_postings WHERE app_id = %s", (app_id,))]


#: Chunks analysed and written at a time by ``rebuild``.
REBUILD_BATCH = 20_000


def rebuild(cur: psycopg.Cursor, app_id: int) -> int:
    """The app's postings, lengths and counts written anew from its stored chunk text by this
    vestige's analyzer (``vestige reindex``, and the migration to a new analyzer), as SQLite's
    ``rebuild``. Returns how many chunks were indexed. The caller bumps the app's generation."""
    old_terms = app_terms(cur, app_id)
    cur.execute("DELETE FROM lex_postings WHERE app_id = %s", (app_id,))
    reset_stats(cur, app_id)
    blocks = Blocks(cur, app_id)
    count = 0
    page = "SELECT id, text FROM chunks WHERE app_id = %s AND in_lexical AND id > %s ORDER BY id LIMIT %s"

    def rows_after(last: int) -> list[tuple[int, str]]:
        return [(i, from_db(text)) for i, text in cur.execute(page, (app_id, last, REBUILD_BATCH)).fetchall()]

    for chunks in lexical_postings.analysed_pages(rows_after):
        cur.execute(
            "UPDATE chunks c SET lex_len = u.len FROM unnest(%s::bigint[], %s::int[]) AS u(id, len) "
            "WHERE c.id = u.id",
            ([i for i, _ in chunks], [len(t) for _, t in chunks]),
        )
        lexical_postings.add(blocks, chunks)
        count += len(chunks)
    blocks.drop_unused_terms(old_terms)
    return count


class Blocks:
    """``PostingBlocks`` over one app, inside the caller's open write transaction."""

    def __init__(self, cur: psycopg.Cursor, app_id: int):
        self.cur = cur
        self.app_id = app_id

    def term_ids(self, terms: Collection[str], *, create: bool) -> dict[str, int]:
        return term_ids(self.cur, terms, create)

    def read_blocks(self, keys: Collection[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        keys = list(keys)
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

    def add_stats(self, n_docs: int, total_len: int) -> None:
        self.cur.execute(
            "UPDATE lex_stats SET n_docs = n_docs + %s, total_len = total_len + %s WHERE app_id = %s",
            (n_docs, total_len, self.app_id),
        )

    def stats(self) -> LexicalStats | None:
        return stats(self.cur, self.app_id)

    def indexed_count(self) -> int:
        return indexed_count(self.cur, self.app_id)

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
