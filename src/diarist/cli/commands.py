"""The core commands: ingest, search, context, stats, doctor, delete, reindex."""

from __future__ import annotations

import json
import sys
import time

import click

from .. import settings
from ..importers import FORMATS, IMPORTERS
from ..read.lines import TRIM_NAMES
from .options import app_option, db_option, embedder_option, fail_cleanly, open_memory, plan_option
from .reading import exclude_option, max_bytes_option, say_kept_newer, say_skipped
from .progress import Progress


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="diarist")
def main() -> None:
    """diarist: long-term memory for AI agents in one SQLite file."""


@main.command()
@click.argument("path", type=click.Path(allow_dash=True))
@db_option
@app_option
@embedder_option
@plan_option
@click.option("--format", "format_name", type=click.Choice(FORMATS),
              help="Read PATH as this format instead of detecting it: "
              + "; ".join(f"{imp.name} ({imp.title})" for imp in IMPORTERS.values()) + ".")
@click.option("--limit", type=click.IntRange(min=1),
              help="Read only the first N records (sessions, conversations, questions) of each file.")
@click.option("--batch", type=click.IntRange(min=1), default=settings.INGEST_BATCH, show_default=True,
              help="Sessions stored per transaction.")
@max_bytes_option
@exclude_option
@click.option("--json", "as_json", is_flag=True,
              help="Print the report as JSON: the ids added, replaced and unchanged, and every file or record skipped.")
@fail_cleanly
def ingest(path: str, db: str | None, app: str, embedder: str | None, plan: str | None, format_name: str | None,
           limit: int | None, batch: int, max_bytes: int, exclude: tuple[str, ...], as_json: bool) -> None:
    """Read conversations and notes from PATH (a file, - for standard input, or a folder) into memory.

    The format is detected (or named with --format): diarist's own sessions (JSON/JSONL, one
    {"session_id", "date", "messages": [{"role", "content"}]} per line or a list), OpenAI message
    lists and logs, a ChatGPT or Claude.ai export (conversations.json), Claude Code session logs
    (~/.claude/projects), Markdown or text notes, the LongMemEval and LoCoMo benchmark files;
    .gz files too. A folder is read file by file, in sorted order; every file or record not
    stored is named on standard error with why (no known format, empty, hidden, --exclude, an
    Obsidian templates folder, a device, FIFO or link out of the folder, over --max-bytes). A
    conversation met twice (overlapping exports) is stored once, its latest version. Every
    record is validated before anything is stored, and each session is stored whole or not at
    all. Re-ingesting the same file changes nothing.
    """
    from ..importers import read_all
    from ..importers.load import check_imported, store_checked

    imported = read_all(path, format_name, limit, max_bytes=max_bytes, exclude=exclude)
    shown_path = "<stdin>" if path == "-" else path
    check_imported(imported, shown_path)  # everything validated before anything is stored
    if not as_json:
        say_skipped(imported)
    memory = open_memory(db, embedder, plan=plan, create=True)
    memory.settle_imported(imported, app)
    if not as_json:
        say_kept_newer(imported)
    fmt, sessions = imported.format, imported.sessions
    start = time.perf_counter()
    with Progress(len(sessions), f"ingest {fmt}", "session") as bar:
        stored = store_checked(memory, imported, app=app, batch=batch, progress=bar.update)
    report, facts = stored.sessions, stored.facts
    elapsed = time.perf_counter() - start
    location = memory.location
    memory.close()
    if as_json:
        click.echo(json.dumps({"path": shown_path, "format": fmt, "app": app, "database": location,
                               "added": report.added, "replaced": report.replaced, "unchanged": report.unchanged,
                               "chunks": report.chunks, "seconds": round(elapsed, 2),
                               "facts": facts.__dict__ if facts else None, "files_read": imported.files,
                               "skipped": imported.skipped, "superseded": imported.superseded,
                               "kept_newer": imported.kept_newer}, indent=2, ensure_ascii=False))
        return
    click.echo(
        f"{shown_path}: {len(report.added)} sessions added, {len(report.replaced)} replaced, "
        f"{len(report.unchanged)} unchanged; {report.chunks} chunks indexed in {elapsed:.1f}s "
        f"(app {app!r}, {location})"
    )
    if facts:
        click.echo(f"{shown_path}: {len(facts.added)} facts added, {len(facts.replaced)} replaced, "
                   f"{len(facts.unchanged)} unchanged")
    if len(sessions) == 1 and report.added:  # an id the user did not choose (a content hash): show it
        click.echo(f"session id: {report.added[0]}")


