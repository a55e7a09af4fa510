"""What ``diarist ingest`` and ``diarist sync`` share: the options that bound and filter what is
read, and the lines that name every file or record not stored."""

from __future__ import annotations

import click

from ..importers.reading import DEFAULT_MAX_BYTES

#: Skipped lines printed one by one before they are summed up (``--json`` lists them all).
SHOWN_SKIPS = 20

max_bytes_option = click.option(
    "--max-bytes", type=click.IntRange(min=1), default=DEFAULT_MAX_BYTES, show_default=True,
    help="The most bytes read from one file (after gunzipping) or standard input; a bigger file is refused "
    "(in a folder: skipped and named). Peak memory is about 3 times this.",
)
exclude_option = click.option(
    "--exclude", multiple=True, metavar="GLOB",
    help="Leave out files and folders matching GLOB (a path inside the folder or a name, e.g. 'Archive/*', "
    "'*.draft.md'); repeatable. Each one left out is named as skipped.",
)


def say_skipped(imported) -> None:
    """One line per file or record not stored (the first SHOWN_SKIPS), then their count, and
    the conversations met twice, on standard error."""
    for line in imported.skipped[:SHOWN_SKIPS]:
        click.echo(f"skipped {line}", err=True)
    more = len(imported.skipped) - SHOWN_SKIPS
    if more > 0:
        click.echo(f"skipped {more} more (--json lists them all)", err=True)
    if imported.skipped:
        click.echo(f"{imported.files} files read, {len(imported.skipped)} files or records skipped", err=True)
    if imported.superseded:
        click.echo(f"{len(imported.superseded)} sessions met twice: the latest version of each kept "
                   f"(e.g. {imported.superseded[0]})", err=True)


def say_kept_newer(imported) -> None:
    """One line per conversation left as stored because the stored version is newer."""
    for line in imported.kept_newer[:SHOWN_SKIPS]:
        click.echo(f"kept newer {line}", err=True)
    more = len(imported.kept_newer) - SHOWN_SKIPS
    if more > 0:
        click.echo(f"kept newer: {more} more (--json lists them all)", err=True)
