"""Cross-encoder backend: a sentence-transformers ``CrossEncoder`` from a local folder or by name.

Needs the ``[st]`` extra (torch). No cross-encoder weights ship on PyPI, so the default install
has none; point ``model`` at a folder you have (e.g. a downloaded ms-marco-MiniLM-L-6-v2).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..errors import MissingDependency
from ..types import Hit
from .base import Reranker


class CrossEncoderReranker(Reranker):
    name = "cross-encoder"

    def __init__(self, model: str, *, max_length: int = 512, batch_size: int = 16, device: str = "cpu"):
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise MissingDependency(
                "the cross-encoder reranker needs sentence-transformers; run: "
                "pip install torch==2.13.0 && pip install 'diarist[st]'"
            ) from exc
        self._model = CrossEncoder(model, max_length=max_length, device=device)
        self._batch_size = batch_size

    def scores(self, query: str, hits: Sequence[Hit], now: datetime | None = None) -> list[float]:
        pairs = [(query, hit.text) for hit in hits]
        values = self._model.predict(pairs, batch_size=self._batch_size, show_progress_bar=False)
        return [float(v) for v in values]