@main.command()
@click.argument("query")
@db_option
@app_option
@embedder_option
@click.option("-k", "k", type=click.IntRange(min=1), default=settings.CLI_K, show_default=True, help="Number of results.")
@click.option("--previous", help="The previous turn, for a follow-up question.")
@click.option("--now", help="When the question is asked (ISO date; default: now), for 'last Sunday' and such.")
@click.option("--where", help='Only items whose metadata matches this JSON object, e.g. \'{"source": "chat"}\'.')
@click.option("--json", "as_json", is_flag=True, help="Print the hits as a JSON list (with --explain: an object "
              "with the hits, the stages' trace and what they left out).")
@click.option("--explain", is_flag=True, help="Say why each memory was recalled (its rank and score in each channel, "
              "the words it matched, the fused score, the second stage's move) and what each stage left out.")
@fail_cleanly
def search(
    query: str, db: str | None, app: str, embedder: str | None, k: int, previous: str | None, now: str | None,
    where: str | None, as_json: bool, explain: bool,
) -> None:
    """Search memory: the k best memories (each session, note or fact once, with its best
    passages); each hit shows its rank in the dense and lexical channels."""
    from ..read.explain import explain_line, explain_text
    from .items import json_object

    filters = json_object(where, "--where") if where else None
    memory = open_memory(db, embedder)
    hits = memory.search(query, app=app, k=k, previous=previous, now=now, where=filters, explain=explain)
    for note in hits.notes:
        click.echo(f"note: {note}", err=True)
    if as_json:
        out: object = hits.to_dict() if explain else [h.to_dict() for h in hits]
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    if not hits:
        click.echo("nothing found")
    for n, hit in enumerate(hits, start=1):
        ranks = ", ".join(f"{ch} #{r}" if r else f"{ch} -" for ch, r in hit.ranks.items())
        source = hit.session_id or f"fact {hit.fact_id}"
        if hit.title:
            source += f" \"{hit.title}\""
        click.echo(f"{n}. [{hit.date or 'undated'}] {source}  ({ranks}; score {hit.score:.4f})")
        click.echo(f"   {_snippet(hit.text, query)}")
        if explain:
            click.echo(f"   {explain_line(hit)}")
    if explain:
        click.echo(explain_text(hits))


@main.command()
@click.argument("query")
@db_option
@app_option
@embedder_option
@click.option("--budget", "budget_tokens", type=click.IntRange(min=1, max=100_000),
              default=settings.CONTEXT_BUDGET_TOKENS, show_default=True, help="Tokens the block may take, its frame included.")
@click.option("--previous", help="The previous turn, for a follow-up question.")
@click.option("--now", help="When the question is asked (ISO date; default: now), for 'last Sunday' and such.")
@click.option("--trim", type=click.Choice(TRIM_NAMES), default="auto", show_default=True,
              help="How each memory is shown: the default (auto: pointers with the default model, else whole), the best "
              "memories whole and a pointer line for the next (pointers), by its lines closest in meaning (lines), or "
              "whole (none).")
@click.option("--json", "as_json", is_flag=True, help="Print the block with its snippets' sources, notes and trace as JSON.")
@click.option("--explain", is_flag=True, help="After the block, say what each stage kept and what it left out, and why.")
@fail_cleanly
def context(
    query: str, db: str | None, app: str, embedder: str | None, budget_tokens: int, previous: str | None,
    now: str | None, trim: str, as_json: bool, explain: bool,
) -> None:
    """Print the context block an agent is given for QUERY: the memories that answer it, dated,
    within the budget, and the rule that they are past records; nothing when nothing is relevant."""
    from ..read.explain import explain_text

    memory = open_memory(db, embedder)
    block = memory.context(query, app=app, budget_tokens=budget_tokens, previous=previous, now=now, explain=explain,
                           trim=trim)
    for note in block.notes:
        click.echo(f"note: {note}", err=True)
    if as_json:
        click.echo(json.dumps(block.to_dict(), indent=2, ensure_ascii=False))
        return
    click.echo(str(block) if block else "nothing relevant: the block is empty")
    if explain:
        click.echo(explain_text(block))


