"""The write path's orchestration: chunk -> embed -> lines -> index -> store, in one transaction.

``Memory`` holds one ``Writer`` (shared with the memories ``derive`` makes) and delegates every
write to it: ``add_items`` (which ``add_session(s)`` and ``add_fact(s)`` feed), ``append_messages``,
``update``, and the write half of ``reindex`` (``index_titles``, ``index_lines``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import lexical, settings
from ..checks import find_item, require_app
from ..dates import now_iso
from ..embed import Embedder, get_embedder, quantize, spec_for_model_id
from ..embed.cache import EmbeddingCache
from ..errors import ConcurrentUpdate, ConfigError, EmbedderMismatch, InvalidInput, PlanMismatch
from ..read import trim
from ..read.lines import LineVectors, StoredLines, line_digest, unit_rows
from ..read.sentences import sentences_to_store
from ..store.switch import refuse_half_switched
from ..store.base import Conflict, IndexedChunk, Item, Store
from ..types import Chunk, Message
from ..vectors import DenseIndex
from .chunk import chunk_session, title_line, with_title
from .items import IngestReport
from .plan import IndexPlan, get_plan
from .validate import FactInput, SessionInput, check_app, check_fact, check_id, check_session, check_unique, shown

DEFAULT_APP = settings.DEFAULT_APP

Chunker = Callable[[Sequence[Message]], list[Chunk]]


def fix_embedder_and_plan(
    store: Store, embedder: str | Embedder | None, plan: str | IndexPlan | None
) -> tuple[Embedder, IndexPlan]:
    """Resolve both, then record them under the write lock; a database keeps its first."""
    where = store.location
    refuse_half_switched(store)  # vectors of two models: nothing may search or write it
    stored_model = store.get_meta("embedder")
    if embedder is None:
        embedder = store.get_meta("embedder_spec") or (
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
        recorded = store.get_meta("index_plan")
        chosen = IndexPlan.from_json(recorded) if recorded else get_plan(settings.PLAN)
    else:
        chosen = get_plan(plan)
    claim = {"embedder": resolved.model_id, "dim": str(resolved.dim), "index_plan": chosen.to_json()}
    fixed = store.claim_meta(claim)
    if fixed["embedder"] != resolved.model_id:
        raise EmbedderMismatch(
            f"{where} was built with embedder {fixed['embedder']!r}, not {resolved.model_id!r}; "
            "open it with that embedder or use another file"
        )
    if isinstance(embedder, str):
        # Claimed only once the model is known to be the recorded one: claimed with the rest,
        # a losing opener's spec was recorded beside the winner's model when the winner gave
        # an Embedder object, and every later open without an embedder named was refused.
        store.claim_meta({"embedder_spec": embedder})
    recorded_plan = IndexPlan.from_json(fixed["index_plan"])
    if not recorded_plan.same_index(chosen):
        raise PlanMismatch(
            f"{where} was indexed with plan {recorded_plan.name!r}, not {chosen.name!r}; open it "
            "without a plan (it is read from the database) or use another file"
        )
    return resolved, recorded_plan


@dataclass(eq=False)
class Writer:
    """What a write needs of a memory: its store, embedder, plan, dense index and embedding cache;
    ``chunk_tokens`` and ``chunker`` (the lab's hook: a function messages -> chunks used instead of
    the plan's chunking); ``store_lines`` (write each chunk's lines' vectors with it);
    ``index_lexical`` (False: the lexical index is marked stale instead of kept current)."""

    store: Store
    embedder: Embedder
    plan: IndexPlan
    dense: DenseIndex
    cache: EmbeddingCache | None
    chunk_tokens: int | None
    chunker: Chunker | None
    store_lines: bool
    index_lexical: bool

    def chunk(self, messages: Sequence[Message], title: str | None = None) -> list[Chunk]:
        """A session's chunks; ``title``: the line each begins with (``write.chunk.title_line``)."""
        if self.chunker is not None:
            return with_title(self.chunker(messages), title, self.embedder.count_tokens)
        return chunk_session(messages, self.embedder, self.plan, self.chunk_tokens, title=title)

    def chunks_of(self, item: Item) -> list[Chunk]:
        if item.kind == "session":
            return self.chunk(item.messages, title_line(item.metadata))
        assert item.text is not None
        n_tokens = self.embedder.count_tokens(item.text)
        return [Chunk(text=item.text, position=0, roles=("fact",), first_turn=0, last_turn=0, view="fact",
                      n_tokens=n_tokens)]

    def embed_int8(
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
            known.update(zip(missing, self.embed_int8(missing, progress, counts=counts, floats=floats)))
            return np.stack([known[t] for t in texts]) if texts else np.zeros((0, self.embedder.dim), np.int8)
        if not texts:
            return np.zeros((0, self.embedder.dim), np.int8)
        unique = list(dict.fromkeys(texts))
        if len(unique) < len(texts):  # identical texts (a repeated paragraph, a template) embedded once
            rows = dict(zip(unique, self.embed_int8(unique, progress, counts=counts, floats=floats)))
            return np.stack([rows[t] for t in texts])
        if self.cache is not None:
            return self.cache.embed_int8(self.embedder, texts, progress)
        if counts and self.embedder.whitespace_splits and all(t in counts for t in texts):
            vectors = self.embedder.embed_passages(texts, progress, counts=[counts[t] for t in texts])
        else:
            vectors = self.embedder.embed_passages(texts, progress)
        if floats is not None:
            floats.update(zip(texts, np.asarray(vectors, dtype=np.float32)))
        return quantize(vectors)

    def index(self, chunks: list[Chunk], vectors: np.ndarray,
               lines: Sequence[list[tuple[bytes, np.ndarray]]] | None = None,
               sentences: Sequence[np.ndarray] | None = None) -> list[IndexedChunk]:
        """Pair chunks with their vectors (given for the dense chunks only, in order), terms,
        lines' vectors (given for every chunk, or None) and sentences' vectors (likewise)."""
        out, dense = [], iter(vectors)
        for n, c in enumerate(chunks):
            vector = next(dense) if c.dense else None
            terms, language = lexical.analyze_passage(c.text) if c.lexical else ([], lexical.detect(c.text))
            out.append(IndexedChunk(chunk=c, vector=vector, terms=terms, language=language,
                                    lines=lines[n] if lines is not None else (),
                                    sentences=sentences[n] if sentences is not None else ()))
        return out

    def sentences_of(self, todo: Sequence[tuple[Item, Sequence[Chunk]]],
                     floats: Mapping[str, np.ndarray] | None = None) -> list[np.ndarray]:
        """Per chunk of the items (in order), the float32 unit vectors of its sentences when its
        item is a short memory (``read.sentences.sentences_to_store``; else an empty array),
        each distinct sentence embedded once: ``floats`` (text -> vector embedded in this write)
        first, as a line of one sentence is that sentence and was embedded with the lines."""
        per_chunk = [found for item, chunks in todo
                     for found in sentences_to_store(item.kind, item.metadata, [c.text for c in chunks],
                                                     [c.dense_text if c.dense else None for c in chunks])]
        unique = list(dict.fromkeys(s for found in per_chunk for s in found))
        done = floats if floats is not None else {}
        rest = [s for s in unique if s not in done]
        new = dict(zip(rest, self.embed_lines(rest))) if rest else {}
        rows = [done[s] if s in done else new[s] for s in unique]
        vectors = dict(zip(unique, unit_rows(np.stack(rows)))) if unique else {}
        empty = np.zeros((0, self.embedder.dim), np.float32)
        return [np.stack([vectors[s] for s in found]) if found else empty for found in per_chunk]

    def embed_lines(self, lines: list[str]) -> np.ndarray:
        """Vectors of lines as stored text (``embed_passages``); through the embedding cache when
        the memory has one (float32, the same bytes: the lab's runs embed a line once)."""
        if self.cache is not None:
            return self.cache.embed_float32(self.embedder, lines)
        return self.embedder.embed_passages(lines)

    def stored_lines(self, app: str) -> StoredLines:
        """The lookup of lines' vectors in the app's stored chunks (the trim's and the writes')."""
        def lookup(lines: Sequence[str]) -> dict[str, np.ndarray]:
            digests = {line_digest(line): line for line in lines}
            return {digests[d]: v for d, v in self.store.line_vectors(app, list(digests)).items() if d in digests}
        return lookup

    def lines_of(self, app: str, texts: Sequence[str],
                  floats: dict[str, np.ndarray] | None = None) -> list[list[tuple[bytes, np.ndarray]]]:
        """Per chunk text, its lines as the trim reads them (``read.trim.lines_of``), each with its
        digest and vector: read from the app's stored chunks when a line is there already (an
        append re-chunks a session), else taken from ``floats`` (a line that was a whole chunk's
        text, embedded with the chunks), else embedded; the trim's own memory of lines left as it is."""
        per_text = [trim.lines_of(text) for text in texts]
        unique = list(dict.fromkeys(line for lines in per_text for line in lines))
        if not unique:
            return [[] for _ in texts]
        def embed(lines: list[str]) -> np.ndarray:
            done = floats if floats is not None else {}
            rest = [line for line in lines if line not in done]
            done.update(zip(rest, self.embed_lines(rest)) if rest else ())  # kept: the sentences' too
            return np.stack([done[line] for line in lines])

        once = LineVectors(embed, capacity=0)  # the same rule as the trim's, keeping nothing
        vectors = dict(zip(unique, once(unique, self.stored_lines(app))))
        return [[(line_digest(line), vectors[line]) for line in lines] for lines in per_text]

    def write(
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
        counts = {} if self.chunker is not None else {
            c.text: c.n_tokens for _, chunks in todo for c in chunks if c.dense and c.embed_text is None}
        # The float vectors of every text embedded in this write (chunks, then lines), so that a
        # text that is also a line or a sentence is embedded once.
        floats: dict[str, np.ndarray] | None = {} if self.store_lines or self.store.keeps_sentences else None
        vectors = self.embed_int8(texts, progress, known, counts, floats)
        lines = self.lines_of(app, [c.text for _, chunks in todo for c in chunks], floats) if self.store_lines else None
        sentences = self.sentences_of(todo, floats) if self.store.keeps_sentences else None
        items, start, at = [], 0, 0
        for item, chunks in todo:
            n_dense = sum(c.dense for c in chunks)
            items.append((item, self.index(chunks, vectors[start : start + n_dense],
                                            lines[at : at + len(chunks)] if lines is not None else None,
                                            sentences[at : at + len(chunks)] if sentences is not None else None)))
            start += n_dense
            at += len(chunks)
        self.store.put_items(app, items, expect=expect, archive=archive)
        self.dense.purge(app)  # a replace removed the old chunks' vectors
        if not self.index_lexical and items:
            self.store.mark_lexical_stale(app)

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
            todo.append((item, self.chunks_of(item)))
        report.chunks = sum(len(chunks) for _, chunks in todo)
        self.write(app, todo, progress)
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
            return self.append_round(app, session_id, list(messages), date, vectors)
        except Conflict:
            pass
        # Retrying optimistic rounds gave no progress guarantee: each round re-chunks and
        # re-embeds the whole session, so the window grows with it, and 4 writers appending to
        # one session made some appends lose 20 rounds in a row (6 of 600 gave up). Under the
        # write lock the round cannot lose; only text the first round had not seen is embedded.
        try:
            with self.store.transaction():
                return self.append_round(app, session_id, list(messages), date, vectors)
        except Conflict:  # only a store whose transaction() does not hold the write lock
            raise ConcurrentUpdate(
                f"session {session_id!r} of app {app!r} changed under another writer; nothing appended"
            ) from None

    def append_round(
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
        chunks = self.chunks_of(item)
        report.chunks = len(chunks)
        self.write(app, [(item, chunks)], expect={("session", sid): found.content_hash if found else None},
                    known=vectors)
        return report

    def update(self, item_id: str, app: str, kind: str | None, text: str | None, messages: list[Any] | None,
               metadata: dict[str, Any] | None, date: Any, merge_metadata: bool) -> IngestReport:
        """``Memory.update``: change a stored item, keeping its previous version; the write lands
        only if the item is still what was read (compare-and-swap on its content hash)."""
        app = check_app(app)
        item_id = check_id(item_id, "item id")
        current = find_item(self.store, app, kind, item_id)
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
        chunks = self.chunks_of(item)
        try:
            self.write(app, [(item, chunks)], expect={(item.kind, item_id): current.content_hash}, archive=True)
        except Conflict:
            raise ConcurrentUpdate(f"{item.kind} {item_id!r} of app {app!r} changed while it was updated; "
                                   "read it again and retry") from None
        report.replaced.append(item_id)
        report.chunks = len(chunks)
        return report

    def reindex(self, app: str) -> int:
        """``Memory.reindex``: ``index_titles``, ``index_lines``, then the lexical index and the
        dense graph rebuilt; returns the chunks the lexical index holds."""
        app = check_app(app)
        require_app(self.store, app)
        self.index_titles(app)
        self.index_lines(app)
        self.index_sentences(app)
        indexed = self.store.rebuild_lexical(app)
        self.dense.rebuild(app)
        return indexed

    def index_lines(self, app: str, batch: int = 256) -> int:
        """Store the vectors of the lines of an app's chunks stored without them (before the
        store kept them, or by a memory opened with ``store_lines=False``), a batch of chunks at
        a time, each landing whole. Returns how many chunks got their lines (0: none lacked
        them; a store that keeps no line vectors: 0)."""
        app = check_app(app)
        require_app(self.store, app)
        if not self.store.keeps_lines:
            return 0
        done, after = 0, 0
        while page := self.store.chunks_without_lines(app, after, batch):
            lines = self.lines_of(app, [text for _, text in page])
            done += self.store.put_line_vectors(app, [(chunk_id, rows) for (chunk_id, _), rows in zip(page, lines)])
            after = page[-1][0]
        return done

    def index_sentences(self, app: str, batch: int = 256) -> int:
        """Store the sentences' vectors of an app's short memories stored before the store kept
        them, a batch of items at a time, and mark the app done; nothing to do for an app stored
        since. Returns how many chunks got their sentences."""
        app = check_app(app)
        require_app(self.store, app)
        if not self.store.keeps_sentences or self.store.sentences_indexed(app):
            return 0
        done = 0
        for kind in ("fact", "session"):
            ids: list[str] = []  # all of them first, as index_titles
            while page := self.store.list_items(app, kind, 1000, len(ids)):
                ids += [s.external_id for s in page]
            for start in range(0, len(ids), batch):
                stored = self.store.items_with_chunks(app, kind, ids[start : start + batch])
                vectors = self.sentences_of([(item, [c.chunk for c in chunks]) for item, chunks in stored])
                ids_in_order = [c.chunk_id for _, chunks in stored for c in chunks]
                done += self.store.put_sentence_vectors(app, list(zip(ids_in_order, vectors)))
        self.store.mark_sentences_indexed(app)
        return done

    def index_titles(self, app: str, batch: int = 64) -> int:
        """Re-chunk and re-embed an app's titled sessions stored before titles were indexed, so
        that their chunks begin with their title line (``write.chunk.title_line``) and both
        channels read it; nothing to do for an app stored since. Each batch lands whole; an item
        changed meanwhile was written with its title anyway and is left as it is. Returns how many
        items were re-chunked (0 when the app's titles were indexed already)."""
        app = check_app(app)
        require_app(self.store, app)
        if self.store.titles_indexed(app):
            return 0
        ids: list[str] = []  # all of them first: a rewrite moves an item to the end of the listing
        while page := self.store.list_items(app, "session", 1000, len(ids)):
            ids += [s.external_id for s in page]
        done = 0
        for start in range(0, len(ids), batch):
            found = [self.store.get_item(app, "session", i) for i in ids[start : start + batch]]
            todo = [(item, self.chunks_of(item)) for item in found
                    if item is not None and title_line(item.metadata)]
            if not todo:
                continue
            try:
                self.write(app, todo, expect={("session", item.external_id): item.content_hash for item, _ in todo})
            except Conflict:  # one changed meanwhile: rewrite the others one by one
                for item, chunks in todo:
                    try:
                        self.write(app, [(item, chunks)], expect={("session", item.external_id): item.content_hash})
                    except Conflict:
                        continue
                    done += 1
                continue
            done += len(todo)
        self.store.mark_titles_indexed(app)
        return done
