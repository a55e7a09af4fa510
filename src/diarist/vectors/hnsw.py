"""Approximate dense search: a usearch HNSW graph over the int8 vectors, re-ranked exactly.

The graph proposes candidates; their scores are then computed exactly, from the same int8
vectors and with the same arithmetic as ``ExactDenseIndex`` (dequantise, renormalise, dot), so
every score returned equals the exact path's score of that chunk: only which chunks make the
depth can differ (recall), never a score or the order among those found.

One graph per app and epoch, held per process and persisted beside the database, in the
folder ``<database>.hnsw/`` (never a file SQLite or a backup of the database reads; a derived
cache, rebuilt from the store when missing, stale or unreadable — backups need not copy it):

    <apphash>-<epoch>.json               which files hold the graph, and the version they cover
    <apphash>-<epoch>-<token>.usearch    the graph
    <apphash>-<epoch>-<token>.ids.npy    chunk ids, ascending

The int8 vectors live in the graph file only (usearch keeps each node's vector): the exact
re-rank reads the candidates' vectors back from it. A second copy beside it doubled the memory
of a large app (1M chunks: 384 MB resident twice over) and was copied whole on every catch-up.

Kept current by version, like the exact cache: on each search the index reads the app's
``AppVersion``; new writes add the chunks after its last id (``read_vectors(app, last id)``);
a write that removed chunks (``purge_generation`` moved) removes from the graph every id the
store no longer holds (one ``read_vectors(app, 0)``), so a deleted chunk never comes back.
Another epoch (the app deleted and created again) starts a new graph.

Below ``min_vectors`` (the measured crossover) the exact scan is faster and answers instead.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Loaded before usearch on purpose: with usearch's extension loaded first, a later import of
# onnxruntime (the default embedder) crashes the process (segfault; usearch 2.26.6 with
# onnxruntime 1.32.0). onnx_minilm first sets ORT_DISABLE_TELEMETRY, which must precede it too.
from ..embed import onnx_minilm as _embedder_first  # noqa: F401
import onnxruntime as _onnxruntime_first  # noqa: E402,F401,I001

from ..embed.base import dequantize, quantize
from ..errors import EmbedderMismatch, MissingDependency, StoreError
from ..files import not_regular
from ..ranking import top
from ..store.base import AppVersion, Store
from .base import DenseIndex
from .exact import ExactDenseIndex, cosines

log = logging.getLogger("diarist")

#: Below this many chunks in an app the exact scan answers (faster there, and exact). Measured
#: on 2 cores, hybrid search p50 with the int8 exact scan against the graph: 3.8 / 8.0 ms
#: against 5.6 / 6.9 ms at 100k / 300k chunks; the lines cross near 220k (BENCHMARKS.md).
CROSSOVER = 200_000
CONNECTIVITY = 16
EXPANSION_ADD = 128
#: Breadth of the graph walk. recall@200 against exact on the scale bench's vectors (2x depth
#: re-ranked; benchmarks/hnsw_sweep.py): 1,024 -> 0.985 / 0.984 / 0.996 at 100k / 200k / 1M,
#: 1,536 -> 0.992 / 0.990 / 0.996. The graph serves from CROSSOVER chunks up, where the issue's
#: bar is 0.98, and at 1M the wider walk cost 1.5 ms of a 10 ms budget (BENCHMARKS.md, stop 22).
EXPANSION_SEARCH = 1024
#: The graph proposes this many candidates per depth asked (re-ranked exactly).
OVERSAMPLE = 2
#: Persist after this many vectors were added since the last save (and on close).
SAVE_EVERY = 2_000


def available() -> bool:
    try:
        import usearch.index  # noqa: F401
    except ImportError:
        return False
    return True


def _usearch():
    try:
        from usearch.index import Index
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependency(
            "the hnsw dense index needs usearch: pip install 'diarist[ann]'"
        ) from exc
    return Index


@dataclass
class _Graph:
    version: AppVersion
    ids: np.ndarray  # int64 ascending: the chunks the index holds
    index: object  # usearch Index (None until the first vector)
    unsaved: int = 0
    viewed: str | None = None  # the file the index is a read-only memory map of, if any

    @property
    def dim(self) -> int:
        return int(self.index.ndim) if self.index is not None else 0

    def vectors_of(self, keys: np.ndarray) -> np.ndarray:
        """The int8 vectors the index holds for these keys (each one it holds), in order."""
        if not len(keys):
            return np.zeros((0, self.dim), np.int8)
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        compiled = getattr(self.index, "_compiled", None)
        if compiled is not None and hasattr(compiled, "get_many"):
            # The public ``get`` wraps each row in Python (~2 ms for 400 rows); the compiled
            # call it wraps returns the same rows in a fraction of it.
            rows = compiled.get_many(keys, self.index.dtype)
        else:
            rows = self.index.get(keys)
        # One row array per key: concatenated whole, where vstack made each 2-d first (0.4 against
        # 0.1 ms for 400 rows).
        return np.concatenate(rows).view(np.int8).reshape(len(keys), -1)


def _app_hash(app: str) -> str:
    return hashlib.sha256(app.encode()).hexdigest()[:16]


class HnswDenseIndex(DenseIndex):
    """``min_vectors``: apps with fewer vectors are answered by the exact scan (0: always the
    graph). ``directory``: where graphs persist (None: held in memory only)."""

    def __init__(
        self,
        store: Store,
        directory: str | os.PathLike[str] | None = None,
        *,
        min_vectors: int = CROSSOVER,
        connectivity: int = CONNECTIVITY,
        expansion_add: int = EXPANSION_ADD,
        expansion_search: int = EXPANSION_SEARCH,
        oversample: int = OVERSAMPLE,
    ):
        _usearch()
        self.store = store
        self.directory = Path(directory) if directory is not None else None
        if self.directory is not None and (what := not_regular(self.directory)) not in (None, "a folder"):
            raise StoreError(f"{self.directory} is {what}: diarist keeps the HNSW graphs in that folder; move it away")
        self.min_vectors = min_vectors
        self.connectivity = connectivity
        self.expansion_add = expansion_add
        self.expansion_search = expansion_search
        self.oversample = oversample
        self.exact = ExactDenseIndex(store)
        self._graphs: dict[str, _Graph] = {}
        self._lock = threading.RLock()
        #: With ``min_vectors``: build a large app's first graph in a thread, exact meanwhile.
        self.background = bool(min_vectors)
        self._building: dict[str, threading.Thread] = {}
        # Apps found under min_vectors, at the version they were counted at: a small app's
        # searches skip the count and the graph-file check until it is written again (they
        # cost ~10 ms a query at 10k chunks, more than the exact scan itself).
        self._small: dict[str, AppVersion] = {}

    def _exact_serves(self, app: str, version: AppVersion) -> bool:
        """Whether the exact scan answers this search: the app has no graph and is under
        min_vectors (chunks counted through the store's index, an upper bound on its vectors),
        or its first graph is being built in the background (started here; minutes at 100k
        chunks on 2 cores)."""
        if self._small.get(app) == version:
            return True
        with self._lock:
            graph = self._graphs.get(app)
            no_graph = graph is None or graph.version.epoch != version.epoch
        if not (self.min_vectors and no_graph):
            return False
        if self.directory is not None and self._read_meta(app, version.epoch) is not None:
            return False
        counts = self.store.counts(app)
        if counts is None or counts.chunks < self.min_vectors:
            self._small[app] = version
            return True
        if self.background:
            self._build_in_background(app)
            return True
        return False

    def _build_in_background(self, app: str) -> None:
        with self._lock:
            if app in self._building:
                return
            thread = threading.Thread(target=self._build_fresh, args=(app,), daemon=True,
                                      name=f"diarist-hnsw-{app}")
            self._building[app] = thread
        thread.start()

    def _build_fresh(self, app: str) -> None:
        """A whole graph from one read of the app's vectors, built outside the lock; installed
        if no other graph of that epoch arrived meanwhile (the next search catches it up)."""
        try:
            batch = self.store.read_vectors(app, 0)
            if batch.version is None:
                return
            graph = _Graph(batch.version, np.zeros(0, np.int64), None)
            self._add(graph, batch.ids, batch.vectors)
            with self._lock:
                current = self._graphs.get(app)
                if current is None or current.version.epoch != batch.version.epoch:
                    self._graphs[app] = graph
                    if graph.unsaved and not self._stale_after_removal(app, graph):
                        self._save(app, graph)  # (a delete meanwhile: the next search saves it)
        except Exception as exc:  # the exact scan keeps answering; the next search tries again
            log.warning("hnsw index of app %r not built: %s", app, exc)
        finally:
            with self._lock:
                self._building.pop(app, None)

    def wait(self) -> None:
        """Until every background build is done (tests, benchmarks, ``close``)."""
        while True:
            with self._lock:
                threads = list(self._building.values())
            if not threads:
                return
            for thread in threads:
                thread.join()

    # -- state ------------------------------------------------------------------------------

    def set_expansion_search(self, expansion_search: int) -> None:
        """The walk's breadth (usearch's ``expansion_search``) for every graph, the loaded ones
        too: the speed/recall setting ``benchmarks/hnsw_sweep.py`` varies."""
        with self._lock:
            self.expansion_search = expansion_search
            for graph in self._graphs.values():
                if graph.index is not None:
                    graph.index.expansion_search = expansion_search

    def forget(self, app: str) -> None:
        """The app was deleted: drop its graph, here and on disk (no vector of it is left)."""
        with self._lock:
            self._graphs.pop(app, None)
            self._small.pop(app, None)
            self.exact.forget(app)
            self.remove_files(app)

    def close(self) -> None:
        # A background build still running is left to finish or fail on the closed store (it
        # is logged, never raised): the exact scan served meanwhile, the next open builds again.
        with self._lock:
            for app, graph in list(self._graphs.items()):
                try:
                    if self._stale_after_removal(app, graph):
                        self.purge(app)  # never save a graph that holds a vector deleted meanwhile
                    elif graph.unsaved:
                        self._save(app, graph)
                except Exception as exc:  # noqa: BLE001 - a derived cache: the next open rebuilds
                    log.warning("hnsw index of app %r not saved on close: %s", app, exc)

    def _stale_after_removal(self, app: str, graph: _Graph) -> bool:
        version = self.store.app_version(app)
        return version is None or version.epoch != graph.version.epoch or (
            version.purge_generation != graph.version.purge_generation)

    def purge(self, app: str) -> None:
        """After a write that removed chunks of the app (a delete, a replace): take their
        vectors out of the graph now, in memory and in its files, rather than at the next
        search, so that no deleted vector is left on disk when the delete returns."""
        version = self.store.app_version(app)
        if version is None:
            self.forget(app)
            return
        with self._lock:
            graph = self._graphs.get(app)
            held = graph is not None and graph.version.epoch == version.epoch
            if held and graph.version.purge_generation == version.purge_generation:
                return
            meta = self._read_meta(app, version.epoch) if self.directory is not None else None
            if not held and (meta is None or meta["purge_generation"] == version.purge_generation):
                return  # no graph of this app holds a removed vector
            try:
                self._graph(app, version)
            except _Gone:
                self.forget(app)

    def state(self, app: str) -> dict:
        """What ``diarist doctor`` shows: whether a graph serves the app, and its size."""
        version = self.store.app_version(app)
        with self._lock:
            graph = self._graphs.get(app)
        meta = self._read_meta(app, version.epoch) if version is not None and self.directory else None
        return {
            "loaded": graph is not None and version is not None and graph.version.epoch == version.epoch,
            "vectors": len(graph.ids) if graph is not None else (meta or {}).get("count"),
            "persisted": meta is not None,
            "current": graph is not None and graph.version == version,
            "min_vectors": self.min_vectors,
        }

    def recall(self, app: str, samples: int = 20, depth: int = 50) -> float | None:
        """Mean recall@depth of the graph against the exact scan, on some of the app's own
        vectors as queries (``diarist doctor``, never ``/health``); None when the exact scan
        serves the app. The app's vectors are read once for all samples (the exact scan's cache
        was read again per sample: the whole matrix 20 times at 1M chunks)."""
        with self._lock:
            graph = self._graphs.get(app)
        if graph is None or not len(graph.ids):
            return None
        rng = np.random.default_rng(0)
        with self._lock:
            picks = np.sort(rng.choice(graph.ids, min(samples, len(graph.ids)), replace=False))
            queries = dequantize(graph.vectors_of(picks))
        batch = self.store.read_vectors(app, 0)
        found = []
        for query in queries:
            want = top(batch.ids, cosines(batch.vectors, query[None]), depth)
            if not len(want):
                continue
            # Tie-aware: a chunk scored as high as the exact depth-th is as good as any of the
            # tied ones the exact scan happened to keep (the graph's scores are exact ones).
            bar = float(want[-1][1]) - 1e-6
            got = self.search(app, query[None], depth)
            found.append(min(sum(score >= bar for _, score in got), len(want)) / len(want))
        return float(np.mean(found)) if found else None

    # -- persistence ------------------------------------------------------------------------

    def _stem(self, app: str, epoch: str) -> str:
        return f"{_app_hash(app)}-{epoch}"

    def _read_meta(self, app: str, epoch: str) -> dict | None:
        assert self.directory is not None
        path = self.directory / f"{self._stem(app, epoch)}.json"
        try:
            if (what := not_regular(path)) is not None:  # a FIFO hung the read, /dev/zero filled memory
                log.warning("hnsw index of app %r unreadable, rebuilding: %s is %s", app, path, what)
                return None
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def _load(self, app: str, version: AppVersion) -> _Graph | None:
        if self.directory is None:
            return None
        meta = self._read_meta(app, version.epoch)
        if meta is None:
            return None
        try:
            base = self.directory / meta["token"]
            for part in (f"{base}.ids.npy", f"{base}.usearch"):
                if (what := not_regular(part)) is not None:
                    raise OSError(f"{part} is {what}")
            ids = np.load(f"{base}.ids.npy")
            # A memory map: a cold start reads only the pages a query touches (the first write
            # loads it for real, see _writable).
            index = _usearch().restore(f"{base}.usearch", view=True)
            if index is None or len(index) != len(ids):
                return None
            index.expansion_search = self.expansion_search  # not part of the saved file
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            log.warning("hnsw index of app %r unreadable, rebuilding: %s", app, exc)
            return None
        saved = AppVersion(version.epoch, meta["generation"], meta["purge_generation"])
        return _Graph(saved, ids, index, viewed=f"{base}.usearch")

    def _save(self, app: str, graph: _Graph) -> None:
        if self.directory is None:
            return
        stem = self._stem(app, graph.version.epoch)
        token = f"{stem}-{secrets.token_hex(4)}"
        try:
            self.directory.mkdir(exist_ok=True)
            base = self.directory / token
            graph.index.save(f"{base}.usearch")
            np.save(f"{base}.ids.npy", graph.ids)
            meta = {"token": token, "generation": graph.version.generation,
                    "purge_generation": graph.version.purge_generation, "count": len(graph.ids),
                    "max_id": int(graph.ids[-1]) if len(graph.ids) else 0}
            tmp = self.directory / f"{stem}.json.{secrets.token_hex(4)}"
            tmp.write_text(json.dumps(meta))
            os.replace(tmp, self.directory / f"{stem}.json")
        except OSError as exc:  # a read-only folder: the graph serves this process only
            log.warning("hnsw index of app %r not saved: %s", app, exc)
            return
        graph.unsaved = 0
        # Older files of this app: other tokens of this epoch, and every other epoch.
        for path in self.directory.glob(f"{_app_hash(app)}-*"):
            if not path.name.startswith(token) and path.name != f"{stem}.json":
                try:
                    path.unlink()
                except OSError:
                    pass

    def remove_files(self, app: str) -> None:
        """Delete the app's persisted graphs (``diarist reindex`` rebuilds them)."""
        if self.directory is None or not self.directory.exists():
            return
        for path in self.directory.glob(f"{_app_hash(app)}-*"):
            try:
                path.unlink()
            except OSError:
                pass

    # -- upkeep -----------------------------------------------------------------------------

    def _new_index(self, dim: int):
        return _usearch()(
            ndim=dim, metric="cos", dtype="i8", connectivity=self.connectivity,
            expansion_add=self.expansion_add, expansion_search=self.expansion_search,
        )

    def _add(self, graph: _Graph, ids: np.ndarray, vectors: np.ndarray, app: str | None = None) -> None:
        if not len(ids):
            return
        if graph.index is None:
            graph.index = self._new_index(vectors.shape[1])
        self._writable(graph, app)
        graph.index.add(ids.astype(np.uint64), vectors, threads=os.cpu_count() or 1)
        graph.ids = np.concatenate([graph.ids, ids]) if len(graph.ids) else ids
        graph.unsaved += len(ids)

    def _writable(self, graph: _Graph, app: str | None) -> None:
        """A memory-mapped graph is read-only: load it before it is extended or pruned. If the
        file is gone or was replaced meanwhile (another process saved a newer graph), the graph
        is built again from the store's vectors of the chunks it held."""
        if graph.viewed is None:
            return
        try:
            index = _usearch().restore(graph.viewed)
            if index is None or len(index) != len(graph.ids):
                raise ValueError("replaced")
            index.expansion_search = self.expansion_search
        except (OSError, ValueError, RuntimeError):
            if app is None:
                raise
            batch = self.store.read_vectors(app, 0)
            keep = np.isin(batch.ids, graph.ids, assume_unique=True)
            index = self._new_index(batch.vectors.shape[1] if len(batch.ids) else graph.dim)
            if keep.any():
                index.add(batch.ids[keep].astype(np.uint64), batch.vectors[keep], threads=os.cpu_count() or 1)
            graph.ids = batch.ids[keep]
        graph.index, graph.viewed = index, None

    def _graph(self, app: str, version: AppVersion) -> _Graph:
        """The app's graph, brought up to the store's current state (caller holds the lock)."""
        graph = self._graphs.get(app)
        if graph is None or graph.version.epoch != version.epoch:
            graph = self._load(app, version) or _Graph(
                AppVersion(version.epoch, -1, version.purge_generation), np.zeros(0, np.int64), None,
            )
            self._graphs[app] = graph
        if graph.version == version:
            return graph
        if graph.version.purge_generation != version.purge_generation:
            batch = self.store.read_vectors(app, 0)
            if batch.version is None or batch.version.epoch != version.epoch:
                self._graphs.pop(app, None)
                raise _Gone
            keep = np.isin(graph.ids, batch.ids, assume_unique=True)
            if not keep.all():
                self._writable(graph, app)
                keep = np.isin(graph.ids, batch.ids, assume_unique=True)  # a rebuild may have pruned
                _remove_and_scrub(graph.index, graph.ids[~keep].astype(np.uint64))
                graph.ids = graph.ids[keep]
                graph.unsaved += len(graph.ids) + SAVE_EVERY  # saved now: no deleted vector stays on disk
            last = int(graph.ids[-1]) if len(graph.ids) else 0
            new = batch.ids > last
            self._add(graph, batch.ids[new], batch.vectors[new], app)
        else:
            batch = self.store.read_vectors(app, int(graph.ids[-1]) if len(graph.ids) else 0)
            if batch.version is None or batch.version.epoch != version.epoch:
                self._graphs.pop(app, None)
                raise _Gone
            if batch.version.purge_generation != graph.version.purge_generation:
                # A delete landed between the two reads: reconcile at the newer version.
                graph.version = AppVersion(version.epoch, -1, -1)
                return self._graph(app, batch.version)
            self._add(graph, batch.ids, batch.vectors, app)
        graph.version = batch.version
        # A save rewrites every file (~1 s at 1M vectors): after SAVE_EVERY new vectors or 5%
        # of the graph, whichever is more, after a removal, and for a graph never saved.
        if graph.unsaved >= max(SAVE_EVERY, len(graph.ids) // 20) or (
            graph.unsaved and len(graph.ids) == graph.unsaved
        ):
            self._save(app, graph)
        return graph

    def rebuild(self, app: str) -> int | None:
        """Build the app's graph from scratch (``diarist reindex``); returns its vector count
        (None: the app is under ``min_vectors``, the exact scan serves it)."""
        with self._lock:
            self.forget(app)
            version = self.store.app_version(app)
            if version is None:
                return 0
            counts = self.store.counts(app)
            if self.min_vectors and (counts is None or counts.chunks < self.min_vectors):
                return None
            try:
                graph = self._graph(app, version)
            except _Gone:
                return 0
            if graph.unsaved:
                self._save(app, graph)
            return len(graph.ids)

    # -- search -----------------------------------------------------------------------------

    def search(self, app: str, queries: np.ndarray, depth: int) -> list[tuple[int, float]]:
        version = self.store.app_version(app)
        if version is None:
            self.forget(app)
            return []
        if self._exact_serves(app, version):
            return self.exact.search(app, queries, depth, version=version)
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        # Under the lock: the catch-up and the graph walk (usearch does not promise a search
        # beside a removal); the exact re-rank reads the snapshot taken here, outside it.
        with self._lock:
            try:
                graph = self._graph(app, version)
            except _Gone:
                return []
            ids = graph.ids
            if not len(ids):
                return []
            if queries.shape[1] != graph.dim:
                raise EmbedderMismatch(
                    f"query vectors have {queries.shape[1]} dimensions, the index of app {app!r} {graph.dim}"
                )
            # Asked for as many candidates as the graph holds: score them all. A graph walk
            # need not reach every node (a thread-built graph can leave a few unlinked), and
            # "everything" must mean everything.
            if depth * self.oversample >= len(ids):
                keys = ids
            else:
                found = graph.index.search(quantize(queries), depth * self.oversample, exact=False)
                keys = np.asarray(found.keys, dtype=np.int64).reshape(-1)
                keys = np.unique(keys[keys >= 0])  # several queries: one candidate set
                rows = np.minimum(np.searchsorted(ids, keys), len(ids) - 1)
                keys = keys[ids[rows] == keys]  # ids the graph holds, never a removed one
            # Read under the lock too: the index's vectors change with a write's catch-up.
            vectors = graph.vectors_of(keys)
        self.exact.forget(app)  # the graph serves: no second copy of the matrix
        scores = cosines(vectors, queries)
        return top(keys, scores, depth)


#: Keys of the placeholders that overwrite removed vectors (never a chunk id: those are < 2**63).
_PLACEHOLDER_KEY = 2**63


def _remove_and_scrub(index, keys: np.ndarray) -> None:
    """Remove ``keys`` from the graph and overwrite their vectors.

    usearch's ``remove`` only marks a node removed: its int8 vector stays in the index, and in
    every file ``save`` writes, until the slot is reused (and ``compact=True`` keeps it too).
    The next ``add`` reuses freed slots, so adding as many placeholder vectors and removing
    them again leaves constant bytes where the deleted vectors were (tests/store/test_hnsw_forgets.py
    reads the saved files for them)."""
    if not len(keys):
        return
    index.remove(keys)
    placeholders = np.arange(_PLACEHOLDER_KEY, _PLACEHOLDER_KEY + len(keys), dtype=np.uint64)
    index.add(placeholders, np.ones((len(keys), int(index.ndim)), np.int8))
    index.remove(placeholders)


class _Gone(Exception):
    """The app was deleted while its graph was being brought up to date."""
