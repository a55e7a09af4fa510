"""The ``vestige`` command line. Environment variables are read here, not in the library."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from functools import wraps
from typing import Any

import click

from .config import default_db_path, lexical_fusion_enabled
from .errors import VestigeError

DB_HELP = "Database file (default: $VESTIGE_DB, else ~/.local/share/vestige/memory.sqlite)."


def _fail_cleanly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn vestige's own errors into a one-line message and exit status 1."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except VestigeError as exc:
            raise click.ClickException(str(exc)) from None

    return wrapper


def _open(db: str | None, embedder: str = "minilm", **kwargs: Any):
    from .memory import Memory

    return Memory(
        db or default_db_path(),
        embedder=embedder,
        lexical_fusion=lexical_fusion_enabled(),
        **kwargs,
    )


db_option = click.option("--db", type=click.Path(dir_okay=False), help=DB_HELP)
app_option = click.option("--app", default="default", show_default=True, help="App (isolation unit) to use.")
embedder_option = click.option(
    "--embedder", default="minilm", show_default=True,
    help="Embedding model: minilm (offline default), hash (tests only), st:NAME_OR_PATH.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vestige")
def main() -> None:
    """vestige: long-term memory for AI agents in one SQLite file."""


@main.command()
@click.argument("path", type=click.Path(dir_okay=False))
@db_option
@app_option
@embedder_option
@click.option("--view", type=click.Choice(["all", "user", "both", "split", "split-apart"]), default="split", show_default=True,
              help="What is indexed: split (every turn in BM25, each chunk's vector reads its user "
              "turns), split-apart (user-turn chunks in vectors only), all, user, or both.")
@click.option("--limit", type=int, help="Read only the first N records of the file.")
@click.option("--batch", type=int, default=64, show_default=True, help="Sessions stored per transaction.")
@_fail_cleanly
def ingest(path: str, db: str | None, app: str, embedder: str, view: str, limit: int | None, batch: int) -> None:
    """Read conversations from PATH (JSON/JSONL, optionally .gz) into memory.

    Formats: one session per line {"session_id", "date", "messages": [{"role", "content"}]};
    a JSON list of such sessions; an OpenAI-style message list (one session); the LongMemEval
    and LoCoMo benchmark files. Every record is validated before anything is stored, and each
    session is stored whole or not at all. Re-ingesting the same file changes nothing.
    """
    from tqdm import tqdm

    from .ingest import sessions_from_file
    from .memory import IngestReport

    fmt, sessions = sessions_from_file(path, limit)
    from .validate import check_session, check_unique

    # Validate everything before storing anything; ids must be unique across the whole file,
    # not just within one batch.
    check_unique((check_session(s, f"{path} record {i + 1}")[0] for i, s in enumerate(sessions)), f"{path}: session id")
    memory = _open(db, embedder, view=view)
    start = time.perf_counter()
    report = IngestReport([], [], [], 0)
    with tqdm(total=len(sessions), unit="session", desc=f"ingest {fmt}", disable=None) as bar:
        for offset in range(0, len(sessions), batch):
            part = sessions[offset : offset + batch]
            report.merge(memory.add_sessions(part, app=app))
            bar.update(len(part))
    elapsed = time.perf_counter() - start
    click.echo(
        f"{path}: {len(report.added)} sessions added, {len(report.replaced)} replaced, "
        f"{len(report.unchanged)} unchanged; {report.chunks} chunks indexed in {elapsed:.1f}s "
        f"(app {app!r}, {memory.store.path})"
    )
    memory.close()


@main.command()
@click.argument("query")
@db_option
@app_option
@embedder_option
@click.option("-k", "k", type=int, default=5, show_default=True, help="Number of results.")
@click.option("--previous", help="The previous turn, for a follow-up question.")
@click.option("--now", help="When the question is asked (ISO date; default: now), for 'last Sunday' and such.")
@click.option("--json", "as_json", is_flag=True, help="Print the hits as a JSON list.")
@_fail_cleanly
def search(
    query: str, db: str | None, app: str, embedder: str, k: int, previous: str | None, now: str | None, as_json: bool
) -> None:
    """Search memory; each hit shows its rank in the dense and lexical channels."""
    memory = _open(db, embedder)
    hits = memory.search(query, app=app, k=k, previous=previous, now=now)
    for note in hits.notes:
        click.echo(f"note: {note}", err=True)
    if as_json:
        click.echo(json.dumps([h.to_dict() for h in hits], indent=2, ensure_ascii=False))
        return
    if not hits:
        click.echo("nothing found")
    for n, hit in enumerate(hits, start=1):
        ranks = ", ".join(f"{ch} #{r}" if r else f"{ch} -" for ch, r in hit.ranks.items())
        source = hit.session_id or f"fact {hit.fact_id}"
        click.echo(f"{n}. [{hit.date or 'undated'}] {source}  ({ranks}; score {hit.score:.4f})")
        click.echo(f"   {_snippet(hit.text, query)}")


def _snippet(text: str, query: str, width: int = 300) -> str:
    """A window of the hit's text around the first query term it contains."""
    from .lexical import analyze

    text = " ".join(text.split())
    folded = text.casefold()
    present = [t for t in set(analyze(query)) if t in folded]
    # Centre on the query term the hit mentions least: usually the rare, telling one.
    rarest = min(present, key=lambda t: (folded.count(t), -len(t)), default=None)
    first = folded.find(rarest) if rarest else 0
    start = max(0, min(first - width // 3, len(text) - width))
    body = text[start : start + width]
    return ("..." if start else "") + body + ("..." if start + width < len(text) else "")


@main.command()
@db_option
@click.option("--app", help="Only this app.")
@embedder_option
@_fail_cleanly
def stats(db: str | None, app: str | None, embedder: str) -> None:
    """Counts of sessions, messages, facts and chunks per app."""
    memory = _open(db, embedder)
    click.echo(json.dumps(memory.stats(app), indent=2))


@main.command()
@db_option
@embedder_option
@_fail_cleanly
def doctor(db: str | None, embedder: str) -> None:
    """Check the database, the embedder and each app's lexical index; exit 1 on any problem."""
    from .health import check

    report = check(_open(db, embedder))
    for line in report.lines:
        click.echo(line)
    if not report.ok:
        sys.exit(1)


@main.command()
@click.argument("item_id", required=False)
@db_option
@app_option
@embedder_option
@click.option("--all", "whole_app", is_flag=True, help="Delete everything the app holds.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation with --all.")
@_fail_cleanly
def delete(item_id: str | None, db: str | None, app: str, embedder: str, whole_app: bool, yes: bool) -> None:
    """Delete a session or fact by ID (text, vectors and index postings), or a whole app."""
    memory = _open(db, embedder)
    if whole_app:
        if not yes:
            click.confirm(f"Delete everything in app {app!r}?", abort=True)
        memory.delete_app(app)
        click.echo(f"deleted app {app!r}")
    elif item_id:
        memory.delete(item_id, app=app)
        click.echo(f"deleted {item_id!r} from app {app!r}")
    else:
        raise click.UsageError("give an ITEM_ID, or --all to delete the whole app")


@main.command()
@db_option
@app_option
@embedder_option
@_fail_cleanly
def reindex(db: str | None, app: str, embedder: str) -> None:
    """Rebuild an app's lexical (BM25) index from its stored text."""
    memory = _open(db, embedder)
    n = memory.reindex(app)
    click.echo(f"reindexed {n} chunks of app {app!r}")


def _register_optional_groups() -> None:
    """Command groups that live in their own modules (bench, serving)."""
    import importlib

    for module, name in (("vestige.bench.cli", "bench"), ("vestige.server.cli", "commands")):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                continue  # that part of vestige is not built yet
            raise
        obj = getattr(mod, name)
        for command in obj if isinstance(obj, (list, tuple)) else [obj]:
            main.add_command(command)


_register_optional_groups()

if __name__ == "__main__":
    main()
