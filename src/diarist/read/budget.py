"""The budget, and the block's stages as read stages: cut -> trim -> budget.

The budget is filled in passes over passage rank: the best passage of each memory (best memory
first), then each one's second best, then its third; every memory is shown once, with the
passages that fit in their original order. A memory whose best passage does not fit is left out
(never cut), and a note says so. Tokens are counted with the embedder's tokenizer, the block's
frame and each entry's header line included.

One rule holds across the three: **the block never leaves out the memories best by meaning while
it keeps another**: the memory of the highest cosine among those ranked, and the next ones up to
``settings.BLOCK_KEEP_BY_MEANING`` that reach the cut's cosine floor (``CUT_MIN_COSINE``).
The cut keeps them (however low their cosine), the trim shows each at least by its closest line,
and the budget shows one by its closest line when its passages do not fit. A memory
first by fused score can owe its place to a word that carries no evidence, and a short stated fact
can sit just under a long conversation by cosine; the memories closest in meaning are the agent's
best hint that the answer exists, and a pointer to one costs a line. The block's cuts by fused
score (``min_score``, ``relative_cut``) are the caller's own and are not overruled.

``BlockOptions`` is what a context read asks of its block, checked once; a ``Draft`` carries it
and what the block's stages decided from stage to stage (``Memory.context`` runs
``search(after=[draft, "cut", "trim", "budget"])``), and ``finish`` lays the block out
(``diarist.read.block``). The ranked memories stay on the search, each explained at its rank.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from .. import settings
from ..errors import InvalidInput
from ..types import Hit
from ..write.validate import shown
from .block import FOOTER, HEADER, ORDERS, ContextBlock, Key, LineVectorsOf, format_snippet, layout, memory_key
from .follow import follow_forward
from .cut import CutParams, cut_memories
from .group import PASSAGE_GAP
from .lines import LineCosines, LinesParams, closest_only, trim_block
from .question import Question
from .trace import StageRecord, Trace
from .trim import TrimParams


class BlockRead(Protocol):
    """What the block's stages read and write of a search (``diarist.read.search.Search``)."""

    hits: list[Hit]  # read: the ranked memories; the cut writes those it keeps
    k: int
    trace: Trace
    question: Question
    question_vector: Any
    block: Any  # the Draft, set by the draft itself as the first of the block's stages

    @property
    def comparable(self) -> bool: ...


MAX_BUDGET_TOKENS = 100_000


def _check_budget(budget_tokens: Any) -> int:
    if not isinstance(budget_tokens, int) or isinstance(budget_tokens, bool) or budget_tokens < 1:
        raise InvalidInput(f"budget_tokens must be a positive integer, got {shown(budget_tokens)}")
    if budget_tokens > MAX_BUDGET_TOKENS:
        raise InvalidInput(f"budget_tokens {shown(budget_tokens)} is over the {MAX_BUDGET_TOKENS} limit")
    return budget_tokens


def check_options(budget_tokens: Any, order: str) -> int:
    """The budget as an int, or InvalidInput; checked before anything is searched."""
    budget = _check_budget(budget_tokens)
    if not isinstance(order, str) or order not in ORDERS:
        raise InvalidInput(f"order must be one of {', '.join(ORDERS)}, got {shown(order)}")
    return budget


@dataclass(frozen=True)
class BlockOptions:
    """What a context read asks of its block (checked by ``check_options`` before it searches)."""

    count_tokens: Callable[[str], int]  # the embedder's tokenizer
    budget_tokens: int
    order: str = "date"
    min_score: float | None = None  # hits scoring under it are left out
    relative_cut: float | None = None  # hits under this share of the best hit's score (comparable scores only)
    cut: CutParams | None = None  # the calibrated cut (diarist.read.cut); None: none
    trim: TrimParams | LinesParams | None = None  # how each memory is shown (diarist.read.trim); None: whole
    line_cosines: LineCosines | None = None  # with LinesParams: cosines of lines to the question


