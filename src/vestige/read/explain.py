"""``Hit.why``: why a hit was recalled, read off what the stages left on it.

Computed for the returned hits only, and only when asked (``explain=True``): its rank and raw
score in each channel, the question's terms found in its text (as written there), its fused
score, the second stage's move and its passages.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from ..lexical import stem
from ..types import Hit
from .question import Question
from .trace import why

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def matched_terms(text: str, question: Question) -> list[str]:
    """The words of ``text`` that are the question's index terms (matched by stem, as the
    lexical channel matches them), each once, as first written in the text."""
    wanted = set(question.terms)
    found: dict[str, str] = {}
    for word in _WORD.findall(unicodedata.normalize("NFKC", text)):
        term = stem(word.casefold())
        if term in wanted and term not in found:
            found[term] = word
    return list(found.values())


def explain_hit(hit: Hit, question: Question, before: int | None, after: int, reranker: Any) -> dict[str, Any]:
    """The agreed ``why`` of one hit (``before``: its place in the fused order, when a second
    stage ran; ``after``: its place in the results)."""
    moved = None
    if before is not None and reranker is not None:
        signals: dict[str, Any] = {"score": hit.scores.get(reranker.name)}
        if question.span is not None:
            signals["time_span"] = question.span.expression
        moved = {"before": before, "after": after, "signals": signals}
    # A second stage re-orders hits but leaves their score, the fused one, as it was.
    return why(hit.ranks, hit.scores, matched_terms(hit.text, question), hit.score, moved,
               list(hit.passages) if hit.passages else [hit.text])
