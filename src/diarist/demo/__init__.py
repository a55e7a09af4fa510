"""The demo's sample data: a small, made-up everyday memory shipped inside the package.

``data/`` holds two ChatGPT conversations (``chatgpt/conversations.json``, the export's shape),
two Claude.ai conversations (``claude_ai/conversations.json``), three Markdown notes with front
matter (``notes/``) and four stated facts (``facts.jsonl``, diarist's own format). Everything in
it was written for this demo; no person or benchmark is quoted. ``diarist demo`` imports it, the
docs' examples (tests/test_docs.py) run against it.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

#: When the demo's questions are asked: a fixed day, after the sample data's last date, so the
#: answers ("in June", "last month") read the same on any day.
NOW = "2025-11-20"

#: The questions the demo asks; the first one's context block ends it.
QUESTIONS = (
    "Where do I live now?",
    "What pace should I run the half marathon at?",
    "When is the rent due and who do I pay it to?",
    "What can I cook for my sister's birthday?",
)


def data_dir() -> Path:
    """The sample data's folder, inside the installed package (a wheel's too)."""
    return Path(str(files(__package__) / "data"))
