"""Exact dense search: every vector of the app against the query, one matrix product.

The app's int8 vectors are held per process as a normalised float32 matrix. The cache is
valid for one ``AppVersion``: the same epoch and generation reuse it; new writes without
deletions extend it with the rows after its last id; a deletion, or another epoch (the app
was deleted and created again, possibly under a reused integer id), rebuilds it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..embed.base import dequantize
from ..errors import EmbedderMismatch
from ..ranking import top
from ..store.base import AppVersion, Store
from .base import DenseIndex


@dataclass(frozen=True)
class _Matrix:
    version: AppVersion
    max_id: int
    ids: np.ndarray  # int64, ascending
    matrix: np.ndarray  # float32 (n, dim), rows normalised


class ExactDenseIndex(DenseIndex):
    def __init__(self, store: Store):
        self.store = store
        self._cache: dict[str, _Matrix] = {}
        self._lock = threading.Lock()

    def forget(self, app: str) -> None:
        with self._lock:
            self._cache.pop(app, None)

    def _matrix(self, app: str) -> _Matrix | None:
        version = self.store.app_version(app)
        if version is None:
            self.forget(app)
            return None
        with self._lock:
            cached = self._cache.get(app)
        if cached is not None and cached.version == version:
            return cached
        extend = (
            cached is not None
            and cached.version.epoch == version.epoch
            and cached.version.purge_generation == version.purge_generation
        )
        batch = self.store.read_vectors(app, cached.max_id if extend and cached else 0)
        if batch.version is None:
            self.forget(app)
            return None
        if extend and cached is not None and (
            batch.version.epoch != cached.version.epoch
            or batch.version.purge_generation != cached.version.purge_generation
        ):
            # A delete landed between the two reads, or the app was deleted and created again
            # (a new epoch, whose purge counter starts again from 0): read everything again.
            extend = False
            batch = self.store.read_vectors(app, 0)
            if batch.version is None:
                return None
        matrix = dequantize(batch.vectors) if len(batch.ids) else None
        ids = batch.ids
        if extend and cached is not None and cached.matrix.size:
            if matrix is not None:
                ids = np.concatenate([cached.ids, ids])
                matrix = np.vstack([cached.matrix, matrix])
            else:
                ids, matrix = cached.ids, cached.matrix
        if matrix is None:
            matrix = np.zeros((0, 0), np.float32)
        fresh = _Matrix(batch.version, int(ids[-1]) if len(ids) else 0, ids, matrix)
        with self._lock:
            self._cache[app] = fresh
        return fresh

    def search(self, app: str, queries: np.ndarray, depth: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """``allowed`` (ascending chunk ids): only those may rank, filtered before the top is cut."""
        cache = self._matrix(app)
        if cache is None or not len(cache.ids):
            return []
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if queries.shape[1] != cache.matrix.shape[1]:
            raise EmbedderMismatch(
                f"query vectors have {queries.shape[1]} dimensions, the index of app {app!r} "
                f"{cache.matrix.shape[1]}"
            )
        product = cache.matrix @ queries.T
        # One query: its column as is (the same values; no reduction pass over every row).
        scores = product[:, 0] if product.shape[1] == 1 else product.max(axis=1)
        if allowed is not None:
            keep = np.isin(cache.ids, allowed, assume_unique=True)
            return top(cache.ids[keep], scores[keep], depth)
        return top(cache.ids, scores, depth)
