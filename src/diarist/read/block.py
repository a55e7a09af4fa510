"""The context block: the formatted text an agent puts in its prompt, last of the read path.

The stages before it chose the memories and how much of each to show (``diarist.read.cut``,
``diarist.read.trim``, ``diarist.read.budget``); here they are numbered, dated and sourced in a
stable layout between ``HEADER`` and ``FOOTER``, oldest first (a timeline, where an entry that
speaks of the same thing as a later one is marked earlier) or best first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..lexical import analyze
from ..types import Hit
from .trace import Dropped, StageRecord, Trace

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


def layout(chosen: Sequence[tuple[Hit, str, int]], order: str, terms: set[str], trimmed: set[int]) -> list[Snippet]:
    """The entries numbered in the block's order, each marked earlier when a later one speaks
    of the same thing. ``chosen``: (memory, its shown text, its cost) best first; ``trimmed``:
    the ids of the memories shown by some of their lines."""
    if order == "date":
        chosen = sorted(chosen, key=lambda c: (c[0].date or "", c[0].session_id or "", c[0].fact_id or "",
                                               c[0].chunk_id))
        later = later_on_the_same_subject([analyze(text) for _, text, _ in chosen], [h.date for h, _, _ in chosen],
                                          terms)
    else:
        later = {}
    snippets = []
    for n, (hit, text, cost) in enumerate(chosen, 1):
        mark = later[n - 1] + 1 if n - 1 in later else None
        snippets.append(Snippet(hit, format_snippet(n, hit, text, mark), cost, mark, id(hit) in trimmed))
    return snippets


def later_on_the_same_subject(entry_terms: list[list[str]], dates: list[str | None],
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
