"""What every command shares: the options, opening the memory, and clean failures.

Environment variables are read here (and in ``diarist.server``), never in the library.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import click

from .. import settings
from ..config import default_db_path, lexical_fusion_enabled
from ..errors import DiaristError

DB_HELP = ("Database file or postgresql:// URL (default: $DIARIST_DB, else "
           "~/.local/share/diarist/memory.sqlite).")

def _not_empty(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--db "" (an unset variable in a script) is refused: it never means the default database."""
    if value is not None and not value.strip():
        raise click.BadParameter("an empty path; leave --db out to use the default database "
                                 "($DIARIST_DB, else ~/.local/share/diarist/memory.sqlite)")
    return value


db_option = click.option("--db", type=click.Path(dir_okay=False), callback=_not_empty, help=DB_HELP)
app_option = click.option("--app", default=settings.DEFAULT_APP, show_default=True, help="App (isolation unit) to use.")
embedder_option = click.option(
    "--embedder", default=None,
    help=f"Embedding model: {settings.EMBEDDER} (offline default), hash (tests only), st:NAME_OR_PATH, "
    "mpnet (after `diarist models install mpnet`). "
    "Default: the one the database was built with.",
)
plan_option = click.option(
    "--plan", type=click.Choice(settings.PLAN_CHOICES), default=None,
    help=f"Index plan for a new database (default {settings.PLAN}: every turn in BM25, each chunk's vector "
    "reads its user turns; split-apart, all, user, both: see the README). Default: the one the database records.",
)


def fail_cleanly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn diarist's own errors into a one-line message and exit status 1."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except DiaristError as exc:
            raise click.ClickException(str(exc)) from None
        except OSError as exc:  # a path the user gave: too long, a folder, a full disk; one line, no traceback
            where = f": {exc.filename}" if exc.filename else ""
            raise click.ClickException(f"{exc.strerror or exc}{where}") from None
        except UnicodeError as exc:  # an argument that is not valid text (a stray byte from the shell)
            raise click.ClickException(f"an argument is not valid text: {exc.reason}") from None

    return wrapper


def db_location(db: str | None) -> str:
    return str(db or default_db_path())


def open_memory(db: str | None, embedder: str | None = None, *, create: bool = False, **options: Any):
    """The memory at --db. Commands that only read pass create=False: a mistyped path is an
    error ("no database at PATH"), never a new empty file."""
    from ..memory import Memory

    return Memory(db_location(db), embedder=embedder, lexical_fusion=lexical_fusion_enabled(), create=create,
                  **options)


def open_keys(db: str | None, *, create: bool):
    """The API keys of the database at --db (no embedder is loaded for them)."""
    from ..keys import KeyStore
    from ..store import open_store

    return KeyStore(open_store(db_location(db), create=create))
