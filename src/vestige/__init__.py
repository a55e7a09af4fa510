"""vestige: long-term memory for AI agents in one SQLite file (dense + BM25, fused by rank)."""

from .errors import (
    EmbedderMismatch,
    InvalidInput,
    MissingDependency,
    NotFound,
    UnknownApp,
    VestigeError,
)
from .memory import IngestReport, Memory
from .search import Results
from .types import Chunk, Hit, Message
from .validate import SessionInput

__version__ = "0.1.0"

__all__ = [
    "Memory",
    "Hit",
    "Chunk",
    "Message",
    "Results",
    "SessionInput",
    "IngestReport",
    "VestigeError",
    "InvalidInput",
    "UnknownApp",
    "NotFound",
    "EmbedderMismatch",
    "MissingDependency",
]
