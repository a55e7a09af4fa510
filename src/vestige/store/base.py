"""The storage contract the retrieval code depends on.

SQLite implements it (``SQLiteStore``); a PostgreSQL + pgvector store must implement the same
methods and pass the same contract tests. Every method takes the app by name and filters by it
inside the store: isolation is never left to callers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..types import Chunk, Message


@dataclass
class SessionRecord:
    external_id: str
    date: str | None
    messages: list[Message]
    content_hash: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class FactRecord:
    external_id: str
    text: str
    date: str | None
    content_hash: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class IndexedChunk:
    """A chunk with everything both channels need: its int8 vector and its index terms."""

    chunk: Chunk
    vector: np.ndarray | None  # int8, normalised before quantisation; None if not dense
    terms: list[str]


@dataclass
class ChunkRow:
    chunk_id: int
    text: str
    session_id: str | None
    fact_id: str | None
    date: str | None
    roles: tuple[str, ...]
    view: str
    position: int
    first_turn: int
    last_turn: int


class LexicalUnavailable(Exception):
    """The lexical index cannot be trusted for this app; the message says why."""


class Store(ABC):
    @abstractmethod
    def get_meta(self, key: str) -> str | None: ...

    @abstractmethod
    def set_meta(self, key: str, value: str) -> None: ...

    @abstractmethod
    def apps(self) -> list[str]: ...

    @abstractmethod
    def content_hashes(self, app: str, kind: str, external_ids: list[str]) -> dict[str, str]:
        """external id -> stored content hash, for sessions (kind="session") or facts."""

    @abstractmethod
    def put_sessions(
        self, app: str, items: list[tuple[SessionRecord, list[IndexedChunk]]]
    ) -> None:
        """Store sessions with their chunks in one transaction, replacing any with the same id."""

    @abstractmethod
    def put_facts(self, app: str, items: list[tuple[FactRecord, list[IndexedChunk]]]) -> None: ...

    @abstractmethod
    def delete(self, app: str, kind: str, external_id: str) -> bool:
        """Delete a session or fact with its chunks, vectors and postings; False if absent."""

    @abstractmethod
    def delete_app(self, app: str) -> bool: ...

    @abstractmethod
    def get_session(self, app: str, external_id: str) -> dict[str, Any] | None: ...

    @abstractmethod
    def get_fact(self, app: str, external_id: str) -> dict[str, Any] | None: ...

    @abstractmethod
    def list_items(self, app: str, kind: str, limit: int, offset: int) -> list[dict[str, Any]]: ...

    @abstractmethod
    def dense_search(self, app: str, queries: np.ndarray, depth: int) -> list[tuple[int, float]]:
        """Top chunks by cosine; with several query vectors each chunk keeps its best score."""

    @abstractmethod
    def lexical_search(
        self, app: str, terms: list[str], depth: int, k1: float, b: float
    ) -> list[tuple[int, float]]:
        """Top chunks by BM25; raises LexicalUnavailable when the index is not complete."""

    @abstractmethod
    def lexical_status(self, app: str) -> str | None:
        """None when the lexical index is complete and current, else the reason it is not."""

    @abstractmethod
    def rebuild_lexical(self, app: str, analyze: Any) -> int:
        """Rebuild the app's lexical index from stored chunk text; returns chunks indexed."""

    @abstractmethod
    def fetch_chunks(self, app: str, chunk_ids: list[int]) -> dict[int, ChunkRow]: ...

    @abstractmethod
    def stats(self, app: str | None = None) -> dict[str, Any]: ...

    @abstractmethod
    def close(self) -> None: ...