@dataclass
class Draft:
    """A block under construction: its options and what its stages decided so far."""

    options: BlockOptions
    # The memories as the block's stages pass them on (the ranked hits, or the trim's shortened
    # copies of them); None until a block stage has run: the search's hits, the first k.
    hits: list[Hit] | None = None
    notes: list[str] = field(default_factory=list)  # the block's own notes (the search's come first)
    terms: list[str] = field(default_factory=list)  # the question's own index terms (trim, marks)
    trimmed: set[int] = field(default_factory=set)  # ids of the memories shown by some of their lines
    shown_as: dict[int, Hit] = field(default_factory=dict)  # id of a shown (trimmed) hit -> the ranked one
    chosen: list[tuple[Hit, str, int]] = field(default_factory=list)  # (memory, its text, cost), best first
    budgeted: bool = False  # the budget stage ran
    # A context read's line cosines, made from the vector the dense channel made of the question
    # (for a LinesParams trim; ``options.line_cosines`` given: that one).
    lines_of_vector: Callable[[Any], LineCosines] | None = None
    # Unit vectors of lines by the memory's embedder: entries on the same subject are marked by
    # meaning (``diarist.read.block.same_subject_by_meaning``); None: by the question's words.
    line_vectors: LineVectorsOf | None = None
    begun: bool = False
    by_meaning: list[tuple[str | None, str | None]] = field(default_factory=list)  # (session, fact): kept whatever else
    pointers: list[tuple[str | None, str | None]] = field(default_factory=list)  # of those, kept by that rule alone
    filled: list[Hit] = field(default_factory=list)  # the memories the budget was filled from, as it showed them
    followed: dict[Key, Key] = field(default_factory=dict)  # older -> the newer the cut brought in (read.follow)

    def __call__(self, search: BlockRead) -> None:
        """The draft as a read stage, ahead of the block's: the search builds this block."""
        search.block = self
        self.begin(search)

    def begin(self, search: BlockRead) -> None:
        """Read what the block's stages need of the search, once: the question's own terms, and
        the line cosines a trim by meaning needs."""
        if self.begun:
            return
        self.begun = True
        self.terms = list(search.question.own_terms)
        if self.options.line_cosines is None and self.lines_of_vector is not None and isinstance(self.options.trim, LinesParams):
            self.options = replace(self.options, line_cosines=self.lines_of_vector(search.question_vector))

    def places_by_meaning(self, hits: Sequence[Hit]) -> list[int]:
        """Where the memories best by meaning are among ``hits``, in order."""
        wanted = set(self.by_meaning)
        return [place for place, hit in enumerate(hits) if memory_key(hit) in wanted]

    def current(self, search: BlockRead) -> list[Hit]:
        """The memories the block's stages have passed on so far (none ran: the first k ranked)."""
        self.begin(search)
        return self.hits if self.hits is not None else search.hits[: search.k]


def draft_of(search: BlockRead, stage: str) -> Draft:
    """The block a read builds (``search.block``), or InvalidInput for a search that builds none."""
    draft = getattr(search, "block", None)
    if not isinstance(draft, Draft):
        raise InvalidInput(f"the {stage} stage builds a context block: run it through Memory.context")
    return draft


def cut_stage(search: BlockRead) -> None:
    """The cut (``diarist.read.cut``) over the first k memories: the block's ``CutParams`` (a
    search that builds no block: the library's; a block without: none), then the block's cuts
    by fused score (``min_score``, ``relative_cut``)."""
    draft = getattr(search, "block", None)
    draft = draft if isinstance(draft, Draft) else None
    params = draft.options.cut if draft is not None else CutParams()
    ranked = search.hits[: search.k]
    closest = best_by_meaning(ranked, settings.BLOCK_KEEP_BY_MEANING if draft is not None else 0)
    # The closest always; the next ones when they reach the cut's cosine floor (a memory at a
    # cosine near 0 is no hint, however close it comes after the best).
    floor = params.min_cosine if params is not None else 2.0
    closest = closest[:1] + [hit for hit in closest[1:] if hit.scores["dense"] >= floor]
    rescued: list[Hit] = []
    if params is not None:
        search.hits, rescued = cut_memories(ranked, search.question.own_terms, params, search.trace,
                                            keep={place for place, hit in enumerate(ranked) if any(hit is c for c in closest)})
    if draft is not None:
        draft.begin(search)
        draft.by_meaning = [memory_key(hit) for hit in closest]
        draft.pointers = [memory_key(hit) for hit in rescued]
        draft.hits = score_cut(search.hits[: search.k], draft, search.trace, search.comparable)
        if draft.line_vectors is not None and draft.options.line_cosines is not None:  # as the marks by meaning
            follow_stage(search, draft, ranked)


