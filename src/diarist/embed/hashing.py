"""A deterministic feature-hashing embedder, for unit tests only (it knows no semantics)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from .base import Embedder

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder(Embedder):
    special_tokens = 0
    whitespace_splits = True  # words are runs of \w

    def __init__(self, dim: int = 64, max_tokens: int = 64):
        self.dim = dim
        self.max_tokens = max_tokens
        self.model_id = f"hash-{dim}-{max_tokens}"

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in _WORD.finditer(text)]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dim
                out[row, bucket] += 1.0 if digest[4] & 1 else -1.0
            if not out[row].any():
                out[row, 0] = 1.0
        return out
