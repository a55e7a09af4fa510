"""The Python API: ``Memory`` ties the stages together over one store."""

from __future__ import annotations

import os
from datetime import datetime
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import lexical
from .chunk import VIEWS, chunk_session
from .dates import normalise_date, now_iso
from .embed import DEFAULT_EMBEDDER, Embedder, get_embedder, quantize
from .embed.cache import EmbeddingCache
from .errors import EmbedderMismatch, InvalidInput, NotFound, UnknownApp
from .rerank import Reranker, get_reranker
from .search import Results, SearchSettings, run_search
from .store.base import FactRecord, IndexedChunk, SessionRecord, Store
from .store.sqlite import SQLiteStore
from .types import Chunk, Message
from .validate import SessionInput, check_app, check_session, check_unique, content_hash

DEFAULT_APP = "default"


@dataclass
class IngestReport:
    added: list[str]
    replaced: list[str]
    unchanged: list[str]
    chunks: int

    def merge(self, other: "IngestReport") -> None:
        self.added += other.added
        self.replaced += other.replaced
        self.unchanged += other.unchanged
        self.chunks += other.chunks


class Memory:
    """Long-term memory in one SQLite file.

    >>> memory = Memory("memory.sqlite")
    >>> memory.add_session([{"role": "user", "content": "My cat is called Admon."}], app="me")
    >>> memory.search("What is my cat's name?", app="me", k=5)
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | Store = ":memory:",
        *,
        embedder: str | Embedder = DEFAULT_EMBEDDER,
        view: str = "split",
        chunk_tokens: int | None = None,
        depth: int = 200,
        rrf_k: int = 60,
        k1: float = lexical.K1,
        b: float = lexical.B,
        lexical_fusion: bool = True,
        index_lexical: bool = True,
        embed_cache: str | os.PathLike[str] | EmbeddingCache | None = None,
        reranker: Reranker | str | None = "evidence",
        rerank_depth: int = 50,
        floor: float | str | None = "auto",
    ):
        if view not in VIEWS:
            raise ValueError(f"unknown view {view!r}; use one of {', '.join(VIEWS)}")
        self.store: Store = path if isinstance(path, Store) else SQLiteStore(Path(path) if str(path) != ":memory:" else ":memory:")
        self.embedder = get_embedder(embedder) if isinstance(embedder, str) else embedder
        if floor == "auto":  # the embedder's calibrated floor, if it has one
            floor = getattr(self.embedder, "relevance_floor", None)
        elif isinstance(floor, str):
            raise ValueError(f"floor must be a cosine, None or 'auto', got {floor!r}")
        self.view = view
        self.chunk_tokens = chunk_tokens
        self.settings = SearchSettings(
            depth=depth, rrf_k=rrf_k, k1=k1, b=b, lexical=lexical_fusion, rerank_depth=rerank_depth,
            floor=floor,
        )
        # A second stage re-reads the top fused candidates (None: the fused order is final).
        self.reranker = get_reranker(reranker) if isinstance(reranker, str) else reranker
        self.index_lexical = index_lexical
        # A cache given as a path is this memory's to close; a cache object is the caller's.
        self._owns_cache = isinstance(embed_cache, (str, os.PathLike))
        self.cache = EmbeddingCache(embed_cache) if self._owns_cache else embed_cache
        self._check_embedder()

    # -- setup ----------------------------------------------------------------------------

    def _check_embedder(self) -> None:
        stored = self.store.get_meta("embedder")
        if stored is None:
            self.store.set_meta("embedder", self.embedder.model_id)
            self.store.set_meta("dim", str(self.embedder.dim))
        elif stored != self.embedder.model_id:
            raise EmbedderMismatch(
                f"{getattr(self.store, 'path', 'this store')} was built with embedder {stored!r}, "
                f"not {self.embedder.model_id!r}; open it with that embedder or use another file"
            )

    def close(self) -> None:
        self.store.close()
        if self.cache is not None and self._owns_cache:
            self.cache.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing --------------------------------------------------------------------------

    def _embed_int8(self, texts: Sequence[str], progress: Callable[[int], None] | None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.embedder.dim), np.int8)
        if self.cache is not None:
            return self.cache.embed_int8(self.embedder, texts, progress)
        return quantize(self.embedder.embed(texts, progress))

    def _index(self, chunks: list[Chunk], vectors: np.ndarray) -> list[IndexedChunk]:
        """Pair chunks with their vectors (given for the dense chunks only, in order) and terms."""
        out, dense = [], iter(vectors)
        for c in chunks:
            vector = next(dense) if c.dense else None
            out.append(IndexedChunk(chunk=c, vector=vector, terms=lexical.analyze(c.text) if c.lexical else []))
        return out

    def chunk(self, messages: Sequence[Message]) -> list[Chunk]:
        return chunk_session(messages, self.embedder, self.view, self.chunk_tokens)

    def add_session(
        self,
        messages: list[Any],
        *,
        app: str = DEFAULT_APP,
        session_id: str | None = None,
        date: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Store one session (a list of {role, content[, time]}); returns its id.

        Re-adding the same id with the same content changes nothing; new content replaces it.
        """
        item = SessionInput(messages, session_id, date, metadata or {})
        report = self.add_sessions([item], app=app)
        return (report.added or report.replaced or report.unchanged)[0]

    def add_sessions(
        self,
        sessions: Iterable[SessionInput],
        *,
        app: str = DEFAULT_APP,
        progress: Callable[[int], None] | None = None,
    ) -> IngestReport:
        """Validate every session, then embed and store them in one transaction."""
        app = check_app(app)
        checked = [check_session(s, f"session #{i}") for i, s in enumerate(sessions)]
        check_unique((c[0] for c in checked), "session id")
        stored = self.store.content_hashes(app, "session", [c[0] for c in checked])
        report = IngestReport([], [], [], 0)
        todo = []
        for sid, date, messages, metadata, digest in checked:
            if stored.get(sid) == digest:
                report.unchanged.append(sid)
                continue
            (report.replaced if sid in stored else report.added).append(sid)
            record = SessionRecord(sid, date or now_iso(), messages, digest, metadata)
            todo.append((record, self.chunk(messages)))
        texts = [c.dense_text for _, chunks in todo for c in chunks if c.dense]
        vectors = self._embed_int8(texts, progress)
        items, start = [], 0
        for record, chunks in todo:
            n_dense = sum(c.dense for c in chunks)
            items.append((record, self._index(chunks, vectors[start : start + n_dense])))
            start += n_dense
        report.chunks = sum(len(chunks) for _, chunks in todo)
        self.store.put_sessions(app, items)
        if not self.index_lexical and items:
            self.store.mark_lexical_stale(app)
        return report

    def add_fact(
        self,
        text: str,
        *,
        app: str = DEFAULT_APP,
        fact_id: str | None = None,
        date: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Store a short standalone note; returns its id."""
        app = check_app(app)
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("a fact must be a non-empty string")
        date = normalise_date(date) or now_iso()
        metadata = dict(metadata or {})
        digest = content_hash({"text": text, "date": date, "metadata": metadata})
        fact_id = str(fact_id) if fact_id is not None else digest[:16]
        if self.store.content_hashes(app, "fact", [fact_id]).get(fact_id) == digest:
            return fact_id
        n_tokens = self.embedder.count_tokens(text)
        chunk = Chunk(text=text, position=0, roles=("fact",), first_turn=0, last_turn=0, view="fact", n_tokens=n_tokens)
        vectors = self._embed_int8([text], None)
        self.store.put_facts(app, [(FactRecord(fact_id, text, date, digest, metadata), self._index([chunk], vectors))])
        if not self.index_lexical:
            self.store.mark_lexical_stale(app)
        return fact_id

    # -- reading --------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        app: str = DEFAULT_APP,
        k: int = 32,
        previous: str | None = None,
        rerank: bool = True,
        now: Any = None,
    ) -> Results:
        """The k most relevant chunks, best first, each explaining its rank in every channel.

        ``previous``: the previous turn, for a follow-up question. ``rerank=False`` skips the
        second stage (cheaper, e.g. when building context for every prompt). ``now``: when
        the question is asked (default: the current time), to resolve "last Sunday" and such.
        """
        app = check_app(app)
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("the query is empty")
        if not isinstance(k, int) or k < 1:
            raise InvalidInput(f"k must be a positive integer, got {k!r}")
        if app not in self.store.apps():
            raise UnknownApp(f"app {app!r} holds no memory in {getattr(self.store, 'path', 'this store')}")
        reranker = self.reranker if rerank else None
        moment = datetime.fromisoformat(normalise_date(now)) if now is not None else datetime.now()
        return run_search(self.store, self.embedder, app, query, k, self.settings, previous, reranker, moment)

    def context(self, query: str, *, app: str = DEFAULT_APP, budget_tokens: int = 1000, **options: Any):
        """The prompt block for ``query``: dated snippets within budget, or "" (see vestige.context)."""
        from .context import build_context

        return build_context(self, query, app=app, budget_tokens=budget_tokens, **options)

    def get(self, item_id: str, *, app: str = DEFAULT_APP) -> dict[str, Any]:
        """A stored session (with its messages) or fact, by id."""
        app = check_app(app)
        found = self.store.get_session(app, item_id) or self.store.get_fact(app, item_id)
        if found is None:
            raise NotFound(f"no session or fact {item_id!r} in app {app!r}")
        return found

    def delete(self, item_id: str, *, app: str = DEFAULT_APP) -> None:
        """Delete a session or fact with its chunks, vectors and index postings."""
        app = check_app(app)
        if not (self.store.delete(app, "session", item_id) or self.store.delete(app, "fact", item_id)):
            raise NotFound(f"no session or fact {item_id!r} in app {app!r}")

    def delete_app(self, app: str) -> None:
        """Delete everything an app holds."""
        app = check_app(app)
        if not self.store.delete_app(app):
            raise UnknownApp(f"app {app!r} holds no memory")

    def apps(self) -> list[str]:
        return self.store.apps()

    def stats(self, app: str | None = None) -> dict[str, Any]:
        if app is not None and app not in self.store.apps():
            raise UnknownApp(f"app {app!r} holds no memory")
        out = self.store.stats(app)
        out["embedder"] = self.embedder.model_id
        return out

    def reindex(self, app: str) -> int:
        """Rebuild an app's lexical index from its stored text."""
        if app not in self.store.apps():
            raise UnknownApp(f"app {app!r} holds no memory")
        return self.store.rebuild_lexical(app)
