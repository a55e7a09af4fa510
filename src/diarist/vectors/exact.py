"""Exact dense search: every vector of the app against the query.

The app's int8 vectors are held per process as they are stored (a quarter of a float32 matrix)
with their norms. Small apps are scored whole in float32, as ever. Above
``FULL_SCAN_MAX`` rows a first pass takes exact integer products with the query quantised to
[-64, 64] (``int8_scan``): they bound every row's cosine from above, off by at most the norm of the
query's rounding error. The rows with the best bounds are scored in float32; if the depth-th
best of those beats every bound left out, no other row can be in the top, which is the float32
scan's (the same rows; a score may differ from a whole-matrix product in the last bit).
Otherwise four times as many rows are scored, up to all of them.

The cache is valid for one ``AppVersion``: the same epoch and generation reuse it; new writes
without deletions extend it with the rows after its last id; a deletion, or another epoch (the
app was deleted and created again, possibly under a reused integer id), rebuilds it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..embed.base import dequantize, row_norms
from ..errors import EmbedderMismatch
from ..ranking import top
from ..store.base import AppVersion, Store
from . import int8_scan
from .base import DenseIndex

#: Apps (or filtered sets) of at most this many rows are scored whole in float32.
FULL_SCAN_MAX = 4096
#: Rows scored in float32 per row asked for, on the first try (the bound held on 100 of 100
#: questions at 100k with 2; see BENCHMARKS.md).
CANDIDATES_PER_DEPTH = 2
#: Slack for float32 rounding in the bounds and the scores (each ~1e-6 of a cosine).
ROUNDING_MARGIN = 1e-5
#: ``best_keys`` reads a threshold off every this-many-th key.
SAMPLE_STRIDE = 16


@dataclass(frozen=True)
class _Matrix:
    version: AppVersion
    max_id: int
    ids: np.ndarray  # int64, ascending
    packed: int8_scan.PackedProducts | None  # the first rows, prepacked for the int8 kernel
    tail: np.ndarray  # uint8 (n - len(packed), dim): the rows after them, as kernel codes
    norms: np.ndarray  # float32 (n,): |int8 vector| as ``dequantize`` computes it (1 for a zero vector)

    @property
    def dim(self) -> int:
        return self.tail.shape[1]

    def rows(self, picked: np.ndarray | None = None) -> np.ndarray:
        """int8 vectors of the rows at these positions (None: every row, in order)."""
        if self.packed is None:
            return int8_scan.int8_of(self.tail if picked is None else self.tail[picked])
        if picked is None:
            return np.vstack([self.packed.vectors, int8_scan.int8_of(self.tail)])
        if not len(self.tail):
            return self.packed.vectors[picked]
        split = len(self.packed)
        out = np.empty((len(picked), self.dim), np.int8)
        head = picked < split
        out[head] = self.packed.vectors[picked[head]]
        out[~head] = int8_scan.int8_of(self.tail[picked[~head] - split])
        return out

    def products(self, queries: np.ndarray) -> np.ndarray:
        """int32 (m, n): the int8 queries' dot products with every row."""
        if self.packed is None:
            return int8_scan.products(self.tail, queries)
        if not len(self.tail):
            return self.packed(queries)
        return np.hstack([self.packed(queries), int8_scan.products(self.tail, queries)])


def cosines(vectors: np.ndarray, queries: np.ndarray, norms: np.ndarray | None = None) -> np.ndarray:
    """Each int8 row's best cosine over the queries, as the float32 scan has always scored it.
    ``norms`` (``row_norms`` of these rows, cached): the same floats, without recomputing them."""
    if norms is None:
        unit = dequantize(vectors)
    else:
        unit = np.asarray(vectors).astype(np.float32)
        unit /= norms[:, None]
    product = unit @ queries.T
    # One query: its column as is (the same values; no reduction pass over every row).
    return product[:, 0] if product.shape[1] == 1 else product.max(axis=1)


