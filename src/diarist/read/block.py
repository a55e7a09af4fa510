"""The context block: the formatted text an agent puts in its prompt, last of the read path.

The stages before it chose the memories and how much of each to show (``diarist.read.cut``,
``diarist.read.trim``, ``diarist.read.budget``); here they are numbered, dated and sourced in a
stable layout between ``HEADER`` and ``FOOTER``, oldest first (a timeline, where an entry that
speaks of the same thing as a later one is marked earlier) or best first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..lexical import analyze
from ..types import Hit
from .trace import Dropped, StageRecord, Trace
from .trim import lines_of

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

#: Unit vectors of lines (one row a line), by the memory's embedder: what the marks by meaning read.
LineVectorsOf = Callable[[Sequence[str]], np.ndarray]

#: Two entries speak of the same subject when a sentence of one and a sentence of the other are
#: at least this close in meaning (MiniLM's scale, the calibrated model's), each within
#: SAME_SUBJECT_MIN_RELEVANCE of the question: "The user drives a grey Skoda" and "I sold the
#: Skoda and bought a Kia" (cosine 0.51) share a subject and no word with "What car do I drive
#: now?"; "My brother drives 90 km a day" is 0.33 from the first. Sentences, not lines: a turn
#: that goes on to another thing ("How often should I charge it?") is far from both (0.26).
#: Fitted by cross-validation on the three dev sets (benchmarks/everyday_marks_cv.py).
SAME_SUBJECT_COSINE = 0.4
SAME_SUBJECT_MIN_RELEVANCE = 0.1
#: The lines of an entry whose sentences are compared: its closest to the question (bounds the cost).
SAME_SUBJECT_LINES = 3
#: Only a short memory states a fact that a later one can change (a saved fact, a note of a line
#: or two, a short exchange: "I sold the Skoda and bought a Kia" and its reply); a long
#: conversation is a record of its day, and two on one subject (two chats of the same friends
#: about their art) are no changed fact. A longer entry is paired by the question's words only.
SAME_SUBJECT_MAX_LINES = 3
#: An entry paired with another by meaning (a changed fact) is marked earlier than that one, not
#: than a newer long conversation that shares a word of the question with it.
MEANING_FIRST = True
#: In the block's best-first order, a short memory comes before a long conversation ranked above
#: it that is further from the question in meaning (``short_before_long``).
SHORT_BEFORE_LONG = True
#: The newer memory of a pair the cut followed forward (``diarist.read.follow``) is not marked
#: earlier than another by the question's meaning.
FOLLOWED_STAYS_NEWEST = True
#: A short memory (a stated fact) is not marked earlier than a long conversation by the question's
#: words alone: "The user's birthday is on 14 August" is not made stale by a later chat about a
#: child's birthday party, nor "The user drives a blue Subaru" by a chat about a brother's car
#: (everyday set: the answer itself marked earlier in 5 dev and 11 held-out blocks, none right).
#: A changed fact is paired by meaning (two short memories) or followed forward; a long
#: conversation older than another still is marked by words.
STATED_NOT_STALE_BY_WORDS = True
#: A memory as the stages name it: (session id, fact id).
Key = tuple[str | None, str | None]


def memory_key(hit: Hit) -> Key:
    """The memory a hit belongs to, as the read stages name it (``Key``)."""
    return hit.session_id, hit.fact_id

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


@dataclass(frozen=True)
class Snippet:
    """One selected hit as it appears in the block."""

    hit: Hit
    text: str  # the formatted entry, header line included
    n_tokens: int
    earlier_than: int | None = None  # the number of a later entry that speaks of the same thing
    trimmed: bool = False  # shown by some of its lines only (diarist.read.trim)
    rank: int = 0  # its place best first (0: the best); a newer entry on the same subject comes first


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
                {**s.hit.to_dict(), "n_tokens": s.n_tokens, "earlier_than": s.earlier_than, "rank": s.rank}
                for s in self.snippets
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
    if is_note(hit):
        return f"note {hit.session_id}" + (f' "{hit.title}"' if hit.title and hit.title != hit.session_id else "")
    roles = ", ".join(r for r in hit.roles if r) or "conversation"
    titled = f' "{hit.title}"' if hit.title else ""
    return f"conversation {hit.session_id}{titled} ({roles})"


def format_marks(hit: Hit, earlier_than: int | None = None) -> str:
    """The marks after an entry's source: superseded (set by a person, naming the memory that
    replaces it); earlier than entry ``earlier_than``, a newer one on the same subject (which may
    say otherwise: the footer tells the agent that dates tell when each was true)."""
    marks = ""
    superseded = hit.metadata.get("superseded_by")
    if isinstance(superseded, str) and superseded:
        marks += f" · superseded by {superseded}"
    if earlier_than is not None:
        marks += f" · earlier than [{earlier_than}] on the same subject"
    return marks


def format_snippet(number: int, hit: Hit, text: str | None = None, earlier_than: int | None = None) -> str:
    body = (hit.text if text is None else text).strip()
    return f"[{number}] {format_date(hit.date)} · {format_source(hit)}{format_marks(hit, earlier_than)}\n{body}"


def layout(chosen: Sequence[tuple[Hit, str, int]], order: str, terms: set[str], trimmed: set[int],
           vectors: LineVectorsOf | None = None,
           cosines: Callable[[Sequence[str]], Sequence[float]] | None = None,
           whole: Sequence[str] | None = None, unmarked: int = 0,
           followed: Mapping[Key, Key] | None = None) -> list[Snippet]:
    """The entries numbered in the block's order, an older entry marked earlier than the newest
    one that speaks of the same thing, and where that is a changed fact (two short memories), the
    newer ranked above it. ``chosen``: (memory,
    its shown text, its cost) best first; ``trimmed``: the ids of the memories shown by some of
    their lines. Which entries speak of the same thing: ``same_subject``.
    ``unmarked``: how many of the marks, those of the lowest-ranked entries first, are left out
    (the budget's last resort: a mark is a hint, a memory may be the answer). ``followed``: older
    memory -> the newer one the cut brought in for it (``diarist.read.follow``), a changed fact."""
    dates = [hit.date for hit, _, _ in chosen]
    later, changed = same_subject(chosen, terms, vectors, cosines, whole, followed)
    for older in sorted(later, reverse=True)[:unmarked]:
        del later[older]
    start = short_before_long(chosen, whole) if vectors is not None and SHORT_BEFORE_LONG else None
    ranks = newer_first(len(chosen), {i: j for i, j in later.items() if i in changed}, dates, start)
    if order == "date":
        shown = sorted(range(len(chosen)), key=lambda i: (chosen[i][0].date or "", chosen[i][0].session_id or "",
                                                          chosen[i][0].fact_id or "", chosen[i][0].chunk_id))
    else:
        shown = sorted(range(len(chosen)), key=lambda i: ranks[i])
    number = {i: n for n, i in enumerate(shown, 1)}
    snippets = []
    for i in shown:
        hit, text, cost = chosen[i]
        mark = number[later[i]] if i in later else None
        snippets.append(Snippet(hit, format_snippet(number[i], hit, text, mark), cost, mark, id(hit) in trimmed, ranks[i]))
    return snippets


def same_subject(chosen: Sequence[tuple[Hit, str, int]], terms: set[str], vectors: LineVectorsOf | None = None,
                 cosines: Callable[[Sequence[str]], Sequence[float]] | None = None,
                 whole: Sequence[str] | None = None,
                 followed: Mapping[Key, Key] | None = None) -> tuple[dict[int, int], set[int]]:
    """Entry -> the newest later entry that speaks of the same thing; and the entries whose mark
    is a changed fact (the newer is ranked above them). With line ``vectors`` (and the lines'
    ``cosines`` to the question): two short memories by meaning (``meaning_pairs``, on ``whole``,
    each memory's text before the trim: one shown by a line speaks of its subject in the others
    too), a changed fact; a long one and another by the question's ``terms`` they share
    (``word_pairs``), marked only (two conversations on one subject: the older is earlier, not
    replaced); a note never; and the pairs the cut followed forward (``followed``, by memory), a
    changed fact. An entry paired by meaning is marked earlier than the newest of those, whatever
    its word pairs; a short memory is not marked earlier than a long one by words
    (``STATED_NOT_STALE_BY_WORDS``). Without vectors: every two by their words, marked only."""
    dates = [hit.date for hit, _, _ in chosen]
    words = word_pairs([analyze(text) for _, text, _ in chosen], terms)
    if vectors is None:
        return newest_later(words, dates), set()
    texts = list(whole) if whole is not None else [text for _, text, _ in chosen]
    notes = [is_note(hit) for hit, _, _ in chosen]
    short = [not note and 0 < len(lines_of(text)) <= SAME_SUBJECT_MAX_LINES for note, text in zip(notes, texts)]
    meaning = meaning_pairs([text if ok else "" for text, ok in zip(texts, short)], dates, vectors, cosines)
    followed_here = followed_pairs(chosen, followed or {})
    if FOLLOWED_STAYS_NEWEST and followed_here:
        # The newer memory the cut followed forward to, memory to memory, is its subject's latest
        # statement: a pair by the question's meaning does not mark it earlier than another.
        newest = {max(pair, key=lambda i: (_days(dates)[i] or "", i)) for pair in followed_here}
        meaning = {(i, j) for i, j in meaning
                   if not ((i in newest and (dates[j] or "") > (dates[i] or "")) or
                           (j in newest and (dates[i] or "") > (dates[j] or "")))}
    meaning |= followed_here
    by_words = {(i, j) for i, j in words if not (notes[i] or notes[j]) and not (short[i] and short[j])
                and not (STATED_NOT_STALE_BY_WORDS and short[older_of(i, j, dates)])}
    if MEANING_FIRST:
        later = newest_later(meaning, dates)
        later.update({i: j for i, j in newest_later(by_words, dates).items() if i not in later})
    else:
        later = newest_later(meaning | by_words, dates)
    return later, {i for i, j in later.items() if (min(i, j), max(i, j)) in meaning}


def older_of(i: int, j: int, dates: Sequence[str | None]) -> int:
    """Of two entries, the one of the earlier day (of one day, or undated: the first given)."""
    days = _days(dates)
    return j if days[i] is not None and days[j] is not None and days[j] < days[i] else i


def followed_pairs(chosen: Sequence[tuple[Hit, str, int]], followed: Mapping[Key, Key]) -> set[tuple[int, int]]:
    """The pairs (i, j), i < j, of entries one of which the cut brought in for the other."""
    place = {memory_key(hit): i for i, (hit, _, _) in enumerate(chosen)}
    pairs = {(place[a], place[b]) for a, b in followed.items() if a in place and b in place and a != b}
    return {(min(i, j), max(i, j)) for i, j in pairs}


def is_note(hit: Hit) -> bool:
    """A note of a vault (the Markdown importer's), as opposed to a conversation or a saved fact."""
    return hit.metadata.get("source") == "markdown"


def newer_first(n: int, later: dict[int, int], dates: Sequence[str | None],
                start: Sequence[int] | None = None) -> list[int]:
    """Each entry's place best first (entries given best first, or in the order ``start``): an
    entry that a later one on the same subject supersedes gives that one its place, and moves down
    by one. Returns the places."""
    order = list(range(n)) if start is None else list(start)
    for older, newer in sorted(later.items(), key=lambda pair: (dates[pair[1]] or "", pair[1], pair[0])):
        if order.index(newer) > order.index(older):
            order.remove(newer)
            order.insert(order.index(older), newer)
    return [order.index(i) for i in range(n)]


def short_before_long(chosen: Sequence[tuple[Hit, str, int]], whole: Sequence[str] | None = None) -> list[int]:
    """The entries best first (given best first), save that a short memory (a saved fact or a
    short exchange, ``SAME_SUBJECT_MAX_LINES`` lines at most, by ``whole``: each one's text before
    the trim) comes before every long conversation ranked above it that is further from the
    question in meaning (its best passage's cosine), as far up as every one it passes is. A long
    conversation can owe its fused place to words its many lines share with the question; a stated
    fact closer in meaning is the answer more often. Short memories keep their order among
    themselves, and so do long ones."""
    texts = list(whole) if whole is not None else [text for _, text, _ in chosen]
    lines = [len(lines_of(text)) for text in texts]
    cosine = [hit.scores.get("dense") for hit, _, _ in chosen]
    long_chat = [hit.fact_id is None and not is_note(hit) and n > SAME_SUBJECT_MAX_LINES
                 for (hit, _, _), n in zip(chosen, lines)]
    short = [not is_note(hit) and 0 < n <= SAME_SUBJECT_MAX_LINES for (hit, _, _), n in zip(chosen, lines)]
    order: list[int] = []
    for i in range(len(chosen)):
        at = len(order)
        if short[i] and cosine[i] is not None:  # up past the long conversations just above it that it beats
            while at and long_chat[order[at - 1]] and (cosine[order[at - 1]] or 0.0) < cosine[i]:
                at -= 1
        order.insert(at, i)
    return order


def _days(dates: Sequence[str | None]) -> list[str | None]:
    return [d[:10] if d else None for d in dates]


def sentences_of(line: str) -> list[str]:
    """A line's sentences (a line is a turn, or a paragraph of a long one)."""
    return [part for part in _SENTENCE_END.split(line.strip()) if part]


def subject_sentences(text: str, cosines: Callable[[Sequence[str]], Sequence[float]] | None,
                      min_relevance: float) -> list[str]:
    """What an entry says of the question's subject: the sentences of its ``SAME_SUBJECT_LINES``
    lines closest to the question that are themselves within ``min_relevance`` of it (without
    ``cosines``: the sentences of its first lines)."""
    own = list(dict.fromkeys(line.strip() for line in lines_of(text)))
    if cosines is None:
        return [s for line in own[:SAME_SUBJECT_LINES] for s in sentences_of(line)]
    close = np.asarray(cosines(own), dtype=np.float64) if own else np.zeros(0)
    picked = [own[k] for k in np.argsort(-close, kind="stable")[:SAME_SUBJECT_LINES]]
    sentences = list(dict.fromkeys(s for line in picked for s in sentences_of(line)))
    relevance = np.asarray(cosines(sentences), dtype=np.float64) if sentences else np.zeros(0)
    return [s for s, r in zip(sentences, relevance) if r >= min_relevance]


def same_subject_by_meaning(texts: Sequence[str], dates: Sequence[str | None], vectors: LineVectorsOf,
                            cosines: Callable[[Sequence[str]], Sequence[float]] | None = None,
                            min_cosine: float | None = None, min_relevance: float | None = None,
                            max_lines: int | None = None) -> dict[int, int]:
    """Entry -> the newest later entry (by date) that speaks of the same thing by meaning
    (``meaning_pairs``), each entry of at most ``max_lines`` lines (None: the module's setting)."""
    max_lines = SAME_SUBJECT_MAX_LINES if max_lines is None else max_lines
    texts = [text if 0 < len(lines_of(text)) <= max_lines else "" for text in texts]
    return newest_later(meaning_pairs(texts, dates, vectors, cosines, min_cosine, min_relevance), dates)


def meaning_pairs(texts: Sequence[str], dates: Sequence[str | None], vectors: LineVectorsOf,
                  cosines: Callable[[Sequence[str]], Sequence[float]] | None = None,
                  min_cosine: float | None = None, min_relevance: float | None = None) -> set[tuple[int, int]]:
    """The pairs (i, j), i < j, of entries of different days that speak of the same thing: a
    sentence of each at least ``min_cosine`` close in meaning, both within ``min_relevance`` of the
    question (by ``cosines``; without: any of the first lines' sentences; ``subject_sentences``).
    Words need not be shared, with each other or the question. An empty text takes no part.
    (None: the module's settings.)"""
    min_cosine = SAME_SUBJECT_COSINE if min_cosine is None else min_cosine
    min_relevance = SAME_SUBJECT_MIN_RELEVANCE if min_relevance is None else min_relevance
    days = _days(dates)
    candidates = [i for i, text in enumerate(texts) if text and days[i] is not None]
    if len({days[i] for i in candidates}) < 2:
        return set()
    sentences = {i: subject_sentences(texts[i], cosines, min_relevance) for i in candidates}
    flat = [s for i in candidates for s in sentences[i]]
    if not flat:
        return set()
    matrix = np.asarray(vectors(flat), dtype=np.float64)
    rows, start = {}, 0
    for i in candidates:
        rows[i], start = matrix[start:start + len(sentences[i])], start + len(sentences[i])
    return {(i, j) for a, i in enumerate(candidates) for j in candidates[a + 1:]
            if days[i] != days[j] and len(rows[i]) and len(rows[j])
            and float(np.max(rows[i] @ rows[j].T)) >= min_cosine}


def word_pairs(entry_terms: list[list[str]], question_terms: set[str]) -> set[tuple[int, int]]:
    """The pairs (i, j), i < j, of entries that speak of the same thing by words: each holds some
    of the question's terms and they share at least half of the question's terms either holds (a
    knowledge update: "I have two bikes" then "I sold a bike")."""
    held = [question_terms.intersection(terms) for terms in entry_terms]
    return {(i, j) for i in range(len(held)) for j in range(i + 1, len(held))
            if held[i] and held[j] and 2 * len(held[i] & held[j]) >= len(held[i] | held[j])}


def newest_later(pairs: set[tuple[int, int]], dates: Sequence[str | None]) -> dict[int, int]:
    """Entry -> the newest entry of a later day it is paired with (of one day: the last given).
    Undated entries, and entries of the same day, are not marked."""
    days = _days(dates)
    out: dict[int, int] = {}
    for a, b in pairs:
        for i, j in ((a, b), (b, a)):
            if days[i] is None or days[j] is None or days[j] <= days[i]:
                continue
            if i not in out or (days[j], j) > (days[out[i]], out[i]):
                out[i] = j
    return out


def later_on_the_same_subject(entry_terms: list[list[str]], dates: list[str | None],
                              question_terms: set[str]) -> dict[int, int]:
    """Entry -> the newest later entry (by date) that speaks of the same thing by words (``word_pairs``)."""
    return newest_later(word_pairs(entry_terms, question_terms), dates)
