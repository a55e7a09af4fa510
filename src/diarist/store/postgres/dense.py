"""Dense search inside PostgreSQL: a pgvector HNSW index, re-ranked exactly from the int8 bytes.

The SQL (``ensure_hnsw``, ``candidates``, ``vector_count``) is reached through small methods of
``PostgresStore`` of the same names; ``PgvectorDenseIndex`` is the ``DenseIndex`` that
``diarist.vectors.dense_index`` hands out for a PostgreSQL store.

The index. ``embedding`` has no fixed dimension, so there is one partial expression index per
dimension, shared by every app of the schema::

    CREATE INDEX chunks_hnsw_384 ON chunks
        USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE vector_dims(embedding) = 384

(cosine, not inner product: ``embedding`` holds the int8 values as floats, whose norms differ a
little from row to row; cosine over them orders as the exact channel does). It is built on
first need (an app of ``min_vectors`` or more is searched) with ``CREATE INDEX CONCURRENTLY``,
so writers are never blocked by the build; pgvector then keeps it current on every insert.

The query. One app's rows are a fraction of the index: a plain HNSW scan returns its
``ef_search`` nearest rows of every app and then filters, so a 1% app gets about 1% of the depth
asked. pgvector >= 0.8's iterative scan (``SET LOCAL hnsw.iterative_scan = relaxed_order``)
keeps walking the graph until the LIMIT is filled with rows of the app (or
``hnsw.max_scan_tuples`` rows were visited). Candidates (``oversample`` x depth) come back with
their int8 bytes and are scored exactly as ``ExactDenseIndex`` scores (dequantise, renormalise,
dot, ``ranking.top``): every score returned equals the exact path's score of that chunk; only
which chunks make the depth can differ (recall). The read is one REPEATABLE READ snapshot
filtered on the app's id, so another app's chunks and deleted ones never come back.

Small apps. Below ``min_vectors`` (the measured crossover, BENCHMARKS.md "PostgreSQL at scale")
the exact scan over the app's cached matrix is faster, and exact: it answers instead.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ...errors import EmbedderMismatch
from ...ranking import top
from ...vectors.base import DenseIndex
from ...vectors.exact import ExactDenseIndex, cosines

if TYPE_CHECKING:
    import psycopg

    from ..base import AppVersion, VectorBatch


class PostgresStore(Protocol):
    """What this index reads of ``store.PostgresStore`` (named here, not imported: the store
    imports this module)."""

    def app_version(self, app: str) -> AppVersion | None: ...

    def read_vectors(self, app: str, after_id: int = 0) -> VectorBatch: ...

    def vector_count(self, app: str) -> tuple[int, int | None]: ...

    def ensure_hnsw(self, dim: int, *, concurrently: bool = True, maintenance_work_mem: str | None = None,
                    repair: bool = False) -> bool: ...

    def hnsw_candidates(self, app: str, queries: np.ndarray, count: int, *, ef_search: int,
                        max_scan_tuples: int, iterative: bool = True) -> tuple[np.ndarray, np.ndarray]: ...

#: Apps with fewer vectors are answered by the exact scan (faster there, and exact). Measured
#: (BENCHMARKS.md, "PostgreSQL at scale"): the warm exact scan still wins at 100k (20 vs 30 ms,
#: dense only) and grows linearly; HNSW stays ~30 ms, holds no matrix per process and has no
#: cold read (0.6 s at 100k, seconds at 1M); and an app that is a small part of the table gets
#: poor recall through the shared index's filtered scan (0.57 at 1%).
CROSSOVER = 100_000
#: Candidates asked of the index per depth asked (re-ranked exactly).
OVERSAMPLE = 2
#: ``hnsw.ef_search`` at least this (pgvector caps it at 1000).
EF_SEARCH = 200
#: ``hnsw.max_scan_tuples``: how far an iterative scan may walk to fill the depth for one app.
MAX_SCAN_TUPLES = 200_000
#: HNSW build parameters (pgvector's defaults).
M = 16
EF_CONSTRUCTION = 64


def _schema(vector_type: str) -> str:
    """The (quoted) schema of pgvector's type: ``"public".vector`` -> ``"public"``."""
    return vector_type.rsplit(".", 1)[0]


