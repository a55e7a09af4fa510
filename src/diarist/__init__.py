"""diarist: long-term memory for AI agents in one SQLite file (dense + BM25, fused by rank).

The names below are imported on first use (module ``__getattr__``), so that ``import diarist``
loads neither numpy nor onnxruntime nor the model: the command line and the agents' hooks
import this package on every run.
"""

from __future__ import annotations

import importlib
TYPE_CHECKING = False  # typing itself would be most of this module's import time
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.2.0"

#: Each public name and the module that defines it.
_WHERE = {
    "ConcurrentUpdate": "errors",
    "ConfigError": "errors",
    "DatabaseNotFound": "errors",
    "EmbedderMismatch": "errors",
    "InvalidInput": "errors",
    "MissingDependency": "errors",
    "NotADatabase": "errors",
    "NotFound": "errors",
    "PlanMismatch": "errors",
    "SchemaError": "errors",
    "StoreError": "errors",
    "UnknownApp": "errors",
    "DiaristError": "errors",
    "IngestReport": "memory",
    "Memory": "memory",
    "Floor": "read.floor",
    "Results": "read.search",
    "Store": "store",
    "open_store": "store",
    "Chunk": "types",
    "Hit": "types",
    "Message": "types",
    "ChunkSet": "write.plan",
    "IndexPlan": "write.plan",
    "SessionInput": "write.validate",
}

__all__ = [
    "Memory",
    "Hit",
    "Chunk",
    "Message",
    "Results",
    "Floor",
    "SessionInput",
    "IngestReport",
    "DiaristError",
    "InvalidInput",
    "UnknownApp",
    "NotFound",
    "EmbedderMismatch",
    "MissingDependency",
    "ConfigError",
    "PlanMismatch",
    "ConcurrentUpdate",
    "StoreError",
    "SchemaError",
    "DatabaseNotFound",
    "NotADatabase",
    "Store",
    "open_store",
    "IndexPlan",
    "ChunkSet",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
