"""The second stage: a reranker re-reads the top fused candidates with the question.

One interface, ``rerank(query, hits) -> hits``. Backends load lazily: a backend that cannot
load logs one warning and search keeps the fused order (each hit's ``stage`` says which stage
ordered it). Nothing breaks; it is only less precise.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime

from ..read.question import Question
from ..types import Hit

log = logging.getLogger("diarist")


class Reranker(ABC):
    #: Written into ``Hit.stage`` and the ``rerank`` score key of the hits it orders.
    name: str = "rerank"
    #: Why the backend could not load (search then keeps the fused order); None: it serves.
    error: str | None = None

    @abstractmethod
    def scores(self, query: str, hits: Sequence[Hit], now: datetime | None = None) -> list[float]:
        """One relevance score per hit, higher is better. ``now``: when the question is asked."""

    def rerank_question(self, question: Question, hits: Sequence[Hit]) -> list[Hit]:
        """``rerank`` for a question the read path parsed once (a reranker that reads its
        parts, as the evidence one does, overrides this to reuse them)."""
        return self.rerank(question.text, hits, question.now)

    def rerank(self, query: str, hits: Sequence[Hit], now: datetime | None = None) -> list[Hit]:
        """The hits re-ordered by score; ties keep their fused order."""
        if not hits:
            return []
        values = self.scores(query, hits, now)
        if len(values) != len(hits):
            raise RuntimeError(f"{self.name}: {len(values)} scores for {len(hits)} hits")
        order = sorted(range(len(hits)), key=lambda i: (-values[i], i))
        out = []
        for i in order:
            hit = hits[i]
            hit.scores[self.name] = float(values[i])
            hit.stage = self.name
            out.append(hit)
        return out


class LazyReranker(Reranker):
    """Builds the real reranker on first use; if that fails, passes hits through unchanged."""

    def __init__(self, factory: Callable[[], Reranker], name: str):
        self._factory = factory
        self._inner: Reranker | None = None
        self._error: str | None = None
        self._lock = threading.Lock()
        self.name = name

    @property
    def error(self) -> str | None:
        """Why the backend could not load (None if it loaded or was never tried)."""
        return self._error

    def _load(self) -> Reranker | None:
        with self._lock:
            if self._inner is None and self._error is None:
                try:
                    self._inner = self._factory()
                except Exception as exc:  # any load failure degrades to the fused order
                    self._error = f"{type(exc).__name__}: {exc}"
                    log.warning("reranker %s could not load, keeping the fused order: %s", self.name, self._error)
            return self._inner

    def scores(self, query: str, hits: Sequence[Hit], now: datetime | None = None) -> list[float]:
        inner = self._load()
        if inner is None:
            raise RuntimeError(self._error)
        return inner.scores(query, hits, now)

    def rerank(self, query: str, hits: Sequence[Hit], now: datetime | None = None) -> list[Hit]:
        inner = self._load()
        if inner is None:
            return list(hits)
        return inner.rerank(query, hits, now)

    def rerank_question(self, question: Question, hits: Sequence[Hit]) -> list[Hit]:
        inner = self._load()
        if inner is None:
            return list(hits)
        return inner.rerank_question(question, hits)
