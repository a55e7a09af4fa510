"""Selecting the best of a scored array, shared by both channels."""

from __future__ import annotations

import numpy as np


def top(ids: np.ndarray, scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """The depth best (id, score), best first; ties broken by ascending id (deterministic)."""
    if len(ids) == 0 or depth <= 0:
        return []
    if len(ids) > depth:
        keep = np.argpartition(-scores, depth - 1)[:depth]
        # Include every item tied with the cut-off score so tie-breaking stays deterministic.
        cutoff = scores[keep].min()
        keep = np.flatnonzero(scores >= cutoff)
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:depth]
    # tolist: the same Python ints and floats as int() and float() of each element, in one pass.
    return list(zip(ids[order].tolist(), scores[order].tolist()))
