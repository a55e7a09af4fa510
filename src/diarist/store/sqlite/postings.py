"""The BM25 index's SQLite side: posting blocks read and written in batches of ``IN`` lists
and ``executemany``. What both backends do alike is in ``store/sql/postings.py``."""

from __future__ import annotations

import itertools
import operator
import sqlite3
from collections.abc import Collection, Mapping

import numpy as np

from ..sql import postings as sql_postings


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


# A term no app has a posting for. It probes each app's (app_id, term_id) primary-key prefix
# (there is no index on term_id alone): CROSS JOIN keeps apps the outer loop, where a plain
# JOIN let SQLite scan every posting row per term (a 100k-chunk reindex: minutes, not seconds).
DROP_UNUSED_TERM = (
    "DELETE FROM lex_terms WHERE id = ? AND NOT EXISTS (SELECT 1 FROM apps a "
    "CROSS JOIN lex_postings p ON p.app_id = a.id AND p.term_id = ?)"
)


class Blocks(sql_postings.Blocks):
    """Blocks read per block number with ``IN`` lists, written with ``executemany``."""

    def term_ids(self, terms: Collection[str], *, create: bool) -> dict[str, int]:
        return term_ids(self.cur, terms, create)

    def read_blocks(self, keys: Collection[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        # Per block number, the terms asked, 500 at a time: a few statements per batch of
        # chunks instead of one per (term, block).
        wanted: dict[int, list[int]] = {}
        for term_id, block in self.may_exist(keys):
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

    def drop_unused_terms(self, term_ids: Collection[int]) -> None:
        self.cur.executemany(DROP_UNUSED_TERM, [(t, t) for t in term_ids])


def read_blocks_for_terms(cur: sqlite3.Cursor, app_id: int, terms: Collection[str]) -> dict[int, list[tuple[int, bytes]]]:
    """Every term's posting rows, (block, data) in block order, by term id: one statement for
    the terms' ids and their rows together (a question's ~7 terms were 1 + 7 statements, ~15 us
    each; each term's rows are still one primary-key range)."""
    ordered = sorted(set(terms))
    out: dict[int, list[tuple[int, bytes]]] = {}
    for start in range(0, len(ordered), 500):
        part = ordered[start : start + 500]
        # CROSS JOIN: the terms the outer loop, each term's rows one range of the primary key
        # (a plain JOIN let SQLite scan every posting of the app). No ORDER BY (a sorter copies
        # every blob): the rows come a term at a time in block order; checked below all the same.
        rows = cur.execute(
            "SELECT p.term_id, p.block, p.data FROM lex_terms t CROSS JOIN lex_postings p "
            f"ON p.app_id = ? AND p.term_id = t.id WHERE t.term IN ({','.join('?' * len(part))})",
            (app_id, *part),
        ).fetchall()
        for term_id, group in itertools.groupby(rows, key=operator.itemgetter(0)):
            out.setdefault(term_id, []).extend((block, data) for _, block, data in group)
    for term_id, blocks in out.items():
        if any(a[0] >= b[0] for a, b in zip(blocks, blocks[1:])):
            out[term_id] = sorted(blocks)
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
