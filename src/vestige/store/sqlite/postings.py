"""The BM25 index as plain tables: the term dictionary, posting blocks, lengths and counts.

This module only moves bytes and counts; what a block holds is decided by
``vestige.lexical.postings`` (upkeep) and ``vestige.lexical.bm25`` (scoring).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping

import numpy as np

from ... import lexical
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


class Blocks:
    """``PostingBlocks`` over one app, inside the caller's open write transaction."""

    def __init__(self, cur: sqlite3.Cursor, app_id: int):
        self.cur = cur
        self.app_id = app_id

    def term_ids(self, terms: Collection[str], *, create: bool) -> dict[str, int]:
        return term_ids(self.cur, terms, create)

    def read_blocks(self, keys: Collection[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        # Per block number, the terms asked, 500 at a time: a few statements per batch of
        # chunks instead of one per (term, block).
        wanted: dict[int, list[int]] = {}
        for term_id, block in keys:
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
        self.cur.executemany(
            "INSERT OR REPLACE INTO lex_postings (app_id, term_id, block, data) VALUES (?, ?, ?, ?)",
            [(self.app_id, t, b, data) for (t, b), data in blocks.items() if data],
        )
        self.cur.executemany(
            "DELETE FROM lex_postings WHERE app_id = ? AND term_id = ? AND block = ?",
            [(self.app_id, t, b) for (t, b), data in blocks.items() if not data],
        )

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
        # Probe each app's (app_id, term_id) primary-key prefix: no index on term_id alone.
        self.cur.executemany(
            "DELETE FROM lex_terms WHERE id = ? AND NOT EXISTS (SELECT 1 FROM apps a "
            "JOIN lex_postings p ON p.app_id = a.id AND p.term_id = ?)",
            [(t, t) for t in term_ids],
        )


def read_blocks_for_terms(cur: sqlite3.Cursor, app_id: int, terms: Collection[str]) -> dict[int, list[tuple[int, bytes]]]:
    ids = term_ids(cur, set(terms), create=False)
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    out: dict[int, list[tuple[int, bytes]]] = {}
    for term_id, block, data in cur.execute(
        f"SELECT term_id, block, data FROM lex_postings WHERE app_id = ? AND term_id IN ({marks})",
        (app_id, *ids.values()),
    ):
        out.setdefault(term_id, []).append((block, data))
    return out


def doc_lengths(cur: sqlite3.Cursor, app_id: int) -> tuple[np.ndarray, np.ndarray]:
    rows = cur.execute(
        "SELECT id, lex_len FROM chunks WHERE app_id = ? AND in_lexical = 1 ORDER BY id", (app_id,)
    ).fetchall()
    arr = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0].copy(), arr[:, 1].astype(np.float64)
