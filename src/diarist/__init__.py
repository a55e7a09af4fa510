"""diarist: long-term memory for AI agents in one SQLite file (dense + BM25, fused by rank)."""

from .errors import (
    ConcurrentUpdate,
    ConfigError,
    DatabaseNotFound,
    EmbedderMismatch,
    InvalidInput,
    MissingDependency,
    NotADatabase,
    NotFound,
    PlanMismatch,
    SchemaError,
    StoreError,
    UnknownApp,
    DiaristError,
)
from .memory import IngestReport, Memory
from .read.floor import Floor
from .read.search import Results
from .store import Store, open_store
from .types import Chunk, Hit, Message
from .write.plan import ChunkSet, IndexPlan
from .write.validate import SessionInput

__version__ = "0.2.0"

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
