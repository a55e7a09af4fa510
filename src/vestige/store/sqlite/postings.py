"""The BM25 index as plain tables: the term dictionary, posting blocks, lengths and counts.

This module only moves bytes and counts; what a block holds is decided by
``vestige.lexical.postings`` (upkeep) and ``vestige.lexical.bm25`` (scoring).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from ... import lexical
from ...lexical import postings as lexical_postings
from ...lexical.postings import BLOCK_BITS
from ..base import LexicalStats


def term_ids(cur: sqlite3.Cursor, terms: Collection[str], create: bool) -> dict[str, int]:
    found: dict[str, int] = {}
    ordered = sorted(terms)
    for start in range(0, len(ordered), 500):
        part = ordered[start : start + 500]
        if create:
            cur.executemany("INSERT OR IGNORE INTO lex_terms (term) VALUES (?)", [(t,) for t in part])
        marks = ",".join("?" * len(part))
        found.update(
            (t, i) for i, t in cur.execute(f"SELECT id, term FROM lex_terms WHERE term IN ({marks})", part)
        )
    return found


def stats(cur: sqlite3.Cursor, app_id: int) -> LexicalStats | None:
    row = cur.execute("SELECT version, n_docs, total_len FROM lex_stats WHERE app_id = ?", (app_id,)).fetchone()
    return LexicalStats(*row) if row else None


def indexed_count(cur: sqlite3.Cursor, app_id: int) -> int:
    return cur.execute(
        "SELECT count(*) FROM chunks WHERE app_id = ? AND in_lexical = 1", (app_id,)
    ).fetchone()[0]


def reset_stats(cur: sqlite3.Cursor, app_id: int) -> None:
    cur.execute(
        "INSERT OR REPLACE INTO lex_stats (app_id, version, n_docs, total_len) VALUES (?, ?, 0, 0)",
        (app_id, lexical.VERSION),
    )


#: Chunks analysed and written at a time by ``rebuild``.
REBUILD_BATCH = 20_000

# A term no app has a posting for. It probes each app's (app_id, term_id) primary-key prefix
# (there is no index on term_id alone): CROSS JOIN keeps apps the outer loop, where a plain
# JOIN let SQLite scan every posting row per term (a 100k-chunk reindex: minutes, not seconds).
DROP_UNUSED_TERM = (
    "DELETE FROM lex_terms WHERE id = ? AND NOT EXISTS (SELECT 1 FROM apps a "
    "CROSS JOIN lex_postings p ON p.app_id = a.id AND p.term_id = ?)"
)


def rebuild(cur: sqlite3.Cursor, app_id: int) -> int:
    """The app's postings, lengths and counts written anew from its stored chunk text by this
    vestige's analyzer (``vestige reindex``, and the migration to a new analyzer). Returns how
    many chunks were indexed. The caller bumps the app's generation: caches must reload.

    Chunks are read, analysed and written REBUILD_BATCH at a time, in id order (the blocks'
    appends stay sorted): a million chunks held at once took 7.7 GB."""
    old_terms = [r[0] for r in cur.execute("SELECT DISTINCT term_id FROM lex_postings WHERE app_id = ?", (app_id,))]
    cur.execute("DELETE FROM lex_postings WHERE app_id = ?", (app_id,))
    reset_stats(cur, app_id)
    blocks = Blocks(cur, app_id)
    count = 0
    page = "SELECT id, text FROM chunks WHERE app_id = ? AND in_lexical = 1 AND id > ? ORDER BY id LIMIT ?"

    def rows_after(last: int) -> list[tuple[int, str]]:
        return cur.execute(page, (app_id, last, REBUILD_BATCH)).fetchall()

    for chunks in lexical_postings.analysed_pages(rows_after):
        cur.executemany("UPDATE chunks SET lex_len = ? WHERE id = ?", [(len(t), i) for i, t in chunks])
        lexical_postings.add(blocks, chunks)
        count += len(chunks)
    blocks.drop_unused_terms(old_terms)
    return count


class Blocks:
    """``PostingBlocks`` over one app, inside the caller's open write transaction."""

    def __init__(self, cur: sqlite3.Cursor, app_id: int):
        self.cur = cur
        self.app_id = app_id
        # Blocks above this number hold no posting (see no_postings_above); None: unknown.
        self._last_used_block: int | None = None

    def no_postings_above(self, chunk_id: int) -> None:
        """No chunk id above ``chunk_id`` was ever handed out before the chunks being indexed
        (AUTOINCREMENT never goes back), so no block past its block can exist: reads skip them."""
        self._last_used_block = chunk_id >> BLOCK_BITS

    def term_ids(self, terms: Collection[str], *, create: bool) -> dict[str, int]:
        return term_ids(self.cur, terms, create)

    def create_terms(self, ordered: Sequence[str]) -> dict[str, int]:
        # Explicit ids, each the largest + 1 in the order given: what one INSERT per term
        # gives (the rowid rule), in one statement, with no read back.
        base = self.cur.execute("SELECT coalesce(max(id), 0) FROM lex_terms").fetchone()[0]
        ids = {term: base + 1 + i for i, term in enumerate(ordered)}
        self.cur.executemany("INSERT INTO lex_terms (id, term) VALUES (?, ?)", [(i, t) for t, i in ids.items()])
        return ids

    def read_blocks(self, keys: Collection[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        # Per block number, the terms asked, 500 at a time: a few statements per batch of
        # chunks instead of one per (term, block).
        wanted: dict[int, list[int]] = {}
        last = self._last_used_block
        for term_id, block in keys:
            if last is None or block <= last:
                wanted.setdefault(block, []).append(term_id)
        out = {}
        for block, terms in wanted.items():
            for start in range(0, len(terms), 500):
                part = terms[start : start + 500]
                marks = ",".join("?" * len(part))
                out.update(
                    ((term_id, block), data)
                    for term_id, data in self.cur.execute(
                        f"SELECT term_id, data FROM lex_postings WHERE app_id = ? AND block = ? "
                        f"AND term_id IN ({marks})",
                        (self.app_id, block, *part),
                    )
                )
        return out

    def write_blocks(self, blocks: Mapping[tuple[int, int], bytes]) -> None:
        app_id = self.app_id
        self.cur.executemany(
            "INSERT OR REPLACE INTO lex_postings (app_id, term_id, block, data) VALUES (?, ?, ?, ?)",
            [(app_id, t, b, data) for (t, b), data in blocks.items() if data],
        )
        gone = [(app_id, t, b) for (t, b), data in blocks.items() if not data]
        if gone:
            self.cur.executemany("DELETE FROM lex_postings WHERE app_id = ? AND term_id = ? AND block = ?", gone)

    def add_stats(self, n_docs: int, total_len: int) -> None:
        self.cur.execute(
            "UPDATE lex_stats SET n_docs = n_docs + ?, total_len = total_len + ? WHERE app_id = ?",
            (n_docs, total_len, self.app_id),
        )

    def stats(self) -> LexicalStats | None:
        return stats(self.cur, self.app_id)

    def indexed_count(self) -> int:
        return indexed_count(self.cur, self.app_id)

    def drop_unused_terms(self, term_ids: Collection[int]) -> None:
        self.cur.executemany(DROP_UNUSED_TERM, [(t, t) for t in term_ids])


def read_blocks_for_terms(cur: sqlite3.Cursor, app_id: int, terms: Collection[str]) -> dict[int, list[tuple[int, bytes]]]:
    ids = term_ids(cur, set(terms), create=False)
    if not ids:
        return {}
    # One primary-key range per term, its rows taken whole (block order): no Python work per
    # row (1M chunks, 5 common terms, ~4,500 rows: 5.5 -> 4.7 ms).
    out: dict[int, list[tuple[int, bytes]]] = {}
    for term_id in ids.values():
        rows = cur.execute(
            "SELECT block, data FROM lex_postings WHERE app_id = ? AND term_id = ?", (app_id, term_id)
        ).fetchall()
        if rows:
            out[term_id] = rows
    return out


def doc_lengths(cur: sqlite3.Cursor, app_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Ids and BM25 lengths of the app's lexical chunks, ascending (the covering index).

    Read as two comma-joined strings that numpy parses, not a million Python tuples: the
    first query of a new process at 1M chunks spent 1 s here (now about a third)."""
    ids_text, lengths_text = cur.execute(
        "SELECT group_concat(id), group_concat(lex_len) FROM (SELECT id, lex_len FROM chunks "
        "WHERE app_id = ? AND in_lexical = 1 ORDER BY id)",
        (app_id,),
    ).fetchone()
    if ids_text is None:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    ids = np.fromstring(ids_text, dtype=np.int64, sep=",")
    lengths = np.fromstring(lengths_text, dtype=np.float64, sep=",")
    if len(ids) == len(lengths) and bool(np.all(ids[1:] > ids[:-1])):
        return ids, lengths
    # SQLite does not promise group_concat's order: read row by row if it was not kept.
    rows = cur.execute(
        "SELECT id, lex_len FROM chunks WHERE app_id = ? AND in_lexical = 1 ORDER BY id", (app_id,)
    ).fetchall()
    arr = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0].copy(), arr[:, 1].astype(np.float64)
