"""``diarist demo``: import the sample data shipped in the package, ask what a person would ask,
show each hit with why it was recalled, and end with the context block an agent is given.

It needs nothing beside the package (no benchmark data, no network): the default model's
weights come from a package too. ``--locomo PATH`` runs it on the LoCoMo benchmark file instead,
where a checkout has one.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import click

from .options import embedder_option, fail_cleanly

#: The LoCoMo demo's question: its answer hinges on a rare proper noun, which BM25 finds.
LOCOMO_QUESTION = 'What did Caroline take away from the book "Becoming Nicole"?'


@click.command()
@click.option("--db", type=click.Path(dir_okay=False),
              help="Keep the demo's memory in this SQLite file (default: a temporary one, deleted at the end). "
              "Re-running into the same file changes nothing.")
@click.option("--locomo", "locomo_path", type=click.Path(exists=True, dir_okay=False),
              help="Run the demo on this LoCoMo file (locomo_dev.json.gz, from the benchmark data) instead of the "
              "sample data.")
@click.option("-k", "k", type=click.IntRange(min=1), default=3, show_default=True, help="Hits shown per question.")
@click.option("--budget", type=click.IntRange(min=50, max=100_000), default=400, show_default=True,
              help="Tokens the final context block may take.")
@embedder_option
@fail_cleanly
def demo(db: str | None, locomo_path: str | None, k: int, budget: int, embedder: str | None) -> None:
    """Show what diarist does, on its own sample data: import a few conversations (a ChatGPT and a
    Claude.ai export), notes and facts, ask questions a person would ask, show each hit and why it
    was recalled, and print the context block an agent would be given."""
    if db is not None:
        _run(Path(db), db, locomo_path, k, budget, embedder)
        return
    with tempfile.TemporaryDirectory(prefix="diarist-demo-") as folder:
        _run(Path(folder) / "demo.sqlite", "a temporary SQLite file (--db FILE keeps it)", locomo_path, k, budget,
             embedder)


def _run(db: Path, shown_db: str, locomo_path: str | None, k: int, budget: int, embedder: str | None) -> None:
    from ..demo import NOW, QUESTIONS, data_dir
    from ..memory import Memory

    if locomo_path:
        source, app, questions, now = Path(locomo_path), "locomo", (LOCOMO_QUESTION,), None
    else:
        source, app, questions, now = data_dir(), "demo", QUESTIONS, NOW
    with Memory(db, embedder=embedder, create=True) as memory:
        click.echo(_import(memory, source, app, shown=locomo_path or "the sample data shipped with diarist"))
        click.echo(f"Memory: {shown_db}" + (f"; the questions are asked as of {now}." if now else "."))
        for question in questions:
            click.echo(f"\nQ: {question}")
            hits = memory.search(question, app=app, k=k, now=now, explain=True)
            for line in hit_lines(hits):
                click.echo(line)
        question = questions[0]
        click.echo(f"\nThe context block an agent is given for {question!r} ({budget} tokens at most):\n")
        block = memory.context(question, app=app, budget_tokens=budget, now=now)
        click.echo(str(block) if block else "nothing relevant: the block is empty")


def _import(memory, source: Path, app: str, shown: str) -> str:
    """Read every file under ``source`` (formats detected) into the app; one line saying what."""
    from ..importers import read_all
    from ..importers.load import check_imported, store_imported

    imported = read_all(source)
    check_imported(imported, shown)
    stored = store_imported(memory, imported, app=app)
    sessions, facts = stored.sessions, stored.facts
    stored = sessions.added + sessions.replaced + sessions.unchanged
    kinds = sorted({s.metadata.get("source", "diarist") for s in imported.sessions if isinstance(s.metadata, dict)})
    n_facts = len(facts.added + facts.replaced + facts.unchanged) if facts else 0
    return (f"Imported {shown}: {len(stored)} sessions ({', '.join(kinds)}) and {n_facts} facts, "
            f"app {app!r}.")


def hit_lines(hits) -> list[str]:
    """Each hit: where it comes from and when, its text from just before the first word of the
    question it holds, and why it was recalled (as `diarist search --explain` says)."""
    from ..read.explain import explain_line

    lines = []
    for n, hit in enumerate(hits, start=1):
        source = f"fact {hit.fact_id}" if hit.fact_id else f'"{hit.title}"' if hit.title else hit.session_id
        lines.append(f"{n}. [{(hit.date or 'undated')[:10]}] {source}  (score {hit.score:.4f})")
        lines.append(f"   {_passage(hit)}")
        lines.append(f"   {explain_line(hit)}")
    return lines or ["   nothing found"]


def _passage(hit, width: int = 160) -> str:
    """``width`` characters of the hit's text, from a little before the first word it matched
    (from its start when it matched none: a hit by meaning alone)."""
    text = " ".join(hit.text.split())
    words = (hit.why or {}).get("matched_terms") or []
    found = [m.start() for word in words if (m := re.search(rf"\b{re.escape(word)}\b", text))]
    start = max(0, min(found, default=0) - width // 4)
    return ("..." if start else "") + text[start : start + width] + ("..." if start + width < len(text) else "")
