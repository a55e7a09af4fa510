"""What differs between the SQL backends, for the code this package writes once.

Shared statements are written with ``?`` marks and passed through ``Dialect.sql``. Upserts need
no dialect: ``INSERT ... ON CONFLICT (key) DO NOTHING`` / ``DO UPDATE SET c = excluded.c`` is the
same on SQLite (3.24+) and PostgreSQL. A backend subclasses ``Dialect`` and fills in the rest.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..base import PostingBlocks

#: A DB-API cursor of the backend's driver (sqlite3 or psycopg): both offer execute,
#: executemany, fetchone and fetchall, which is all the shared code uses.
Cursor = Any

INT64 = (-(2**63), 2**63 - 1)


def _same(value: Any) -> Any:
    return value


class Dialect(ABC):
    #: Chunk columns written for a dense vector, the int8 bytes first (``vector_values``).
    vector_columns: tuple[str, ...]
    #: SQL that is true for a row whose boolean column ``in_lexical`` is set.
    in_lexical: str

    # -- statements and values ------------------------------------------------------------

    def sql(self, text: str) -> str:
        """A statement written with ``?`` marks, in this backend's parameter style."""
        return text

    #: Text as stored and as read back (PostgreSQL's escapes NUL); the same value elsewhere.
    to_db = staticmethod(_same)
    from_db = staticmethod(_same)

    def bigint(self, value: int) -> int:
        """An id bound as a parameter (PostgreSQL: clamped to bigint, as SQLite reads it)."""
        return int(value)

    def bigints(self, values: Sequence[Any]) -> list[int]:
        """Ids to look up (PostgreSQL: leaving out what no bigint column can hold)."""
        return list(values)

    def page(self, limit: int, offset: int) -> tuple[int | None, int]:
        """``LIMIT ? OFFSET ?`` parameters with SQLite's reading of negative values."""
        return limit, offset

    @abstractmethod
    def in_list(self, column: str, values: Sequence[Any], sql_type: str) -> Iterator[tuple[str, list[Any]]]:
        """``column`` matches one of ``values``: (condition, its parameters) per statement to run
        (SQLite: ``IN (?, ...)`` 500 at a time; PostgreSQL: ``= ANY(array)`` once)."""

    @abstractmethod
    def metadata_test(self, key: str, value: Any) -> tuple[str, list[Any]]:
        """A condition on ``m.metadata`` (JSON text): key ``key`` holds ``value``, compared as JSON."""

    @abstractmethod
    def vector_values(self, vector: np.ndarray | None) -> tuple[Any, ...]:
        """The values of ``vector_columns`` for a chunk's int8 vector (None: not dense)."""

    # -- writing --------------------------------------------------------------------------

    @abstractmethod
    def insert_rows(self, cur: Cursor, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert many rows in one go, inside the caller's write transaction."""

    @abstractmethod
    def new_item_ids(self, cur: Cursor, table: str, count: int) -> list[int]:
        """The ids ``count`` rows inserted one by one into ``table`` would get, in order."""

    @abstractmethod
    def last_chunk_id(self, cur: Cursor) -> int:
        """The largest chunk id ever handed out (ids are never reused: blocks stay sorted)."""

    @abstractmethod
    def new_chunk_ids(self, cur: Cursor, count: int) -> list[int]:
        """The next ``count`` chunk ids, taken under the write lock (they grow in commit order)."""

    @abstractmethod
    def set_lengths(self, cur: Cursor, lengths: Sequence[tuple[int, int]]) -> None:
        """Set ``lex_len`` of chunks given as (chunk id, length)."""

    # -- reading the channels' storage ----------------------------------------------------

    #: The backend's ``postings.Blocks`` (a subclass of ``store/sql/postings.Blocks``).
    block_class: Callable[[Dialect, Cursor, int], PostingBlocks]

    def blocks(self, cur: Cursor, app_id: int) -> PostingBlocks:
        """The app's posting blocks, inside the caller's write transaction."""
        return self.block_class(self, cur, app_id)

    @abstractmethod
    def read_postings(self, cur: Cursor, app_id: int, terms: set[str]) -> dict[int, list[tuple[int, bytes]]]:
        """Per term id, the (block, data) rows of ``terms`` in the app, in block order."""

    @abstractmethod
    def doc_lengths(self, cur: Cursor, app_id: int) -> tuple[np.ndarray, np.ndarray]:
        """Ids and BM25 lengths of the app's lexical chunks, ascending."""

    def fetch_all(self, cur: Cursor, query: str, params: Sequence[Any]) -> list[tuple]:
        """Rows of a large read (PostgreSQL reads them in binary: no text parsing)."""
        return cur.execute(query, params).fetchall()


@functools.lru_cache(maxsize=1024)
def percent_marks(text: str) -> str:
    """``?`` marks as ``%s`` (psycopg's style); shared SQL holds no literal ``%`` or ``?``."""
    assert "%" not in text, text
    return text.replace("?", "%s")

