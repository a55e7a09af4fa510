"""The thin client of the resident process: one HTTP/1.1 request over the Unix socket of the
database, with the app's API key, the way ``diarist serve`` is asked. Standard library only, and
only ``json`` and ``socket`` of it: http.client (with the email package under it) would cost
more to import than the request takes."""

from __future__ import annotations

import json
import os
import socket

from .paths import key_id, keys_file_name, socket_name

#: Facts listed at most, to find the newest (a memory of more shows the newest of these).
MAX_LISTED = 2000

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


class Unavailable(Exception):
    """No resident process answers for this database (or no key for this app): work in-process."""


class Refused(Exception):
    """The resident process answered with an error (its status and message)."""


def quote(text: str) -> str:
    """A path segment, percent-encoded (an app name may hold any character)."""
    return "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in text.encode())


def read_key(location: str, app: str) -> str | None:
    """The key ``hooks install`` stored for this database and app, if any."""
    try:
        with open(keys_file_name(), encoding="utf-8") as f:
            return json.load(f).get(key_id(location, app))
    except (OSError, ValueError, AttributeError):
        return None


def request(location: str, method: str, path: str, *, key: str, body: dict | None = None,
            timeout: float = 2.0) -> dict:
    """Send one request to the resident process of ``location``; its JSON answer."""
    payload = json.dumps(body).encode() if body is not None else b""
    head = (f"{method} {path} HTTP/1.1\r\nHost: diarist\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        try:
            conn.connect(socket_name(location))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise Unavailable(str(exc)) from None
        conn.sendall(head.encode() + payload)
        parts = []
        while True:
            part = conn.recv(65536)
            if not part:
                break
            parts.append(part)
    finally:
        conn.close()
    status, headers, content = _parse(b"".join(parts))
    answer = json.loads(content) if content else {}
    if status >= 400:
        message = answer.get("error", {}).get("message") if isinstance(answer, dict) else None
        raise Refused(f"{status}: {message or content[:200]!r}")
    return answer


def _parse(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        raise Refused(f"a truncated answer ({len(raw)} bytes)")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(body)
    elif "content-length" in headers:
        body = body[: int(headers["content-length"])]
    return status, headers, body


def _unchunk(body: bytes) -> bytes:
    out, rest = [], body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2:]
    return b"".join(out)


def context(location: str, app: str, prompt: str, *, budget_tokens: int, timeout: float, trim: str = "auto") -> str:
    """The context block for ``prompt`` from the resident process."""
    key = read_key(location, app)
    if key is None:
        raise Unavailable("no key for this app: run `diarist hooks install`")
    answer = request(location, "POST", f"/v1/apps/{quote(app)}/context", key=key, timeout=timeout,
                     body={"query": prompt, "budget_tokens": budget_tokens, "trim": trim})
    return str(answer.get("context") or "")


def facts(location: str, app: str, *, limit: int, timeout: float) -> list[dict]:
    """The newest ``limit`` facts of the app (each with its text and date)."""
    key = read_key(location, app)
    if key is None:
        raise Unavailable("no key for this app: run `diarist hooks install`")
    base = f"/v1/apps/{quote(app)}/facts"
    ids: list[str] = []
    offset: int | None = 0
    while offset is not None and len(ids) < MAX_LISTED:  # the route lists in stored order: page to the end
        try:
            page = request(location, "GET", f"{base}?limit=100&offset={offset}", key=key, timeout=timeout)
        except Refused as exc:
            if str(exc).startswith("404"):  # the app holds nothing yet
                return []
            raise
        ids += [row["fact_id"] for row in page.get("items", [])]
        offset = page.get("next_offset")
    return [request(location, "GET", f"{base}/{quote(fact_id)}", key=key, timeout=timeout)
            for fact_id in reversed(ids[-limit:])]
