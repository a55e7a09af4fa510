"""How the two channels' rankings become one: a convex combination of normalised scores (the
default), or Reciprocal Rank Fusion (a named option).

Convex (Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS
2023): each chunk scores ``w * dense + (1 - w) * lexical``, each channel's score normalised by
theoretical min-max: a cosine maps (cos + 1) / (best + 1), a BM25 score (never negative) maps
score / best. Unlike ranks, normalised scores keep a channel's confidence: a chunk that BM25
ranks first by a wide margin (a rare name) keeps that margin against chunks both channels find
lukewarm. Property (tested): raising a chunk's score in one channel never lowers its fused rank.

A channel answers only its top ``depth``. A chunk missing from a list that was cut at depth is
given that list's last score (the most it could have); missing from a list that was not cut, it
scored nothing there (no vector, or no query term): the channel's floor.

RRF (Cormack, Clarke & Buettcher, SIGIR 2009): sum over channels of 1 / (k + rank), k = 60.

A question that names no rare word leans on meaning (``lean_on_meaning``): its dense weight is
raised when the lexical channel's best raw BM25 score is low. Why: a stated fact that shares no
word with "Where do I live now?" fuses to at most the dense weight (0.75), while a long chat
holding one common question word ("now") is lexical #1 and fuses above it at cosine 0.03. A
low best BM25 says the words the question shares with the memory are common ones, so the
lexical order carries little evidence; a question naming a rare word (a name, "LGBTQ") has a
high best BM25 and keeps the shipped weight, which LoCoMo's R@1 needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..lexical.language import detect
from ..lexical.weights import lexical_weight
from ..ranking import Ranking

RRF_K = 60
COSINE_FLOOR = -1.0  # the least a cosine can be: the dense channel's theoretical minimum
FUSIONS = ("convex", "rrf")

Fused = Sequence[tuple[int, float, dict[str, int | None]]]  # a list, or a FusedRanking built as read


@dataclass(frozen=True)
class Lean:
    """How far a question leans on meaning, read from its best raw BM25 score: ``steps`` are
    (below, dense weight) pairs, the lowest ``below`` first; the first step whose ``below`` the
    score is under gives the weight (never lower than the weight given). No step: no lean."""

    steps: tuple[tuple[float, float], ...] = ()

    def weight(self, best_bm25: float, dense_weight: float) -> float:
        for below, weight in self.steps:
            if best_bm25 < below:
                return max(dense_weight, weight)
        return dense_weight


#: Fitted by 5-fold cross-validation across the everyday dev half, LoCoMo dev and LongMemEval dev,
#: the everyday held-out half never read (benchmarks/studies/question_channels.py,
#: benchmarks/results/everyday-channels/, BENCHMARKS.md "Fusion"). A second step (under 4.5: 0.85)
#: fitted better on the rankings but lost 4 LoCoMo blocks their evidence for 2 gained: not shipped.
LEAN = Lean(((3.0, 0.95),))
#: The rule off: every question fused with the one weight given, as before.
NO_LEAN = Lean()


def best_score(scored: Sequence[tuple[int, float]]) -> float:
    """The best raw score of a channel's (id, score) list (0 for an empty one)."""
    if isinstance(scored, Ranking):
        return float(scored.scores.max()) if len(scored.ids) else 0.0
    return max((float(s) for _, s in scored), default=0.0)


def lean_on_meaning(dense_weight: float, lexical: Sequence[tuple[int, float]], lean: Lean | None = None) -> float:
    """The dense weight for one question: raised by ``lean`` when the lexical channel's best raw
    BM25 score is low (the question shares only common words with the memory), else
    ``dense_weight``. ``lean`` None: the module's ``LEAN`` (read at call time, so a study can set
    it). A weight of 0 or 1 (one channel by choice) is kept as given, as is a question with no
    lexical candidate."""
    lean = LEAN if lean is None else lean
    if not 0.0 < dense_weight < 1.0 or not lexical:
        return dense_weight
    return lean.weight(best_score(lexical), dense_weight)


