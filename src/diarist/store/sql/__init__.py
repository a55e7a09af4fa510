"""What the SQL backends (SQLite, PostgreSQL) do identically, written once.

``SQLStore`` (store.py) implements the store contract over the shared tables; the row-level
modules beside it (records, postings, keys) hold the SQL both backends run. Every statement is
written with ``?`` marks; a ``Dialect`` (dialect.py) says what differs: the parameter mark, the
text codec (PostgreSQL text cannot hold NUL), id lists, JSON tests, bulk inserts, how new ids
are handed out, where a vector lives. A backend package keeps its connection, its migrations,
its dialect and what only it offers (SQLite: backup, compact; PostgreSQL: pgvector HNSW).

A contract method that is the same SQL on both backends goes into ``SQLStore``; one whose SQL
differs goes there too, with the differing piece as a ``Dialect`` method.
"""

from .dialect import Dialect
from .store import SQLStore

__all__ = ["Dialect", "SQLStore"]
