"""PostgreSQL's side of the shared SQL (``store/sql``): ``%s`` marks, arrays for id lists
(``= ANY``), jsonb for metadata tests, ``COPY`` for bulk inserts, identity sequences and the
chunk counter for new ids, text without NUL (``text.py``), the vector twice (bytea + pgvector)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..sql.dialect import INT64, Dialect, percent_marks
from . import postings, text

if TYPE_CHECKING:
    import psycopg


# Each int8 value's text, padded to one width ("  -5,"): a vector's text is one table lookup,
# not a str() per dimension (384 of them took a third of a bulk insert); pgvector skips blanks.
_INT8_TEXT = np.array([f"{i:4d}," for i in range(-128, 128)], dtype="S5")


def _vector_text(vector: np.ndarray) -> str:
    """pgvector's text form of an int8 vector (what COPY hands the ``vector`` type's input)."""
    return "[" + _INT8_TEXT[vector.astype(np.int16) + 128].tobytes()[:-1].decode("ascii") + "]"


class PostgresDialect(Dialect):
    vector_columns = ("vector_i8", "embedding")
    in_lexical = "in_lexical"
    to_db = staticmethod(text.to_db)
    from_db = staticmethod(text.from_db)

    def sql(self, text: str) -> str:
        return percent_marks(text)

    def bigint(self, value: int) -> int:
        return max(min(int(value), INT64[1]), INT64[0])

    def bigints(self, values: Sequence[Any]) -> list[int]:
        return [i for i in map(int, values) if INT64[0] <= i <= INT64[1]]

    def page(self, limit: int, offset: int) -> tuple[int | None, int]:
        # As SQLite reads them: a negative limit is no limit, a negative offset is none.
        return (None if limit < 0 else min(int(limit), INT64[1])), max(0, min(int(offset), INT64[1]))

    def in_list(self, column: str, values: Sequence[Any], sql_type: str) -> Iterator[tuple[str, list[Any]]]:
        yield f"{column} = ANY(?::{sql_type}[])", [list(values)]

    def metadata_test(self, key: str, value: Any) -> tuple[str, list[Any]]:
        return "(m.metadata::jsonb -> ?) = ?::jsonb", [key, json.dumps(value, ensure_ascii=False)]

    def vector_values(self, vector: np.ndarray | None) -> tuple[Any, ...]:
        return (None, None) if vector is None else (vector.tobytes(), _vector_text(vector))

    def insert_rows(self, cur: psycopg.Cursor, table: str, columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        # COPY: the rows stream in one command, parsed by the server as the columns' types
        # (the pgvector column from its text form), inside the caller's transaction.
        with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def new_item_ids(self, cur: psycopg.Cursor, table: str, count: int) -> list[int]:
        # The identity sequence's next values: what row-by-row inserts would have drawn.
        rows = cur.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", (table, count)
        ).fetchall()
        return sorted(int(r[0]) for r in rows)

    def last_chunk_id(self, cur: psycopg.Cursor) -> int:
        return int(cur.execute("SELECT value FROM counters WHERE name = 'chunk'").fetchone()[0])

    def new_chunk_ids(self, cur: psycopg.Cursor, count: int) -> list[int]:
        if not count:
            return []
        # The counter row, under the write lock: ids grow in commit order, and a rolled-back
        # write hands them out again (as SQLite's AUTOINCREMENT does).
        last = int(cur.execute(
            "UPDATE counters SET value = value + %s WHERE name = 'chunk' RETURNING value", (count,)
        ).fetchone()[0])
        return list(range(last - count + 1, last + 1))

    def set_lengths(self, cur: psycopg.Cursor, lengths: Sequence[tuple[int, int]]) -> None:
        cur.execute(
            "UPDATE chunks c SET lex_len = u.len FROM unnest(%s::bigint[], %s::int[]) AS u(id, len) "
            "WHERE c.id = u.id",
            ([i for i, _ in lengths], [n for _, n in lengths]),
        )

    # The posting tables' bulk reads and writes (postings.py).
    block_class = postings.Blocks
    read_postings = staticmethod(postings.read_blocks_for_terms)
    doc_lengths = staticmethod(postings.doc_lengths)

    def fetch_all(self, cur: psycopg.Cursor, query: str, params: Sequence[Any]) -> list[tuple]:
        return cur.execute(query, params, binary=True).fetchall()


DIALECT = PostgresDialect()
