"""Raw HTTP over loopback sockets, for the tests that send bytes no client library would (slow
and stalled clients, ambiguous framing) to a real ``diarist serve`` or ``diarist mcp`` process.

What those tests check is that the server closed a connection (EOF or reset); every socket
timeout here is a hang guard only, far above the deadlines under test.

(No tests live here.)
"""

from __future__ import annotations

import json
import select
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from test_server_support import DIARIST, diarist_env, wait_for_http

GUARD = 30.0  # seconds: far beyond any server deadline the tests set

Address = tuple[str, int]


@contextmanager
def diarist_server(args: list[str], ready_url: str, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """``diarist ARGS`` as a subprocess, once ``ready_url`` answers; stopped on exit."""
    proc = subprocess.Popen([DIARIST, *args], env=env or diarist_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for_http(ready_url, proc)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def connect(address: Address, guard: float = GUARD) -> socket.socket:
    sock = socket.create_connection(address, timeout=guard)
    sock.settimeout(guard)
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (EOF or reset); an
    AssertionError when it keeps it open past the socket's timeout (the hang guard)."""
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return received
        except socket.timeout:
            raise AssertionError(
                f"the server kept the connection open for {sock.gettimeout()} s; got {received[:300]!r}") from None
        if not chunk:
            return received
        received += chunk


def send_and_read_until_closed(address: Address, raw: bytes) -> bytes:
    """Send ``raw`` on a new connection (as much as the server takes) and read until it closes."""
    sock = connect(address)
    try:
        try:
            sock.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return read_until_closed(sock)
    finally:
        sock.close()


def readable(sock: socket.socket, seconds: float = 0.0) -> bool:
    """The server sent something, or closed the connection, within ``seconds``."""
    return bool(select.select([sock], [], [], seconds)[0])


def closed(sock: socket.socket) -> bool:
    """True when the server closed the socket (EOF or reset), after reading away any answer it sent."""
    while readable(sock):
        try:
            if sock.recv(65536) == b"":
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def status(response: bytes) -> int:
    return int(response.split(b" ", 2)[1])


def json_body(response: bytes) -> dict:
    return json.loads(response.split(b"\r\n\r\n", 1)[1])