def follow_stage(search: BlockRead, draft: Draft, ranked: Sequence[Hit]) -> None:
    """The cut's last step (``diarist.read.follow``): the newer of a changed fact brought in above
    the older the block keeps, kept whatever else (as the memories best by meaning are), and said
    in the cut's record. ``ranked``: the memories the search ranked, before the cut (the candidates)."""
    assert draft.line_vectors is not None
    followed = follow_forward(draft.hits or [], ranked, draft.line_vectors)
    if not followed.pairs:
        return
    held = {memory_key(hit) for hit in draft.hits or []}
    brought = [key for key in followed.pairs.values() if key not in held]
    draft.hits, draft.followed = followed.hits, dict(followed.pairs)
    draft.by_meaning += [key for key in followed.pairs.values() if key not in draft.by_meaning]
    records = search.trace.records
    for place in range(len(records) - 1, -1, -1):
        if records[place].stage == "cut":
            r = records[place]
            records[place] = StageRecord(r.stage, r.kept + len(brought), r.dropped, r.note +
                                         f"; {len(followed.pairs)} followed forward to a newer memory on the same "
                                         f"subject ({len(brought)} brought in)", r.ms)
            break


def trim_stage(search: BlockRead) -> None:
    """The trim (``diarist.read.lines.trim_block``): each memory shown as the block's ``trim`` says."""
    draft = draft_of(search, "trim")
    options = draft.options
    hits = draft.current(search)
    pointers = set(draft.pointers)
    draft.hits, ranked = trim_block(hits, options.trim, draft.terms, options.line_cosines, search.trace,
                                    keep=draft.places_by_meaning(hits),
                                    pointers=[place for place, hit in enumerate(hits) if memory_key(hit) in pointers])
    if draft.followed:  # the newer of a changed fact is a short memory: shown whole, not by a line
        whole = {memory_key(hit): hit for hit in hits if memory_key(hit) in set(draft.followed.values())}
        for place, hit in enumerate(draft.hits):
            if memory_key(hit) in whole and hit is not whole[memory_key(hit)]:
                ranked.pop(id(hit), None)
                draft.hits[place] = whole[memory_key(hit)]
    draft.trimmed |= set(ranked)
    draft.shown_as.update(ranked)


def budget_stage(search: BlockRead) -> None:
    """The budget: what of the memories left fits the block (``fill_budget``)."""
    draft = draft_of(search, "budget")
    fill_budget(draft.current(search), draft, search.trace)


def best_by_meaning(hits: Sequence[Hit], n: int) -> list[Hit]:
    """The ``n`` memories with the highest cosines to the question (the first of equals first)."""
    scored = [hit for hit in hits if hit.scores.get("dense") is not None]
    return sorted(scored, key=lambda hit: -hit.scores["dense"])[:n]


def score_cut(hits: Sequence[Hit], draft: Draft, trace: Trace, comparable: bool = True) -> list[Hit]:
    """The block's cuts by fused score: under ``min_score``; under ``relative_cut`` of the best
    hit's score, where the scores are on one scale (``comparable``: the convex fusion's)."""
    options, notes, hits = draft.options, draft.notes, list(hits)
    if options.min_score is not None:
        kept = [h for h in hits if h.score >= options.min_score]
        if len(kept) < len(hits):
            notes.append(f"{len(hits) - len(kept)} hits under the relevance floor {options.min_score} left out")
        _drop_missing(trace, hits, kept, f"scores under the minimum {options.min_score}")
        hits = kept
    if options.relative_cut is not None and comparable and hits:
        best = max(h.score for h in hits)
        kept = [h for h in hits if h.score >= options.relative_cut * best]
        if len(kept) < len(hits):
            notes.append(f"{len(hits) - len(kept)} hits under {options.relative_cut:g} of the best hit's score left out")
        _drop_missing(trace, hits, kept, f"under {options.relative_cut:g} of the best hit's score")
        hits = kept
    return hits