def _snippet(text: str, query: str, width: int = 300) -> str:
    """A window of the hit's text around the query term it mentions least (usually the rare,
    telling one). Words are matched as the lexical channel matches them, by stem: "happiness"
    finds "happy", which a search for the stem's letters in the text would not."""
    import re

    from ..lexical import analyze

    text = " ".join(text.split())
    wanted = set(analyze(query))
    places: dict[str, list[int]] = {}
    for word in re.finditer(r"[^\W_]+", text):
        for term in analyze(word.group()):
            if term in wanted:
                places.setdefault(term, []).append(word.start())
    rarest = min(places.values(), key=len, default=None)
    first = rarest[0] if rarest else 0
    start = max(0, min(first - width // 3, len(text) - width))
    body = text[start : start + width]
    return ("..." if start else "") + body + ("..." if start + width < len(text) else "")


@main.command()
@db_option
@click.option("--app", help="Only this app.")
@embedder_option
@fail_cleanly
def stats(db: str | None, app: str | None, embedder: str | None) -> None:
    """Counts of sessions, messages, facts and chunks per app."""
    memory = open_memory(db, embedder)
    click.echo(json.dumps(memory.stats(app), indent=2))


@main.command()
@db_option
@embedder_option
@fail_cleanly
def doctor(db: str | None, embedder: str | None) -> None:
    """Check the database (schema objects diarist did not create included), the embedder and each app's
    indexes (the HNSW graph's recall too, which /health skips); exit 1 on any problem."""
    report = open_memory(db, embedder).health()
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
@fail_cleanly
def delete(item_id: str | None, db: str | None, app: str, embedder: str | None, whole_app: bool, yes: bool) -> None:
    """Delete a session or fact by ID (text, vectors and index postings), or a whole app."""
    if not whole_app and not item_id:
        raise click.UsageError("give an ITEM_ID, or --all to delete the whole app")
    memory = open_memory(db, embedder)
    if whole_app:
        if not yes:
            click.confirm(f"Delete everything in app {app!r}?", abort=True)
        memory.delete_app(app)
        click.echo(f"deleted app {app!r}")
    else:
        memory.delete(item_id, app=app)
        click.echo(f"deleted {item_id!r} from app {app!r}")


@main.command()
@db_option
@app_option
@embedder_option
@fail_cleanly
def reindex(db: str | None, app: str, embedder: str | None) -> None:
    """Rebuild an app's indexes from what it stores: titles, line vectors, BM25 and the HNSW graph.

    First, in a database stored before titles were indexed, its titled items (notes, named
    conversations) are re-chunked and re-embedded so that both channels read their title. Chunks
    stored before their lines' vectors were kept get them (the block's trim reads them, so a
    question embeds only itself). Then the lexical (BM25) index is rebuilt from the stored text,
    and the HNSW graph (the `ann` extra, large apps) from the stored vectors."""
    memory = open_memory(db, embedder)
    titled = memory.index_titles(app)
    lined = memory.index_lines(app)
    n = memory.reindex(app)
    if titled:
        click.echo(f"re-chunked {titled} titled items of app {app!r} with their title line")
    if lined:
        click.echo(f"stored the lines' vectors of {lined} chunks of app {app!r}")
    click.echo(f"reindexed {n} chunks of app {app!r}")


def _register_other_commands() -> None:
    """The serving and bench commands live beside their code; they import no heavy module here."""
    from ..bench.cli import bench
    from ..server.cli import commands
    from .backup import commands as backup_commands
    from .items import commands as item_commands
    from .migrate import commands as migrate_commands
    from .models import commands as model_commands
    from .sync import sync
    from ..ui.cli import ui

    for command in (*item_commands, *commands, *backup_commands, *migrate_commands, *model_commands, sync, bench, ui):
        main.add_command(command)


_register_other_commands()
