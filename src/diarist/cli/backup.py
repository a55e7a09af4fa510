"""``diarist backup``, ``diarist restore`` and ``diarist compact``: registered by diarist.cli.commands."""

from __future__ import annotations

import time
from pathlib import Path

import click

from .options import db_location, db_option, fail_cleanly


@click.command()
@click.argument("dest", type=click.Path(dir_okay=False))
@db_option
@click.option("--force", is_flag=True, help="Replace DEST if it exists (an older backup).")
@fail_cleanly
def backup(dest: str, db: str | None, force: bool) -> None:
    """Copy the database into the new file DEST, consistently, while writers carry on.

    Uses SQLite's online backup API: the copy is one snapshot (whole transactions only), is
    written to a temporary file beside DEST, passes PRAGMA integrity_check, and only then gets
    DEST's name; a failed backup never appears under it. `diarist restore DEST` puts it back.
    """
    from ..store import open_store

    store = open_store(db_location(db), create=False)
    try:
        start = time.perf_counter()
        store.backup(dest, overwrite=force)
        elapsed = time.perf_counter() - start
    finally:
        store.close()
    size = Path(dest).expanduser().stat().st_size
    click.echo(f"backed up {store.location} to {dest}: {size} bytes in {elapsed:.2f}s (integrity ok)")


@click.command()
@click.argument("src", type=click.Path(dir_okay=False))
@db_option
@click.option("--force", is_flag=True, help="Replace the database at --db if it exists (its current content is lost).")
@fail_cleanly
def restore(src: str, db: str | None, force: bool) -> None:
    """Put the backup SRC in place of the database (--db).

    SRC must be a sound diarist database (it is only read): anything else is refused and
    nothing changes. The verified copy is renamed into place when no database exists; an
    existing one (only with --force) is overwritten through SQLite's backup API, so a server
    that holds it open sees the restored data as one commit.
    """
    from ..store.open import store_class

    backend, location = store_class(db_location(db))
    report = backend.restore(src, location, force=force)
    apps = ", ".join(report.apps) or "none"
    click.echo(f"restored {src} into {report.target}: {report.bytes} bytes, apps: {apps} ({report.method})")


@click.command()
@db_option
@fail_cleanly
def compact(db: str | None) -> None:
    """Rewrite the database file whole (SQLite's VACUUM), in this version's 16 KiB pages.

    Gives the disk back the pages that deletes freed, and moves a file made by an earlier
    version (4 KiB pages) to the page size that reads its postings faster. Every row and id is
    kept. It needs the file to itself: with another program holding it open it changes
    nothing and says so. It needs free disk for a full copy of the file while it runs.
    """
    from ..store.open import store_class

    backend, location = store_class(db_location(db))
    start = time.perf_counter()
    report = backend.compact(location)
    elapsed = time.perf_counter() - start
    click.echo(f"compacted {report.path}: {report.bytes_before} -> {report.bytes_after} bytes, pages of "
               f"{report.page_size_before} -> {report.page_size_after} bytes, in {elapsed:.2f}s (integrity ok)")


commands = (backup, restore, compact)
