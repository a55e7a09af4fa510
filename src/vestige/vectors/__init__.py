"""The dense channel: an index interface, the exact scan, and an HNSW graph (``ann`` extra)."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from .base import DenseIndex
from .exact import ExactDenseIndex

__all__ = ["DenseIndex", "ExactDenseIndex", "DENSE_MODES", "dense_index"]

DENSE_MODES = ("exact", "hnsw", "auto")


def dense_index(store, mode: str = "auto") -> DenseIndex:
    """``exact``: the exact scan, always. ``hnsw``: the HNSW graph for every app (needs the
    ``ann`` extra). ``auto``: the graph for apps of at least ``hnsw.CROSSOVER`` chunks when
    usearch is installed, the exact scan otherwise (so small memories rank exactly as before).
    Graphs of a SQLite file persist in ``<file>.hnsw/``; other stores keep them in memory. A
    PostgreSQL store gets pgvector's HNSW index in the database instead (``store/postgres/dense.py``;
    ``auto``: for apps of at least its ``CROSSOVER`` vectors; no ``ann`` extra needed)."""
    if mode not in DENSE_MODES:
        raise ConfigError(f"dense must be one of {', '.join(DENSE_MODES)}, got {mode!r}")
    if mode == "exact":
        return ExactDenseIndex(store)
    if hasattr(store, "hnsw_candidates"):  # PostgreSQL: pgvector's HNSW index, in the database
        from ..store.postgres.dense import CROSSOVER, PgvectorDenseIndex

        return PgvectorDenseIndex(store, min_vectors=CROSSOVER if mode == "auto" else 0)
    from . import hnsw

    if mode == "auto" and not hnsw.available():
        return ExactDenseIndex(store)
    path = getattr(store, "path", None)
    directory = None
    if isinstance(path, str) and path and path != ":memory:" and not path.startswith("file:"):
        directory = Path(f"{path}.hnsw")
    return hnsw.HnswDenseIndex(store, directory, min_vectors=hnsw.CROSSOVER if mode == "auto" else 0)