def _drop_missing(trace: Trace, before: list[Hit], after: list[Hit], reason: str) -> None:
    kept = {id(h) for h in after}
    for hit in before:
        if id(hit) not in kept:
            trace.drop(label(hit), "cut", reason, hit.score)


def fill_budget(hits: Sequence[Hit], draft: Draft, trace: Trace) -> None:
    """Choose what of ``hits`` (best first) fits the budget into ``draft.chosen``; records "budget"."""
    options, notes = draft.options, draft.notes
    draft.budgeted = True
    hits = list(hits)
    if not hits:
        trace.record("budget", 0, 0, "nothing to place")
        return
    budget, count = options.budget_tokens, options.count_tokens
    frame = count(HEADER) + count(FOOTER)
    if frame >= budget:
        trace.record("budget", 0, len(hits), f"the frame alone ({frame} tokens) fills the budget")
        notes.append(f"budget of {budget} tokens cannot hold the block's frame ({frame} tokens)")
        return
    fills, used = fill(hits, count, budget, frame)
    missing = [place for place in draft.places_by_meaning(hits) if place and not _placed(fills, hits[place])]
    if missing and any(placed for _, placed in fills):
        # A memory best by meaning whose passages did not fit is shown by its closest line instead,
        # in its place: a pointer costs a line (moving it up would push out the passages of others).
        hits = list(hits)
        for place in missing:
            pointer, trimmed = closest_only(hits[place], options.line_cosines)
            if trimmed:
                draft.trimmed.add(id(pointer))
                draft.shown_as[id(pointer)] = draft.shown_as.get(id(hits[place]), hits[place])
            hits[place] = pointer
        fills, used = fill(hits, count, budget, frame)
    draft.filled = hits
    chosen = chosen_of(fills, count)
    for hit, placed in fills:
        if not placed:
            trace.drop(label(hit), "budget", f"its best passage did not fit the {budget - used} tokens left of {budget}",
                       hit.score)
    skipped = len(fills) - len(chosen)
    if skipped:
        notes.append(f"{skipped} hit did not fit the budget of {budget} tokens and was left out" if skipped == 1 else
                     f"{skipped} hits did not fit the budget of {budget} tokens and were left out")
    shortened = sum(0 < len(placed) < len(passages(hit)) for hit, placed in fills)
    trace.record("budget", len(chosen), skipped, f"{used} of {budget} tokens"
                 + (f"; {shortened} memory shown by some of its passages" if shortened == 1 else
                    f"; {shortened} memories shown by some of their passages" if shortened else ""))
    draft.chosen = chosen


def chosen_of(fills: list[tuple[Hit, set[int]]], count: Callable[[str], int]) -> list[tuple[Hit, str, int]]:
    """(memory, its shown text, its cost) of each memory placed, best first."""
    chosen = []
    for hit, placed in fills:
        if placed:
            text = PASSAGE_GAP.join(p for i, p in enumerate(passages(hit)) if i in placed)
            chosen.append((hit, text, count(format_snippet(999, hit, text))))
    return chosen


def _placed(fills: list[tuple[Hit, set[int]]], hit: Hit) -> bool:
    return any(placed for shown, placed in fills if memory_key(shown) == memory_key(hit))


#: How many times the budget is filled again to make room for the marks of earlier entries
#: before the weakest entries' marks are left out.
MARK_REFILLS = 2