def index_name(dim: int) -> str:
    return f"chunks_hnsw_{int(dim)}"


def _expr(vector_type: str, dim: int) -> tuple[str, str]:
    """The indexed expression and the index predicate (queries repeat both, verbatim)."""
    ext = _schema(vector_type)
    return f"(embedding::{vector_type}({int(dim)}))", f"{ext}.vector_dims(embedding) = {int(dim)}"


def hnsw_state(cur: psycopg.Cursor, dim: int) -> bool | None:
    """True: a valid index exists; False: an invalid one (a failed concurrent build); None: none."""
    row = cur.execute(
        "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE c.relname = %s AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())",
        (index_name(dim),),
    ).fetchone()
    return None if row is None else bool(row[0])


def ensure_hnsw(cur: psycopg.Cursor, vector_type: str, dim: int, *, concurrently: bool,
                maintenance_work_mem: str | None, repair: bool = False) -> bool:
    """Create the dimension's index unless a valid one exists; returns True if it built one.
    An invalid one is a build under way in another session, or one that failed: left alone
    (queries then scan exactly, slower) unless ``repair`` (``diarist reindex``) drops and
    rebuilds it. ``cur`` is in autocommit (CONCURRENTLY cannot run inside a transaction)."""
    state = hnsw_state(cur, dim)
    if state or (state is False and not repair):
        return False
    name = index_name(dim)
    if state is False:
        cur.execute(f'DROP INDEX {"CONCURRENTLY " if concurrently else ""}IF EXISTS "{name}"')
    expr, predicate = _expr(vector_type, dim)
    ext = _schema(vector_type)
    if maintenance_work_mem:
        cur.execute("SELECT set_config('maintenance_work_mem', %s, false)", (maintenance_work_mem,))
    try:
        cur.execute(
            f'CREATE INDEX {"CONCURRENTLY " if concurrently else ""}IF NOT EXISTS "{name}" ON chunks '
            f"USING hnsw ({expr} {ext}.vector_cosine_ops) WITH (m = {M}, ef_construction = {EF_CONSTRUCTION}) "
            f"WHERE {predicate}"
        )
    finally:
        if maintenance_work_mem:
            cur.execute("RESET maintenance_work_mem")
    return True


