"""Reciprocal Rank Fusion (Cormack, Clarke & Buettcher, SIGIR 2009): ranks, never scores.

Each item scores sum over channels of 1 / (k + rank), rank 1-based, k = 60. An item found by a
single channel can at best tie the other channel's first item, so neither channel can seize the
result list on the strength of an unbounded raw score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

RRF_K = 60


def rrf(
    rankings: Mapping[str, Sequence[int]], k: int = RRF_K
) -> list[tuple[int, float, dict[str, int | None]]]:
    """Fuse ranked id lists: [(id, fused score, {channel: rank or None})], best first.

    Ties are broken by the best single-channel rank, then by id, so the order is deterministic.
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    scores: dict[int, float] = {}
    ranks: dict[int, dict[str, int | None]] = {}
    for channel, ids in rankings.items():
        for rank, item in enumerate(ids, start=1):
            if channel in ranks.setdefault(item, {}):
                continue  # a channel counts each item once, at its best rank
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            ranks[item][channel] = rank
    for item_ranks in ranks.values():
        for channel in rankings:
            item_ranks.setdefault(channel, None)
    return sorted(
        ((item, scores[item], ranks[item]) for item in scores),
        key=lambda t: (-t[1], min(r for r in t[2].values() if r is not None), t[0]),
    )
