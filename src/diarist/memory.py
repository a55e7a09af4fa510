"""``Memory``: the composition root and the only door. The CLI, HTTP, MCP and the bench call it.

It opens a store (``open_store``), fixes the embedder and index plan in the database (the
first writer's choice wins), and runs the pipeline: validate -> plan -> chunk -> embed -> store
on the way in; channels -> fusion -> second stage -> floor -> context on the way out.
"""

from __future__ import annotations

import math
import numbers
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from . import lexical, settings
from .chat import place_context, question_of
from .dates import now_iso
from .embed import Embedder, get_embedder, quantize, spec_for_model_id
from .embed.cache import EmbeddingCache
from .errors import (ConcurrentUpdate, ConfigError, EmbedderMismatch, InvalidInput, NotFound, PlanMismatch, StoreError,
                     UnknownApp)
from .files import not_regular
from .keys import KeyStore
from .lexical import LexicalChannel
from .read.block import ContextBlock
from .read.budget import BlockOptions, Draft, check_options, finish
from .read.cut import CutParams
from .read.lines import AUTO as AUTO_TRIM
from .read.lines import NAMED as NAMED_LINES
from .read.lines import TRIM_NAMES, LinesParams, LineVectors, StoredLines, line_digest, unit_rows
from .read.trim import TrimParams, lines_of
from .read.floor import Floor
from .read.search import (Channels, Results, SearchSettings, check_dense_weight, check_fusion, run_search,
                          stage_named)
from .rerank import Reranker, get_reranker
from .store.base import KINDS, Conflict, IndexedChunk, Item, Store
from .store.open import open_store
from .types import Chunk, Message
from .vectors import DenseIndex, ExactDenseIndex, dense_index
from .write.chunk import chunk_session, title_line, with_title
from .write.items import IngestReport, fact_item, session_item
from .write.plan import IndexPlan, get_plan
from .write.validate import (
    MAX_QUERY_CHARS, FactInput, SessionInput, check_app, check_fact, check_date, check_id, check_metadata, check_session, check_text,
    check_unique, shown,
)

DEFAULT_APP = settings.DEFAULT_APP
MAX_SEARCH_K = 10_000  # hits one search may ask for

Chunker = Callable[[Sequence[Message]], list[Chunk]]


def _open_cache(cache: "str | os.PathLike[str] | EmbeddingCache | None") -> "EmbeddingCache | None":
    """The embedding cache a path names (opened here), or the cache object given, or None.
    A bad path is a StoreError: a folder, a FIFO or a NUL in it raised sqlite3 or ValueError."""
    if cache is None or hasattr(cache, "embed_int8"):
        return cache
    if not isinstance(cache, (str, os.PathLike)):
        raise ConfigError(f"embed_cache must be a path or an EmbeddingCache, not {type(cache).__name__}")
    try:
        if (what := not_regular(cache)) is not None:
            raise StoreError(f"the embedding cache {shown(os.fspath(cache))} is {what}, not a file")
        return EmbeddingCache(cache)
    except (sqlite3.Error, OSError, ValueError, UnicodeError, RuntimeError) as exc:
        raise StoreError(f"cannot open the embedding cache {shown(os.fspath(cache))}: {exc}") from None


def _check_group(group: object) -> bool:
    if not isinstance(group, bool):
        raise ConfigError(f"group must be True or False, got {shown(group)}")
    return group