def question_dense_weight(dense_weight: float, model_id: str, question: str, lexical: Sequence[tuple[int, float]],
                          lean: Lean | None = None, *, by_language: bool = True) -> float:
    """The dense weight for one question, in two steps: a question not in English, under a model
    ``lexical.weights`` lists, gets its language's share, unless ``by_language`` is False (the
    caller chose the weight: only the shipped default takes the share; the caller knows which,
    as ``settings`` imports this module); then the lean on meaning (``lean_on_meaning``)."""
    if by_language:
        share = lexical_weight(model_id, detect(question))
        if share is not None:
            dense_weight = 1.0 - share
    return lean_on_meaning(dense_weight, lexical, lean)


def _ranks(rankings: Mapping[str, Sequence[int]]) -> dict[int, dict[str, int | None]]:
    ranks: dict[int, dict[str, int | None]] = {}
    for channel, ids in rankings.items():
        for rank, item in enumerate(ids, start=1):
            ranks.setdefault(item, {}).setdefault(channel, rank)  # each item once, at its best rank
    for item_ranks in ranks.values():
        for channel in rankings:
            item_ranks.setdefault(channel, None)
    return ranks


def rrf(rankings: Mapping[str, Sequence[int]], k: int = RRF_K) -> Fused:
    """Fuse ranked id lists: [(id, fused score, {channel: rank or None})], best first."""
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    if len(rankings) == 1:
        # One ranking (the evidence second stage's, for a question with no signal): its own
        # order, each item at its first place; the score falls as the rank grows, so no sort.
        ((channel, ids),) = rankings.items()
        first: dict[int, int] = {}
        for rank, item in enumerate(ids, start=1):
            first.setdefault(item, rank)
        return [(item, 1.0 / (k + rank), {channel: rank}) for item, rank in first.items()]
    ranks = _ranks(rankings)
    keyed = []
    for item, item_ranks in ranks.items():
        score, best = 0, None
        for r in item_ranks.values():
            if r is not None:
                score += 1.0 / (k + r)
                if best is None or r < best:
                    best = r
        keyed.append((-score, best, item, item_ranks))
    keyed.sort()  # best first; ties by the best single-channel rank, then by id (ids are distinct)
    return [(item, -negated, item_ranks) for negated, _, item, item_ranks in keyed]


