"""Okapi BM25 over posting blocks: the math as small pure functions, and the channel's search.

BM25 (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009),
with the non-negative idf of Lucene (also bm25s' default "lucene" method):

    idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))
    score(t, d) = idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ranking import Ranking, top
from ..store.base import DocLengths, LexicalUnavailable, Store
from .postings import BLOCK_BITS
from .state import status_reason

try:  # the compiled accumulation (setup.py builds it where a C compiler is present)
    from . import _accumulate as kernel
except ImportError:  # numpy does the same work, to the same floats
    kernel = None
if sys.byteorder != "little":  # it reads the blocks' little-endian uint16 as native
    kernel = None

K1 = 1.5
B = 0.75


def describe() -> str:
    """What scores BM25 in this process (``diarist doctor`` reports it)."""
    if kernel is not None:
        return "compiled (lexical/_accumulate.c)"
    return ("numpy, the same rankings, a few ms slower a question at a million chunks (the C "
            "extension is not built: reinstall where a C compiler is present)")


def idf(n_docs: int, df: np.ndarray | int) -> np.ndarray:
    """Lucene's non-negative BM25 idf."""
    df = np.asarray(df, dtype=np.float64)
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def length_norm(doc_len: np.ndarray, avgdl: float, k1: float = K1, b: float = B) -> np.ndarray:
    """The document-length part of BM25's denominator, ``k1 * (1 - b + b * |d| / avgdl)``."""
    return k1 * (1.0 - b + b * doc_len.astype(np.float64) / max(avgdl, 1e-9))


def term_scores(
    tf: np.ndarray, doc_len: np.ndarray, avgdl: float, term_idf: float, k1: float = K1, b: float = B
) -> np.ndarray:
    """BM25 contribution of one term to each document that contains it."""
    return normed_term_scores(tf, length_norm(doc_len, avgdl, k1, b), term_idf, k1)


def normed_term_scores(tf: np.ndarray, norm: np.ndarray, term_idf: float, k1: float = K1) -> np.ndarray:
    """``term_scores`` from each document's ``length_norm`` (the same floats, element by element).

    ``idf * tf * (k1 + 1) / (tf + norm)`` in that order, computed in place: one temporary
    instead of four, the same floats to the bit."""
    scores = tf.astype(np.float64)
    denominator = scores + norm
    scores *= term_idf
    scores *= k1 + 1.0
    scores /= denominator
    return scores


#: Lengths at or under this are read as uint16 and their norms looked up in a table.
MAX_TABLED_LENGTH = 65_535


