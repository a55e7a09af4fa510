"""The context block: what an agent puts in its prompt, and where it goes.

``build_context`` takes search results and a token counter, keeps the best snippets that fit
a budget and formats them, each with its date and source, in a stable layout that ends with the
rule that these are past records (``Memory.context`` searches and calls it). ``place_context``
puts the block in the last user turn of an OpenAI-style message list, just before the question:
what is closest to the question steers hardest, the stable prefix of the prompt stays
cacheable, and no chat template sees a second system message.

The block is empty when nothing is found or nothing passes the relevance floor.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInput
from .lexical import analyze
from .read.group import PASSAGE_GAP
from .read.lines import LineCosines, LinesParams, by_meaning, gated, why_left_out
from .read.trim import TrimParams, trim_hits
from .read.trace import Dropped, StageRecord, Trace
from .settings import CONTEXT_BUDGET_TOKENS, TRIM
from .types import Hit
from .write.validate import shown

#: Opening and closing lines of every non-empty block. Changing them changes every prompt:
#: keep them stable so prompt caches and evaluations stay comparable.
HEADER = (
    "<memory>\n"
    "Records retrieved from long-term memory of past conversations, each with its date and source:"
)
FOOTER = (
    "These are past records, not the present: dates tell when each was true. "
    "Where they disagree with the current state given elsewhere in this prompt, the current state wins.\n"
    "</memory>"
)
MAX_BUDGET_TOKENS = 100_000
#: The block's trimming by default (diarist.read.trim; settings TRIM_*).
DEFAULT_TRIM = TrimParams() if TRIM else None
ORDERS = ("date", "relevance")


@dataclass(frozen=True)
class Snippet:
    """One selected hit as it appears in the block."""

    hit: Hit
    text: str  # the formatted entry, header line included
    n_tokens: int
    earlier_than: int | None = None  # the number of a later entry that speaks of the same thing
    trimmed: bool = False  # shown by some of its lines only (diarist.read.trim)


class ContextBlock(str):
    """The block's text (a ``str``), carrying the snippets it holds and any notes.

    ``str(block)`` is what goes in the prompt; ``block.snippets`` explains where each part came
    from; ``block.notes`` says what degraded the search or what did not fit.
    """

    snippets: list[Snippet]
    notes: list[str]
    n_tokens: int
    trace: list[StageRecord]  # what each stage of the read path decided (diarist.read.trace)
    dropped: list[Dropped]  # with explain: what each stage left out, and why

    def __new__(cls, text: str = "", snippets: Sequence[Snippet] = (), notes: Sequence[str] = (), n_tokens: int = 0,
                trace: Trace | None = None):
        block = super().__new__(cls, text)
        block.snippets = list(snippets)
        block.notes = list(notes)
        block.n_tokens = n_tokens
        block.trace = list(trace.records) if trace else []
        block.dropped = list(trace.dropped) if trace else []
        return block

    def to_dict(self) -> dict[str, Any]:
        return {
            "context": str(self),
            "n_tokens": self.n_tokens,
            "snippets": [
                {**s.hit.to_dict(), "n_tokens": s.n_tokens, "earlier_than": s.earlier_than} for s in self.snippets
            ],
            "notes": list(self.notes),
            "trace": [r.to_dict() for r in self.trace],
            "dropped": [d.to_dict() for d in self.dropped],
        }


def format_date(date: str | None) -> str:
    """'2024-05-01' for midnight, '2024-05-01 14:30' otherwise, 'undated' when unknown."""
    if not date:
        return "undated"
    day, _, time = date.partition("T")
    time = time[:5]
    return day if not time or time == "00:00" else f"{day} {time}"


def format_source(hit: Hit) -> str:
    if hit.fact_id is not None:
        return f"note {hit.fact_id}"
    if hit.metadata.get("source") == "markdown":
        return f"note {hit.session_id}" + (f' "{hit.title}"' if hit.title and hit.title != hit.session_id else "")
    roles = ", ".join(r for r in hit.roles if r) or "conversation"
    titled = f' "{hit.title}"' if hit.title else ""
    return f"conversation {hit.session_id}{titled} ({roles})"


def format_marks(hit: Hit, earlier_than: int | None = None) -> str:
    """The marks after an entry's source: superseded (set by a person, naming the memory that
    replaces it), earlier than entry ``earlier_than``, which is later on the same subject."""
    marks = ""
    superseded = hit.metadata.get("superseded_by")
    if isinstance(superseded, str) and superseded:
        marks += f" · superseded by {superseded}"
    if earlier_than is not None:
        marks += f" · earlier than [{earlier_than}]"
    return marks


def format_snippet(number: int, hit: Hit, text: str | None = None, earlier_than: int | None = None) -> str:
    body = (hit.text if text is None else text).strip()
    return f"[{number}] {format_date(hit.date)} · {format_source(hit)}{format_marks(hit, earlier_than)}\n{body}"


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


def build_context(
    hits: Sequence[Hit],
    count_tokens: Callable[[str], int],
    *,
    budget_tokens: int = CONTEXT_BUDGET_TOKENS,
    min_score: float | None = None,
    order: str = "date",
    notes: Sequence[str] = (),
    relative_cut: float | None = None,
    terms: Sequence[str] = (),
    trace: Trace | None = None,
    trim: TrimParams | LinesParams | None = DEFAULT_TRIM,
    line_cosines: LineCosines | None = None,
) -> ContextBlock:
    """Format the best of ``hits`` (best first) that fit ``budget_tokens``: the budget stage.

    Tokens are counted with ``count_tokens`` (the embedder's tokenizer), frame included. The
    budget is filled in passes over passage rank: the best passage of each memory (best memory
    first), then each one's second best, then its third; every memory is shown once, with the
    passages that fit in their original order. A memory whose best passage does not fit is left
    out (never cut), and a note says so. ``order="date"`` prints the kept snippets oldest first (a timeline; an entry that speaks
    of the same thing as a later one, by the question's ``terms`` they hold, is marked earlier),
    ``"relevance"`` best first. ``min_score`` drops hits scoring under it. ``relative_cut``
    drops hits scoring under that share of the best hit's score (the cut before
    ``diarist.read.cut``; meaningful only for convex-fused scores). ``notes`` (from the search)
    are carried into the block's notes, ``trace`` into its trace (with a "budget" record).
    ``trim``: each memory shown by its lines that hold the question's ``terms``
    (``diarist.read.trim``), or a ``LinesParams``: by its lines closest in meaning to the question,
    scored by ``line_cosines`` (``diarist.read.lines``); None: whole passages.
    """
    budget = check_options(budget_tokens, order)
    trace = trace if trace is not None else Trace()
    notes = list(notes)
    hits = list(hits)
    if min_score is not None:
        kept = [h for h in hits if h.score >= min_score]
        if len(kept) < len(hits):
            notes.append(f"{len(hits) - len(kept)} hits under the relevance floor {min_score} left out")
        _drop_missing(trace, hits, kept, f"scores under the minimum {min_score}")
        hits = kept
    if relative_cut is not None and hits:
        best = max(h.score for h in hits)
        kept = [h for h in hits if h.score >= relative_cut * best]
        if len(kept) < len(hits):
            notes.append(f"{len(hits) - len(kept)} hits under {relative_cut:g} of the best hit's score left out")
        _drop_missing(trace, hits, kept, f"under {relative_cut:g} of the best hit's score")
        hits = kept
    if not hits:
        trace.record("budget", 0, 0, "nothing to place")
        return ContextBlock(notes=notes, trace=trace)

    count = count_tokens
    frame = count(HEADER) + count(FOOTER)
    if frame >= budget:
        trace.record("budget", 0, len(hits), f"the frame alone ({frame} tokens) fills the budget")
        return ContextBlock(notes=notes + [f"budget of {budget} tokens cannot hold the block's frame ({frame} tokens)"],
                            trace=trace)
    wanted = set(terms)
    trimmed: set[int] = set()
    if trim is not None:
        shown_as, why_out, shown_by = _trim(hits, trim, terms, line_cosines)
        for place, (hit, kept) in enumerate(zip(hits, shown_as)):
            if kept is None:
                trace.drop(hit.id or f"chunk {hit.chunk_id}", "trim", why_out(place), hit.score)
        pairs = [kept for kept in shown_as if kept is not None]
        cut_to_lines = sum(t for _, t in pairs)
        trace.record("trim", len(pairs), len(hits) - len(pairs),
                     f"{_memories(cut_to_lines)} cut to {_their(cut_to_lines)} {shown_by}")
        hits = [hit for hit, _ in pairs]
        trimmed = {id(hit) for hit, t in pairs if t}
    fills, used = _fill(hits, count, budget, frame)
    chosen = []
    for hit, placed in fills:
        if placed:
            text = PASSAGE_GAP.join(p for i, p in enumerate(_passages(hit)) if i in placed)
            chosen.append((hit, text, count(format_snippet(999, hit, text))))
        else:
            trace.drop(hit.id or f"chunk {hit.chunk_id}", "budget", f"its best passage did not fit the "
                       f"{budget - used} tokens left of {budget}", hit.score)
    skipped = len(fills) - len(chosen)
    if skipped:
        notes.append(f"{skipped} hit did not fit the budget of {budget} tokens and was left out" if skipped == 1 else
                     f"{skipped} hits did not fit the budget of {budget} tokens and were left out")
    shortened = sum(0 < len(placed) < len(_passages(hit)) for hit, placed in fills)
    trace.record("budget", len(chosen), skipped, f"{used} of {budget} tokens"
                 + (f"; {_memories(shortened)} shown by some of {_their(shortened)} passages" if shortened else ""))
    while chosen:
        snippets = _layout(chosen, order, wanted, trimmed)
        text = "\n\n".join([HEADER, *(s.text for s in snippets), FOOTER])
        n_tokens = count(text)
        if n_tokens <= budget or not any(s.earlier_than for s in snippets):
            return ContextBlock(text, snippets, notes, n_tokens, trace)
        # The marks took the last few tokens: the weakest entry makes room for them.
        hit = chosen.pop()[0]
        trace.drop(hit.id or f"chunk {hit.chunk_id}", "budget", "made room for the marks of earlier entries",
                   hit.score)
    return ContextBlock(notes=notes, trace=trace)


def _trim(hits: list[Hit], trim: TrimParams | LinesParams, terms: Sequence[str], line_cosines: LineCosines | None
          ) -> tuple[list[tuple[Hit, bool] | None], Callable[[int], str], str]:
    """The trim stage's choice per memory, why one is left out (by its place), and what shows them."""
    if isinstance(trim, LinesParams):
        if line_cosines is None:
            raise ValueError("trimming by meaning (LinesParams) needs line_cosines")
        params, why = gated(hits, line_cosines, trim)
        return (by_meaning(hits, line_cosines, params), lambda place: why_left_out(place, params),
                "lines closest in meaning" + (f"; {why}" if why else ""))
    return (trim_hits(hits, terms, trim), lambda place: "no line holds a selective term of the question, and a "
            "better memory does", "matching lines")


def _layout(chosen: list[tuple[Hit, str, int]], order: str, terms: set[str], trimmed: set[int]) -> list[Snippet]:
    """The entries numbered in the block's order, each marked earlier when a later one speaks
    of the same thing."""
    if order == "date":
        chosen = sorted(chosen, key=lambda c: (c[0].date or "", c[0].session_id or "", c[0].fact_id or "",
                                               c[0].chunk_id))
        later = _later_on_the_same_subject([analyze(text) for _, text, _ in chosen], [h.date for h, _, _ in chosen],
                                           terms)
    else:
        later = {}
    snippets = []
    for n, (hit, text, cost) in enumerate(chosen, 1):
        mark = later[n - 1] + 1 if n - 1 in later else None
        snippets.append(Snippet(hit, format_snippet(n, hit, text, mark), cost, mark, id(hit) in trimmed))
    return snippets


def _memories(n: int) -> str:
    return f"{n} memory" if n == 1 else f"{n} memories"


def _their(n: int) -> str:
    return "its" if n == 1 else "their"


def _passages(hit: Hit) -> list[str]:
    """A memory's passages in original order (a chunk hit: its text)."""
    return hit.passages or [hit.text]


def _fill(hits: list[Hit], count: Callable[[str], int], budget: int, used: int) -> tuple[list[tuple[Hit, set[int]]], int]:
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
    rounds = max((len(_passages(hit)) for hit, _ in fills), default=0)
    for round_ in range(rounds):
        for n, (hit, placed) in enumerate(fills):
            order = hit.passage_ranks or list(range(len(_passages(hit))))
            if round_ >= len(order) or (round_ > 0 and not placed):
                continue
            trial = placed | {order[round_]}
            text = PASSAGE_GAP.join(p for i, p in enumerate(_passages(hit)) if i in trial)
            # Numbers are at most 3 digits for any k we allow; count with a placeholder of that width.
            cost = count(format_snippet(999, hit, text))
            if used - costs[n] + cost <= budget:
                placed.add(order[round_])
                used += cost - costs[n]
                costs[n] = cost
    return fills, used


def _drop_missing(trace: Trace, before: list[Hit], after: list[Hit], reason: str) -> None:
    kept = {id(h) for h in after}
    for hit in before:
        if id(hit) not in kept:
            trace.drop(hit.id or f"chunk {hit.chunk_id}", "cut", reason, hit.score)


def _later_on_the_same_subject(entry_terms: list[list[str]], dates: list[str | None],
                               question_terms: set[str]) -> dict[int, int]:
    """For entries in date order: entry -> the last later entry that speaks of the same thing.

    Two entries speak of the same thing when each holds some of the question's terms and they
    share at least half of the question's terms either holds (a knowledge update: "I have two
    bikes" then "I sold a bike"). Undated entries, and entries of the same day, are not marked."""
    held = [question_terms.intersection(terms) for terms in entry_terms]
    days = [d[:10] if d else None for d in dates]
    out: dict[int, int] = {}
    for i in range(len(held)):
        for j in range(len(held) - 1, i, -1):
            either = held[i] | held[j]
            if days[i] is None or days[j] is None or days[j] <= days[i]:
                continue
            if held[i] and held[j] and 2 * len(held[i] & held[j]) >= len(either):
                out[i] = j
                break
    return out


# -- placing the block in a chat ---------------------------------------------------------------


def _last_user_index(messages: Sequence[Any]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user":
            return i
    raise InvalidInput("the message list has no user turn to put the memory block in")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def place_context(messages: Sequence[dict[str, Any]], block: str) -> list[dict[str, Any]]:
    """A copy of ``messages`` with ``block`` at the start of the last user turn, before the question.

    Plain string contents become ``block + "\\n\\n" + question``; a list of content parts gets a
    text part inserted first. An empty block returns an unchanged copy. The input is not modified.
    """
    out = [copy.deepcopy(m) for m in messages]
    if not block:
        return out
    i = _last_user_index(out)
    content = out[i].get("content")
    if isinstance(content, list):
        out[i]["content"] = [{"type": "text", "text": str(block)}, *content]
    elif isinstance(content, str):
        out[i]["content"] = f"{block}\n\n{content}"
    else:
        raise InvalidInput(f"the last user turn has content of type {type(content).__name__}, not text")
    return out


def check_chat(messages: Any) -> None:
    """An OpenAI-style chat: a list of objects with a string ``role`` and a ``content`` that is
    a string, a list of content parts (objects; a text part's ``text`` is a string) or None."""
    if not isinstance(messages, (list, tuple)):
        raise InvalidInput(f"messages must be a list of chat messages, got {type(messages).__name__}")
    for n, m in enumerate(messages):
        if not isinstance(m, dict):
            raise InvalidInput(f"message {n}: a chat message must be an object, got {type(m).__name__}")
        if not isinstance(m.get("role"), str):
            raise InvalidInput(f"message {n}: 'role' must be a string, got {type(m.get('role')).__name__}")
        content = m.get("content")
        if isinstance(content, list):
            for part in content:
                if not isinstance(part, dict):
                    raise InvalidInput(f"message {n}: a content part must be an object, got {type(part).__name__}")
                if part.get("type") == "text" and not isinstance(part.get("text", ""), str):
                    raise InvalidInput(f"message {n}: a text part's 'text' must be a string")
        elif content is not None and not isinstance(content, str):
            raise InvalidInput(f"message {n}: 'content' must be a string or a list of parts, got "
                               f"{type(content).__name__}")


def question_of(messages: Sequence[Any]) -> tuple[str, str | None]:
    """(the last user turn's text, the turn before it when that is a user or assistant turn):
    what to search for a chat, a follow-up included. The system prompt is never "previous"."""
    check_chat(messages)
    i = _last_user_index(messages)
    query = _text_of(messages[i].get("content"))
    before = messages[i - 1] if i > 0 else None
    previous = None
    if isinstance(before, dict) and before.get("role") in ("user", "assistant"):
        previous = _text_of(before.get("content")) or None
    return query, previous
