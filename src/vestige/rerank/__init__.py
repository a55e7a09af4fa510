"""Second-stage rerankers behind one interface; ``get_reranker`` resolves a spec string.

Specs: ``none``; ``evidence`` (the model-free second stage: names and time spans), or
``evidence:names,time,recency`` to choose its signals;
``cross-encoder:PATH_OR_NAME`` (needs the ``[st]`` extra; loads lazily and falls back to the
fused order if it cannot load).
"""

from __future__ import annotations

from ..errors import ConfigError
from .base import LazyReranker, Reranker


def get_reranker(spec: str | None) -> Reranker | None:
    if spec in (None, "", "none"):
        return None
    if not isinstance(spec, str):
        raise ConfigError(f"reranker must be a spec string or a Reranker, got {type(spec).__name__}")
    if spec == "evidence" or spec.startswith("evidence:"):
        from .evidence import DEFAULT_SIGNALS, SIGNALS, EvidenceReranker

        signals = tuple(spec.split(":", 1)[1].split(",")) if ":" in spec else DEFAULT_SIGNALS
        unknown = set(signals) - set(SIGNALS)
        if unknown:
            raise ConfigError(f"unknown evidence signals {sorted(unknown)}; use some of {', '.join(SIGNALS)}")
        return EvidenceReranker(signals=signals)
    if spec.startswith("cross-encoder:"):
        model = spec.split(":", 1)[1]

        def load() -> Reranker:
            from .cross_encoder import CrossEncoderReranker

            return CrossEncoderReranker(model)

        return LazyReranker(load, name="cross-encoder")
    raise ConfigError(f"unknown reranker {spec!r}; use 'none', 'evidence' or 'cross-encoder:PATH_OR_NAME'")


__all__ = ["Reranker", "LazyReranker", "get_reranker"]
