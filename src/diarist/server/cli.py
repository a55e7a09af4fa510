"""``diarist serve``, ``diarist mcp`` and ``diarist keys``: registered by diarist.cli."""

from __future__ import annotations

import ipaddress
import json
import os
import secrets

import click

from ..cli.options import db_location, db_option, embedder_option, fail_cleanly, open_keys, open_memory
from ..errors import MissingDependency


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and localhost: reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _warn_if_exposed(host: str) -> None:
    if not is_loopback(host):
        click.echo(
            f"warning: binding to {host}: the API is reachable from other machines; "
            "put it behind TLS (a reverse proxy) and keep keys secret",
            err=True,
        )


@click.command()
@db_option
@embedder_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind (loopback by default).")
@click.option("--port", default=8765, show_default=True, type=int, help="TCP port.")
@click.option("--workers", default=1, show_default=True, type=int, help="Worker processes (all share the database file).")
@click.option("--max-body-bytes", default=8 * 1024 * 1024, show_default=True, type=int, help="Largest request body accepted (413 beyond).")
@click.option("--log-level", default="info", show_default=True, type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.option("--timeout-seconds", default=10.0, show_default=True, type=click.FloatRange(min=0),
              help="Close a connection whose request headers, or then its body, take longer than this to arrive "
              "(slow or stalled clients get 408); idle keep-alive connections are closed after at most 5 s. 0: no limit.")
@fail_cleanly
def serve(db: str | None, embedder: str | None, host: str, port: int, workers: int, max_body_bytes: int,
          log_level: str, timeout_seconds: float) -> None:
    """Serve the HTTP API (OpenAPI docs at /docs); each app is reached with its own key."""
    try:
        import fastapi  # noqa: F401 - the app the workers load
        import uvicorn
    except ImportError:
        raise MissingDependency("diarist serve needs the server extra: pip install 'diarist[server]'") from None

    _warn_if_exposed(host)
    path = db_location(db)
    # Create or migrate the file, and fix the embedder and plan in it, before forking workers.
    memory = open_memory(path, embedder, create=True)
    spec = embedder or memory.embedder_spec
    location = memory.location  # never the URL itself: it may hold a password
    memory.close()
    # The server edge hands its settings to the workers (a PostgreSQL URL with its password and
    # pool options, ?pool_size=N, too: each worker opens its own pool; it is never printed).
    os.environ["DIARIST_DB"] = path
    if spec:
        os.environ["DIARIST_EMBEDDER"] = spec
    os.environ["DIARIST_MAX_BODY_BYTES"] = str(max_body_bytes)
    os.environ["DIARIST_TIMEOUT_SECONDS"] = str(timeout_seconds)
    # The inspector's session secret: one for all workers, never in the database (ui.session).
    os.environ.setdefault("DIARIST_UI_SECRET", secrets.token_urlsafe(32))
    click.echo(f"diarist: serving {location} on http://{host}:{port} (docs: /docs)", err=True)
    # The protocol (by name, so that worker processes import it) times each request's headers;
    # the app times its body; uvicorn closes idle keep-alive connections.
    from .protocol import uvicorn_options

    uvicorn.run("diarist.server.app:app_from_env", factory=True, host=host, port=port,
                workers=workers, log_level=log_level, **uvicorn_options(timeout_seconds))


@click.command()
@db_option
@embedder_option
@click.option("--app", required=True, help="The one app this server reads and writes.")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio (the client launches this command) or streamable HTTP.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP only: interface to bind.")
@click.option("--port", default=8766, show_default=True, type=int, help="HTTP only: TCP port.")
@click.option("--no-auth", is_flag=True, help="HTTP only: do not require the app's API key (loopback use).")
@click.option("--timeout-seconds", type=click.FloatRange(min=0), default=None,
              help="HTTP only: close a connection whose request headers, or then its body, take longer than this "
              "to arrive (408), as `diarist serve` does. Default: $DIARIST_TIMEOUT_SECONDS or 10. 0: no limit.")
@fail_cleanly
def mcp(db: str | None, embedder: str | None, app: str, transport: str, host: str, port: int, no_auth: bool,
        timeout_seconds: float | None) -> None:
    """Run the MCP server (tools remember, correct, recall, context, memories, show, forget) for one app."""
    try:  # before the database is opened (or created)
        import mcp as _mcp  # noqa: F401
        if transport == "http":
            import starlette  # noqa: F401
            import uvicorn
    except ImportError:
        raise MissingDependency("diarist mcp needs the server extra: pip install 'diarist[server]'") from None
    from .mcp_server import build_mcp, http_app

    memory = open_memory(db, embedder, create=True)
    if transport == "stdio":
        build_mcp(memory, app).run("stdio")
        return

    _warn_if_exposed(host)
    click.echo(f"diarist: MCP for app {app!r} on http://{host}:{port}/mcp", err=True)
    # The same deadlines as `diarist serve`: on request headers (the protocol reads
    # $DIARIST_TIMEOUT_SECONDS), on bodies (the app), and on idle keep-alive connections.
    if timeout_seconds is not None:
        os.environ["DIARIST_TIMEOUT_SECONDS"] = str(timeout_seconds)
    from .middleware import timeout_from_env

    seconds = timeout_from_env()
    from .protocol import uvicorn_options

    uvicorn.run(http_app(memory, app, require_key=not no_auth, host=host, timeout_seconds=seconds), host=host,
                port=port, log_level="warning", **uvicorn_options(seconds))


@click.group()
def keys() -> None:
    """Create, list and revoke per-app API keys (only their hashes are stored)."""


@keys.command("create")
@db_option
@click.option("--app", required=True, help="The app the key reaches (and nothing else).")
@click.option("--label", help="A note to tell keys apart (who or what uses it).")
@fail_cleanly
def keys_create(db: str | None, app: str, label: str | None) -> None:
    """Create a key for APP and print it once; store it now, it cannot be shown again."""
    key, info = open_keys(db, create=True).create(app, label)
    click.echo(key)
    click.echo(f"key {info.id} ({info.prefix}...) for app {app!r}: shown once, only its hash is stored", err=True)


@keys.command("list")
@db_option
@click.option("--app", help="Only this app's keys.")
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked keys.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@fail_cleanly
def keys_list(db: str | None, app: str | None, include_revoked: bool, as_json: bool) -> None:
    """List keys (id, prefix, app, label, dates); never the keys themselves."""
    found = open_keys(db, create=False).list(app, include_revoked=include_revoked)
    if as_json:
        click.echo(json.dumps([k.to_dict() for k in found], indent=2))
        return
    if not found:
        click.echo("no keys")
    for k in found:
        state = f"revoked {k.revoked_at}" if k.revoked_at else "active"
        click.echo(f"{k.id}\t{k.prefix}...\t{k.app}\t{k.label or ''}\tcreated {k.created_at}\t{state}")


@keys.command("revoke")
@click.argument("key_or_id")
@db_option
@fail_cleanly
def keys_revoke(key_or_id: str, db: str | None) -> None:
    """Revoke a key, given by its id, its shown prefix, or the key itself; it stops working at once."""
    info = open_keys(db, create=False).revoke(key_or_id)
    click.echo(f"revoked key {info.id} ({info.prefix}...) of app {info.app!r}")


commands = [serve, mcp, keys]
