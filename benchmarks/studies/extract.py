"""Rule-based extraction (no LLM): a session condensed to ~500 characters of key facts.

Sentences are scored by rules and the best kept, in their original order, until the budget is
spent. What counts as a key fact: the user's own words (+3), a first-person statement (+2),
numbers (+1 each, at most 3), proper nouns, i.e. capitalised words that do not open a sentence
(+1 each, at most 3), dates and times of day or week (+1). A question to the assistant is less
likely to state a fact (-1); fragments under four words are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from diarist.types import Message

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[A-Za-z][\w'’-]*|\d[\d,.:/-]*")
_FIRST_PERSON = frozenset("i i'm i've i'd i'll my me mine we we're our ours myself".split())
_DATE_WORDS = frozenset(
    """january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
    saturday sunday yesterday today tomorrow tonight weekend week month year ago last next
    morning evening""".split()
)
MAX_SENTENCE_CHARS = 300


def _score(sentence: str, role: str) -> float:
    words = _WORD.findall(sentence)
    if len(words) < 4:
        return float("-inf")
    lower = [w.lower().replace("’", "'") for w in words]
    score = 3.0 if role == "user" else 0.0
    if any(w in _FIRST_PERSON for w in lower):
        score += 2
    score += min(3, sum(w[0].isdigit() for w in words))
    proper = sum(1 for w in words[1:] if w[0].isupper() and w not in ("I", "I'm", "I've", "I'd", "I'll"))
    score += min(3, proper)
    if any(w in _DATE_WORDS for w in lower):
        score += 1
    if sentence.rstrip().endswith("?"):
        score -= 1
    return score


def condense(messages: Sequence[Message], limit: int = 500) -> str:
    """Key-fact sentences of a session, at most ~limit characters, in their original order."""
    candidates: list[tuple[float, int, str]] = []
    for message in messages:
        for sentence in _SENTENCE.split(message.content):
            sentence = " ".join(sentence.split())
            if not sentence:
                continue
            score = _score(sentence, message.role)
            if score == float("-inf"):
                continue
            candidates.append((score, len(candidates), sentence[:MAX_SENTENCE_CHARS]))
    chosen: list[tuple[int, str]] = []
    used = 0
    for score, position, sentence in sorted(candidates, key=lambda c: (-c[0], c[1])):
        if used and used + len(sentence) + 1 > limit:
            continue
        chosen.append((position, sentence))
        used += len(sentence) + 1
        if used >= limit:
            break
    text = " ".join(s for _, s in sorted(chosen))
    if not text:  # nothing sentence-like: the session's opening words
        text = " ".join(" ".join(m.content.split()) for m in messages)[:limit]
    return text
