"""Search as named stages over one parsed question: channels -> floor -> fusion -> fetch ->
second stage -> group (and, for the context block, cut -> trim -> budget: ``diarist.read.cut``,
``diarist.read.trim``, ``diarist.read.budget``).

The question is parsed once (``diarist.read.question``). The two channels rank independently
(``diarist.vectors`` and ``diarist.lexical``); the absolute floor may answer "nothing relevant";
fusion combines their scores; fetch reads the candidates' rows; a second stage may re-read the
top candidates; grouping gives each memory once. Each stage is a small function over the
search's state (``Search``) and records what it decided in the trace (``diarist.read.trace``);
``stages`` composes the list from the options.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from .. import settings
from ..embed.base import Embedder
from ..errors import ConfigError
from ..lexical import LexicalChannel, detect
from ..lexical.bm25 import Deferred
from ..registry import Entries
from ..store.base import HitRow, LexicalUnavailable, Store
from ..types import Hit
from ..write.validate import shown
from ..vectors import DenseIndex, ExactDenseIndex
from .budget import budget_stage, cut_stage, trim_stage
from .explain import explain_hit
from .floor import HELD_WHOLE_DEPTH, Floor, holds_every_term, verdict
from .fusion import FUSIONS, Fused, convex_ranking, question_dense_weight, rrf
from .group import group_by_item
from .question import Question
from .sentences import rescore_by_sentences
from .trace import STAGE_NAMES, Dropped, StageRecord, Trace

log = logging.getLogger("diarist")


@dataclass(frozen=True)
class SearchSettings:
    depth: int = settings.DEPTH  # each channel ranks this deep, well beyond the budget
    fusion: str = settings.FUSION  # "convex" | "rrf"
    dense_weight: float = settings.FUSION_DENSE_WEIGHT  # convex: the dense channel's share
    # A short memory's dense score: (1 - w) x its cosine + w x its best sentence's (diarist.read.sentences;
    # None: settings.SENTENCE_WEIGHT's value for the embedding model)
    sentence_weight: float | None = None
    # convex: a lexical score counts this much for a chunk in another language than the question
    # (None: settings.LEXICAL_AGREEMENT's value for the embedding model)
    lexical_agreement: float | None = None
    rrf_k: int = settings.FUSION_RRF_K
    k1: float = settings.BM25_K1
    b: float = settings.BM25_B
    lexical: bool = True  # False: the vector-only ranking, byte for byte
    rerank_depth: int = settings.RERANK_DEPTH  # the second stage re-reads this many fused candidates
    floor: Floor | None = None  # the relevance floor (diarist.read.floor): may answer nothing
    # The plan indexes some text twice (views "both", "split-apart", "...+turns"): every
    # candidate of the pool is fetched at once, so a hit merges the best ranks of all its copies
    # there. Otherwise rows are fetched only as far as the hits need (most searches read k rows).
    fetch_whole_pool: bool = False
    # Memories, not chunks: each item (session or fact) once, with its best passages (the
    # default of Memory; the lab's configs aggregate chunks to sessions themselves).
    group: bool = False


def check_fusion(fusion: object) -> str:
    if fusion not in FUSIONS:
        raise ConfigError(f"unknown fusion {shown(fusion)}; use one of {', '.join(FUSIONS)}")
    return str(fusion)


def check_dense_weight(weight: object) -> float:
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 <= weight <= 1.0:
        raise ConfigError(f"dense_weight must be a number from 0 to 1, got {shown(weight)}")
    return float(weight)


class Results(list):
    """A list of hits, with notes on anything that degraded the search (a fallback, say), and
    the trace of what each stage decided (``trace``; ``dropped`` when explaining)."""

    def __init__(self, hits: list[Hit] = (), notes: list[str] | None = None, best_cosine: float | None = None,
                 comparable: bool = False, trace: Trace | None = None, question: Question | None = None,
                 question_vector: np.ndarray | None = None):
        super().__init__(hits)
        self.notes: list[str] = notes or []
        # True when every hit's score is on one scale a ratio can be read on (the convex
        # fusion's [0, 1]); RRF and cosine-only scores are not.
        self.comparable = comparable
        # The best dense cosine of any chunk: the absolute score the relevance floor reads.
        self.best_cosine = best_cosine
        self._trace = trace or Trace()
        self.question = question  # the question as the stages parsed it (None for an empty result)
        # The question's own vector as the dense channel embedded it (None when nothing was
        # embedded): the block's lines are scored against it rather than embedding it again.
        self.question_vector = question_vector

    @property
    def trace(self) -> list[StageRecord]:
        return self._trace.records

    @property
    def stage_trace(self) -> Trace:
        """The trace itself (``trace`` is its records): what the context block's last stages
        (``read.budget.finish``) add theirs to."""
        return self._trace

    @property
    def dropped(self) -> list[Dropped]:
        return self._trace.dropped

    @property
    def explained(self) -> bool:
        return self._trace.explain

    def to_dict(self) -> dict[str, Any]:
        return {"hits": [h.to_dict() for h in self], "notes": list(self.notes),
                "trace": [r.to_dict() for r in self.trace], "dropped": [d.to_dict() for d in self.dropped]}


@dataclass(frozen=True)
class Channels:
    """What a search reads: the store (for chunk text), both channels, and the embedder."""

    store: Store
    dense: DenseIndex
    lexical: LexicalChannel
    embedder: Embedder
    # The chunks a metadata filter allows (ascending ids), or None for all. A filtered search
    # scans exactly (``filtered_dense``): an approximate graph cannot promise depth rows of a
    # filter it was not built for.
    allowed: np.ndarray | None = None
    filtered_dense: ExactDenseIndex | None = None


def run_search(
    channels: Channels,
    app: str,
    query: str,
    k: int,
    settings: SearchSettings,
    previous: str | None = None,
    reranker: SecondStage | None = None,
    now: datetime | None = None,
    *,
    explain: bool = False,
    after: Sequence[Stage] = (),
) -> Results:
    """Parse the question once, run the stages ``settings`` and the reranker call for, then
    ``after`` (a context read: its block's draft, then the cut, the trim and the budget), and
    return the hits with the trace of every stage, each record timed."""
    if k <= 0:
        return Results()
    search = Search(channels, app, Question(query, previous, now), k, settings, reranker, Trace(explain))
    trace = search.trace
    for stage in stages(settings, reranker, after):
        # Timed without a context manager (``Trace.timed``): a stage that raises ends the
        # search, its records with it.
        first, start = len(trace.records), time.perf_counter()
        stage(search)
        trace.stamp(first, start)
        if search.done:
            break
    return search.results()


def stages(settings: SearchSettings, reranker: SecondStage | None, after: Sequence[Stage] = ()) -> list[Stage]:
    """The stages a search runs, in order: only those its options call for, each looked up by
    name in ``STAGES`` (so a registered replacement runs in its place)."""
    names = ["channels", "sentences"] + (["floor"] if settings.floor is not None else []) + ["fusion", "fetch"]
    names += (["second-stage"] if reranker is not None else []) + (["group"] if settings.group else [])
    return [STAGES[name] for name in names] + list(after)


def stage_named(stage: str | Stage) -> Stage:
    """A stage given by its registered name (``STAGES``) or as the callable itself."""
    if isinstance(stage, str):
        if stage not in STAGES:
            raise ConfigError(f"unknown read stage {stage!r}; registered: {', '.join(STAGES.names())}")
        return STAGES[stage]
    if not callable(stage):
        raise ConfigError(f"a read stage is a registered name or a callable of the search, got {shown(stage)}")
    return stage


class SecondStage(Protocol):
    """What the read path needs of a reranker (``diarist.rerank.Reranker`` is one)."""

    name: str

    def rerank_question(self, question: Question, hits: list[Hit]) -> list[Hit]: ...


@dataclass
class Search:
    """One search's working state, handed from stage to stage."""

    channels: Channels
    app: str
    question: Question
    k: int
    settings: SearchSettings
    reranker: SecondStage | None
    trace: Trace
    dense: list[tuple[int, float]] = field(default_factory=list)
    lexical_job: Future | Deferred | None = None
    lexical_ranking: list[tuple[int, float]] | None = None
    chosen: Fused = field(default_factory=list)
    order: str = "fused"  # which channel(s) ordered the candidates: "fused" or "dense"
    hits: list[Hit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    best_cosine: float | None = None
    question_vector: np.ndarray | None = None  # the question's own (not with the previous turn)
    query_vectors: np.ndarray | None = None  # every vector the dense channel searched with (the sentences stage's)
    done: bool = False  # a stage answered for the whole search (the floor's "nothing"): stop
    fused_place: dict[int, int] = field(default_factory=dict)  # explain: chunk -> place before the second stage
    block: Any = None  # the context block the read builds (diarist.read.budget.Draft; it sets itself here)

    @property
    def comparable(self) -> bool:
        """Every hit's score on one scale a ratio can be read on (the convex fusion's [0, 1])."""
        return self.lexical_ranking is not None and self.settings.fusion == "convex"

    @property
    def depth(self) -> int:
        return max(self.settings.depth, self.k)

    @property
    def pool(self) -> int:
        """How many fused candidates are handed on: the second stage may lift any of the top
        rerank_depth into the budget; twice that, for the duplicates merged at fetch (fetched
        only as far as they are needed)."""
        lexical_on = self.reranker is not None and self.settings.lexical
        return 2 * (max(self.k, self.settings.rerank_depth) if lexical_on else self.k)

    @property
    def fused_limit(self) -> int | None:
        """How much of the fused ranking is kept: the pool; grouped by memory, all of it (k
        memories may need more chunks than the pool holds; rows are still fetched lazily)."""
        return None if self.settings.group else self.pool

    def results(self) -> Results:
        hits = self.hits[: self.k]
        if self.trace.explain:
            for hit in self.hits[self.k :]:
                self.trace.drop(_label(hit), "k", f"ranked below the {self.k} asked for", hit.score)
            for place, hit in enumerate(hits, 1):
                hit.why = explain_hit(hit, self.question, self.fused_place.get(hit.chunk_id), place, self.reranker)
        return Results(hits, self.notes, self.best_cosine, self.comparable, self.trace, self.question,
                       self.question_vector)


#: A stage reads and updates the search's state, and records what it decided in its trace.
Stage = Callable[[Search], None]


#: Where embedding each of the last two questions took at least this much of the caller's
#: thread's CPU time (a model ran: ~2-4 ms for MiniLM), the lexical half is ranked in a worker
#: thread while the model embeds the question: the model runs outside the GIL, and the handoff
#: (~0.1 ms) is small beside it. A cheaper embedding (a looked-up or hashed vector) leaves it
#: deferred to fusion, where a worker only cost time. CPU time, not the clock: on a busy machine
#: a lookup can wait for a core for milliseconds and is no model for that.
OVERLAP_EMBEDDING_S = 0.001
#: The last two query embeddings' CPU seconds in the caller's thread, per model id.
_embedding_s: dict[str, tuple[float, float]] = {}


def read_channels(search: Search) -> None:
    """Both channels rank the question: the dense one now, in the caller's thread; the lexical
    one when fusion (or the floor) first reads it (``LexicalChannel.defer``), or, where the
    model takes a while to embed the question, in a worker thread meanwhile
    (``LexicalChannel.submit``). A worker thread beside the dense scan cost more than it saved
    on a busy machine: it waited for the GIL behind the dense channel's Python
    (benchmarks/results/speed46)."""
    channels, question, settings = search.channels, search.question, search.settings
    model = channels.embedder.model_id
    last_two = _embedding_s.get(model, (0.0, 0.0))
    overlap = settings.lexical and min(last_two) >= OVERLAP_EMBEDDING_S
    if overlap:
        # The question's terms are analysed in the worker too (its language detected: ~0.2 ms).
        search.lexical_job = channels.lexical.submit(search.app, lambda: question.terms, search.depth, settings.k1,
                                                     settings.b, allowed=channels.allowed)
    try:
        start = time.thread_time()
        query_vectors = channels.embedder.embed_query(question.texts)
        _embedding_s[model] = (last_two[1], time.thread_time() - start)
        search.question_vector = np.asarray(query_vectors[0])  # texts[0] is the question alone
        search.query_vectors = np.asarray(query_vectors)
        if settings.lexical and not overlap:
            search.lexical_job = channels.lexical.defer(search.app, question.terms, search.depth, settings.k1,
                                                        settings.b, allowed=channels.allowed)
        if channels.allowed is None:
            search.dense = channels.dense.search(search.app, query_vectors, search.depth)
        else:
            assert channels.filtered_dense is not None
            search.dense = channels.filtered_dense.search(search.app, query_vectors, search.depth,
                                                          allowed=channels.allowed)
    except BaseException:
        _abandon(search.lexical_job)
        raise
    search.best_cosine = search.dense[0][1] if search.dense else None
    lexical_note = ("the lexical channel ranked while the question was embedded" if overlap else
                    "the lexical channel ranks at fusion" if settings.lexical else "the lexical channel is off")
    search.trace.record("channels", len(search.dense), 0, f"{len(search.dense)} ranked by vectors; {lexical_note}")


def apply_floor(search: Search) -> None:
    """An absolute floor can say "nothing": fused scores are normalised per query, so it reads
    the cosine, the question's form and the lexical index's vocabulary (diarist.read.floor).
    With no vectors at all (nothing dense stored) there is no evidence either way: no floor."""
    floor = search.settings.floor
    assert floor is not None
    if search.best_cosine is None:
        search.trace.record("floor", len(search.dense), 0, "no vectors to judge: no floor")
        return
    # The lexical kill switch leaves the index unread here too: the floor reads no coverage.
    # Terms are looked up in the whole app, a metadata filter's part or not.
    lexical_index, app = search.channels.lexical, search.app
    held = (lambda terms: lexical_index.held(app, terms)) if search.settings.lexical else (lambda terms: None)
    why = verdict(floor, search.best_cosine, search.question, held)
    if why is not None and floor.reads_evidence and search.settings.lexical and _held_whole(search):
        why = None  # a memory holds every word of the question, or is named by it: answered
    if why is None:
        search.trace.record("floor", len(search.dense), 0, f"passed (best cosine {search.best_cosine:.3f})")
        return
    _abandon(search.lexical_job)
    search.notes.append(f"nothing relevant: {why}")
    search.trace.record("floor", 0, len(search.dense), why)
    for cid, cosine in search.dense[: search.k]:
        search.trace.drop(f"chunk {cid}", "floor", why, cosine)
    search.done = True


def _held_whole(search: Search) -> bool:
    """Whether one of either channel's best few memories holds every word of the question or is
    named by it (``floor.holds_every_term``): read only where the evidence floor would answer
    nothing (a cosine-only floor, a number, reads the cosine alone and never waits on BM25)."""
    try:
        ranking = search.lexical_job.result() if search.lexical_job is not None else []
    except LexicalUnavailable:
        ranking = []
    chunks = dict.fromkeys(cid for cid, _ in [*ranking[:HELD_WHOLE_DEPTH], *search.dense[:HELD_WHOLE_DEPTH]])
    rows = search.channels.store.fetch_chunks(search.app, list(chunks))
    return any(holds_every_term(search.question, row.text, row.metadata) for row in rows.values())


def fuse(search: Search) -> None:
    """The two rankings become one (diarist.read.fusion); without the lexical channel, the
    dense ranking is the order."""
    if search.lexical_job is not None:
        try:
            search.lexical_ranking = search.lexical_job.result()
        except LexicalUnavailable as exc:
            note = f"lexical channel off, searching by vectors only: {exc}"
            log.warning(note)
            search.notes.append(note)
    dense, limit = search.dense, search.fused_limit
    if search.lexical_ranking is None:
        search.chosen = [(cid, score, {"dense": rank, "lexical": None}) for rank, (cid, score) in enumerate(dense[:limit], 1)]
        search.order = "dense"
        search.trace.record("fusion", len(search.chosen), len(dense) - len(search.chosen), "dense ranking only")
        return
    search.chosen = _fuse(search, dense, search.lexical_ranking, limit)
    search.order = "fused"
    search.trace.record("fusion", len(search.chosen), 0,
                        f"{search.settings.fusion} fusion of {len(dense)} dense and {len(search.lexical_ranking)} "
                        f"lexical candidates; the first {len(search.chosen)} handed on")


def fetch(search: Search) -> None:
    """The candidates' rows, in fused order and only as far as the hits need (grouped by
    memory, as far as ``k`` memories need)."""
    settings = search.settings
    wanted = min(len(search.chosen), search.pool) if settings.fetch_whole_pool else search.pool // 2
    items = search.k if settings.group else 0
    search.hits, read, gone = _fetch_hits(search.channels.store, search.app, search.chosen, wanted, search.dense,
                                          search.lexical_ranking or [], search.order, items)
    merged = read - gone - len(search.hits)
    search.trace.record("fetch", len(search.hits), merged + gone,
                        f"{read} rows read; {merged} copies of the same text merged; {gone} deleted since ranked")


def second_stage(search: Search) -> None:
    """The second stage re-reads fused candidates. Without the lexical channel (the kill
    switch, or an index that cannot be trusted) search is the vector-only ranking, byte for byte."""
    reranker, depth = search.reranker, search.settings.rerank_depth
    assert reranker is not None
    if not search.hits or search.lexical_ranking is None:
        search.trace.record("second-stage", len(search.hits), 0, "skipped: no fused candidates")
        return
    if search.trace.explain:
        search.fused_place = {hit.chunk_id: place for place, hit in enumerate(search.hits, 1)}
    before = search.hits[:depth]
    head = reranker.rerank_question(search.question, before)
    search.hits = head + search.hits[depth:]
    error = reranker.error
    if error:
        search.notes.append(f"reranker {reranker.name} unavailable, fused order kept: {error}")
    moved = sum(a is not b for a, b in zip(head, before))
    search.trace.record("second-stage", len(search.hits), 0,
                        f"{reranker.name} re-read the top {len(head)}" + ("" if error else f"; {moved} moved"))


def group(search: Search) -> None:
    """Memories, not chunks: each item (session or fact) once, at its best chunk's place."""
    before = len(search.hits)
    search.hits = group_by_item(search.hits, search.trace)
    search.trace.record("group", len(search.hits), before - len(search.hits),
                        f"{before} passages from {len(search.hits)} memories")


#: The read stages by name, in the order a search runs them (docs/extending.md): the library's
#: own are registered as a plug-in's are; ``Memory.search(after=[name])`` runs a registered one
#: after them, and ``STAGES.register(name, stage, replace=True)`` swaps one of the library's out.
#: The context block's stages run after them (``diarist.read.cut``, ``.trim``, ``.budget``), in
#: the order of ``diarist.read.trace.STAGE_NAMES``, the one list of the stages' names.
STAGES: Entries[Stage] = Entries("read stage")
for _name, _stage in zip(STAGE_NAMES, (read_channels, rescore_by_sentences, apply_floor, fuse, fetch, second_stage,
                                       group, cut_stage, trim_stage, budget_stage), strict=True):
    STAGES.register(_name, _stage)


def _label(hit: Hit) -> str:
    return hit.id or f"chunk {hit.chunk_id}"


def _fetch_hits(store: Store, app: str, chosen: Fused, wanted: int, dense: list[tuple[int, float]],
                lexical_ranking: list[tuple[int, float]], stage: str, items: int = 0) -> tuple[list[Hit], int, int]:
    """The first ``wanted`` distinct hits of the candidates (and, with ``items``, at least as
    many as hold that many distinct items), fetching their rows in order and only as many as
    that takes: most searches read ``wanted`` rows, not the whole pool.
    Returns (hits, rows asked for, rows gone).

    A chunk ranked a moment ago may have been deleted by another writer since: it is left out
    (the result is what the memory held at some instant of the search), never a crash.
    """
    # ``_merge_duplicates`` kept up to date one row at a time (what merging the whole list again
    # after every step gave). Copies are looked for among the hits of the row's own item (fact,
    # session): most rows are an item's first, and no text is hashed (~1.2 kB a row).
    hits: list[Hit] = []
    by_item: dict[tuple[str | None, str | None], list[Hit]] = {}
    taken = gone = 0
    rows: dict[int, HitRow] = {}
    reads = read_up_to = 0
    while taken < len(chosen) and (short := max(wanted - len(hits), items - len(by_item))) > 0:
        step = chosen[taken : taken + short]
        taken += len(step)
        if taken > read_up_to:
            # From the fifth read on, the n-th takes at least 2**(n-4) rows: an app with fewer
            # memories than ``items`` asks for one or two more rows a step until the pool runs
            # out (a statement a row before); the few steps of a usual search read only what they
            # ask. The steps, and so the hits, stay as they were.
            start = taken - len(step)
            read_up_to = start + max(len(step), 1 << min(max(reads - 3, 0), 16))
            reads += 1
            rows.update(store.hit_rows(app, [cid for cid, _, _ in chosen[start:read_up_to]]))
        for cid, score, ranks in step:
            if (row := rows.get(cid)) is None:
                gone += 1
                continue
            hit = _hit(row, score, ranks, dense, lexical_ranking, stage, app)
            if (same_item := by_item.get(key := (row[2], row[3]))) is None:
                by_item[key] = [hit]
                hits.append(hit)
            elif (first := _same_text(same_item, hit.text)) is None:
                same_item.append(hit)
                hits.append(hit)
            else:
                _merge_ranks(first, hit)
    return hits, taken, gone


def _same_text(hits: list[Hit], text: str) -> Hit | None:
    """The first of these hits with this text (a loop: no generator made a row, ~90 a search)."""
    for hit in hits:
        if hit.text == text:
            return hit
    return None


def _abandon(job: Future | Deferred | None) -> None:
    """The lexical half is no longer needed: cancel it if it has not started; if it has, let it
    finish unobserved (its exception, if any, is dropped: the search answered without it)."""
    if job is not None and not job.cancel():
        job.add_done_callback(lambda done: done.exception())


def _fuse(search: Search, dense: list[tuple[int, float]], lexical_ranking: list[tuple[int, float]],
          pool: int | None) -> Fused:
    """The first ``pool`` of the fused ranking (None: all of it; convex: each entry built when read)."""
    chosen = search.settings
    if chosen.fusion == "rrf":
        return rrf({"dense": [c for c, _ in dense], "lexical": [c for c, _ in lexical_ranking]}, chosen.rrf_k)[:pool]
    # The question's language (for the shipped weight only) and, where it names no rare word, its
    # lean on meaning (diarist.read.fusion).
    weight = question_dense_weight(chosen.dense_weight, search.channels.embedder.model_id, search.question.text,
                                   lexical_ranking, by_language=chosen.dense_weight == settings.FUSION_DENSE_WEIGHT)
    return convex_ranking(dense, lexical_ranking, weight, search.depth, limit=pool, lexical_scale=_lexical_scale(search))


def _lexical_scale(search: Search) -> list[float] | None:
    """Per lexical candidate, what its score counts for: ``lexical_agreement`` for a chunk in
    another language than the question, 1 otherwise (None: every one agrees, the usual case)."""
    agreement = search.settings.lexical_agreement
    if agreement is None:
        agreement = settings.lexical_agreement(search.channels.embedder.model_id)
    if agreement == 1.0 or not search.lexical_ranking:
        return None
    ids = [cid for cid, _ in search.lexical_ranking]
    other = search.channels.store.chunks_in_other_languages(search.app, ids, detect(search.question.text))
    return [agreement if cid in other else 1.0 for cid in ids] if other else None


#: A chunk's roles as stored ("user,assistant") and as a hit carries them: a handful of
#: distinct values in any app (kept up to ``_ROLES_KEPT``).
_ROLES: dict[str | None, tuple[str, ...]] = {None: (), "": ()}
_ROLES_KEPT = 64


def _roles(stored: str | None) -> tuple[str, ...]:
    roles = tuple(stored.split(",")) if stored else ()
    if len(_ROLES) < _ROLES_KEPT:
        _ROLES[stored] = roles
    return roles


def _hit(
    row: HitRow,
    score: float,
    ranks: dict[str, int | None],
    dense: list[tuple[int, float]],
    lexical_ranking: list[tuple[int, float]],
    stage: str,
    app: str,
) -> Hit:
    cid, text, session_id, fact_id, date, roles, view, first_turn, last_turn, metadata = row
    # Each channel's score read at the chunk's rank there (no lookup table of the whole ranking
    # for the k hits), in line: a search builds one hit a row read, up to ~300.
    dense_score = lexical_score = None
    if (rank := ranks.get("dense")) is not None and 0 < rank <= len(dense):
        item, dense_score = dense[rank - 1]
        if item != cid:  # ranks always index the list itself
            dense_score = dict(dense).get(cid)
    if (rank := ranks.get("lexical")) is not None and 0 < rank <= len(lexical_ranking):
        item, lexical_score = lexical_ranking[rank - 1]
        if item != cid:
            lexical_score = dict(lexical_ranking).get(cid)
    # Positional, in Hit's field order (tests/read/test_search_fetch.py holds it to the keyword
    # form): keywords cost ~0.5 us more a hit. Most items carry no metadata ("{}"): no parser.
    return Hit(cid, text, score, session_id, fact_id, date, _ROLES.get(roles) or _roles(roles), view, ranks,
               {"dense": dense_score, "lexical": lexical_score}, stage, app, first_turn, last_turn,
               json.loads(metadata) if metadata and metadata != "{}" else {})


def _merge_duplicates(hits: list[Hit]) -> list[Hit]:
    """One hit per distinct text of a session: views "both" and "split-apart" index some text
    twice (once per view or channel). The first keeps its place and the best rank per channel
    of the copies fetched (idempotent: merging a longer list again gives the same ranks)."""
    kept: dict[tuple[str | None, str | None, str], Hit] = {}
    out = []
    for hit in hits:
        key = (hit.session_id, hit.fact_id, hit.text)
        first = kept.get(key)
        if first is None:
            kept[key] = hit
            out.append(hit)
        else:
            _merge_ranks(first, hit)
    return out


def _merge_ranks(first: Hit, copy: Hit) -> None:
    """The first of two copies of one text takes the better rank (and its score) per channel."""
    for channel, rank in copy.ranks.items():
        if rank is not None and (first.ranks.get(channel) is None or rank < first.ranks[channel]):
            first.ranks[channel] = rank
            first.scores[channel] = copy.scores.get(channel)
