"""Second-stage rerankers behind one interface; ``get_reranker`` resolves a spec string.

Specs: ``none``; ``evidence`` (the model-free second stage: names and time spans), or
``evidence:names,time,recency`` to choose its signals;
``cross-encoder:PATH_OR_NAME`` (needs the ``[st]`` extra; loads lazily and falls back to the
fused order if it cannot load); ``maxsim`` or ``maxsim:weight=W,depth=N,mode=M,cache=PATH``
(late interaction over the default model's token vectors, then ``evidence:time``; off by
default, see ``diarist.rerank.maxsim``); any name registered in ``RERANKERS`` (docs/extending.md).
"""

from __future__ import annotations

from ..errors import ConfigError
from ..registry import Registry
from .base import LazyReranker, Reranker


def _evidence(spec: str) -> Reranker:
    from .evidence import DEFAULT_SIGNALS, SIGNALS, EvidenceReranker

    signals = tuple(spec.split(":", 1)[1].split(",")) if ":" in spec else DEFAULT_SIGNALS
    unknown = set(signals) - set(SIGNALS)
    if unknown:
        raise ConfigError(f"unknown evidence signals {sorted(unknown)}; use some of {', '.join(SIGNALS)}")
    return EvidenceReranker(signals=signals)


def _cross_encoder(spec: str) -> Reranker:
    model = spec.split(":", 1)[1] if ":" in spec else ""
    if not model:
        raise ConfigError("cross-encoder needs a model: 'cross-encoder:PATH_OR_NAME'")

    def load() -> Reranker:
        from .cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker(model)

    return LazyReranker(load, name="cross-encoder")


def _maxsim(spec: str) -> Reranker:
    from .maxsim import parse_spec

    params = parse_spec(spec)  # a bad spec fails here, not at the first search

    def load() -> Reranker:
        from .maxsim import MaxSimReranker

        return MaxSimReranker(params)

    return LazyReranker(load, name="maxsim")


#: Second stages by spec name (diarist.registry; docs/extending.md): ``RERANKERS.register(name, factory)``.
RERANKERS: Registry[Reranker] = Registry("reranker")
RERANKERS.register("evidence", _evidence)
RERANKERS.register("cross-encoder", _cross_encoder)
RERANKERS.register("maxsim", _maxsim)


def get_reranker(spec: str | None) -> Reranker | None:
    if spec in (None, "", "none"):
        return None
    if not isinstance(spec, str):
        raise ConfigError(f"reranker must be a spec string or a Reranker, got {type(spec).__name__}")
    return RERANKERS.build(spec)


__all__ = ["RERANKERS", "Reranker", "LazyReranker", "get_reranker"]