@dataclass(frozen=True, eq=False)
class Layout:
    """How one lengths snapshot is addressed: chunk id -> position in the length array.

    ``table`` (int32, id - first id -> position, -1: none) when the ids are dense enough; none
    needed when they are contiguous (position = id - first id, the usual single-app file); a
    binary search otherwise. ``norms`` caches ``length_norm`` per (k1, b, avgdl): computed once
    per snapshot instead of once per posting of every query.

    ``short_lengths``: the lengths as uint16 when every one is a whole number that fits (BM25
    lengths count terms, so always in practice). A query then gathers 2 bytes per posting and
    looks its norm up in a table of one entry per length, instead of gathering 8 bytes from a
    norm per chunk: at a million chunks that gather was a third of the scoring time (1.4 ->
    0.4 ms for ~300k postings), and the table's entries are the same floats."""

    lengths: DocLengths
    contiguous: bool
    table: np.ndarray | None
    short_lengths: np.ndarray | None = None
    norms: dict = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, lengths: DocLengths) -> Layout:
        ids = lengths.ids
        short = _short(lengths.lengths)
        if not len(ids):
            return cls(lengths, True, None, short)
        span = int(ids[-1]) - int(ids[0]) + 1
        if span == len(ids):
            return cls(lengths, True, None, short)
        table = None
        if span < 8 * len(ids) + 1024:
            table = np.full(span, -1, np.int32 if len(ids) < 1 << 31 else np.int64)
            table[ids - ids[0]] = np.arange(len(ids))
        return cls(lengths, False, table, short)

    def positions(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions of ids in the length array, and which ids the snapshot holds at all."""
        first, n = (int(self.lengths.ids[0]) if len(self.lengths.ids) else 0), len(self.lengths.ids)
        if self.contiguous:
            pos = ids - first
            return pos, (pos >= 0) & (pos < n)
        if self.table is not None:
            offset = ids - first
            inside = (offset >= 0) & (offset < len(self.table))
            pos = np.where(inside, self.table[np.where(inside, offset, 0)], -1)
            return pos, pos >= 0
        pos = np.searchsorted(self.lengths.ids, ids)
        known = (pos < n) & (self.lengths.ids[np.minimum(pos, n - 1)] == ids) if n else np.zeros(len(ids), bool)
        return pos, known

    def block_positions(self, numbers: np.ndarray, per_block: np.ndarray,
                        offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Positions of the chunks one term's blocks address (block numbers, postings per block,
        offsets), and which the snapshot holds: None when it holds them all (the usual case,
        checked by the extremes instead of a mask per posting)."""
        n = len(self.lengths.ids)
        if self.contiguous:
            first = int(self.lengths.ids[0]) if n else 0
            pos = np.repeat((numbers << BLOCK_BITS) - first, per_block) + offsets
            if not len(pos) or (int(pos.min()) >= 0 and int(pos.max()) < n):
                return pos, None
            return pos, (pos >= 0) & (pos < n)
        pos, known = self.positions(np.repeat(numbers << BLOCK_BITS, per_block) + offsets)
        return pos, None if known.all() else known

    def norm(self, avgdl: float, k1: float, b: float) -> np.ndarray:
        """``length_norm`` of every chunk, in position order."""
        return self._cached(("chunks", avgdl, k1, b), lambda: length_norm(self.lengths.lengths, avgdl, k1, b))

    def norm_at(self, pos: np.ndarray, avgdl: float, k1: float, b: float) -> np.ndarray:
        """``length_norm`` of the chunks at these positions: the same floats as ``norm()[pos]``
        (the table holds ``length_norm`` of each whole length, computed by the same expression)."""
        short = self.short_lengths
        if short is None:
            return np.take(self.norm(avgdl, k1, b), pos)
        return np.take(self.length_table(avgdl, k1, b), np.take(short, pos))

    def length_table(self, avgdl: float, k1: float, b: float) -> np.ndarray:
        """``length_norm`` of each whole length from 0 to the longest chunk's (with short_lengths)."""
        short = self.short_lengths
        assert short is not None
        # The table's size is the snapshot's longest chunk: read once, when the table is built.
        return self._cached(("lengths", avgdl, k1, b), lambda: length_norm(
            np.arange(int(short.max()) + 1 if len(short) else 1, dtype=np.float64), avgdl, k1, b))

    def _cached(self, key: tuple, compute) -> np.ndarray:
        cached = self.norms.get(key)
        if cached is None:
            cached = compute()
            # One set of parameters at a time is the usual case: drop the others' arrays.
            for stale in [k for k in self.norms if k[0] == key[0]]:
                del self.norms[stale]
            self.norms[key] = cached
        return cached


def _short(lengths: np.ndarray) -> np.ndarray | None:
    """The lengths as uint16 when every one is a whole number from 0 to MAX_TABLED_LENGTH."""
    if lengths.dtype == np.uint16:
        return lengths
    if not len(lengths):
        return np.zeros(0, np.uint16)
    if float(lengths.min()) < 0 or float(lengths.max()) > MAX_TABLED_LENGTH:
        return None
    short = lengths.astype(np.uint16)
    return short if np.array_equal(short, lengths) else None


_pool: ThreadPoolExecutor | None = None
_pool_pid = 0
_pool_lock = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    """One pool for the whole process, one worker per core: every memory shares it, so a
    program that opens many memories (and never closes them) holds a few idle threads, not a
    few per memory. Concurrent searches each take a worker; more wait their turn."""
    global _pool, _pool_pid
    with _pool_lock:
        # A forked child inherits the pool object but none of its threads: a new pool there.
        if _pool is None or _pool_pid != os.getpid():
            _pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="diarist-bm25")
            _pool_pid = os.getpid()
        return _pool


