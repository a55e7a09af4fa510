"""``diarist sync``: a folder kept in step with memory (``diarist.importers.sync``, ``diarist.importers.watch``)."""

from __future__ import annotations

import json
import signal
import sys
import threading

import click

from ..importers import FORMATS
from .options import app_option, db_option, embedder_option, fail_cleanly, open_memory, plan_option
from .reading import exclude_option, max_bytes_option


def _say(line: str) -> None:
    click.echo(line, err=True)


@click.command()
@click.argument("path", type=click.Path())
@db_option
@app_option
@embedder_option
@plan_option
@click.option("--format", "format_name", type=click.Choice(FORMATS),
              help="Read every file as this format instead of detecting it (see diarist ingest --help).")
@click.option("--keep-deleted", is_flag=True,
              help="Keep the memories of files deleted from the folder (default: they are deleted with them).")
@click.option("--watch", is_flag=True,
              help="Keep syncing as files change (watchfiles if installed, else polling); Ctrl-C stops.")
@click.option("--poll", type=click.FloatRange(min=0.05), metavar="SECONDS",
              help="With --watch: look for changes every SECONDS by polling, even when watchfiles is installed.")
@click.option("--rehash", is_flag=True,
              help="Hash every file, even one whose size and time are as recorded (after a copy that kept the "
              "times, e.g. rsync -t of a same-size edit); only files whose bytes changed are read.")
@max_bytes_option
@exclude_option
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON summary: files added, changed, deleted, unchanged, failed; sessions added, replaced, "
              "deleted; every file or record skipped (with --watch: one line of JSON per sync).")
@fail_cleanly
def sync(path: str, db: str | None, app: str, embedder: str | None, plan: str | None, format_name: str | None,
         keep_deleted: bool, watch: bool, poll: float | None, rehash: bool, max_bytes: int,
         exclude: tuple[str, ...], as_json: bool) -> None:
    """Bring the folder PATH (an Obsidian or Markdown vault, ~/.claude/projects, a folder of
    exports) into memory incrementally, and keep it there.

    Each file read is recorded in the database (its path inside PATH, the SHA-256 of its bytes,
    its size and time, the sessions it gave). The next sync does not open a file whose size and
    time did not change, nor parse or embed one whose bytes did not; a changed file replaces its
    memories (those it no longer holds are deleted); a deleted file's memories are deleted, as
    `diarist delete` deletes (or kept with --keep-deleted). An older export read after a newer one
    leaves the newer stored conversation ("kept newer"). One line per change on standard error,
    then the counts. A file, or a folder, that cannot be read is named, keeps its memories and is
    tried again next time (exit status 1); a file that vanishes mid-sync is named as skipped.

    One note, one folder: a file whose session another synced folder's file holds in this app is
    refused while that file is there (sync the two folders into two apps), and taken over when it
    is gone (a note moved between folders; a folder moved or renamed: its records follow it). A
    sync killed part-way is finished by the next one.
    """
    from ..importers.sync import check_folder
    from ..write.validate import check_app

    check_folder(path)  # before a database is created for a mistyped path
    check_app(app)
    say = (lambda line: None) if as_json else _say
    memory = open_memory(db, embedder, plan=plan, create=True)
    options = {"format": format_name, "keep_deleted": keep_deleted, "exclude": exclude, "max_bytes": max_bytes,
               "rehash": rehash}
    try:
        if watch:
            _watch(memory, path, app, poll, as_json, options)
            return
        report = memory.sync(path, app=app, say=say, **options)
        _summarise(report, path, app, memory.location, as_json)
    finally:
        memory.close()
    if report.failed:
        sys.exit(1)


def _summarise(report, path: str, app: str, location: str, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"path": path, "app": app, "database": location, **report.to_dict(),
                               "seconds": round(report.seconds, 2)}, ensure_ascii=False, indent=None))
        return
    click.echo(f"{path}: {report.summary()} (app {app!r}, {location})", err=True)


def _watch(memory, path: str, app: str, poll: float | None, as_json: bool, options: dict) -> None:
    from ..importers.watch import how_watched, watch

    def on_sync(report) -> None:
        if report.changes or report.failed or as_json:
            _summarise(report, path, app, memory.location, as_json)

    say = (lambda line: None) if as_json else _say
    if as_json:
        _say(f"watching {path} with {how_watched(poll)}; Ctrl-C stops")
    stop = threading.Event()

    def on_ctrl_c(signum: int, frame: object) -> None:
        # The event ends the loop at its next wait even where the interrupt is lost: started with
        # Ctrl-C ignored (a parent's setting), or raised inside a library call that swallows it.
        stop.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_ctrl_c)  # the command runs in the main thread
    try:
        watch(memory, path, app=app, poll=poll, say=say, on_sync=on_sync, stop=stop, **options)
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:  # None: a handler not set from Python, which cannot be put back
            signal.signal(signal.SIGINT, previous)
    _say("stopped watching")