def finish(draft: Draft, trace: Trace, search_notes: Sequence[str] = ()) -> ContextBlock:
    """The block of what the budget chose, laid out (``diarist.read.block``). When the marks of
    earlier entries take the last few tokens, the budget is filled again with their cost set
    aside (the weakest passages make room, every memory kept); failing that, the marks of the
    weakest entries are left out, never a memory."""
    if not draft.budgeted:  # the search stopped before the block's stages (the floor's "nothing")
        fill_budget([], draft, trace)
    notes = [*search_notes, *draft.notes]
    chosen = list(draft.chosen)
    wanted = set(draft.terms)
    budget, count = draft.options.budget_tokens, draft.options.count_tokens
    refills = unmarked = 0
    # Marks by meaning where the block reads lines by meaning (a LinesParams trim: the lines'
    # vectors are the trim's own); else by the question's words.
    vectors = draft.line_vectors if draft.options.line_cosines is not None else None
    while True:
        whole = [PASSAGE_GAP.join(passages(draft.shown_as.get(id(hit), hit))) for hit, _, _ in chosen]
        snippets = layout(chosen, draft.options.order, wanted, draft.trimmed, vectors, draft.options.line_cosines,
                          whole, unmarked, draft.followed)
        text = "\n\n".join([HEADER, *(s.text for s in snippets), FOOTER])
        n_tokens = count(text)
        marks = sum(s.earlier_than is not None for s in snippets)
        if not snippets or n_tokens <= draft.options.budget_tokens or not marks:
            break
        if refills < MARK_REFILLS:
            # The marks pay for themselves with the weakest passages first, every memory kept:
            # the budget is filled again with their cost set aside.
            refills += 1
            budget -= n_tokens - draft.options.budget_tokens
            refilled = chosen_of(fill(draft.filled, count, budget, count(HEADER) + count(FOOTER))[0], count)
            if [hit for hit, _, _ in refilled] == [hit for hit, _, _ in chosen]:
                chosen = refilled
                continue
            refills = MARK_REFILLS
        # Else the marks of the weakest entries are left out, not a memory.
        unmarked += 1
    if not snippets:
        return ContextBlock(notes=notes, trace=trace)
    if unmarked:
        notes.append(f"{unmarked} mark{'s' if unmarked > 1 else ''} of earlier entries left out: the budget had no room")
    for snippet in snippets:  # a trimmed memory explains itself as the ranked one did
        ranked = draft.shown_as.get(id(snippet.hit))
        if ranked is not None and ranked.why is not None:
            snippet.hit.why = ranked.why
    return ContextBlock(text, snippets, notes, n_tokens, trace)


def label(hit: Hit) -> str:
    return hit.id or f"chunk {hit.chunk_id}"


def passages(hit: Hit) -> list[str]:
    """A memory's passages in original order (a chunk hit: its text)."""
    return hit.passages or [hit.text]


def fill(hits: list[Hit], count: Callable[[str], int], budget: int, used: int) -> tuple[list[tuple[Hit, set[int]]], int]:
    """Which passages of which memories the budget holds, in passes over passage rank: first
    the best passage of every memory, best memory first; then each memory's second best; then
    its third. Each memory is shown once; a memory whose best passage does not fit is left out
    (its set is empty). The same text indexed twice (two views) is placed once. Returns
    (memory, its shown passages' indexes) in rank order, and the tokens used."""
    fills: list[tuple[Hit, set[int]]] = []
    costs: list[int] = []
    seen = set()
    for hit in hits:
        key = (hit.session_id, hit.fact_id, " ".join(hit.text.split()))
        if key not in seen:  # the same text indexed in two views
            seen.add(key)
            fills.append((hit, set()))
            costs.append(0)
    rounds = max((len(passages(hit)) for hit, _ in fills), default=0)
    for round_ in range(rounds):
        for n, (hit, placed) in enumerate(fills):
            order = hit.passage_ranks or list(range(len(passages(hit))))
            if round_ >= len(order) or (round_ > 0 and not placed):
                continue
            trial = placed | {order[round_]}
            text = PASSAGE_GAP.join(p for i, p in enumerate(passages(hit)) if i in trial)
            # Numbers are at most 3 digits for any k we allow; count with a placeholder of that width.
            cost = count(format_snippet(999, hit, text))
            if used - costs[n] + cost <= budget:
                placed.add(order[round_])
                used += cost - costs[n]
                costs[n] = cost
    return fills, used
