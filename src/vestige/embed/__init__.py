"""Embedding backends behind one interface; ``get_embedder`` resolves a spec string.

Specs: ``minilm`` (default, int8 ONNX, offline), ``hash`` or ``hash:DIM`` (tests only),
``st:NAME_OR_PATH`` (any sentence-transformers model; needs the ``[st]`` extra).
"""

from __future__ import annotations

from .base import Embedder, dequantize, normalise, quantize

DEFAULT_EMBEDDER = "minilm"
_cache: dict[str, Embedder] = {}


def get_embedder(spec: str = DEFAULT_EMBEDDER) -> Embedder:
    """Build (once per process) the embedder a spec names."""
    if spec in _cache:
        return _cache[spec]
    if spec == "minilm":
        from .onnx_minilm import MiniLMOnnxEmbedder

        embedder: Embedder = MiniLMOnnxEmbedder()
    elif spec == "hash" or spec.startswith("hash:"):
        from .hashing import HashEmbedder

        dim = int(spec.split(":", 1)[1]) if ":" in spec else 64
        embedder = HashEmbedder(dim=dim)
    elif spec.startswith("st:"):
        from .sentence_transformers import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(spec[3:])
    else:
        raise ValueError(f"unknown embedder {spec!r}; use 'minilm', 'hash[:DIM]' or 'st:NAME'")
    _cache[spec] = embedder
    return embedder


__all__ = ["Embedder", "get_embedder", "normalise", "quantize", "dequantize", "DEFAULT_EMBEDDER"]
