"""The question, parsed once: every stage of the read path reads it from here.

The lexical channel reads its index terms, the floor its person and names and coverage terms,
the second stage its names, quoted phrases and time span, the cut its terms. Each part is
computed on first use and kept (``cached_property``): a question the floor never needs to judge
by its names is never scanned for them.

A follow-up (``previous`` given) is read by the channels and the floor together with the turn
before it; the second stage reads the question alone, as it always did.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from ..lexical import analyze, analyze_question, stem
from .query import TimeSpan, proper_noun_phrases, proper_nouns, resolve_time

#: The words of a question about the user or the assistant, as the analyzer gives them
#: ("I'm" -> "i", "m"; stems: "yourselves" -> "yourselv").
PERSONAL_WORDS = frozenset(
    stem(word) for word in "i me my mine myself we us our ours ourselves you your yours yourself yourselves".split()
)
#: "US" in capitals is the country ("the capital of the US"), not the pronoun: the analyzer
#: folds case, so it is taken out before (unless the whole question is in capitals).
_COUNTRY = re.compile(r"\bUS\b")
_QUOTED = re.compile(r"[\"“”]([^\"“”]{2,})[\"“”]")
#: Words that ask for the current state of something ("currently", "latest", "still"...).
CURRENT_STATE = re.compile(
    r"\b(current(ly)?|now|nowadays|these days|at the moment|latest|most recent(ly)?|still|"
    r"anymore|so far|up to date|new(est)?)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Question:
    """A question as the read path sees it: the text, the turn before it, and when it is asked."""

    text: str
    previous: str | None = None
    now: datetime | None = None

    @property
    def texts(self) -> list[str]:
        """What the dense channel embeds: the question, and with a previous turn the two together
        (each chunk keeps its best score, so the stand-alone result is never lost)."""
        return [self.text] if not self.previous else [self.text, f"{self.previous}\n{self.text}"]

    @property
    def judged(self) -> str:
        """The text the floor judges: a follow-up with its previous turn, as both channels read it."""
        return self.texts[-1]

    @cached_property
    def terms(self) -> list[str]:
        """The lexical channel's query terms: the question's, then the previous turn's. Words that
        carry no evidence in a question ("now", "these days", "tell me": ``analyze_question``) are
        left out: a chat that says "now" is no answer to "Where do I live now?"."""
        terms = analyze_question(self.text)
        return terms + analyze_question(self.previous) if self.previous else terms

    @cached_property
    def own_terms(self) -> list[str]:
        """The distinct index terms of the question alone, in order of first use."""
        return list(dict.fromkeys(analyze_question(self.text)))

    @cached_property
    def judged_terms(self) -> list[str]:
        """The distinct index terms of the judged text, sorted (the floor's coverage reads them).
        Every word counts here, fillers included: the floor's thresholds were fitted on them."""
        return sorted(set(analyze(self.judged)))

    @cached_property
    def speaks_in_person(self) -> bool:
        """First or second person (of the judged text): about the user or the conversation."""
        text = self.judged if self.judged.isupper() else _COUNTRY.sub(" ", self.judged)
        return not PERSONAL_WORDS.isdisjoint(analyze(text, keep_stopwords=True))

    @cached_property
    def whole_names(self) -> list[list[str]]:
        """The names the judged text uses, each whole as its index terms ("the Great Red Spot"
        -> ["great", "red", "spot"]; one-letter pieces, like the "s" of "Lovelace's", left out)."""
        phrases = ([term for term in phrase if len(term) > 1] for phrase in proper_noun_phrases(self.judged))
        return [phrase for phrase in phrases if phrase]

    @cached_property
    def proper_nouns(self) -> list[str]:
        """Index terms of the question attested as names (see ``diarist.read.query``)."""
        return proper_nouns(self.text)

    @cached_property
    def quoted(self) -> list[str]:
        """Phrases the user put in quotes, verbatim."""
        return [q.strip() for q in _QUOTED.findall(self.text) if q.strip()]

    @cached_property
    def span(self) -> TimeSpan | None:
        """The time span the question names, resolved against ``now`` (None without ``now``)."""
        return resolve_time(self.text, self.now) if self.now is not None else None

    @cached_property
    def asks_current_state(self) -> bool:
        return CURRENT_STATE.search(self.text) is not None
