"""``PostgresStore``: the store contract on PostgreSQL + pgvector.

The contract's methods are ``SQLStore``'s (``store/sql``), with PostgreSQL's dialect; this
class opens the connection pool and offers what only PostgreSQL has: pgvector's HNSW index
(``dense.py``), ``ANALYZE``, and the size of its tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..sql import SQLStore
from . import dense
from .connection import Connection, url_options
from .dialect import DIALECT

if TYPE_CHECKING:
    from ...errors import StoreError


class PostgresStore(SQLStore):
    """A diarist store in one PostgreSQL database (and schema): ``postgresql://user@host/db``.

    ``min_size``/``max_size``: the connection pool (threads of one process share it; default
    1 and 10); ``timeout``: seconds to wait for a free connection (30); ``lock_timeout``: seconds
    a writer waits for the write lock before giving up (30). The URL may carry the last three as
    ``pool_size=``, ``pool_timeout=`` and ``write_lock_timeout=`` (taken out before connecting:
    how ``DIARIST_DB`` sizes the pools of ``diarist serve`` workers); a keyword given wins."""

    dialect = DIALECT

    def __init__(self, url: str, *, create: bool = True, min_size: int | None = None, max_size: int | None = None,
                 timeout: float | None = None, lock_timeout: float | None = None):
        url, given = url_options(url)
        given.update({k: v for k, v in (("max_size", max_size), ("timeout", timeout),
                                        ("lock_timeout", lock_timeout)) if v is not None})
        max_size = int(given.get("max_size", 10))
        min_size = min(max_size, 1 if min_size is None else min_size)
        self._db = Connection(url, create=create, min_size=min_size, max_size=max_size,
                              timeout=float(given.get("timeout", 30.0)),
                              lock_timeout_s=float(given.get("lock_timeout", 30.0)))
        self.location = self._db.location
        self.schema = self._db.schema

    # -- dense search in SQL (dense.py: pgvector HNSW; not part of the store contract) ----------

    def native_dense_index(self, mode: str) -> dense.PgvectorDenseIndex:
        """pgvector's HNSW index: ``auto`` for apps of at least ``dense.CROSSOVER`` vectors."""
        return dense.PgvectorDenseIndex(self, min_vectors=dense.CROSSOVER if mode == "auto" else 0)

    def vector_count(self, app: str) -> tuple[int, int | None]:
        """The app's dense vectors and their dimension (None: none, or no such app)."""
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return (0, None) if app_id is None else dense.vector_count(cur, app_id)

    def analyze(self) -> None:
        """Refresh the planner's statistics of every table (ANALYZE), as after a bulk load."""
        with self._db.single() as cur:
            cur.execute("ANALYZE")

    def ensure_hnsw(self, dim: int, *, concurrently: bool = True, maintenance_work_mem: str | None = None,
                    repair: bool = False) -> bool:
        """Create the HNSW index of vectors of ``dim`` dimensions unless it exists (True: built)."""
        with self._db.single() as cur:
            return dense.ensure_hnsw(cur, self._db.vector_type, dim, concurrently=concurrently,
                                     maintenance_work_mem=maintenance_work_mem, repair=repair)

    def hnsw_candidates(self, app: str, queries: np.ndarray, count: int, *, ef_search: int,
                        max_scan_tuples: int, iterative: bool = True,
                        index_forced: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The app's chunks nearest the queries by the HNSW index: ids and int8 vectors.
        ``index_forced``: the planner may not sort the app's rows instead (what a benchmark of
        the filtered scan itself measures)."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        with self._db.snapshot() as cur:
            if index_forced:
                cur.execute("SET LOCAL enable_sort = off")
            app_id = self._app_id(cur, app)
            if app_id is None:
                return np.zeros(0, np.int64), np.zeros((0, queries.shape[1]), np.int8)
            return dense.candidates(cur, self._db.vector_type, app_id, queries, count, ef_search=ef_search,
                                    max_scan_tuples=max_scan_tuples, iterative=iterative)

    def translate_error(self, exc: BaseException) -> StoreError | None:
        """A psycopg or pool error as the StoreError it means (``connection.translate``): the
        same statuses as SQLite's (a full disk, a read-only database, a lost connection: 503)."""
        import psycopg

        from .connection import translate

        return translate(exc, self.location) if isinstance(exc, psycopg.Error) else None

    # -- size -------------------------------------------------------------------------------------

    def size_bytes(self) -> int | None:
        """Bytes of diarist's tables and their indexes in this schema (not the whole database)."""
        rows = self._db.read(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) AND c.relkind = 'r'"
        )
        return int(rows[0][0]) if rows else None

