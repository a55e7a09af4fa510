"""The dense-index interface: top chunks by cosine for one app, over a store's vectors."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class DenseIndex(ABC):
    """Answers dense queries for any app of one store. Implementations may cache per process,
    but must key every cache on ``Store.app_version`` (its epoch is never reused), never on
    anything a database can hand out again."""

    #: The exact scan over the same store that this index keeps beside it (the graph indexes answer
    #: small apps with one), for a filtered search to reuse; None: the index keeps none.
    exact: DenseIndex | None = None

    @abstractmethod
    def search(self, app: str, queries: np.ndarray, depth: int) -> list[tuple[int, float]]:
        """Top chunk ids by cosine, best first (ties by ascending id); with several query
        vectors each chunk keeps its best score."""

    def forget(self, app: str) -> None:
        """Drop anything cached for the app (it was deleted)."""

    def purge(self, app: str) -> None:
        """Chunks of the app were removed (a delete, a replace): drop their vectors from any
        derived index that persists them."""

    def rebuild(self, app: str) -> int | None:
        """Rebuild any derived index of the app from the store (``diarist reindex``)."""
        return None

    def state(self, app: str) -> dict | None:
        """What ``diarist doctor`` shows of the app's graph (whether one serves it, its size);
        None: this index keeps no graph (the exact scan)."""
        return None

    def recall(self, app: str, samples: int = 20, depth: int = 50) -> float | None:
        """Mean recall@depth of the graph against the exact scan; None: the exact scan serves."""
        return None

    def close(self) -> None:
        """Persist what is worth keeping; the store is closed after this."""
