"""The everyday verbs: add a fact, list and show what is stored, export it all."""

from __future__ import annotations

import json
import sys

import click

from ..errors import UnknownApp
from .options import app_option, db_option, embedder_option, fail_cleanly, open_memory


@click.command()
@click.argument("text")
@db_option
@app_option
@embedder_option
@click.option("--id", "fact_id", help="The fact's id (default: a hash of its content).")
@click.option("--date", help="When it was true (ISO 8601; default: now).")
@click.option("--metadata", help='A JSON object kept with the fact, e.g. \'{"source": "chat"}\'.')
@fail_cleanly
def add(text: str, db: str | None, app: str, embedder: str | None, fact_id: str | None, date: str | None,
        metadata: str | None) -> None:
    """Remember one fact (a short self-contained statement); prints its id."""
    meta = json_object(metadata, "--metadata") if metadata else None
    with open_memory(db, embedder, create=True) as memory:
        click.echo(memory.add_fact(text, app=app, fact_id=fact_id, date=date, metadata=meta))


def json_object(text: str, option: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON ({exc.msg})", param_hint=option) from None
    if not isinstance(value, dict):
        raise click.BadParameter("must be a JSON object", param_hint=option)
    return value


@click.command("list")
@db_option
@app_option
@click.option("--kind", type=click.Choice(("session", "fact")), default="session", show_default=True,
              help="Which items to list.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True, help="Page size.")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True, help="Items to skip.")
@click.option("--oldest-first", is_flag=True, help="In the order they were stored instead of newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@fail_cleanly
def list_items(db: str | None, app: str, kind: str, limit: int, offset: int, oldest_first: bool, as_json: bool) -> None:
    """List the ids and dates of stored sessions or facts, newest first (--oldest-first: in the order stored)."""
    with open_memory(db) as memory:
        if app not in memory.apps():  # an unknown app is an error, not an empty list
            raise UnknownApp(f"app {app!r} holds no memory in {memory.location}")
        found = memory.list(app=app, kind=kind, limit=limit, offset=offset, newest_first=not oldest_first)
    if as_json:
        click.echo(json.dumps(found, indent=2, ensure_ascii=False))
        return
    for row in found:
        click.echo(f"{row[f'{kind}_id']}\t{row['date'] or 'undated'}")
    if not found:
        click.echo(f"no {kind}s" + (f" after offset {offset}" if offset else ""), err=True)


@click.command()
@click.argument("item_id")
@db_option
@app_option
@click.option("--json", "as_json", is_flag=True, help="Print the item as JSON.")
@fail_cleanly
def show(item_id: str, db: str | None, app: str, as_json: bool) -> None:
    """Show one stored session (every message, verbatim), note (its title, front matter fields and
    text) or fact by its id."""
    from ..export import markdown_of
    from ..note_view import is_note, note_markdown

    with open_memory(db) as memory:
        item = memory.get(item_id, app=app)
    if as_json:
        click.echo(json.dumps(item, indent=2, ensure_ascii=False))
    else:
        click.echo((note_markdown(item) if is_note(item) else markdown_of(item)).rstrip())


@click.command()
@db_option
@app_option
@click.option("--format", "fmt", type=click.Choice(("jsonl", "markdown")), default="jsonl", show_default=True,
              help="jsonl: what `diarist ingest` reads back; markdown: one readable file per session.")
@click.option("--out", type=click.Path(), help="File (jsonl) or new folder (markdown); default for jsonl: stdout.")
@fail_cleanly
def export(db: str | None, app: str, fmt: str, out: str | None) -> None:
    """Write everything an app holds, verbatim: JSONL to re-import, or Markdown to read."""
    from ..export import jsonl_lines, write_markdown

    with open_memory(db) as memory:
        memory.export(app=app)  # refuses an unknown app before anything is written
        if fmt == "markdown":
            if not out:
                raise click.UsageError("--format markdown needs --out FOLDER")
            n = write_markdown(memory, app, out)
            click.echo(f"wrote {n} files to {out}", err=True)
            return
        stream = open(out, "w", encoding="utf-8") if out else sys.stdout
        try:
            n = 0
            for line in jsonl_lines(memory, app):
                stream.write(line + "\n")
                n += 1
        finally:
            if out:
                stream.close()
        click.echo(f"exported {n} items of app {app!r}" + (f" to {out}" if out else ""), err=True)


@click.command()
@click.argument("item_id")
@db_option
@app_option
@click.option("--text", help="A fact's new text.")
@click.option("--date", help="The new date (ISO 8601).")
@click.option("--metadata", help="Metadata keys to set, a JSON object; the other keys are kept (see --replace-metadata).")
@click.option("--replace-metadata", is_flag=True, help="--metadata replaces the whole object instead (keys not given are dropped).")
@fail_cleanly
def update(item_id: str, db: str | None, app: str, text: str | None, date: str | None, metadata: str | None,
           replace_metadata: bool) -> None:
    """Change a fact's text, or an item's date or metadata; the previous version is kept (see history)."""
    meta = json_object(metadata, "--metadata") if metadata else None
    if text is None and date is None and meta is None:
        raise click.UsageError("give --text, --date or --metadata")
    if replace_metadata and meta is None:
        raise click.UsageError("--replace-metadata needs --metadata")
    with open_memory(db) as memory:
        report = memory.update(item_id, app=app, text=text, date=date, metadata=meta,
                               merge_metadata=not replace_metadata)
    click.echo(f"{item_id}: {'unchanged' if report.unchanged else 'updated (the previous version is kept)'}")


@click.command()
@click.argument("item_id")
@db_option
@app_option
@click.option("--json", "as_json", is_flag=True, help="Print the versions as JSON.")
@fail_cleanly
def history(item_id: str, db: str | None, app: str, as_json: bool) -> None:
    """Show the previous versions of an item that updates kept, oldest first."""
    with open_memory(db) as memory:
        versions = memory.history(item_id, app=app)
    if as_json:
        click.echo(json.dumps(versions, indent=2, ensure_ascii=False))
        return
    if not versions:
        click.echo(f"{item_id} has no previous versions", err=True)
    from ..export import markdown_of

    for version in versions:
        click.echo(f"--- replaced {version.pop('replaced_at')}")
        click.echo(markdown_of(version).rstrip())


commands = [add, list_items, show, update, history, export]