def _pack(packed: int8_scan.PackedProducts | None, tail: np.ndarray):
    """Prepack the tail's rows into the kernel's matrix once they are a sizeable share (a pack
    costs ~0.1 s per 100k rows; unpacked rows cost ~2x as much per query)."""
    count = len(tail) + (len(packed) if packed is not None else 0)
    if count <= FULL_SCAN_MAX or len(tail) <= max(FULL_SCAN_MAX, count // 32):
        return packed, tail
    rows = int8_scan.int8_of(tail) if packed is None else np.vstack([packed.vectors, int8_scan.int8_of(tail)])
    return int8_scan.PackedProducts(rows), tail[:0]


class ExactDenseIndex(DenseIndex):
    def __init__(self, store: Store):
        self.store = store
        self._cache: dict[str, _Matrix] = {}
        self._lock = threading.Lock()

    def forget(self, app: str) -> None:
        with self._lock:
            self._cache.pop(app, None)

    def _matrix(self, app: str, version: AppVersion | None = None) -> _Matrix | None:
        """The app's matrix as of ``version`` (None: read it; a caller that just read it, the
        graph index, hands it on: one statement a question fewer)."""
        if version is None:
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
        ids, packed, tail = batch.ids, None, int8_scan.codes_of(np.asarray(batch.vectors, np.int8))
        norms = row_norms(batch.vectors)
        if extend and cached is not None and len(cached.ids):
            ids = np.concatenate([cached.ids, ids])
            packed, tail = cached.packed, np.vstack([cached.tail, tail]) if len(tail) else cached.tail
            norms = np.concatenate([cached.norms, norms])
        if not len(ids):
            tail = tail.reshape(0, tail.shape[1] if tail.ndim == 2 else 0)
        packed, tail = _pack(packed, tail)
        fresh = _Matrix(batch.version, int(ids[-1]) if len(ids) else 0, ids, packed, tail, norms)
        with self._lock:
            self._cache[app] = fresh
        return fresh

    def search(self, app: str, queries: np.ndarray, depth: int, allowed: np.ndarray | None = None,
               version: AppVersion | None = None) -> list[tuple[int, float]]:
        """``allowed`` (ascending chunk ids): only those may rank, filtered before the top is cut.
        ``version``: the app's version as the caller just read it (None: read here)."""
        cache = self._matrix(app, version)
        if cache is None or not len(cache.ids):
            return []
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if queries.shape[1] != cache.dim:
            raise EmbedderMismatch(
                f"query vectors have {queries.shape[1]} dimensions, the index of app {app!r} {cache.dim}"
            )
        rows = None if allowed is None else np.flatnonzero(np.isin(cache.ids, allowed, assume_unique=True))
        count = len(cache.ids) if rows is None else len(rows)
        if count <= max(FULL_SCAN_MAX, depth):
            ids = cache.ids if rows is None else cache.ids[rows]
            norms = cache.norms if rows is None else cache.norms[rows]
            return top(ids, cosines(cache.rows(rows), queries, norms), depth)
        return _bounded_top(cache, queries, depth, rows)


def _bounded_top(cache: _Matrix, queries: np.ndarray, depth: int, rows: np.ndarray | None) -> list[tuple[int, float]]:
    """The float32 scan's top, from integer products and an upper bound on every cosine."""
    keys, scale, slack = upper_bounds(cache, queries)
    if rows is not None:
        keys = keys[rows]
    count = len(keys)
    wanted = min(count, CANDIDATES_PER_DEPTH * depth)
    while True:
        picked = best_keys(keys, wanted)
        chosen = picked if rows is None else rows[picked]
        scores = cosines(cache.rows(chosen), queries, cache.norms[chosen])
        if wanted >= count:
            break
        # Every row left out has a bound at most the smallest picked one: if the depth-th best
        # cosine picked is over it, no row left out can be in (or tie into) the top.
        depth_th = np.partition(scores, len(scores) - depth)[len(scores) - depth]
        if depth_th > float(keys[picked].min()) / scale + slack:
            break
        wanted = min(count, wanted * 4)
    return top(cache.ids[chosen], scores, depth)


def best_keys(keys: np.ndarray, wanted: int) -> np.ndarray:
    """Positions of the ``wanted`` largest keys (all of them when there are no more): every
    key left out is at most the smallest one picked.

    A threshold read off every SAMPLE_STRIDE-th key (where 1.5x as many of them would fall
    above it) and one comparison over all keys leave a few hundred to select from, instead
    of a selection over every row (0.14 ms at 100k rows). Should the sample mislead (fewer
    than ``wanted`` above it, or far more), the full selection decides."""
    count = len(keys)
    if wanted >= count:
        return np.arange(count)
    sample = keys[::SAMPLE_STRIDE]
    place = (3 * wanted) // (2 * SAMPLE_STRIDE)
    if 1 <= place < len(sample) // 4:
        threshold = np.partition(sample, len(sample) - place)[len(sample) - place]
        above = np.flatnonzero(keys >= threshold)
        if wanted <= len(above) <= 4 * wanted:
            return above[np.argpartition(keys[above], len(above) - wanted)[len(above) - wanted :]]
    return np.argpartition(keys, count - wanted)[count - wanted :]


def upper_bounds(cache: _Matrix, queries: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(keys, scale, slack): no float32 cosine of row i with any query exceeds
    keys[i] / scale + slack, and the keys order the rows as those bounds do.

    Each query q is scaled so its largest component is 64 and rounded: q = q8 / s + e. For a
    unit row v, q . v = (q8 . v) / s + e . v <= (q8 . v) / s + |e|. The integer products q8 . v8
    come from the int8 kernel; v = v8 / |v8|. One query: the keys are (q8 . v), the affine map
    is left to the few rows compared (two passes over every row saved).
    """
    quantised, scales = int8_scan.quantise(queries)
    errors = np.linalg.norm(queries - quantised / scales[:, None], axis=1) + ROUNDING_MARGIN
    products = cache.products(quantised)
    # In float32 (half the bytes of float64, for the selection too): a key's rounding, ~1e-7 of
    # a cosine, is inside the slack's ROUNDING_MARGIN.
    keys = np.divide(products[0], cache.norms, dtype=np.float32)
    if len(queries) == 1:
        return keys, float(scales[0]), float(errors[0])
    keys *= np.float32(1.0 / scales[0])
    keys += np.float32(errors[0])
    for j in range(1, len(queries)):
        other = np.divide(products[j], cache.norms, dtype=np.float32)
        other *= np.float32(1.0 / scales[j])
        other += np.float32(errors[j])
        np.maximum(keys, other, out=keys)
    return keys, 1.0, 0.0