def normalise_dense(scored: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Theoretical min-max of cosines: (cos + 1) / (best + 1), in [0, 1]."""
    if not scored:
        return {}
    span = max(max(s for _, s in scored) - COSINE_FLOOR, 1e-12)
    return {item: max(0.0, (s - COSINE_FLOOR) / span) for item, s in scored}


def normalise_lexical(scored: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Theoretical min-max of BM25 scores (>= 0): score / best, in [0, 1]."""
    if not scored:
        return {}
    best = max(s for _, s in scored)
    return {item: (s / best if best > 0 else 0.0) for item, s in scored}


def _columns(scored: Sequence[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """(id, score) pairs -> ids (int64) and scores (float64), each id once at its first place."""
    if not scored:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    if isinstance(scored, Ranking):  # a channel's own ranking: its arrays, each id once
        return scored.ids.astype(np.int64, copy=False), scored.scores.astype(np.float64)
    items, scores = zip(*scored)
    if len(set(items)) < len(items):
        first: dict[int, int] = {}
        for place, item in enumerate(items):
            first.setdefault(item, place)
        keep = sorted(first.values())
        items, scores = [items[i] for i in keep], [scores[i] for i in keep]
    return np.array(items, dtype=np.int64), np.array(scores, dtype=np.float64)


def _placed(ids: np.ndarray, union: np.ndarray, values: np.ndarray, absent: float) -> tuple[np.ndarray, np.ndarray]:
    """Each union id's 1-based rank in ``ids`` (0: absent) and its value there (``absent``)."""
    ranks = np.zeros(len(union), dtype=np.int64)
    placed = np.full(len(union), absent, dtype=np.float64)
    where = np.searchsorted(union, ids)
    ranks[where] = np.arange(1, len(ids) + 1)
    placed[where] = values
    return ranks, placed


def convex(dense: Sequence[tuple[int, float]], lexical: Sequence[tuple[int, float]],
           dense_weight: float, depth: int, limit: int | None = None) -> Fused:
    """Fuse (id, score) lists, best first: [(id, fused score, {channel: rank or None})].

    ``depth``: how deep each channel was asked; a list this long may have been cut. In numpy
    over the few hundred candidates, with the floats of the per-item formula (the same
    operations in the same order); ties by the best single-channel rank, then by id.
    ``limit``: only the first this many are returned (the rest are never built).
    """
    return list(convex_ranking(dense, lexical, dense_weight, depth, limit))


class FusedRanking(Sequence):
    """``convex``'s list, each entry built when it is first read: the read path fuses a few
    hundred candidates and, most searches, reads only the first few dozen."""

    def __init__(self, ids: list[int], scores: list[float], dense_ranks: list[int], lexical_ranks: list[int]):
        self._columns = (ids, scores, dense_ranks, lexical_ranks)
        self._built: list[tuple[int, float, dict[str, int | None]]] = []

    def __len__(self) -> int:
        return len(self._columns[0])

    def _build(self, stop: int) -> None:
        ids, scores, dense_ranks, lexical_ranks = self._columns
        for place in range(len(self._built), stop):
            d, lx = dense_ranks[place], lexical_ranks[place]
            self._built.append((ids[place], scores[place],
                                {"dense": d, "lexical": lx or None} if d else {"lexical": lx, "dense": None}))

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            stop = index.indices(len(self))[1] if index.step in (None, 1) else len(self)
        else:
            stop = len(self) if index < 0 else index + 1
        if stop > len(self._built):
            self._build(min(stop, len(self)))
        return self._built[index]


def convex_ranking(dense: Sequence[tuple[int, float]], lexical: Sequence[tuple[int, float]],
                   dense_weight: float, depth: int, limit: int | None = None,
                   lexical_scale: Sequence[float] | None = None) -> FusedRanking:
    """``convex`` as a ``FusedRanking``: the same entries, each built on first read.

    ``lexical_scale``: per entry of ``lexical``, a factor on its normalised score (a chunk in
    another language than the question counts less: ``settings.LEXICAL_AGREEMENT``); a chunk
    absent from a cut list gets the last entry's scaled score. None: every factor is 1."""
    if not 0.0 <= dense_weight <= 1.0:
        raise ValueError(f"the dense weight must be in [0, 1], got {dense_weight}")
    dense_ids, dense_raw = _columns(dense)
    lexical_ids, lexical_raw = _columns(lexical)
    if not len(dense_ids) and not len(lexical_ids):
        return FusedRanking([], [], [], [])
    dense_n = np.zeros(0)
    if len(dense_raw):
        span = max(float(dense_raw.max()) - COSINE_FLOOR, 1e-12)
        dense_n = np.maximum((dense_raw - COSINE_FLOOR) / span, 0.0)
    lexical_n = np.zeros(len(lexical_raw))
    if len(lexical_raw) and float(lexical_raw.max()) > 0:
        lexical_n = lexical_raw / float(lexical_raw.max())
    # What a chunk absent from a list scores there: the last listed score if the list was cut.
    dense_missing = float(dense_n[-1]) if len(dense) >= depth and len(dense_n) else 0.0
    if lexical_scale is not None and len(lexical_n):
        lexical_n = lexical_n * np.asarray(lexical_scale, dtype=np.float64)[: len(lexical_n)]
    lexical_missing = float(lexical_n[-1]) if len(lexical) >= depth and len(lexical_n) else 0.0
    # Sorted distinct ids (np.union1d's hashing costs 3x as much on a few hundred).
    union = np.concatenate([dense_ids, lexical_ids])
    union.sort()
    union = union[np.concatenate(([True], union[1:] != union[:-1]))] if len(union) else union
    dense_rank, dense_value = _placed(dense_ids, union, dense_n, dense_missing)
    lexical_rank, lexical_value = _placed(lexical_ids, union, lexical_n, lexical_missing)
    fused = dense_weight * dense_value + (1.0 - dense_weight) * lexical_value
    best_rank = np.where(dense_rank == 0, lexical_rank,
                         np.where(lexical_rank == 0, dense_rank, np.minimum(dense_rank, lexical_rank)))
    order = np.lexsort((union, best_rank, -fused))[:limit]
    return FusedRanking(union[order].tolist(), fused[order].tolist(), dense_rank[order].tolist(),
                        lexical_rank[order].tolist())
