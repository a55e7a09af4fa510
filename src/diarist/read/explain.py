"""``Hit.why``: why a hit was recalled, read off what the stages left on it.

Computed for the returned hits only, and only when asked (``explain=True``): its rank and raw
score in each channel, the question's terms found in its text (as written there), its fused
score, the second stage's move and its passages.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any

from ..lexical import stem
from ..types import Hit
from .question import Question
from .trace import why

#: Snowball's exceptional forms that change a word's second letter: dying, lying, tying.
_IE_FROM_YING = frozenset({"di", "li", "ti"})


@functools.lru_cache(maxsize=64)
def _candidates(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    """Words (runs of letters and digits, as the analyzer cuts them) opening with one of the
    prefixes, in any case: a Snowball stem keeps its word's first two letters (but for "dying",
    "lying", "tying": "die", "lie", "tie"), so only these words can stem to a term with that
    opening (the regex scans in C; few words are stemmed)."""
    return re.compile(r"(?<![^\W_])(?:" + "|".join(map(re.escape, prefixes)) + r")[^\W_]*", re.IGNORECASE)


def matched_terms(text: str, question: Question) -> list[str]:
    """The words of ``text`` that are the question's index terms (matched by stem, as the
    lexical channel matches them), each once, as first written in the text."""
    return list(words_of_terms(text, set(question.terms)).values())


def words_of_terms(text: str, wanted: set[str]) -> dict[str, str]:
    """Index term -> the first word of ``text`` matching it, for the terms of ``wanted`` that
    ``text`` holds (a regex scan for words opening as a term does, then stemmed: far cheaper
    than analysing the whole text)."""
    found: dict[str, str] = {}
    if not wanted:
        return found
    openings = {term[:2] for term in wanted}
    openings |= {opening[0] + "y" for opening in openings & _IE_FROM_YING}
    pattern = _candidates(tuple(sorted(openings)))
    for word in dict.fromkeys(pattern.findall(unicodedata.normalize("NFKC", text))):
        term = stem(word.casefold())
        if term in wanted and term not in found:
            found[term] = word
    return found


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


# -- in words (the CLI's --explain, MCP recall) -------------------------------------------------


def _channel_words(name: str, entry: dict[str, Any]) -> str:
    if entry.get("rank") is None:
        return f"{name} -"
    score = entry.get("score")
    label = "cosine" if name == "dense" else "bm25"
    return f"{name} #{entry['rank']}" + (f" ({label} {score:.3f})" if score is not None else "")


def explain_line(hit: Hit) -> str:
    """One line: why a hit was recalled (needs ``hit.why``, from ``explain=True``)."""
    why_ = hit.why
    if not why_:
        return "why: not explained (search with explain=True)"
    parts = [_channel_words(name, entry) for name, entry in why_["channels"].items()]
    parts.append(f"fused {why_['fused']:.3f}")
    parts.append("matched: " + (", ".join(why_["matched_terms"]) or "no word of the question"))
    moved = why_.get("second_stage")
    if moved:
        parts.append(f"second stage: {moved['before']} -> {moved['after']}")
    return "why: " + " · ".join(parts)


def explain_text(results: Any) -> str:
    """The stages' records and what they left out, a line each (``results``: search Results or
    a context block, both carry ``trace`` and ``dropped``)."""
    lines = ["stages:"]
    for record in results.trace:
        lines.append(f"  {record.stage:<12} kept {record.kept:>4}, dropped {record.dropped:>4}  {record.note}")
    if results.dropped:
        lines.append("left out:")
        for dropped in results.dropped:
            score = f" (score {dropped.score:.3f})" if dropped.score is not None else ""
            lines.append(f"  {dropped.id} at {dropped.stage}{score}: {dropped.reason}")
    return "\n".join(lines)