def candidates(cur: psycopg.Cursor, vector_type: str, app_id: int, queries: np.ndarray, count: int, *,
               ef_search: int, max_scan_tuples: int, iterative: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``count`` chunks of the app nearest each query by the index (several queries: the
    union), with their int8 vectors; ``cur`` is inside a transaction (the SET LOCALs end with it)."""
    dim = queries.shape[1]
    expr, predicate = _expr(vector_type, dim)
    ext = _schema(vector_type)
    cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(max(1, min(int(ef_search), 1000))),))
    cur.execute("SELECT set_config('hnsw.iterative_scan', %s, true)", ("relaxed_order" if iterative else "off",))
    cur.execute("SELECT set_config('hnsw.max_scan_tuples', %s, true)", (str(int(max_scan_tuples)),))
    found: dict[int, bytes] = {}
    for query in queries:
        literal = "[" + ",".join(repr(float(x)) for x in query) + "]"
        rows = cur.execute(
            f"SELECT id, vector_i8 FROM chunks WHERE app_id = %s AND {predicate} "
            f"ORDER BY {expr} OPERATOR({ext}.<=>) %s::{vector_type}({dim}) LIMIT %s",
            (app_id, literal, int(count)),
            binary=True,
        ).fetchall()
        for chunk_id, vector in rows:
            found[int(chunk_id)] = bytes(vector)
    if not found:
        return np.zeros(0, np.int64), np.zeros((0, dim), np.int8)
    ids = np.fromiter(found, dtype=np.int64, count=len(found))
    matrix = np.frombuffer(b"".join(found.values()), dtype=np.int8).reshape(len(found), -1)
    return ids, matrix


def vector_count(cur: psycopg.Cursor, app_id: int) -> tuple[int, int | None]:
    """The app's dense vectors, and their dimension (None without any)."""
    row = cur.execute(
        "SELECT count(*), (SELECT octet_length(vector_i8) FROM chunks WHERE app_id = %s AND vector_i8 IS NOT NULL "
        "ORDER BY id DESC LIMIT 1) FROM chunks WHERE app_id = %s AND vector_i8 IS NOT NULL",
        (app_id, app_id),
    ).fetchone()
    return int(row[0]), (int(row[1]) if row[1] is not None else None)


class PgvectorDenseIndex(DenseIndex):
    """HNSW in PostgreSQL for apps of at least ``min_vectors`` vectors (0: every app), the exact
    scan below. ``oversample``, ``ef_search``, ``max_scan_tuples``: see the module docstring."""

    def __init__(self, store: PostgresStore, *, min_vectors: int = CROSSOVER, oversample: int = OVERSAMPLE,
                 ef_search: int = EF_SEARCH, max_scan_tuples: int = MAX_SCAN_TUPLES, iterative: bool = True):
        self.store = store
        self.min_vectors = min_vectors
        self.oversample = oversample
        self.ef_search = ef_search
        self.max_scan_tuples = max_scan_tuples
        self.iterative = iterative
        self.exact = ExactDenseIndex(store)
        self._sizes: dict[str, tuple[AppVersion, int, int | None]] = {}
        self._indexed: set[int] = set()
        self._lock = threading.Lock()

    @property
    def _cache(self) -> dict:
        """The exact scan's matrices of the small apps it serves (as ``ExactDenseIndex._cache``)."""
        return self.exact._cache

    def forget(self, app: str) -> None:
        with self._lock:
            self._sizes.pop(app, None)
        self.exact.forget(app)

    def _size(self, app: str, version: AppVersion) -> tuple[int, int | None]:
        """The app's vector count and dimension, recounted only when it may have fallen under
        the crossover (a removal, another epoch) or was under it (a small app: cheap to count)."""
        with self._lock:
            cached = self._sizes.get(app)
        if cached is not None:
            seen, n, dim = cached
            if seen == version:
                return n, dim
            grown_only = seen.epoch == version.epoch and seen.purge_generation == version.purge_generation
            if grown_only and n >= self.min_vectors and dim is not None:
                return n, dim  # only additions since: still above the crossover
        n, dim = self.store.vector_count(app)
        with self._lock:
            self._sizes[app] = (version, n, dim)
        return n, dim

    def uses_index(self, app: str) -> bool:
        """Whether a search of the app now goes through the HNSW index."""
        version = self.store.app_version(app)
        if version is None:
            return False
        n, dim = self._size(app, version)
        return dim is not None and n > 0 and n >= self.min_vectors

    def rebuild(self, app: str) -> int | None:
        """Build the index for the app's dimension now, if the app is served by it."""
        self.forget(app)
        if not self.uses_index(app):
            return None
        _, dim = self._sizes[app][1:]
        assert dim is not None
        self.store.ensure_hnsw(dim, repair=True)
        self._indexed.add(dim)
        return self._sizes[app][1]

    def search(self, app: str, queries: np.ndarray, depth: int) -> list[tuple[int, float]]:
        version = self.store.app_version(app)
        if version is None:
            self.forget(app)
            return []
        n, dim = self._size(app, version)
        if dim is None or n == 0 or depth <= 0:
            return [] if dim is None or n == 0 else self.exact.search(app, queries, depth)
        if n < self.min_vectors:
            return self.exact.search(app, queries, depth)
        self.exact.forget(app)  # the index serves: no copy of the matrix in this process
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if queries.shape[1] != dim:
            raise EmbedderMismatch(
                f"query vectors have {queries.shape[1]} dimensions, the index of app {app!r} {dim}"
            )
        if dim not in self._indexed:
            self.store.ensure_hnsw(dim)
            self._indexed.add(dim)
        count = min(n, depth * self.oversample)
        ids, matrix = self.store.hnsw_candidates(
            app, queries, count, ef_search=max(self.ef_search, count),
            max_scan_tuples=self.max_scan_tuples, iterative=self.iterative,
        )
        if not len(ids):
            return []
        scores = cosines(matrix, queries)
        return top(ids, scores, depth)