class Memory:
    """Long-term memory over one store (a SQLite file by default).

    >>> memory = Memory("memory.sqlite")
    >>> memory.add_session([{"role": "user", "content": "My cat is called Admon."}], app="me")
    >>> memory.search("What is my cat's name?", app="me", k=5)

    ``embedder`` and ``plan`` default to what the database records, else to the defaults of
    ``diarist.settings``; naming others than the recorded ones raises ``EmbedderMismatch`` or
    ``PlanMismatch``. ``create=False`` refuses a database that does not exist yet.
    ``store_lines``: write the vectors of each chunk's lines with it (the block's trim reads them,
    so a question embeds only itself; about twice the embedding work at ingest); False leaves the
    trim to embed the lines it shows, at query time.
    """

    def __init__(
        self,
        location: str | os.PathLike[str] | Store = ":memory:",
        *,
        embedder: str | Embedder | None = None,
        plan: str | IndexPlan | None = None,
        chunk_tokens: int | None = None,
        depth: int = settings.DEPTH,
        fusion: str = settings.FUSION,
        dense_weight: float = settings.FUSION_DENSE_WEIGHT,
        rrf_k: int = settings.FUSION_RRF_K,
        k1: float = settings.BM25_K1,
        b: float = settings.BM25_B,
        lexical_fusion: bool = True,
        index_lexical: bool = True,
        embed_cache: str | os.PathLike[str] | EmbeddingCache | None = None,
        reranker: Reranker | str | None = settings.RERANKER,
        rerank_depth: int = settings.RERANK_DEPTH,
        floor: float | str | Floor | None = settings.FLOOR,
        create: bool = True,
        chunker: Chunker | None = None,
        dense: str = "auto",
        group: bool = settings.GROUP_BY_MEMORY,
        cut: str | CutParams | None = settings.CUT,
        store_lines: bool = True,
    ):
        _check_search_numbers({"depth": depth, "rrf_k": rrf_k, "k1": k1, "b": b, "lexical": lexical_fusion,
                               "rerank_depth": rerank_depth})
        self.store: Store = open_store(location, create=create)
        try:
            self.embedder, self.plan = self._fix_embedder_and_plan(embedder, plan)
            self.settings = SearchSettings(
                depth=depth, fusion=check_fusion(fusion), dense_weight=check_dense_weight(dense_weight),
                rrf_k=rrf_k, k1=k1, b=b, lexical=lexical_fusion, rerank_depth=rerank_depth,
                floor=self._floor(floor), fetch_whole_pool=len(self.plan.sets) > 1, group=_check_group(group),
            )
            self.cut = self._cut(cut)
            # A second stage re-reads the top fused candidates (None: the fused order is final).
            self.reranker = get_reranker(reranker) if isinstance(reranker, str) or reranker is None else reranker
        except BaseException:
            self.store.close()
            raise
        self.chunk_tokens = chunk_tokens
        self.index_lexical = index_lexical
        if not isinstance(store_lines, bool):
            self.store.close()
            raise ConfigError(f"store_lines must be True or False, got {shown(store_lines)}")
        self.store_lines = store_lines and self.store.keeps_lines
        # The lab's hook: a function messages -> chunks used instead of the plan's chunking.
        self._chunker = chunker
        # A cache given as a path is this memory's to close; a cache object is the caller's.
        self._owns_cache = isinstance(embed_cache, (str, os.PathLike))
        try:
            self.cache = _open_cache(embed_cache)
        except BaseException:
            self.store.close()
            raise
        # "exact" | "hnsw" | "auto" (diarist.vectors.dense_index): auto keeps small apps exact.
        try:
            self.dense: DenseIndex = dense_index(self.store, dense)
        except BaseException:
            self.store.close()
            raise
        self.lexical = LexicalChannel(self.store)
        self.keys = KeyStore(self.store)
        self._owns_store = True
        # The lines-by-meaning trim's vectors, kept across questions (shared with derived memories).
        self._line_vectors = LineVectors(self._embed_lines)

    # -- setup ----------------------------------------------------------------------------

    def _fix_embedder_and_plan(
        self, embedder: str | Embedder | None, plan: str | IndexPlan | None
    ) -> tuple[Embedder, IndexPlan]:
        """Resolve both, then record them under the write lock; a database keeps its first."""
        where = self.store.location
        stored_model = self.store.get_meta("embedder")
        if embedder is None:
            embedder = self.store.get_meta("embedder_spec") or (
                spec_for_model_id(stored_model) if stored_model else settings.EMBEDDER
            )
            if embedder is None:
                raise ConfigError(
                    f"{where} was built with embedder {stored_model!r}, which diarist cannot rebuild by "
                    "name; pass the same embedder (Memory(embedder=...) or --embedder)"
                )
        resolved = get_embedder(embedder) if isinstance(embedder, str) else embedder
        if not isinstance(resolved, Embedder):
            raise ConfigError(f"embedder must be a spec string or an Embedder, got {type(embedder).__name__}")
        if plan is None:
            recorded = self.store.get_meta("index_plan")
            chosen = IndexPlan.from_json(recorded) if recorded else get_plan(settings.PLAN)
        else:
            chosen = get_plan(plan)
        claim = {"embedder": resolved.model_id, "dim": str(resolved.dim), "index_plan": chosen.to_json()}
        fixed = self.store.claim_meta(claim)
        if fixed["embedder"] != resolved.model_id:
            raise EmbedderMismatch(
                f"{where} was built with embedder {fixed['embedder']!r}, not {resolved.model_id!r}; "
                "open it with that embedder or use another file"
            )
        if isinstance(embedder, str):
            # Claimed only once the model is known to be the recorded one: claimed with the rest,
            # a losing opener's spec was recorded beside the winner's model when the winner gave
            # an Embedder object, and every later open without an embedder named was refused.
            self.store.claim_meta({"embedder_spec": embedder})
        recorded_plan = IndexPlan.from_json(fixed["index_plan"])
        if not recorded_plan.same_index(chosen):
            raise PlanMismatch(
                f"{where} was indexed with plan {recorded_plan.name!r}, not {chosen.name!r}; open it "
                "without a plan (it is read from the database) or use another file"
            )
        return resolved, recorded_plan

    def _floor(self, floor: float | str | Floor | None) -> Floor | None:
        """"auto": the embedder's evidence floor, else its cosine floor; "cosine": its cosine
        floor alone (the floor before it read the question and the lexical index); a number: a
        cosine-only floor there; a Floor as given; None: no floor."""
        if floor == "auto" or floor == "cosine":
            evidence = getattr(self.embedder, "evidence_floor", None)
            if floor == "auto" and evidence is not None:
                return evidence
            cosine = getattr(self.embedder, "relevance_floor", None)
            return None if cosine is None else Floor(float(cosine))
        if floor is None or isinstance(floor, Floor):
            return floor
        if isinstance(floor, bool) or not isinstance(floor, numbers.Real):
            raise ConfigError(f"floor must be a cosine, a Floor, None, 'auto' or 'cosine', got {_describe(floor)}")
        if not -1.0 <= floor <= 1.0:  # a cosine; also keeps a huge int from overflowing float()
            raise ConfigError(f"floor must be a cosine from -1 to 1, got {_describe(floor)}")
        return Floor(float(floor))

    def _cut(self, cut: str | CutParams | None) -> CutParams | None:
        """"auto": the cut of ``diarist.settings`` for the model its values were chosen for
        (other models' cosines are on other scales: no cut); CutParams as given; None: no cut."""
        if cut == "auto":
            return CutParams() if self.embedder.model_id == settings.CUT_MODEL else None
        if cut is None or isinstance(cut, CutParams):
            return cut
        raise ConfigError(f"cut must be 'auto', a CutParams or None, got {shown(cut)}")

    def derive(self, **options: Any) -> "Memory":
        """The same memory (store, embedder, plan, caches) searched with other options:
        ``depth``, ``fusion``, ``dense_weight``, ``rrf_k``, ``k1``, ``b``, ``lexical_fusion``,
        ``rerank_depth``, ``group``, ``floor``, ``reranker``, ``cut``. Closing the derived memory
        leaves the store open."""
        fields = {"depth": "depth", "fusion": "fusion", "dense_weight": "dense_weight", "rrf_k": "rrf_k",
                  "k1": "k1", "b": "b", "lexical_fusion": "lexical", "rerank_depth": "rerank_depth", "group": "group"}
        unknown = set(options) - set(fields) - {"floor", "reranker", "cut"}
        if unknown:
            raise ConfigError(f"derive() takes search options only, not {', '.join(sorted(unknown))}")
        other = object.__new__(Memory)
        other.__dict__.update(self.__dict__)
        changes = {fields[k]: v for k, v in options.items() if k in fields}
        _check_search_numbers(changes)
        if "fusion" in changes:
            changes["fusion"] = check_fusion(changes["fusion"])
        if "dense_weight" in changes:
            changes["dense_weight"] = check_dense_weight(changes["dense_weight"])
        if "group" in changes:
            changes["group"] = _check_group(changes["group"])
        if "floor" in options:
            changes["floor"] = other._floor(options["floor"])
        if "cut" in options:
            other.cut = other._cut(options["cut"])
        other.settings = replace(self.settings, **changes)
        if "reranker" in options:
            spec = options["reranker"]
            if not (spec is None or isinstance(spec, str) or callable(getattr(spec, "rerank", None))):
                raise ConfigError(f"reranker must be a name, None or a Reranker, not {type(spec).__name__}")
            other.reranker = get_reranker(spec) if isinstance(spec, str) or spec is None else spec
        other._owns_store = other._owns_cache = False
        return other

    def close(self) -> None:
        if self._owns_store:
            self.dense.close()
            self.store.close()
        if self.cache is not None and self._owns_cache:
            self.cache.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing --------------------------------------------------------------------------

    def chunk(self, messages: Sequence[Message], title: str | None = None) -> list[Chunk]:
        """A session's chunks; ``title``: the line each begins with (``write.chunk.title_line``)."""
        if self._chunker is not None:
            return with_title(self._chunker(messages), title, self.embedder.count_tokens)
        return chunk_session(messages, self.embedder, self.plan, self.chunk_tokens, title=title)

    def _chunks_of(self, item: Item) -> list[Chunk]:
        if item.kind == "session":
            return self.chunk(item.messages, title_line(item.metadata))
        assert item.text is not None
        n_tokens = self.embedder.count_tokens(item.text)
        return [Chunk(text=item.text, position=0, roles=("fact",), first_turn=0, last_turn=0, view="fact",
                      n_tokens=n_tokens)]

    def _embed_int8(
        self, texts: Sequence[str], progress: Callable[[int], None] | None,
        known: dict[str, np.ndarray] | None = None, counts: dict[str, int] | None = None,
        floats: dict[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        """int8 vectors of texts; ``known`` (text -> vector) is used first and filled in;
        ``counts`` (text -> tokens, from the chunker) spares the embedder counting them again;
        ``floats`` is filled with the float vectors of the texts embedded here (a chunk of one
        line is its own line: its line's vector is not computed twice)."""
        if known is not None:
            missing = [t for t in dict.fromkeys(texts) if t not in known]
            known.update(zip(missing, self._embed_int8(missing, progress, counts=counts, floats=floats)))
            return np.stack([known[t] for t in texts]) if texts else np.zeros((0, self.embedder.dim), np.int8)
        if not texts:
            return np.zeros((0, self.embedder.dim), np.int8)
        unique = list(dict.fromkeys(texts))
        if len(unique) < len(texts):  # identical texts (a repeated paragraph, a template) embedded once
            rows = dict(zip(unique, self._embed_int8(unique, progress, counts=counts, floats=floats)))
            return np.stack([rows[t] for t in texts])
        if self.cache is not None:
            return self.cache.embed_int8(self.embedder, texts, progress)
        if counts and getattr(self.embedder, "whitespace_splits", False) and all(t in counts for t in texts):
            vectors = self.embedder.embed_passages(texts, progress, counts=[counts[t] for t in texts])
        else:
            vectors = self.embedder.embed_passages(texts, progress)
        if floats is not None:
            floats.update(zip(texts, np.asarray(vectors, dtype=np.float32)))
        return quantize(vectors)

    def _index(self, chunks: list[Chunk], vectors: np.ndarray,
               lines: Sequence[list[tuple[bytes, np.ndarray]]] | None = None) -> list[IndexedChunk]:
        """Pair chunks with their vectors (given for the dense chunks only, in order), terms and
        lines' vectors (given for every chunk, or None)."""
        out, dense = [], iter(vectors)
        for n, c in enumerate(chunks):
            vector = next(dense) if c.dense else None
            terms, language = lexical.analyze_passage(c.text) if c.lexical else ([], lexical.detect(c.text))
            out.append(IndexedChunk(chunk=c, vector=vector, terms=terms, language=language,
                                    lines=lines[n] if lines is not None else ()))
        return out

    def _embed_lines(self, lines: list[str]) -> np.ndarray:
        """Vectors of lines as stored text (``embed_passages``); through the embedding cache when
        the memory has one (float32, the same bytes: the lab's runs embed a line once)."""
        embed_float32 = getattr(self.cache, "embed_float32", None)
        if embed_float32 is not None:
            return embed_float32(self.embedder, lines)
        return self.embedder.embed_passages(lines)

    def _stored_lines(self, app: str) -> StoredLines:
        """The lookup of lines' vectors in the app's stored chunks (the trim's and the writes')."""
        def lookup(lines: Sequence[str]) -> dict[str, np.ndarray]:
            digests = {line_digest(line): line for line in lines}
            return {digests[d]: v for d, v in self.store.line_vectors(app, list(digests)).items() if d in digests}
        return lookup

    def _lines_of(self, app: str, texts: Sequence[str],
                  floats: dict[str, np.ndarray] | None = None) -> list[list[tuple[bytes, np.ndarray]]]:
        """Per chunk text, its lines as the trim reads them (``read.trim.lines_of``), each with its
        digest and vector: read from the app's stored chunks when a line is there already (an
        append re-chunks a session), else taken from ``floats`` (a line that was a whole chunk's
        text, embedded with the chunks), else embedded; the trim's own memory of lines left as it is."""
        per_text = [lines_of(text) for text in texts]
        unique = list(dict.fromkeys(line for lines in per_text for line in lines))
        if not unique:
            return [[] for _ in texts]
        def embed(lines: list[str]) -> np.ndarray:
            done = floats or {}
            rest = [line for line in lines if line not in done]
            new = dict(zip(rest, self._embed_lines(rest))) if rest else {}
            return np.stack([done[line] if line in done else new[line] for line in lines])

        once = LineVectors(embed, capacity=0)  # the same rule as the trim's, keeping nothing
        vectors = dict(zip(unique, once(unique, self._stored_lines(app))))
        return [[(line_digest(line), vectors[line]) for line in lines] for lines in per_text]

    def _write(
        self,
        app: str,
        todo: list[tuple[Item, list[Chunk]]],
        progress: Callable[[int], None] | None = None,
        expect: dict[tuple[str, str], str | None] | None = None,
        known: dict[str, np.ndarray] | None = None,
        archive: bool = False,
    ) -> None:
        """Embed every dense chunk in one pass, then store all items in one transaction
        (``archive``: the items replaced are kept as versions)."""
        texts = [c.dense_text for _, chunks in todo for c in chunks if c.dense]
        # A chunk whose vector reads all of it was counted by diarist's chunker: its count is its text's.
        counts = {} if self._chunker is not None else {
            c.text: c.n_tokens for _, chunks in todo for c in chunks if c.dense and c.embed_text is None}
        floats: dict[str, np.ndarray] | None = {} if self.store_lines else None
        vectors = self._embed_int8(texts, progress, known, counts, floats)
        lines = self._lines_of(app, [c.text for _, chunks in todo for c in chunks], floats) if self.store_lines else None
        items, start, at = [], 0, 0
        for item, chunks in todo:
            n_dense = sum(c.dense for c in chunks)
            items.append((item, self._index(chunks, vectors[start : start + n_dense],
                                            lines[at : at + len(chunks)] if lines is not None else None)))
            start += n_dense
            at += len(chunks)
        self.store.put_items(app, items, expect=expect, archive=archive)
        self.dense.purge(app)  # a replace removed the old chunks' vectors
        if not self.index_lexical and items:
            self.store.mark_lexical_stale(app)

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
        if isinstance(sessions, (str, bytes, dict, SessionInput)) or not isinstance(sessions, Iterable):
            raise InvalidInput(f"sessions must be a list of sessions, got {type(sessions).__name__}")
        return self.add_items([session_item(s, f"session #{i}") for i, s in enumerate(sessions)], app=app,
                              progress=progress)

    def add_items(self, items: Sequence[Item], *, app: str = DEFAULT_APP,
                  progress: Callable[[int], None] | None = None) -> IngestReport:
        """Embed and store items already checked (``diarist.write.items``: the import funnel,
        ``importers.load``, checks its input once, before anything is stored), all of one kind,
        in one transaction. An item whose stored version holds the same content is unchanged."""
        app = check_app(app)
        kinds = {item.kind for item in items if isinstance(item, Item)}
        if len(kinds) > 1 or not all(isinstance(item, Item) for item in items):
            raise InvalidInput("add_items takes the checked items of one kind (diarist.write.items)")
        kind = next(iter(kinds), "session")
        check_unique((item.external_id for item in items), f"{kind} id")
        stored = self.store.content_hashes(app, kind, [item.external_id for item in items])
        report = IngestReport([], [], [], 0)
        todo = []
        for item in items:
            if stored.get(item.external_id) == item.content_hash:
                report.unchanged.append(item.external_id)
                continue
            (report.replaced if item.external_id in stored else report.added).append(item.external_id)
            todo.append((item, self._chunks_of(item)))
        report.chunks = sum(len(chunks) for _, chunks in todo)
        self._write(app, todo, progress)
        return report

    def append_messages(
        self, session_id: str, messages: list[Any], *, app: str = DEFAULT_APP, date: Any = None
    ) -> IngestReport:
        """Append messages to a session (created if new; ``date`` is used then) and re-index it.

        Atomic across threads and processes: the write only lands if the session is still what
        was read (compare-and-swap on its content hash). If another writer got in between, the
        append is done again inside a write transaction, where nothing can come between the read
        and the write: it lands then, whatever the contention.
        """
        app = check_app(app)
        session_id = check_id(session_id, "session id")
        if not isinstance(messages, (list, tuple)):
            raise InvalidInput(f"messages must be a list, got {type(messages).__name__}")
        check_session(SessionInput(list(messages), session_id, date, {}), "append")  # all of it, before any read
        vectors: dict[str, np.ndarray] = {}  # what the first round embedded, reused by the second
        try:
            return self._append_round(app, session_id, list(messages), date, vectors)
        except Conflict:
            pass
        # Retrying optimistic rounds gave no progress guarantee: each round re-chunks and
        # re-embeds the whole session, so the window grows with it, and 4 writers appending to
        # one session made some appends lose 20 rounds in a row (6 of 600 gave up). Under the
        # write lock the round cannot lose; only text the first round had not seen is embedded.
        try:
            with self.store.transaction():
                return self._append_round(app, session_id, list(messages), date, vectors)
        except Conflict:  # only a store whose transaction() does not hold the write lock
            raise ConcurrentUpdate(
                f"session {session_id!r} of app {app!r} changed under another writer; nothing appended"
            ) from None

    def _append_round(
        self, app: str, session_id: str, messages: list[Any], date: Any, vectors: dict[str, np.ndarray]
    ) -> IngestReport:
        """Read the session, add the messages, re-chunk and write it if it is still what was read."""
        found = self.store.get_item(app, "session", session_id)
        if found is None:
            draft = SessionInput(list(messages), session_id, date, {})
        else:
            old = [dict(m.__dict__) for m in found.messages]
            draft = SessionInput(old + list(messages), session_id, found.date, dict(found.metadata))
        sid, when, checked, metadata, digest = check_session(draft, "append")
        report = IngestReport([], [], [], 0)
        if found is not None and found.content_hash == digest:
            report.unchanged.append(sid)
            return report
        (report.replaced if found is not None else report.added).append(sid)
        item = Item("session", sid, when or now_iso(), digest, metadata, tuple(checked))
        chunks = self._chunks_of(item)
        report.chunks = len(chunks)
        self._write(app, [(item, chunks)], expect={("session", sid): found.content_hash if found else None},
                    known=vectors)
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
        report = self.add_facts([FactInput(text, fact_id, date, metadata)], app=app)
        return (report.added or report.replaced or report.unchanged)[0]

    def add_facts(self, facts: Iterable[FactInput], *, app: str = DEFAULT_APP) -> IngestReport:
        """Validate every fact, then embed and store them in one transaction."""
        app = check_app(app)
        if isinstance(facts, (str, bytes, dict, FactInput)) or not isinstance(facts, Iterable):
            raise InvalidInput(f"facts must be a list of facts, got {type(facts).__name__}")
        return self.add_items([fact_item(f, "fact") for f in facts], app=app)

    # -- reading --------------------------------------------------------------------------

    def _channels(self, where: dict[str, Any] | None = None, app: str = DEFAULT_APP) -> Channels:
        if where is None:
            return Channels(self.store, self.dense, self.lexical, self.embedder)
        # The filter runs in the store; the dense scan for it is exact (diarist.read.search).
        exact = self.dense if isinstance(self.dense, ExactDenseIndex) else getattr(self.dense, "exact", None)
        if not isinstance(exact, ExactDenseIndex):
            exact = self._filtered_dense = getattr(self, "_filtered_dense", None) or ExactDenseIndex(self.store)
        return Channels(self.store, self.dense, self.lexical, self.embedder,
                        allowed=self.store.chunk_ids_where(app, where), filtered_dense=exact)

    def search(
        self,
        query: str,
        *,
        app: str = DEFAULT_APP,
        k: int = settings.BUDGET_K,
        previous: str | None = None,
        rerank: bool = True,
        now: Any = None,
        where: dict[str, Any] | None = None,
        explain: bool = False,
        after: Sequence[Any] = (),
    ) -> Results:
        """The k most relevant memories (each session, note or fact once, with its best
        passages; chunks when the memory was opened with ``group=False``), best first, each
        explaining its rank in every channel.

        ``previous``: the previous turn, for a follow-up question. ``rerank=False`` skips the
        second stage (cheaper, e.g. when building context for every prompt). ``now``: when
        the question is asked (default: the current time), to resolve "last Sunday" and such.
        ``where``: only items whose metadata has each of these top-level keys equal to the value
        (``{"source": "chat"}``), filtered inside the store before either channel is cut.
        ``explain``: each hit carries ``why`` (its rank and score in each channel, the terms it
        matched, its fused score, the second stage's move) and ``results.dropped`` lists what
        each stage left out; ``results.trace`` records every stage either way. ``after``: more
        stages to run on the ranked memories (``Memory.context`` adds the block's: cut, trim, budget).
        """
        app = check_app(app)
        if isinstance(query, str) and not query.strip():
            raise InvalidInput("the query is empty")
        query = check_text(query, "the query", max_chars=MAX_QUERY_CHARS)
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_SEARCH_K:
            raise InvalidInput(f"k must be a positive integer up to {MAX_SEARCH_K:,}, got {shown(k)}")
        if isinstance(previous, str) and not previous.strip():
            previous = None  # an empty previous turn is no previous turn
        elif previous is not None:
            previous = check_text(previous, "previous", max_chars=MAX_QUERY_CHARS)
        if not isinstance(rerank, bool):
            raise InvalidInput(f"rerank must be True or False, got {shown(rerank)}")
        if not isinstance(explain, bool):
            raise InvalidInput(f"explain must be True or False, got {shown(explain)}")
        when = check_date(now, "now")
        if where is not None:
            if not isinstance(where, dict) or not where:
                raise InvalidInput(f"where must be a non-empty object of metadata keys and values, got {shown(where)}")
            where = check_metadata(where, "where")
        self._require_app(app)
        reranker = self.reranker if rerank else None
        # Stored dates are compared as wall-clock times (diarist.rerank.evidence): so is now.
        moment = datetime.fromisoformat(when).replace(tzinfo=None) if when else datetime.now()
        extra: dict[str, Any] = {"explain": True} if explain else {}  # the lab's scripts wrap the bare call
        if after:
            if isinstance(after, str) or not isinstance(after, Sequence):
                raise InvalidInput(f"after must be a list of read stages (names or callables), got {shown(after)}")
            try:
                extra["after"] = [stage_named(stage) for stage in after]
            except ConfigError as exc:
                raise InvalidInput(str(exc)) from None
        return run_search(self._channels(where, app), app, query, k, self.settings, previous, reranker, moment, **extra)

    def context(
        self,
        query: str,
        *,
        app: str = DEFAULT_APP,
        budget_tokens: int = settings.CONTEXT_BUDGET_TOKENS,
        k: int = settings.CONTEXT_K,
        previous: str | None = None,
        min_score: float | None = None,
        order: str = "date",
        relative_cut: float | None = None,
        explain: bool = False,
        now: Any = None,
        trim: TrimParams | LinesParams | None | str = "auto",
    ) -> ContextBlock:
        """The prompt block for ``query``: dated memories within budget, or "" (see diarist.context).

        The read path's stages choose it: the k best memories, each once with its best passages,
        then the cut (``diarist.read.cut``: what each channel's score means; the memory's
        ``cut`` option), then the budget. The block carries the trace of every stage
        (``block.trace``; with ``explain``, ``block.dropped`` and each snippet's ``hit.why``).
        ``relative_cut``: also leave out hits scoring under this share of the best hit's fused
        score (the cut before this one; None: not applied, nor when the scores are not on one
        scale, e.g. with RRF). ``now``: when the question is asked, as for ``search``. ``trim``: how
        each memory is shown. "auto" (the default): settings.CONTEXT_TRIM, "pointers", where the cut
        applies (the default model), else passages whole; "pointers": the best memories by their
        passages, the next ones by their closest line, and none whole when not even the best has a
        line close to the question; "lines" or a ``LinesParams``: each memory by its lines closest
        in meaning (``diarist.read.lines``, one embedding per line considered, kept for the next
        question); None or "none": passages whole; a ``TrimParams()``: by the lines that hold the
        question's terms (``diarist.read.trim``)."""
        budget = check_options(budget_tokens, order)
        if isinstance(trim, str):
            if trim not in TRIM_NAMES:
                raise InvalidInput(f"trim must be 'auto', 'lines', 'pointers', 'none', None, TrimParams or "
                                   f"LinesParams, got {shown(trim)}")
            if trim in NAMED_LINES:
                trim = NAMED_LINES[trim]
            elif trim == "none":
                trim = None
            else:
                trim = AUTO_TRIM if self.cut is not None else None  # fitted together, for one model
        elif trim is not None and not isinstance(trim, (TrimParams, LinesParams)):
            raise InvalidInput(f"trim must be 'auto', 'lines', 'pointers', 'none', None, TrimParams or "
                               f"LinesParams, got {shown(trim)}")
        if relative_cut is not None and (
            isinstance(relative_cut, bool) or not isinstance(relative_cut, (int, float))
            or not 0.0 <= relative_cut <= 1.0
        ):
            raise InvalidInput(f"relative_cut must be a number from 0 to 1 or None, got {shown(relative_cut)}")
        if min_score is not None and (
            isinstance(min_score, bool) or not isinstance(min_score, (int, float))
            or (isinstance(min_score, float) and not math.isfinite(min_score)) or abs(min_score) > 2.0**1023
        ):  # an int beyond a float's range (10**5000) is not a score either
            raise InvalidInput(f"min_score must be a finite number or None, got {shown(min_score)}")
        cut = self.cut if self.settings.group else None
        options = BlockOptions(self.embedder.count_tokens, budget, order, min_score, relative_cut, cut, trim)
        stored = self._stored_lines(app)
        marks_vectors = (lambda lines: self._line_vectors(lines, stored)) if cut is not None else None
        draft = Draft(options, lines_of_vector=lambda vector: self._line_cosines(query, vector, app),
                      line_vectors=marks_vectors)  # marks by meaning: the calibrated model, stored lines first
        try:  # the draft joins the read as its first stage after the search's own
            results = self.search(query, app=app, k=k, previous=previous, explain=explain, now=now,
                                  after=[draft, "cut", "trim", "budget"])
        except UnknownApp:
            return ContextBlock(notes=[f"app {app!r} holds no memory yet"])
        return finish(draft, results._trace, results.notes)

    def _line_cosines(self, query: str, vector: np.ndarray | None = None,
                      app: str | None = None) -> Callable[[Sequence[str]], np.ndarray]:
        """Cosines of lines to ``query`` by this memory's embedder (the lines-by-meaning trim):
        against ``vector``, the search's own vector of it, else one embedded on first use (an
        empty block needs no line). The lines' vectors are read from ``app``'s stored chunks
        where they are there (None: every line is embedded)."""
        vectors, question = self._line_vectors, [] if vector is None else [unit_rows(vector[None, :])[0]]
        stored = self._stored_lines(app) if app is not None else None

        def cosines(lines: Sequence[str]) -> np.ndarray:
            if not lines:
                return np.zeros(0)
            if not question:
                question.append(unit_rows(self.embedder.embed_query([query]))[0])
            return vectors(list(lines), stored) @ question[0]
        return cosines

    def with_context(
        self, messages: Sequence[dict[str, Any]], *, app: str = DEFAULT_APP,
        budget_tokens: int = settings.CONTEXT_BUDGET_TOKENS, **options: Any,
    ) -> tuple[list[dict[str, Any]], ContextBlock]:
        """Retrieve for the last user turn of a chat (a follow-up also uses the turn before it)
        and place the block there; returns (new messages, the block)."""
        query, previous = question_of(messages)
        block = self.context(query, app=app, budget_tokens=budget_tokens, previous=previous, **options)
        return place_context(messages, block), block

    def _kinds(self, kind: str | None) -> tuple[str, ...]:
        if kind is None:
            return KINDS
        if kind not in KINDS:
            raise InvalidInput(f"unknown kind {shown(kind)}; use one of {', '.join(KINDS)}")
        return (kind,)

    def get(self, item_id: str, *, app: str = DEFAULT_APP, kind: str | None = None) -> dict[str, Any]:
        """A stored session (with its messages) or fact, by id."""
        app = check_app(app)
        item_id = check_id(item_id, "id")
        for each in self._kinds(kind):
            found = self.store.get_item(app, each, item_id)
            if found is not None:
                return found.to_dict()
        raise NotFound(f"no {kind or 'session or fact'} {item_id!r} in app {app!r}")

    def list(self, *, app: str = DEFAULT_APP, kind: str = "session", limit: int = 50, offset: int = 0,
             newest_first: bool = True) -> list[dict[str, Any]]:
        """Ids and dates of one kind of item, newest first (``newest_first=False``: in the order
        they were stored); paged."""
        app = check_app(app)
        if not isinstance(kind, str):  # one kind: None (every kind) does not page
            raise InvalidInput(f"kind must be one of {', '.join(KINDS)}, got {shown(kind)}")
        (kind,) = self._kinds(kind)
        for name, value in (("limit", limit), ("offset", offset)):
            if not isinstance(value, int) or isinstance(value, bool) or not (1 if name == "limit" else 0) <= value < 2**62:
                raise InvalidInput(f"{name} must be an integer >= {1 if name == 'limit' else 0}, got {shown(value)}")
        if not isinstance(newest_first, bool):
            raise InvalidInput(f"newest_first must be True or False, got {shown(newest_first)}")
        return [s.to_dict() for s in self.store.list_items(app, kind, limit, offset, newest_first=newest_first)]

    def export(self, *, app: str = DEFAULT_APP) -> Iterator[dict[str, Any]]:
        """Every item of the app, whole, in storage order (sessions, then facts): the records
        ``diarist ingest`` reads back (see ``diarist.export`` for JSONL and Markdown)."""
        from .export import items

        app = check_app(app)
        self._require_app(app)
        return items(self, app)

    def update(
        self,
        item_id: str,
        *,
        app: str = DEFAULT_APP,
        kind: str | None = None,
        text: str | None = None,
        messages: list[Any] | None = None,
        metadata: dict[str, Any] | None = None,
        date: Any = None,
        merge_metadata: bool = False,
    ) -> IngestReport:
        """Change a stored item and keep its previous version (``history``): a fact's ``text``, a
        session's ``messages``, either one's ``metadata`` or ``date`` (None keeps the current one).
        ``merge_metadata``: the keys of ``metadata`` are set over the current ones, the others are
        kept (default: ``metadata`` replaces the whole object).
        Atomic: the write lands only if the item is still what was read."""
        app = check_app(app)
        item_id = check_id(item_id, "item id")
        for each in self._kinds(kind):
            current = self.store.get_item(app, each, item_id)
            if current is not None:
                break
        else:
            raise NotFound(f"no {kind or 'session or fact'} {item_id!r} in app {app!r}")
        if (text is not None) == (current.kind == "session") and (text is not None or messages is not None):
            what = "text" if current.kind == "fact" else "messages"
            raise InvalidInput(f"{current.kind} {item_id!r} is changed with {what}=, not "
                               f"{'messages' if what == 'text' else 'text'}=")
        if not isinstance(merge_metadata, bool):
            raise InvalidInput(f"merge_metadata must be True or False, got {shown(merge_metadata)}")
        if merge_metadata and metadata is not None:
            if not isinstance(metadata, dict):
                raise InvalidInput(f"metadata must be an object, got {shown(metadata)}")
            metadata = {**current.metadata, **metadata}
        new_meta = current.metadata if metadata is None else metadata
        new_date = current.date if date is None else date
        if current.kind == "fact":
            _, when, body, meta, digest = check_fact(FactInput(current.text if text is None else text, item_id,
                                                               new_date, new_meta), "update")
            item = Item("fact", item_id, when, digest, meta, text=body)
        else:
            old = [dict(m.__dict__) for m in current.messages]
            _, when, checked, meta, digest = check_session(
                SessionInput(old if messages is None else messages, item_id, new_date, new_meta), "update")
            item = Item("session", item_id, when or now_iso(), digest, meta, tuple(checked))
        report = IngestReport([], [], [], 0)
        if digest == current.content_hash:
            report.unchanged.append(item_id)
            return report
        chunks = self._chunks_of(item)
        try:
            self._write(app, [(item, chunks)], expect={(item.kind, item_id): current.content_hash}, archive=True)
        except Conflict:
            raise ConcurrentUpdate(f"{item.kind} {item_id!r} of app {app!r} changed while it was updated; "
                                   "read it again and retry") from None
        report.replaced.append(item_id)
        report.chunks = len(chunks)
        return report

    def history(self, item_id: str, *, app: str = DEFAULT_APP, kind: str | None = None) -> list[dict[str, Any]]:
        """The previous versions ``update`` kept of an item, oldest first, each with
        ``replaced_at`` (the current version is ``get``)."""
        app = check_app(app)
        item_id = check_id(item_id, "item id")
        for each in self._kinds(kind):
            if self.store.get_item(app, each, item_id) is not None:
                return [v.to_dict() for v in self.store.item_history(app, each, item_id)]
        raise NotFound(f"no {kind or 'session or fact'} {item_id!r} in app {app!r}")

    def delete(self, item_id: str, *, app: str = DEFAULT_APP, kind: str | None = None) -> None:
        """Delete a session or fact with its chunks, vectors and index postings."""
        app = check_app(app)
        item_id = check_id(item_id, "id")
        if not any(self.store.delete_item(app, each, item_id) for each in self._kinds(kind)):
            raise NotFound(f"no {kind or 'session or fact'} {item_id!r} in app {app!r}")
        self.dense.purge(app)  # the graph's copy of the deleted vectors too

    def delete_app(self, app: str) -> None:
        """Delete everything an app holds."""
        app = check_app(app)
        if not self.store.delete_app(app):
            raise UnknownApp(f"app {app!r} holds no memory")
        self.dense.forget(app)

    def sync(self, path: str | os.PathLike[str], *, app: str = DEFAULT_APP, keep_deleted: bool = False,
             **options: Any) -> Any:
        """Bring a folder into the app incrementally: only new and changed files are read, a
        deleted file's memories are deleted (kept with ``keep_deleted``); returns a
        ``diarist.importers.sync.SyncReport``. ``options``: ``format``, ``exclude``, ``max_bytes``, ``say``
        (a function given one line per change)."""
        from .importers.sync import sync_folder

        return sync_folder(self, path, app=app, keep_deleted=keep_deleted, **options)

    def apps(self) -> list[str]:
        return self.store.apps()

    def backup(self, dest: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """A consistent copy of the whole database into the new file ``dest``, while writers run
        (never over an existing file unless ``overwrite``); ``diarist restore`` puts it back."""
        self.store.backup(_check_backup_path(dest), overwrite=overwrite)

    def _require_app(self, app: str) -> None:
        if self.store.app_version(app) is None:
            raise UnknownApp(f"app {app!r} holds no memory in {self.store.location}")

    def app_stats(self, app: str) -> dict[str, Any]:
        """Counts of one app's items and chunks, and the state of its lexical index."""
        app = check_app(app)
        counts = self.store.counts(app)
        if counts is None:
            raise UnknownApp(f"app {app!r} holds no memory")
        titles = "indexed" if self.store.titles_indexed(app) else "stored before titles were indexed (run: diarist reindex)"
        return {**counts.__dict__, "lexical_index": self.lexical.status(app) or "complete", "titles": titles}

    def stats(self, app: str | None = None) -> dict[str, Any]:
        if app is not None:
            app = check_app(app)
            self._require_app(app)
        names = [app] if app is not None else self.store.apps()
        out: dict[str, Any] = {"path": self.store.location, "apps": {n: self.app_stats(n) for n in names}}
        size = self.store.size_bytes()
        if size is not None:
            out["file_bytes"] = size
        out["embedder"] = self.embedder.model_id
        out["index_plan"] = self.plan.name
        return out

    def reindex(self, app: str) -> int:
        """Rebuild an app's lexical index from its stored text (and its dense graph, if any),
        after re-chunking its titled items if they were stored before titles were indexed
        (``index_titles``) and storing the lines' vectors of chunks stored without them
        (``index_lines``). Returns the chunks the lexical index holds."""
        app = check_app(app)
        self._require_app(app)
        self.index_titles(app)
        self.index_lines(app)
        indexed = self.store.rebuild_lexical(app)
        self.dense.rebuild(app)
        return indexed

    def index_lines(self, app: str, batch: int = 256) -> int:
        """Store the vectors of the lines of an app's chunks stored without them (before the
        store kept them, or by a memory opened with ``store_lines=False``), a batch of chunks at
        a time, each landing whole. Returns how many chunks got their lines (0: none lacked
        them; a store that keeps no line vectors: 0)."""
        app = check_app(app)
        self._require_app(app)
        if not self.store.keeps_lines:
            return 0
        done, after = 0, 0
        while page := self.store.chunks_without_lines(app, after, batch):
            lines = self._lines_of(app, [text for _, text in page])
            done += self.store.put_line_vectors(app, [(chunk_id, rows) for (chunk_id, _), rows in zip(page, lines)])
            after = page[-1][0]
        return done

    def index_titles(self, app: str, batch: int = 64) -> int:
        """Re-chunk and re-embed an app's titled sessions stored before titles were indexed, so
        that their chunks begin with their title line (``write.chunk.title_line``) and both
        channels read it; nothing to do for an app stored since. Each batch lands whole; an item
        changed meanwhile was written with its title anyway and is left as it is. Returns how many
        items were re-chunked (0 when the app's titles were indexed already)."""
        app = check_app(app)
        self._require_app(app)
        if self.store.titles_indexed(app):
            return 0
        ids: list[str] = []  # all of them first: a rewrite moves an item to the end of the listing
        while page := self.store.list_items(app, "session", 1000, len(ids)):
            ids += [s.external_id for s in page]
        done = 0
        for start in range(0, len(ids), batch):
            found = [self.store.get_item(app, "session", i) for i in ids[start : start + batch]]
            todo = [(item, self._chunks_of(item)) for item in found
                    if item is not None and title_line(item.metadata)]
            if not todo:
                continue
            try:
                self._write(app, todo, expect={("session", item.external_id): item.content_hash for item, _ in todo})
            except Conflict:  # one changed meanwhile: rewrite the others one by one
                for item, chunks in todo:
                    try:
                        self._write(app, [(item, chunks)], expect={("session", item.external_id): item.content_hash})
                    except Conflict:
                        continue
                    done += 1
                continue
            done += len(todo)
        self.store.mark_titles_indexed(app)
        return done


def _check_search_numbers(values: dict[str, Any]) -> None:
    """ConfigError for a search option of the wrong type or range (``Memory(...)``, ``derive``),
    before it reaches numpy as a type error in the middle of a search."""
    for name, value in values.items():
        if name == "lexical":
            if not isinstance(value, bool):
                raise ConfigError(f"lexical_fusion must be True or False, not {type(value).__name__}")
        elif name in ("depth", "rrf_k", "rerank_depth"):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value <= 1_000_000:
                raise ConfigError(f"{name} must be a whole number from 0 to 1000000, not {_describe(value)}")
        elif name in ("k1", "b"):
            top = 100.0 if name == "k1" else 1.0
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= value <= top:
                raise ConfigError(f"{name} must be a number from 0 to {top:g}, not {_describe(value)}")


def _describe(value: Any) -> str:
    """A short description of a bad value (a 5000-digit int cannot even be printed)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number out of range" if isinstance(value, int) and value.bit_length() > 64 else repr(value)
    return type(value).__name__


def _check_backup_path(dest: Any) -> str:
    """The backup's path as text, or InvalidInput (not a TypeError, ValueError or OSError from deep in SQLite)."""
    try:
        path = os.fspath(dest)
    except TypeError:
        raise InvalidInput(f"a backup path must be a path, not {type(dest).__name__}") from None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if "\x00" in path:
        raise InvalidInput("a backup path may not contain a NUL character")
    try:
        path.encode("utf-8")  # SQLite opens files by their UTF-8 name
    except UnicodeError:
        raise InvalidInput(f"the backup path {path!r} is not valid text (UTF-8)") from None
    if any(len(os.fsencode(part)) > 255 for part in path.split(os.sep)):
        raise InvalidInput("a backup path's file name is over 255 bytes")
    return path

