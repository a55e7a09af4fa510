"""Helpers shared by the server, MCP and concurrency tests: real servers on loopback.

(No tests live here; the name keeps it among the files the serving work owns.)
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

DIARIST = shutil.which("diarist", path=str(Path(sys.executable).parent)) or "diarist"


def loopback_socket() -> socket.socket:
    """A listening-ready socket on 127.0.0.1 with a free port chosen by the kernel."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def free_port() -> int:
    with loopback_socket() as sock:
        return sock.getsockname()[1]


class ServerThread:
    """Run an ASGI app with uvicorn in a thread, on a loopback port of its own."""

    def __init__(self, app: Any):
        self.sock = loopback_socket()
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="auto"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "ServerThread":
        self.thread.start()
        for _ in range(2000):  # bounded wait for startup
            if self.server.started or not self.thread.is_alive():
                break
            time.sleep(0.01)
        assert self.server.started, "uvicorn did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


def wait_for_http(url: str, proc: subprocess.Popen | None = None, tries: int = 600) -> None:
    """Poll url until it answers (any status); fail early if proc died."""
    for _ in range(tries):
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            httpx.get(url, timeout=5)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError(f"{url} never answered")


def diarist_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("DIARIST_DB", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def create_key(db: Path | str, app: str) -> str:
    from diarist.keys import KeyStore
    from diarist.store.sqlite import SQLiteStore

    store = SQLiteStore(db)
    try:
        return KeyStore(store).create(app)[0]
    finally:
        store.close()
