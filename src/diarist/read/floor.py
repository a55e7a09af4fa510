"""The relevance floor: when search answers "nothing relevant", from absolute evidence.

Fused scores are normalised per query (the best is always near 1), so they cannot say
"nothing". The floor reads three absolute signals instead:

- the best dense cosine of any chunk;
- whether the question is about someone the memory knows: it speaks in the first or second
  person ("Where do I live?", "What did you recommend?"), or names something the memory's
  lexical index holds, every word of the name ("When did Caroline ...?", Caroline being in the
  memory; "the Great Red Spot" only if "great", "red" and "spot" all are);
- the lexical coverage: the share of the question's index terms found anywhere in the memory.

A personal question may match its answer with a low cosine ("Where do I live?" against "The
user moved to Lisbon in March 2024.": 0.151, no shared term), so it has a lower floor. An
impersonal question ("What is the melting point of tungsten?") is what a personal memory is
least likely to hold: it needs the cosine floor, and a weak best cosine must be backed by
the memory holding most of its terms. Thresholds are per model (the embedder's
``evidence_floor``), fitted by cross-validation on the dev data (BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..lexical import analyze, analyze_question
from .question import PERSONAL_WORDS, Question

__all__ = ["PERSONAL_WORDS", "Floor", "Held", "coverage", "holds_every_term", "holds_name", "is_personal",
           "speaks_in_person", "title_of", "verdict", "whole_names"]

#: How many of some terms the memory's lexical index holds; None when there is no usable index.
Held = Callable[[Sequence[str]], "int | None"]


@dataclass(frozen=True)
class Floor:
    """Under what evidence search answers nothing.

    ``cosine`` alone is the cosine-only floor. With ``personal``, ``weak_cosine`` and
    ``coverage`` set, it is the evidence floor: a personal question is answered down to
    ``personal``; an impersonal one needs ``cosine``, and under ``weak_cosine`` also a
    lexical coverage of at least ``coverage``.
    """

    cosine: float
    personal: float | None = None
    weak_cosine: float | None = None
    coverage: float | None = None

    @property
    def reads_evidence(self) -> bool:
        return self.personal is not None and self.weak_cosine is not None and self.coverage is not None

    def cosine_only(self) -> Floor:
        return Floor(self.cosine)


def _question(question: str | Question) -> Question:
    return question if isinstance(question, Question) else Question(question)


def speaks_in_person(question: str | Question) -> bool:
    """First or second person: the question is about the user or the conversation."""
    return _question(question).speaks_in_person


def whole_names(question: str | Question) -> list[list[str]]:
    """The names a question uses, each whole as its index terms ("the Great Red Spot" ->
    ["great", "red", "spot"]; one-letter pieces, like the "s" of "Lovelace's", left out)."""
    return _question(question).whole_names


def holds_name(name: Sequence[str], held: Held) -> bool:
    """Whether the memory's lexical index holds every term of a name (no usable index: no)."""
    terms = sorted(set(name))
    found = held(terms)
    return bool(terms) and found is not None and found == len(terms)


def is_personal(question: str | Question, held: Held) -> bool:
    """About someone the memory knows: first or second person, or a name the memory holds.

    A name counts only when the memory holds every word of it. With any one word enough, a
    memory that says "red" somewhere made "Which planet has the Great Red Spot?" personal, and
    an off-topic question then skipped the impersonal floors; the names of the people and things
    a memory is really about are held whole. (The index has no positions: the words are each
    held, not necessarily together.)"""
    question = _question(question)
    if question.speaks_in_person:
        return True
    return any(holds_name(name, held) for name in question.whole_names)


def coverage(question: str | Question, held: Held) -> float | None:
    """Share of the question's distinct index terms held anywhere in the memory (0 for a
    question with none); None when there is no usable lexical index."""
    terms = _question(question).judged_terms
    if not terms:
        return 0.0
    found = held(terms)
    return None if found is None else found / len(terms)


def verdict(floor: Floor, best_cosine: float, question: str | Question, held: Held) -> str | None:
    """Why search should answer nothing, or None to answer. ``held`` is only called when the
    cosine alone does not decide (most questions above the floors read no index at all)."""
    if not floor.reads_evidence:
        if best_cosine < floor.cosine:
            return f"best cosine {best_cosine:.3f} is under the floor {floor.cosine}"
        return None
    assert floor.personal is not None and floor.weak_cosine is not None and floor.coverage is not None
    if best_cosine >= max(floor.cosine, floor.weak_cosine):
        return None
    if best_cosine < floor.personal:
        return f"best cosine {best_cosine:.3f} is under the floor {floor.personal}"
    question = _question(question)
    if is_personal(question, held):
        return None
    if best_cosine < floor.cosine:
        return f"best cosine {best_cosine:.3f} is under the floor {floor.cosine} for an impersonal question"
    share = coverage(question, held)
    # Without a lexical index there is no coverage to read: the cosine floor has been passed.
    if share is not None and share < floor.coverage:
        return (f"best cosine {best_cosine:.3f} is under {floor.weak_cosine} and the memory holds "
                f"{share:.0%} of an impersonal question's terms (under {floor.coverage:.0%})")
    return None


# -- a memory the question names, or one that holds every word of it -----------------------------
#
# The floor answers "nothing" from the cosine and the share of the question's terms the whole
# memory holds. Neither sees that one memory holds every content word of the question ("lost
# object arm's reach": a note's words), or is named by it (a note's title, "Catan"), while its
# cosine is low: a keyword query or a title is no sentence. Such a question is answered.

#: How many of the lexical channel's best chunks are read for it.
HELD_WHOLE_DEPTH = 3


def title_of(metadata: Mapping[str, Any]) -> str:
    """An item's own title, as its metadata holds it: ``title``, a note's front matter ``title``,
    else its file's name without the extension ("" when it has none)."""
    for title in (metadata.get("title"), (metadata.get("front_matter") or {}).get("title")
                  if isinstance(metadata.get("front_matter"), dict) else None):
        if isinstance(title, str) and title.strip():
            return title
    path = metadata.get("path")
    if isinstance(path, str) and path.strip():
        return path.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return ""


def holds_every_term(question: Question, text: str, metadata: Mapping[str, Any]) -> bool:
    """Whether one memory holds every index term of the question in its text or its title, or is
    named by the question (its whole title is in the question's terms)."""
    terms = set(analyze_question(question.judged))  # its content words: fillers need not be held
    title = set(analyze(title_of(metadata)))
    if title and title <= set(analyze(question.judged)):
        return True
    return bool(terms) and terms <= (set(analyze(text)) | title)
