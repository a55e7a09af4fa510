"""The embedder interface: a backend implements ``embed_batch``; this class does the rest.

Texts longer than the model's window are never truncated silently: they are cut into
window-sized pieces at token boundaries, each piece is embedded, and the text's vector is the
token-weighted mean of its pieces (then normalised). Vectors come back L2-normalised float32.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import InvalidInput
from .calibration import UNCALIBRATED, Calibration


class Embedder(ABC):
    #: Identifies the model and its preprocessing; stored with every database and cache entry.
    model_id: str
    #: Vector dimension.
    dim: int
    #: Model window in tokens, special tokens included.
    max_tokens: int
    #: Tokens the window spends on special tokens ([CLS], [SEP]).
    special_tokens: int = 2
    batch_size: int = 32
    #: Whether the tokenizer splits at whitespace, so a text's tokens are its lines' tokens added
    #: up: then a chunk's count (the sum of its turns') is its text's, and ingest passes it to
    #: ``embed_passages`` instead of counting again. False unless a model says so.
    whitespace_splits: bool = False
    #: What was fitted on this model's scores (its floors, whether the block's cut applies), in
    #: one record (diarist.embed.calibration); a model not calibrated gets no floor and no cut.
    calibration: Calibration = UNCALIBRATED

    @property
    def window(self) -> int:
        """Content tokens that fit in one pass of the model."""
        return self.max_tokens - self.special_tokens

    @abstractmethod
    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character (start, end) spans of the text's content tokens, in the model's tokenizer."""

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts that each fit in the window; returns a (len(texts), dim) float array."""

    def count_tokens(self, text: str) -> int:
        return len(self.token_spans(text))

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of many texts; a model whose tokenizer reads a batch in one call overrides
        this (the chunker and ``embed`` count every text of a write at once)."""
        return [self.count_tokens(t) for t in texts]

    def pieces(self, text: str, limit: int | None = None) -> list[tuple[str, int]]:
        """Split a text into pieces of at most limit (default: the window) tokens at token
        boundaries: (piece, n_tokens). A word cut between two sub-word tokens can re-tokenise
        longer, so each piece is measured again and shortened until it fits."""
        limit = limit or self.window
        spans = self.token_spans(text)
        if len(spans) <= limit:
            return [(text, max(len(spans), 1))]
        out = []
        start = 0
        while start < len(spans):
            end = min(start + limit, len(spans))
            while True:
                piece = text[spans[start][0] : spans[end - 1][1]]
                n = self.count_tokens(piece)
                if n <= limit or end - start == 1:
                    break
                end -= 1
            out.append((piece, n))
            start = end
        return out

    def embed(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None,
        counts: Sequence[int] | None = None,
    ) -> np.ndarray:
        """Embed any number of texts of any length; returns normalised float32 vectors.
        ``counts``: the texts' token counts when the caller has them (the chunker does), so the
        tokenizer does not read the texts once more to learn them."""
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidInput(f"text #{i} to embed is {type(text).__name__}, not str")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        owners: list[int] = []
        weights: list[int] = []
        flat: list[str] = []
        if counts is None or len(counts) != len(texts):
            counts = self.count_tokens_many(texts)  # one batch
        # Only a text longer than the window is cut (and counted again).
        for i, (text, n) in enumerate(zip(texts, counts)):
            for piece, n in [(text, max(n, 1))] if n <= self.window else self.pieces(text):
                owners.append(i)
                weights.append(n)
                flat.append(piece)
        # Sort by tokens so each batch pads little; restore the order afterwards.
        order = sorted(range(len(flat)), key=lambda j: weights[j])
        piece_vecs = np.zeros((len(flat), self.dim), dtype=np.float32)
        for b in range(0, len(order), self.batch_size):
            idx = order[b : b + self.batch_size]
            vecs = np.asarray(self.embed_batch([flat[j] for j in idx]), dtype=np.float32)
            if vecs.shape != (len(idx), self.dim):
                raise RuntimeError(
                    f"{self.model_id}: embed_batch returned shape {vecs.shape}, "
                    f"expected {(len(idx), self.dim)}"
                )
            piece_vecs[idx] = vecs
            if progress is not None:
                progress(len(idx))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        np.add.at(out, np.asarray(owners), piece_vecs * np.asarray(weights, np.float32)[:, None])
        return normalise(out)

    # An asymmetric model (e5: "passage: " and "query: " prefixes) embeds what is stored and what
    # is asked differently: it overrides these two. The library calls them, never ``embed``.

    def embed_passages(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None,
        counts: Sequence[int] | None = None,
    ) -> np.ndarray:
        """Vectors of what is stored and searched (chunks); by default ``embed``."""
        if counts is None:  # an embedder whose own ``embed`` predates ``counts`` still works
            return self.embed(texts, progress)
        return self.embed(texts, progress, counts)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of one search's query texts (the question, and with its previous turn); by
        default ``embed``."""
        return self.embed(texts)


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32)


def quantize(vectors: np.ndarray) -> np.ndarray:
    """Normalised float vectors -> int8 (scale 127): a quarter of the bytes, cosine error ~1e-3."""
    return np.clip(np.rint(vectors * 127.0), -127, 127).astype(np.int8)


def row_norms(vectors: np.ndarray) -> np.ndarray:
    """Each row's norm in float32 (a zero row: 1), by blocks of rows: what ``dequantize``
    divides by, and what the exact scan caches so as to divide by the very same floats."""
    out = np.empty(len(vectors), np.float32)
    for start in range(0, len(vectors), 8192):
        norms = np.linalg.norm(np.asarray(vectors[start : start + 8192], np.float32), axis=1)
        norms[norms == 0] = 1.0
        out[start : start + 8192] = norms
    return out


def dequantize(vectors: np.ndarray) -> np.ndarray:
    """int8 vectors -> renormalised float32, ready for dot-product cosine.

    Same arithmetic as ``normalise``, in place: one float32 copy instead of four (~2 s -> ~0.1 s
    for a fresh 100k x 384 matrix, where page faults dominate).
    """
    out = np.asarray(vectors).astype(np.float32)
    out /= row_norms(out)[:, None]
    return out
