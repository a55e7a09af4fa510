"""Follow-up variants of benchmark questions, built by rules (no LLM).

The topic moves into the previous turn and the question is left bare, as in a chat:

    "How many Korean restaurants have I tried in my city?"
    -> previous: "I've been thinking about Korean restaurants I tried in my city."
       bare:     "How many was that?"

The previous turn keeps the question's content words in their order; the bare question keeps
only its question form (chosen by its opening words), so it carries no topic of its own.
Search must find the evidence from the previous turn: ``search(bare, previous=previous)``.
"""

from __future__ import annotations

import re

# Opening words -> the bare follow-up that asks the same kind of thing.
_FORMS: list[tuple[str, str]] = [
    (r"how many (days|weeks|months|years)", "How many {0} was that?"),
    (r"how many|how much", "How many was that?"),
    (r"how long", "How long was that?"),
    (r"how often", "How often was that?"),
    (r"how old", "How old was that?"),
    (r"when", "When was that?"),
    (r"where", "Where was that?"),
    (r"who", "Who was that?"),
    (r"which", "Which one was it?"),
    (r"why", "Why was that?"),
    (r"how", "How did that go?"),
    (r"what", "What was it?"),
    (r"(is|are|was|were|do|does|did|can|could|have|has|had|would|should|will)\b", "Is that right?"),
]

# Question-frame words dropped from the topic: they say how to ask, not what about.
_FRAME = frozenset(
    """what when where who whom whose which why how many much long often old is are was were
    do does did can could would should will shall have has had the a an that this these those
    there any ever""".split()
)
_WORD = re.compile(r"[\w'’-]+|\"[^\"]+\"|'[^']+'")


def bare_form(question: str) -> str:
    text = question.strip().lower()
    for pattern, template in _FORMS:
        m = re.match(pattern, text)
        if m:
            return template.format(*m.groups())
    return "Can you remind me about that?"


def topic(question: str) -> str:
    """The question's content words, in order, without its question frame."""
    words = [w for w in _WORD.findall(question) if w.lower() not in _FRAME]
    return " ".join(words)


def make_followup(question: str) -> tuple[str, str]:
    """(previous turn, bare question) for a stand-alone question."""
    about = topic(question) or question.strip()
    return f"I've been thinking about {about}.", bare_form(question)
