"""The dense channel: an index interface, the exact scan, and an HNSW graph (``ann`` extra)."""

from __future__ import annotations

from ..errors import ConfigError
from ..write.validate import shown
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
        raise ConfigError(f"dense must be one of {', '.join(DENSE_MODES)}, got {shown(mode)}")
    if mode == "exact":
        return ExactDenseIndex(store)
    native = store.native_dense_index(mode)  # PostgreSQL: pgvector's HNSW index, in the database
    if native is not None:
        return native
    from . import hnsw

    if mode == "auto" and not hnsw.available():
        return ExactDenseIndex(store)
    return hnsw.HnswDenseIndex(store, store.index_directory(), min_vectors=hnsw.CROSSOVER if mode == "auto" else 0)
