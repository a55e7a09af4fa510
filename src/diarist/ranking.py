"""Selecting the best of a scored array, shared by both channels."""

from __future__ import annotations

import numpy as np


class Ranking(list):
    """(id, score) pairs, best first, that also carry their ids and scores as arrays, so the
    fusion reads them without converting the pairs back (each id once)."""

    def __init__(self, ids: np.ndarray, scores: np.ndarray):
        super().__init__(zip(ids.tolist(), scores.tolist()))
        self.ids = ids
        self.scores = scores


def top(ids: np.ndarray, scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """The depth best (id, score), best first; ties broken by ascending id (deterministic)."""
    if len(ids) == 0 or depth <= 0:
        return Ranking(np.zeros(0, np.int64), np.zeros(0, np.float64))
    if len(ids) > depth:
        keep = np.argpartition(-scores, depth - 1)[:depth]
        # Include every item tied with the cut-off score so tie-breaking stays deterministic.
        cutoff = scores[keep].min()
        keep = np.flatnonzero(scores >= cutoff)
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:depth]
    # tolist: the same Python ints and floats as int() and float() of each element, in one pass.
    return Ranking(ids[order], scores[order])
