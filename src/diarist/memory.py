"""``Memory``: the composition root and the only door. The CLI, HTTP, MCP and the bench call it.

It opens a store (``open_store``), fixes the embedder and index plan in the database (the
first writer's choice wins), and runs the pipeline: validate -> plan -> chunk -> embed -> store
on the way in; channels -> fusion -> second stage -> floor -> context on the way out.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from . import settings
from .chat import place_context, question_of
from .checks import (Options, check_backup_path, check_context_call, check_list_filters, check_page,
                     check_search_call, check_search_numbers, checked_options, derived_options, find_item, kinds_of,
                     open_cache, require_app, search_extras)
from .embed import Embedder
from .embed.cache import EmbeddingCache
from .errors import ConfigError, DiaristError, InvalidInput, NotFound, UnknownApp
from .keys import KeyStore
from .lexical import LexicalChannel
from .read.block import ContextBlock
from .read.budget import BlockOptions, check_options, finish
from .read.cut import CutParams
from .read.draft import context_draft, line_cosines
from .read.floor import Floor
from .read.lines import LinesParams, LineVectors
from .read.listing import summaries
from .read.search import Channels, Results, run_search
from .read.similar import DUPLICATE_COSINE, MAX_CHUNKS, MAX_PAIRS, RELATED_COSINE, Found, find_pairs
from .read.trim import TrimParams
from .rerank import Reranker
from .store.base import AppVersion, Item, Store
from .store.open import open_store
from .types import Chunk, Message
from .vectors import DenseIndex, ExactDenseIndex, dense_index
from .write.items import IngestReport, fact_item, session_item
from .write.plan import IndexPlan
from .write.validate import FactInput, SessionInput, check_app, check_id, shown
from .write.writer import Chunker, Writer, fix_embedder_and_plan

if TYPE_CHECKING:
    from .health import HealthReport
    from .importers import Imported

DEFAULT_APP = settings.DEFAULT_APP


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
        check_search_numbers({"depth": depth, "rrf_k": rrf_k, "k1": k1, "b": b, "lexical": lexical_fusion,
                               "rerank_depth": rerank_depth})
        self.store: Store = open_store(location, create=create)
        try:
            self.embedder, self.plan = fix_embedder_and_plan(self.store, embedder, plan)
            self._use(checked_options(Options(depth, fusion, dense_weight, rrf_k, k1, b, lexical_fusion, rerank_depth,
                                              group, floor, cut, reranker), self.embedder))
            self.chunk_tokens = chunk_tokens
            self.index_lexical = index_lexical
            if not isinstance(store_lines, bool):
                raise ConfigError(f"store_lines must be True or False, got {shown(store_lines)}")
            self.store_lines = store_lines and self.store.keeps_lines
            # A cache given as a path is this memory's to close; a cache object is the caller's.
            self._owns_cache = isinstance(embed_cache, (str, os.PathLike))
            self.cache = open_cache(embed_cache)
            # "exact" | "hnsw" | "auto" (diarist.vectors.dense_index): auto keeps small apps exact.
            self.dense: DenseIndex = dense_index(self.store, dense)
            # A filtered search scans exactly: the index's own exact scan where it keeps one.
            exact = self.dense if isinstance(self.dense, ExactDenseIndex) else self.dense.exact
            self._exact = exact if exact is not None else ExactDenseIndex(self.store)
        except BaseException:
            self.store.close()
            raise
        self.lexical = LexicalChannel(self.store)
        self.keys = KeyStore(self.store)
        self._owns_store = True
        # The lines-by-meaning trim's vectors, kept across questions (shared with derived memories).
        self.writer = Writer(self.store, self.embedder, self.plan, self.dense, self.cache, chunk_tokens, chunker,
                             self.store_lines, index_lexical)
        self._line_vectors = LineVectors(self.writer.embed_lines)

    def derive(self, **options: Any) -> "Memory":
        """The same memory (store, embedder, plan, caches) searched with other options:
        ``depth``, ``fusion``, ``dense_weight``, ``rrf_k``, ``k1``, ``b``, ``lexical_fusion``,
        ``rerank_depth``, ``group``, ``floor``, ``reranker``, ``cut`` (``checks.Options``: a replace of
        the memory's checked options, checked again). Closing the derived memory leaves the store open."""
        other = copy.copy(self)
        current = replace(self.options, cut=self.cut, reranker=self.reranker)  # either may have been set since
        other._use(derived_options(current, self.embedder, options))
        other._owns_store = other._owns_cache = False
        return other

    def _use(self, options: Options) -> None:
        """Search with checked ``options``: their settings, cut and second stage (``reranker``,
        which re-reads the top fused candidates; None: the fused order is final)."""
        self.options, self.cut, self.reranker = options, options.cut, options.reranker
        self.settings = options.search_settings(fetch_whole_pool=len(self.plan.sets) > 1)

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
        return self.writer.chunk(messages, title)

    def add_session(self, messages: list[Any], *, app: str = DEFAULT_APP, session_id: str | None = None,
                    date: Any = None, metadata: dict[str, Any] | None = None) -> str:
        """Store one session (a list of {role, content[, time]}); returns its id.

        Re-adding the same id with the same content changes nothing; new content replaces it.
        """
        item = SessionInput(messages, session_id, date, metadata or {})
        report = self.add_sessions([item], app=app)
        return (report.added or report.replaced or report.unchanged)[0]

    def add_sessions(self, sessions: Iterable[SessionInput], *, app: str = DEFAULT_APP,
                     progress: Callable[[int], None] | None = None) -> IngestReport:
        """Validate every session, then embed and store them in one transaction."""
        app = check_app(app)
        if isinstance(sessions, (str, bytes, dict, SessionInput)) or not isinstance(sessions, Iterable):
            raise InvalidInput(f"sessions must be a list of sessions, got {type(sessions).__name__}")
        return self.add_items([session_item(s, f"session #{i}") for i, s in enumerate(sessions)], app=app,
                              progress=progress)

    def add_items(self, items: Sequence[Item], *, app: str = DEFAULT_APP,
                  progress: Callable[[int], None] | None = None) -> IngestReport:
        """Embed and store items already checked (``diarist.write.items``), all of one kind, in one
        transaction (``write.writer.Writer.add_items``)."""
        return self.writer.add_items(items, app=app, progress=progress)

    def append_messages(
        self, session_id: str, messages: list[Any], *, app: str = DEFAULT_APP, date: Any = None
    ) -> IngestReport:
        """Append messages to a session (created if new; ``date`` is used then) and re-index it,
        atomically across threads and processes (``write.writer.Writer.append_messages``)."""
        return self.writer.append_messages(session_id, messages, app=app, date=date)

    def add_fact(self, text: str, *, app: str = DEFAULT_APP, fact_id: str | None = None, date: Any = None,
                 metadata: dict[str, Any] | None = None) -> str:
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
        return Channels(self.store, self.dense, self.lexical, self.embedder,
                        allowed=self.store.chunk_ids_where(app, where), filtered_dense=self._exact)

    def search(self, query: str, *, app: str = DEFAULT_APP, k: int = settings.BUDGET_K, previous: str | None = None,
               rerank: bool = True, now: Any = None, where: dict[str, Any] | None = None, explain: bool = False,
               after: Sequence[Any] = ()) -> Results:
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
        query, previous, when, where = check_search_call(query, k, previous, rerank, explain, now, where)
        require_app(self.store, app)
        reranker = self.reranker if rerank else None
        # Stored dates are compared as wall-clock times (diarist.rerank.evidence): so is now.
        moment = datetime.fromisoformat(when).replace(tzinfo=None) if when else datetime.now()
        extra = search_extras(explain, after)
        return run_search(self._channels(where, app), app, query, k, self.settings, previous, reranker, moment, **extra)

    def context(self, query: str, *, app: str = DEFAULT_APP, budget_tokens: int = settings.CONTEXT_BUDGET_TOKENS,
                k: int = settings.CONTEXT_K, previous: str | None = None, min_score: float | None = None,
                order: str = "date", relative_cut: float | None = None, explain: bool = False, now: Any = None,
                trim: TrimParams | LinesParams | None | str = "auto") -> ContextBlock:
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
        trim = check_context_call(trim, relative_cut, min_score, self.cut)
        cut = self.cut if self.settings.group else None
        options = BlockOptions(self.embedder.count_tokens, budget, order, min_score, relative_cut, cut, trim)
        draft = context_draft(options, self.embedder, self._line_vectors, self.writer.stored_lines(app), query)
        try:  # the draft joins the read as its first stage after the search's own
            results = self.search(query, app=app, k=k, previous=previous, explain=explain, now=now,
                                  after=[draft, "cut", "trim", "budget"])
        except UnknownApp:
            return ContextBlock(notes=[f"app {app!r} holds no memory yet"])
        return finish(draft, results.stage_trace, results.notes)

    def _line_cosines(self, query: str, vector: np.ndarray | None = None,
                      app: str | None = None) -> Callable[[Sequence[str]], np.ndarray]:
        """``read.draft.line_cosines`` by this memory's embedder and line vectors, from ``app``'s stored lines."""
        stored = self.writer.stored_lines(app) if app is not None else None
        return line_cosines(self.embedder, self._line_vectors, query, vector, stored)

    def with_context(
        self, messages: Sequence[dict[str, Any]], *, app: str = DEFAULT_APP,
        budget_tokens: int = settings.CONTEXT_BUDGET_TOKENS, **options: Any,
    ) -> tuple[list[dict[str, Any]], ContextBlock]:
        """Retrieve for the last user turn of a chat (a follow-up also uses the turn before it)
        and place the block there; returns (new messages, the block)."""
        query, previous = question_of(messages)
        block = self.context(query, app=app, budget_tokens=budget_tokens, previous=previous, **options)
        return place_context(messages, block), block

    def get(self, item_id: str, *, app: str = DEFAULT_APP, kind: str | None = None) -> dict[str, Any]:
        """A stored session (with its messages) or fact, by id."""
        app = check_app(app)
        item_id = check_id(item_id, "id")
        return find_item(self.store, app, kind, item_id).to_dict()

    def list(self, *, app: str = DEFAULT_APP, kind: str = "session", limit: int = 50, offset: int = 0,
             newest_first: bool = True, where: dict[str, Any] | None = None, since: str | None = None,
             until: str | None = None) -> list[dict[str, Any]]:
        """Ids and dates of one kind of item, newest first (``newest_first=False``: in the order
        they were stored); paged. ``where``: only items whose metadata has these top-level keys
        equal to the values (as ``search``); ``since``/``until``: only items dated on or after /
        on or before that day (YYYY-MM-DD). See ``diarist.read.listing``."""
        app = check_app(app)
        kind = check_page(kind, limit, offset, newest_first)
        where, since, until = check_list_filters(where, since, until)
        rows = summaries(self.store, app, kind, limit, offset, newest_first=newest_first, where=where, since=since,
                         until=until)
        return [s.to_dict() for s in rows]

    def similar_pairs(self, app: str, *, duplicate: float = DUPLICATE_COSINE, related: float = RELATED_COSINE,
                      max_chunks: int = MAX_CHUNKS, limit: int = MAX_PAIRS) -> Found:
        """Pairs of memories of ``app`` a person may want to merge, delete or mark as superseded: the
        same text or vectors at ``duplicate``, close in meaning (``related``) on other days
        (``diarist.read.similar``; among the newest ``max_chunks`` chunks, the ``limit`` best)."""
        return find_pairs(self.store, check_app(app), duplicate=duplicate, related=related, max_chunks=max_chunks,
                          limit=limit)

    def export(self, *, app: str = DEFAULT_APP) -> Iterator[dict[str, Any]]:
        """Every item of the app, whole, in storage order (sessions, then facts): the records
        ``diarist ingest`` reads back (see ``diarist.export`` for JSONL and Markdown)."""
        from .export import items

        app = check_app(app)
        require_app(self.store, app)
        return items(self, app)

    def update(self, item_id: str, *, app: str = DEFAULT_APP, kind: str | None = None, text: str | None = None,
               messages: list[Any] | None = None, metadata: dict[str, Any] | None = None, date: Any = None,
               merge_metadata: bool = False) -> IngestReport:
        """Change a stored item and keep its previous version (``history``): a fact's ``text``, a
        session's ``messages``, either one's ``metadata`` or ``date`` (None keeps the current one).
        ``merge_metadata``: the keys of ``metadata`` are set over the current ones, the others are
        kept (default: ``metadata`` replaces the whole object).
        Atomic: the write lands only if the item is still what was read."""
        return self.writer.update(item_id, app, kind, text, messages, metadata, date, merge_metadata)

    def history(self, item_id: str, *, app: str = DEFAULT_APP, kind: str | None = None) -> list[dict[str, Any]]:
        """The previous versions ``update`` kept of an item, oldest first, each with
        ``replaced_at`` (the current version is ``get``)."""
        app = check_app(app)
        item_id = check_id(item_id, "item id")
        found = find_item(self.store, app, kind, item_id)
        return [v.to_dict() for v in self.store.item_history(app, found.kind, item_id)]

    def delete(self, item_id: str, *, app: str = DEFAULT_APP, kind: str | None = None) -> None:
        """Delete a session or fact with its chunks, vectors and index postings."""
        app = check_app(app)
        item_id = check_id(item_id, "id")
        if not any(self.store.delete_item(app, each, item_id) for each in kinds_of(kind)):
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

        return sync_folder(self, self.store, path, app=app, keep_deleted=keep_deleted, **options)

    def apps(self) -> list[str]:
        return self.store.apps()

    @property
    def location(self) -> str:
        """Where the store lives, as it may be shown (a file's path; a URL without its password)."""
        return self.store.location

    def app_version(self, app: str) -> AppVersion | None:
        """What every write to ``app`` moves (a cache key); None: the app holds nothing."""
        return self.store.app_version(app)

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside see one state of the store, whatever writers commit (``Store.snapshot``)."""
        return self.store.snapshot()

    def translate_error(self, exc: BaseException) -> DiaristError | None:
        """The backend's own failure as the diarist error it means (``Store.translate_error``), or None."""
        return self.store.translate_error(exc)

    @property
    def embedder_spec(self) -> str | None:
        """The embedder as the database records it, by name or path (what a server's workers open)."""
        return self.store.get_meta("embedder_spec")

    def settle_imported(self, imported: Imported, app: str) -> None:
        """Leave out of ``imported`` what is met twice or stored newer (``importers.load.settle``)."""
        from .importers.load import settle

        settle(imported, self.store, check_app(app))

    def health(self, apps: list[str] | None = None, *, deep: bool = True) -> HealthReport:
        """Probe the embedder and both channels, then self-check each app's index (``diarist.health``)."""
        from .health import check

        return check(self, self.store, apps, deep=deep)

    def backup(self, dest: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """A consistent copy of the whole database into the new file ``dest``, while writers run
        (never over an existing file unless ``overwrite``); ``diarist restore`` puts it back."""
        self.store.backup(check_backup_path(dest), overwrite=overwrite)

    @property
    def _write(self) -> Callable[..., None]:
        """``Writer.write`` (tests/write/test_notes_titles.py stores chunks made by hand through it)."""
        return self.writer.write

    def app_stats(self, app: str) -> dict[str, Any]:
        """Counts of one app's items and chunks, and the state of its lexical index."""
        from .health import app_stats

        return app_stats(self, self.store, check_app(app))

    def stats(self, app: str | None = None) -> dict[str, Any]:
        """The store's location and size, the embedder, the plan, and ``app_stats`` of each app (or of ``app``)."""
        from .health import stats

        return stats(self, self.store, app if app is None else check_app(app))

    def reindex(self, app: str) -> int:
        """Rebuild an app's lexical index from its stored text (and its dense graph, if any),
        after re-chunking its titled items if they were stored before titles were indexed
        (``index_titles``) and storing the lines' vectors of chunks stored without them
        (``index_lines``) and the sentences' vectors of short memories stored before they were
        kept (``index_sentences``). Returns the chunks the lexical index holds."""
        return self.writer.reindex(app)

    def index_sentences(self, app: str, batch: int = 256) -> int:
        """Store the sentences' vectors of an app's short memories stored before they were kept
        (``Writer.index_sentences``); returns how many chunks got them."""
        return self.writer.index_sentences(app, batch)

    def index_lines(self, app: str, batch: int = 256) -> int:
        """Store the lines' vectors of an app's chunks stored without them (``Writer.index_lines``);
        returns how many chunks got them."""
        return self.writer.index_lines(app, batch)

    def index_titles(self, app: str, batch: int = 64) -> int:
        """Re-chunk an app's titled sessions stored before titles were indexed (``Writer.index_titles``);
        returns how many were re-chunked."""
        return self.writer.index_titles(app, batch)

