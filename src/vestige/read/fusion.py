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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

RRF_K = 60
COSINE_FLOOR = -1.0  # the least a cosine can be: the dense channel's theoretical minimum
FUSIONS = ("convex", "rrf")

Fused = list[tuple[int, float, dict[str, int | None]]]


def _order(scores: dict[int, float], ranks: dict[int, dict[str, int | None]]) -> Fused:
    """Best first; ties by the best single-channel rank, then by id (deterministic)."""
    return sorted(
        ((item, scores[item], ranks[item]) for item in scores),
        key=lambda t: (-t[1], min(r for r in t[2].values() if r is not None), t[0]),
    )


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
    ranks = _ranks(rankings)
    scores = {item: sum(1.0 / (k + r) for r in item_ranks.values() if r is not None)
              for item, item_ranks in ranks.items()}
    return _order(scores, ranks)


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


def convex(dense: Sequence[tuple[int, float]], lexical: Sequence[tuple[int, float]],
           dense_weight: float, depth: int) -> Fused:
    """Fuse (id, score) lists, best first: [(id, fused score, {channel: rank or None})].

    ``depth``: how deep each channel was asked; a list this long may have been cut.
    """
    if not 0.0 <= dense_weight <= 1.0:
        raise ValueError(f"the dense weight must be in [0, 1], got {dense_weight}")
    dense_n, lexical_n = normalise_dense(dense), normalise_lexical(lexical)
    # What a chunk absent from a list scores there: the last listed score if the list was cut.
    dense_missing = dense_n[dense[-1][0]] if dense and len(dense) >= depth else 0.0
    lexical_missing = lexical_n[lexical[-1][0]] if lexical and len(lexical) >= depth else 0.0
    ranks = _ranks({"dense": [c for c, _ in dense], "lexical": [c for c, _ in lexical]})
    scores = {
        item: dense_weight * dense_n.get(item, dense_missing) + (1.0 - dense_weight) * lexical_n.get(item, lexical_missing)
        for item in ranks
    }
    return _order(scores, ranks)