class Deferred:
    """A ranking computed in the caller's thread on first ``result()``: the part of a
    ``Future`` the read path uses (``result``, ``cancel``, ``add_done_callback``)."""

    def __init__(self, compute: Callable[[], list[tuple[int, float]]]):
        self._compute: Callable[[], list[tuple[int, float]]] | None = compute
        self._value: list[tuple[int, float]] | None = None
        self._error: BaseException | None = None

    def result(self) -> list[tuple[int, float]]:
        if self._compute is not None:
            compute, self._compute = self._compute, None
            try:
                self._value = compute()
            except BaseException as exc:
                self._error = exc
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value

    def cancel(self) -> bool:
        """Never started (nothing asked for its result): it never will be."""
        if self._compute is None:
            return False
        self._compute = None
        self._value = []
        return True

    def add_done_callback(self, callback: Callable[[Deferred], Any]) -> None:
        callback(self)

    def exception(self) -> BaseException | None:
        return self._error


class LexicalChannel:
    """BM25 search over one store. Document lengths are cached per app and process, keyed on
    the app's version (an epoch never reused, and its write generation)."""

    RETRIES = 3  # reads racing a writer: re-read until the lengths and blocks agree

    def __init__(self, store: Store, compiled: bool = True):
        self.store = store
        # False: numpy scores even where the C extension is built (the same floats; benchmarks).
        self.compiled = compiled
        self._lengths: dict[str, DocLengths] = {}
        self._layouts: dict[str, Layout] = {}
        self._lock = threading.Lock()

    def _layout(self, app: str, lengths: DocLengths) -> Layout:
        """The addressing of one lengths snapshot, built once per snapshot."""
        with self._lock:
            cached = self._layouts.get(app)
        if cached is not None and cached.lengths is lengths:
            return cached
        layout = Layout.of(lengths)
        with self._lock:
            self._layouts[app] = layout
        return layout

    def _doc_lengths(self, app: str, version: object) -> DocLengths:
        with self._lock:
            cached = self._lengths.get(app)
        if cached is not None and cached.version == version:
            return cached
        fresh = self.store.doc_lengths(app)
        short = _short(fresh.lengths)
        if short is not None:
            # Kept as uint16 only: the float64 copy was 8 MB a million chunks, read by nothing
            # that the uint16 lengths cannot serve (the norms convert them as they did it).
            fresh = DocLengths(fresh.version, fresh.ids, short)
        with self._lock:
            self._lengths[app] = fresh
        return fresh

    def status(self, app: str) -> str | None:
        """None when the app's index is complete and current (or the app is empty), else why not."""
        read = self.store.read_postings(app, [])
        if read.version is None:
            return None
        return status_reason(read.stats, len(self._doc_lengths(app, read.version).ids))

    def submit(self, app: str, terms: Sequence[str] | Callable[[], Sequence[str]], depth: int, k1: float = K1,
               b: float = B, allowed: np.ndarray | None = None) -> Future:
        """``search`` in a worker thread, so that the caller's thread does other work meanwhile
        (the read path: the model embedding the question, outside the GIL). ``terms`` may be a
        function giving them: the question's analysis then runs in the worker too."""
        def rank() -> list[tuple[int, float]]:
            return self.search(app, terms() if callable(terms) else terms, depth, k1, b, allowed)

        try:
            return _workers().submit(rank)
        except RuntimeError:  # no new threads (the interpreter is shutting down): answer inline
            done: Future = Future()
            try:
                done.set_result(rank())
            except Exception as exc:  # noqa: BLE001 - handed to the caller, as the pool would
                done.set_exception(exc)
            return done

    def defer(self, app: str, terms: Sequence[str], depth: int, k1: float = K1, b: float = B,
              allowed: np.ndarray | None = None) -> Deferred:
        """``search`` in the caller's thread, when its result is first asked for (``Deferred``).

        The read path's default: handing the ranking to a worker thread cost more than it saved
        (on 2 busy cores the worker waited for the GIL behind the dense channel's Python, 5 ms a
        question against 1.1 ms; benchmarks/read_speed.py), and a search the floor answers
        without it never ranks it."""
        return Deferred(lambda: self.search(app, terms, depth, k1, b, allowed))

    def held(self, app: str, terms: Sequence[str]) -> int | None:
        """How many of the distinct terms occur anywhere in the app (the relevance floor's
        evidence); None when the index is not complete and current."""
        unique = sorted(set(terms))
        read = self.store.read_postings(app, unique)
        if read.version is None:
            return 0
        if status_reason(read.stats, len(self._doc_lengths(app, read.version).ids)):
            return None
        return sum(1 for rows in read.blocks.values() if any(data for _, data in rows))

    def search(self, app: str, terms: Sequence[str], depth: int, k1: float = K1, b: float = B,
               allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Top chunks by BM25, best first; raises LexicalUnavailable when the index is not complete."""
        unique = sorted(set(terms))
        for _ in range(self.RETRIES):
            read = self.store.read_postings(app, unique)
            if read.version is None:
                return []
            lengths = self._doc_lengths(app, read.version)
            if lengths.version == read.version:
                break
        reason = status_reason(read.stats, len(lengths.ids))
        if reason:
            raise LexicalUnavailable(reason)
        assert read.stats is not None
        n_docs, total_len = read.stats.n_docs, read.stats.total_len
        if not unique or n_docs == 0 or not read.blocks:
            return []
        return score_blocks(read.blocks, self._layout(app, lengths), n_docs, total_len, depth, k1, b, allowed,
                            self.compiled)


def score_blocks(
    blocks: dict[int, list[tuple[int, bytes]]],
    layout: Layout | DocLengths,
    n_docs: int,
    total_len: int,
    depth: int,
    k1: float,
    b: float,
    allowed: np.ndarray | None = None,
    compiled: bool = True,
) -> list[tuple[int, float]]:
    """BM25 of every chunk the blocks reach; terms in ascending term id (a fixed summation order).
    ``allowed`` (ascending chunk ids): only those may rank, filtered before the top is cut.

    Every term's postings are decoded and scored in one pass of array operations (per-term
    work was ~20 us a term in numpy calls alone), then one scatter-add over positions in the
    length array (no sort of the matched ids). The floats are those of ``term_scores``.

    ``compiled``: where the extension is built, the same sums in one compiled pass
    (``_score_compiled``; ``_compiled_serves`` says for which layouts).
    """
    if not isinstance(layout, Layout):
        layout = Layout.of(layout)
    lengths = layout.lengths
    avgdl = total_len / n_docs
    n = len(lengths.ids)
    terms = [term_id for term_id in sorted(blocks) if blocks[term_id]]
    if compiled and _compiled_serves(layout):
        compiled_ranking = _score_compiled(blocks, terms, layout, n_docs, avgdl, depth, k1, b, allowed)
        if compiled_ranking is not None:
            return compiled_ranking
    rows = [row for term_id in terms for row in blocks[term_id]]
    if not rows:
        return []
    datas = [data for _, data in rows]
    per_block = np.fromiter((len(d) // 4 for d in datas), dtype=np.int64, count=len(datas))
    numbers = np.fromiter((number for number, _ in rows), dtype=np.int64, count=len(rows))
    pairs = np.frombuffer(b"".join(datas), dtype="<u2").reshape(-1, 2)
    pos, known = layout.block_positions(numbers, per_block, pairs[:, 0])
    tf = pairs[:, 1]
    blocks_per_term = [len(blocks[term_id]) for term_id in terms]
    per_term = np.add.reduceat(per_block, np.cumsum([0] + blocks_per_term[:-1]))
    if known is not None:  # postings of chunks outside the snapshot's lengths: a racing writer
        term_of = np.repeat(np.arange(len(terms)), per_term)[known]
        pos, tf = pos[known], tf[known]
        per_term = np.bincount(term_of, minlength=len(terms))
    if not len(pos):
        return []
    # Each term's idf as a scalar, as ever (its document frequency: the postings it has here),
    # multiplied into the term's own slice of the scores (no idf gathered per posting).
    term_idf = [float(idf(n_docs, int(df))) if df else 0.0 for df in per_term.tolist()]
    ends = np.cumsum(per_term).tolist()
    scores = tf.astype(np.float64)
    denominator = layout.norm_at(pos, avgdl, k1, b)
    denominator += scores
    for start, end, weight in zip([0] + ends[:-1], ends, term_idf):
        scores[start:end] *= weight
    scores *= k1 + 1.0
    scores /= denominator
    summed = np.bincount(pos, weights=scores, minlength=n)
    all_pos = np.split(pos, ends[:-1])
    cut = None if allowed is not None else _cut_at_most(summed, all_pos, depth)
    if cut is not None:
        # Only the chunks scoring at least a bound under the depth-th best can rank: one
        # comparison over the sums, where ranking every chunk reached (~176k at a million
        # chunks) took a selection over all of them.
        found = np.flatnonzero(summed >= cut)
    else:
        # Every contribution is > 0 (idf > 0, tf > 0): the chunks reached are the positive sums.
        # (A boolean mask, not flatnonzero on the floats: 1.7 against 7.3 ms over a million.)
        found = np.nonzero(summed > 0)[0]
        if allowed is not None:
            found = found[np.isin(lengths.ids[found], allowed, assume_unique=True)]
    # Ranked by position, which ascends with the chunk id (ties still break by id): only the
    # depth kept are looked up, not every chunk reached.
    ranked = top(found, summed[found], depth)
    return Ranking(lengths.ids[ranked.ids], ranked.scores)


def _compiled_serves(layout: Layout) -> bool:
    """The kernel takes contiguous ids (one app in the file) and an int32 position table (apps
    interleaved), with whole lengths that fit uint16; numpy serves the rest (a binary search over
    sparse ids, fractional lengths)."""
    return (kernel is not None and layout.short_lengths is not None and len(layout.lengths.ids) > 0
            and (layout.contiguous or (layout.table is not None and layout.table.dtype == np.int32)))


def _score_compiled(blocks: dict[int, list[tuple[int, bytes]]], terms: list[int], layout: Layout,
                    n_docs: int, avgdl: float, depth: int, k1: float, b: float,
                    allowed: np.ndarray | None) -> Ranking | None:
    """``score_blocks``' ranking from sums computed in C (``_accumulate.c``): every float the
    same, each posting read once, a block of chunk ids summed at a time in a window that stays
    in cache. None (numpy takes over) when a posting is outside the snapshot's lengths (a
    racing writer: numpy drops those and counts df without them) or the rows are not (int,
    bytes) tuples in ascending block order."""
    assert kernel is not None and layout.short_lengths is not None
    rows = [blocks[term_id] for term_id in terms]
    try:
        per_term = kernel.postings_per_term(rows)
    except TypeError:
        return None
    room = max(sum(per_term), 1)
    # Untouched pages of these cost nothing: with a depth, only the few chunks that can still
    # rank are written (every chunk reached when an allowed set filters them afterwards).
    found, scores = np.empty(room, np.int64), np.empty(room, np.float64)
    ids = layout.lengths.ids
    kept, bad = kernel.score(
        rows, [float(idf(n_docs, df)) for df in per_term], int(ids[0]), BLOCK_BITS,
        None if layout.contiguous else layout.table, layout.short_lengths, layout.length_table(avgdl, k1, b),
        k1 + 1.0, depth if allowed is None else 0, found, scores)
    if bad:
        return None
    found, scores = found[:kept], scores[:kept]
    if allowed is not None:
        inside = np.isin(ids[found], allowed, assume_unique=True)
        found, scores = found[inside], scores[inside]
    ranked = top(found, scores, depth)
    return Ranking(ids[ranked.ids], ranked.scores)


def _cut_at_most(summed: np.ndarray, per_term: list[np.ndarray], depth: int) -> float | None:
    """A score at or under the depth-th best sum, so that every chunk of the top depth (ties at
    its cut included) scores at least this: the depth-th best among one term's chunks (any depth
    distinct chunks' worst is at most the depth-th best of all). Taken over the two rarest terms
    that reach depth chunks, whose heavy idf puts the bound near the real cut. None when no
    term reaches depth chunks."""
    if depth <= 0:
        return None
    eligible = sorted((positions for positions in per_term if len(positions) >= depth), key=len)[:2]
    bounds = [np.partition(summed[positions], len(positions) - depth)[len(positions) - depth]
              for positions in eligible]
    return float(max(bounds)) if bounds else None
