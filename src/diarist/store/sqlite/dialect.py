"""SQLite's side of the shared SQL (``store/sql``): ``?`` marks, ``IN`` lists of 500, JSON1
functions, ``executemany`` for bulk inserts, ids as AUTOINCREMENT and the rowid rule give them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..sql.dialect import Dialect
from . import postings

#: Parameters per ``IN`` list: well under SQLite's limit on host parameters.
IN_LIST = 500


class SQLiteDialect(Dialect):
    vector_columns = ("vector",)
    in_lexical = "in_lexical = 1"

    def in_list(self, column: str, values: Sequence[Any], sql_type: str) -> Iterator[tuple[str, list[Any]]]:
        for start in range(0, len(values), IN_LIST):
            part = list(values[start : start + IN_LIST])
            yield f"{column} IN ({','.join('?' * len(part))})", part

    def metadata_test(self, key: str, value: Any) -> tuple[str, list[Any]]:
        path = "$." + json.dumps(key)
        if value is None or isinstance(value, bool):  # json_extract turns true into 1: ask the type
            return "json_type(m.metadata, ?) = ?", [path, "null" if value is None else ("true" if value else "false")]
        # json_quote(json_extract(...)) compares values as JSON (1 is not "1"; absent is not null)
        return ("json_type(m.metadata, ?) NOT IN ('true', 'false', 'null') "
                "AND json_quote(json_extract(m.metadata, ?)) = json(?)",
                [path, path, json.dumps(value, ensure_ascii=False, separators=(",", ":"))])

    def vector_values(self, vector: np.ndarray | None) -> tuple[Any, ...]:
        return (None if vector is None else vector.tobytes(),)

    def insert_rows(self, cur: sqlite3.Cursor, table: str, columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        cur.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows)

    def new_item_ids(self, cur: sqlite3.Cursor, table: str, count: int) -> list[int]:
        # The rowid rule of INTEGER PRIMARY KEY: the largest id + 1, row after row.
        last = cur.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]
        return list(range(last + 1, last + 1 + count))

    def last_chunk_id(self, cur: sqlite3.Cursor) -> int:
        # AUTOINCREMENT's rule: the sequence or the largest row, whichever is larger.
        return cur.execute(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), 0), "
            "coalesce((SELECT max(id) FROM chunks), 0))"
        ).fetchone()[0]

    def new_chunk_ids(self, cur: sqlite3.Cursor, count: int) -> list[int]:
        last = self.last_chunk_id(cur)  # explicit ids move sqlite_sequence on as AUTOINCREMENT does
        return list(range(last + 1, last + 1 + count))

    def set_lengths(self, cur: sqlite3.Cursor, lengths: Sequence[tuple[int, int]]) -> None:
        cur.executemany("UPDATE chunks SET lex_len = ? WHERE id = ?", [(n, i) for i, n in lengths])

    # The posting tables' bulk reads and writes (postings.py).
    block_class = postings.Blocks
    read_postings = staticmethod(postings.read_blocks_for_terms)
    doc_lengths = staticmethod(postings.doc_lengths)


DIALECT = SQLiteDialect()
