"""``diarist ui``: the inspector for one person's local memory, registered by diarist.cli."""

from __future__ import annotations

import os

import click

from ..cli.options import db_location, db_option, embedder_option, fail_cleanly, open_memory
from ..errors import MissingDependency

DEFAULT_PORT = 8770
MAX_UPLOAD_BYTES = 256 * 1024 * 1024


@click.command()
@db_option
@embedder_option
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535), help="TCP port on 127.0.0.1.")
@click.option("--max-upload-bytes", default=MAX_UPLOAD_BYTES, show_default=True, type=click.IntRange(min=1),
              help="Largest file the import form accepts (413 beyond).")
@click.option("--timeout-seconds", type=click.FloatRange(min=0), default=None,
              help="A request's headers and body must each arrive within this many seconds (408 and the "
              "connection closed otherwise; 0: no limit). Default: $DIARIST_TIMEOUT_SECONDS, else 10, as diarist serve.")
@fail_cleanly
def ui(db: str | None, embedder: str | None, port: int, max_upload_bytes: int, timeout_seconds: float | None) -> None:
    """Open the web inspector on http://127.0.0.1:PORT/ui/: browse, ask with the why, fix, curate.

    It serves this machine only (127.0.0.1, and only requests addressed to it) and every app of
    the database, with no key; `diarist serve` serves the same pages at /ui behind an API key."""
    try:
        import importlib.util

        import jinja2  # noqa: F401
        import uvicorn

        if not (importlib.util.find_spec("python_multipart") or importlib.util.find_spec("multipart")):
            raise ImportError("python-multipart")

        from ..server.app import BodyLimit, BodyTimeout
        from ..server.middleware import timeout_from_env
        from ..server.protocol import uvicorn_options
        from .app import local_app
    except ImportError:
        raise MissingDependency("diarist ui needs the server extra: pip install 'diarist[server]'") from None

    # Served as `diarist serve` serves: the protocol times the headers and refuses ambiguous
    # framing (request smuggling), the body is timed, idle keep-alive connections are closed.
    if timeout_seconds is not None:
        os.environ["DIARIST_TIMEOUT_SECONDS"] = str(timeout_seconds)  # the protocol reads it
    seconds = timeout_from_env()
    memory = open_memory(db_location(db), embedder, create=True)
    app = BodyTimeout(BodyLimit(local_app(memory), max_bytes=max_upload_bytes), seconds=seconds)
    click.echo(f"diarist: inspector for {memory.location} on http://127.0.0.1:{port}/ui/", err=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", **uvicorn_options(seconds))
