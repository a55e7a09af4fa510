"""The resident process the agents' hooks ask: ``diarist serve``'s HTTP API (the same app, the
same per-app keys and isolation) on a Unix socket under the data folder, one per database,
shared by every hook and agent of this user on the machine.

    python -m diarist.server.resident [--db DB] [--idle-seconds 3600]

A hook that finds no socket answers in-process and starts this in the background; the model
and each app's indexes are loaded (and warmed by a first query) before the socket appears, so
the first request it takes is as fast as the next. One process per database: a second one
started meanwhile finds the lock taken and exits at once. It exits by itself after
``--idle-seconds`` without a request (0: never), removing its socket.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..agents.paths import db_location, private_dir, socket_path

DEFAULT_IDLE_SECONDS = 3600


class LastSeen:
    """ASGI wrapper noting when the last request came (for the idle exit)."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app
        self.at = time.monotonic()

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        self.at = time.monotonic()
        await self.app(scope, receive, send)


def warm(memory: Any) -> None:
    """Load the model and every app's indexes now, not on the first hook's prompt."""
    for app in memory.apps():
        memory.context("warm up the indexes", app=app)


def take_lock(path: Path) -> Any:
    """The lock of this database's resident process, or None when another process holds it."""
    handle = open(path, "a")  # noqa: SIM115 - held for the life of the process
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def serve(memory: Any, sock: Path, *, idle_seconds: float = DEFAULT_IDLE_SECONDS,
          on_ready: Callable[[], None] | None = None) -> None:
    """Serve ``memory``'s HTTP API on the Unix socket ``sock`` until idle (or stopped);
    ``on_ready`` is called once the socket takes requests."""
    import uvicorn

    from .app import create_app

    app = LastSeen(create_app(memory))
    config = uvicorn.Config(app, uds=str(sock), log_level="warning", lifespan="off", timeout_keep_alive=5,
                            http="diarist.server.protocol:RequestTimeoutProtocol")
    server = uvicorn.Server(config)

    def watch() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.05)
        if on_ready is not None and server.started:
            on_ready()
        while idle_seconds and not server.should_exit:
            time.sleep(min(5.0, idle_seconds))
            if time.monotonic() - app.at > idle_seconds:
                server.should_exit = True

    threading.Thread(target=watch, daemon=True).start()
    server.run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m diarist.server.resident", description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="database file or postgresql:// URL (default: $DIARIST_DB, else the default file)")
    parser.add_argument("--idle-seconds", type=float, default=DEFAULT_IDLE_SECONDS,
                        help=f"exit after this long without a request (default {DEFAULT_IDLE_SECONDS}; 0: never)")
    args = parser.parse_args(argv)
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        print("diarist resident: needs the server extra: pip install 'diarist[server]'", file=sys.stderr)
        return 1
    location = db_location(args.db)
    sock = socket_path(location)
    private_dir(sock.parent)
    lock = take_lock(sock.with_suffix(".lock"))
    if lock is None:
        print(f"diarist resident: another process serves {location} already", file=sys.stderr)
        return 0
    from ..config import lexical_fusion_enabled
    from ..memory import Memory

    try:
        memory = Memory(location, lexical_fusion=lexical_fusion_enabled(), create=False)
        warm(memory)
        sock.unlink(missing_ok=True)  # a socket left by a process that died: the lock is ours now
        serve(memory, sock, idle_seconds=args.idle_seconds, on_ready=lambda: print(
            f"diarist resident: serving {memory.location} on {sock} (pid {os.getpid()})", file=sys.stderr,
            flush=True))
    finally:
        sock.unlink(missing_ok=True)
        sock.with_suffix(".starting").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
