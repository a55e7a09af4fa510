"""The memories' mean vector taken off before the dense candidates are compared with the question
(the sentences stage calls ``centered_scores``; issue 43).

A multilingual model's vectors share a large common direction, and one for each language: an
English memory and a Chinese question about it are near in meaning but apart in language, and the
English memories' common direction is part of every cosine with them (in one language too, the
common direction squeezes every cosine into a narrow band). Subtracting the memories'
own mean (c times it: ``settings.CENTER``) from the question's, the memories' and their sentences'
vectors before the cosine ("language centering"; Libovický, Rosa and Fraser, "On the Language
Neutrality of Pre-trained Multilingual Representations", Findings of EMNLP 2020) leaves what is
particular to each memory. The mean is the app's, read from the database (every chunk vector,
renormalised as the dense channel reads it), kept per process and extended as chunks are added.

The candidates' centered cosines come from their plain cosines and their products with the mean
(x and q unit vectors, m the mean): (q - cm).(x - cm) = q.x - c q.m - c x.m + c^2 m.m, and
|x - cm|^2 = 1 - 2c x.m + c^2 m.m; the products with the mean are one more exact scan of the
candidates only.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..embed.base import dequantize
from ..store.base import AppVersion, Store
from ..vectors.exact import ExactDenseIndex


@dataclass
class _Sum:
    version: AppVersion
    max_id: int
    total: np.ndarray  # float64 (dim,): the sum of the app's renormalised chunk vectors
    count: int


_sums: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def app_mean(store: Store, app: str) -> np.ndarray | None:
    """The mean of the app's chunk vectors (None: it holds none), read once per process and
    extended by the rows written since; a deletion (or an app created again) reads them all."""
    version = store.app_version(app)
    if version is None:
        return None
    with _lock:
        cached = _sums.get(store, {}).get(app)
    if cached is None or cached.version != version:
        extend = (cached is not None and cached.version.epoch == version.epoch
                  and cached.version.purge_generation == version.purge_generation)
        batch = store.read_vectors(app, cached.max_id if extend and cached else 0)
        if batch.version is None:
            return None
        if extend and cached is not None and (batch.version.epoch, batch.version.purge_generation) != (
                cached.version.epoch, cached.version.purge_generation):
            extend, batch = False, store.read_vectors(app, 0)  # a delete landed between the reads
            if batch.version is None:
                return None
        total = dequantize(batch.vectors).sum(axis=0, dtype=np.float64) if len(batch.ids) else 0.0
        count = len(batch.ids)
        if extend and cached is not None:
            total, count = cached.total + total, cached.count + count
        max_id = int(batch.ids[-1]) if len(batch.ids) else (cached.max_id if extend and cached else 0)
        cached = _Sum(batch.version, max_id, np.asarray(total, np.float64), count)
        with _lock:
            _sums.setdefault(store, {})[app] = cached
    if not cached.count:
        return None
    return (cached.total / cached.count).astype(np.float32)


_exact: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def exact_index(store: Store, dense: object, filtered: ExactDenseIndex | None) -> ExactDenseIndex:
    """An exact scan of the app's vectors, for the candidates' products: the filtered search's, the
    dense index itself when it is one, else one kept per store (an app a graph index serves gets
    an exact copy of its int8 vectors, 384 bytes a chunk, on its first question in another
    language)."""
    if filtered is not None:
        return filtered
    if isinstance(dense, ExactDenseIndex):
        return dense
    with _lock:
        if store not in _exact:
            _exact[store] = ExactDenseIndex(store)
        return _exact[store]


def _products(exact: ExactDenseIndex, app: str, vector: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Each candidate's cosine with ``vector`` (a unit vector), in the order of ``ids``."""
    scored = dict(exact.search(app, vector[None, :].astype(np.float32), len(ids), allowed=np.sort(ids)))
    return np.array([scored.get(int(cid), 0.0) for cid in ids], dtype=np.float64)


def centered(cosines: np.ndarray, query_mean: np.ndarray, item_mean: np.ndarray, mean_sq: float,
             c: float) -> np.ndarray:
    """[query, item] cosines of unit vectors, after c x the mean is taken off both (``query_mean``:
    each query's product with the mean; ``item_mean``: each item's)."""
    query_norm = np.sqrt(np.maximum(1.0 - 2.0 * c * query_mean + c * c * mean_sq, 1e-12))
    item_norm = np.sqrt(np.maximum(1.0 - 2.0 * c * item_mean + c * c * mean_sq, 1e-12))
    top = cosines - c * query_mean[:, None] - c * item_mean[None, :] + c * c * mean_sq
    return top / (query_norm[:, None] * item_norm[None, :])


def centered_scores(exact: ExactDenseIndex, app: str, ids: Sequence[int], queries: np.ndarray, mean: np.ndarray,
                    c: float) -> np.ndarray:
    """Per candidate chunk, its best centered cosine over the query vectors (unit rows)."""
    order = np.asarray(ids, dtype=np.int64)
    norm = float(np.linalg.norm(mean))
    item_mean = _products(exact, app, mean / max(norm, 1e-12), order) * norm
    plain = np.stack([_products(exact, app, q, order) for q in queries])
    return centered(plain, queries.astype(np.float64) @ mean, item_mean, norm * norm, c).max(axis=0)


def centered_sentences(sentences: np.ndarray, queries: np.ndarray, mean: np.ndarray, c: float) -> np.ndarray:
    """[query, sentence] centered cosines (unit rows in)."""
    mean64 = mean.astype(np.float64)
    return centered(queries.astype(np.float64) @ sentences.T.astype(np.float64), queries.astype(np.float64) @ mean64,
                    sentences.astype(np.float64) @ mean64, float(mean64 @ mean64), c)
