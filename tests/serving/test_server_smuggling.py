"""Request smuggling: a request whose body framing is ambiguous is refused and its connection closed.

RFC 9112 section 6.1: a request carrying both Content-Length and Transfer-Encoding, or a
Transfer-Encoding in HTTP/1.0, must be treated as an error and the connection closed; section 6.3:
several differing Content-Length values are an unrecoverable error. A server that reads such a
request one way while a proxy in front of it reads it the other way runs the bytes after the
body as a second request of the attacker's choosing.

Finding this guards (the old build, e0b9e37): `diarist serve` read Content-Length +
Transfer-Encoding as chunked and kept the connection open, so the request hidden after
`0\\r\\n\\r\\n` ran and stored its fact (2 of 8 framings).

Each framing below hides a second, authorised request that would store a fact; the server must
answer the first with one 400, close the connection, and store nothing. Real sockets against a
real `diarist serve` (and `diarist mcp --transport http`, which uses the same protocol).
"""

from __future__ import annotations

import json

import httpx
import pytest
from raw_http import GUARD, send_and_read_until_closed, status, diarist_server
from test_server_support import create_key, free_port, diarist_env


def _fact_request(key: str, fact_id: str) -> bytes:
    body = json.dumps({"text": f"smuggled fact {fact_id}", "fact_id": fact_id}).encode()
    return (b"POST /v1/apps/x/facts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + key.encode() + b"\r\nContent-Length: " + str(len(body)).encode()
            + b"\r\n\r\n" + body)


def _chunked(payload: bytes) -> bytes:
    return hex(len(payload))[2:].encode() + b"\r\n" + payload + b"\r\n0\r\n\r\n"


def _framings(key: str) -> dict[str, bytes]:
    """name -> the raw bytes sent: a front request whose framing is ambiguous, with a fact
    request (id = the framing's name) hidden where one of the two readings puts the next request."""
    front_body = json.dumps({"text": "front request"}).encode()
    head = (b"POST /v1/apps/x/facts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + key.encode() + b"\r\n")

    def cl_te(name: str, te_lines: bytes, cl_value: bytes | None = None, first: str = "cl") -> bytes:
        chunked = _chunked(front_body)
        smuggled = _fact_request(key, name)
        cl = b"Content-Length: " + (cl_value or str(len(chunked + smuggled)).encode()) + b"\r\n"
        framing = cl + te_lines if first == "cl" else te_lines + cl
        return head + framing + b"\r\n" + chunked + smuggled

    def two_lengths(name: str, lines: bytes) -> bytes:
        smuggled = _fact_request(key, name)
        return head + lines + b"\r\n" + front_body + smuggled

    short = str(len(front_body)).encode()
    return {
        "cl-te": cl_te("cl-te", b"Transfer-Encoding: chunked\r\n"),
        "te-cl": cl_te("te-cl", b"Transfer-Encoding: chunked\r\n", first="te"),
        "te-cl-disagreeing": cl_te("te-cl-disagreeing", b"Transfer-Encoding: chunked\r\n", cl_value=b"4"),
        "te-cl-zero": cl_te("te-cl-zero", b"Transfer-Encoding: chunked\r\n", cl_value=b"0"),
        "te-uppercase-cl": cl_te("te-uppercase-cl", b"Transfer-Encoding: CHUNKED\r\n"),
        "te-tab-cl": cl_te("te-tab-cl", b"Transfer-Encoding:\tchunked \r\n"),
        "te-obs-fold-cl": cl_te("te-obs-fold-cl", b"Transfer-Encoding:\r\n chunked\r\n"),
        "te-xchunked-cl": cl_te("te-xchunked-cl", b"Transfer-Encoding: xchunked\r\n"),
        "te-chunked-identity-cl": cl_te("te-chunked-identity-cl", b"Transfer-Encoding: chunked, identity\r\n"),
        "te-twice-cl": cl_te("te-twice-cl", b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n"),
        "te-space-before-colon-cl": cl_te("te-space-before-colon-cl", b"Transfer-Encoding : chunked\r\n"),
        "cl-twice-differing": two_lengths("cl-twice-differing", b"Content-Length: " + short
                                          + b"\r\nContent-Length: 4\r\n"),
        "cl-list-differing": two_lengths("cl-list-differing", b"Content-Length: " + short + b", 4\r\n"),
        "cl-plus-sign": two_lengths("cl-plus-sign", b"Content-Length: +" + short + b"\r\n"),
        "http10-te": (head.replace(b"HTTP/1.1", b"HTTP/1.0") + b"Connection: keep-alive\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(front_body) + _fact_request(key, "http10-te")),
    }


def _serving(args: list[str], db, port: int, ready_path: str):
    """The server on ``port``, its request timeout 2 s (its keep-alive then closes at 2 s at worst)."""
    return diarist_server([*args, "--db", str(db), "--embedder", "hash", "--port", str(port)],
                          f"http://127.0.0.1:{port}{ready_path}", {**diarist_env(), "DIARIST_TIMEOUT_SECONDS": "2"})


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    db = tmp_path_factory.mktemp("smuggling") / "m.sqlite"
    key = create_key(db, "x")
    port = free_port()
    with _serving(["serve", "--timeout-seconds", "2", "--log-level", "warning"], db, port, "/health"):
        yield ("127.0.0.1", port), f"http://127.0.0.1:{port}", key


def _stored_fact_ids(url: str, key: str) -> list[str]:
    response = httpx.get(f"{url}/v1/apps/x/facts", headers={"Authorization": f"Bearer {key}"}, timeout=GUARD)
    if response.status_code == 404:  # nothing was ever stored in app x
        return []
    response.raise_for_status()
    return [row["fact_id"] for row in response.json()["items"]]


def _assert_refused(name: str, response: bytes) -> None:
    responses = response.count(b"HTTP/1.1 ") + response.count(b"HTTP/1.0 ")
    assert responses == 1, f"{name}: {responses} responses on one connection: {response[:600]!r}"
    status_line, headers = response.split(b"\r\n", 1)
    assert status(status_line) == 400, f"{name}: {response[:300]!r}"
    assert b"connection: close" in headers.lower(), f"{name}: {response[:300]!r}"


FRAMINGS = sorted(_framings("k"))


@pytest.mark.parametrize("name", FRAMINGS)
@pytest.mark.slow
def test_an_ambiguous_framing_is_refused_and_closed(served, name):
    address, url, key = served
    before = _stored_fact_ids(url, key)
    response = send_and_read_until_closed(address, _framings(key)[name])
    stored = sorted(set(_stored_fact_ids(url, key)) - set(before))
    _assert_refused(name, response)
    assert stored == [], f"{name}: stored {stored}"


def test_plain_requests_still_work(served):
    """The same requests framed one way only are read and stored (the check refuses framing, not bodies)."""
    address, url, key = served
    body = json.dumps({"text": "a chunked fact", "fact_id": "plain-chunked"}).encode()
    head = (b"POST /v1/apps/x/facts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + key.encode() + b"\r\nConnection: close\r\n")
    chunked = send_and_read_until_closed(address, head + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(body))
    assert chunked.startswith(b"HTTP/1.1 201"), chunked[:300]
    length = send_and_read_until_closed(address, _fact_request(key, "plain-length").replace(
        b"\r\nContent-Length", b"\r\nConnection: close\r\nContent-Length"))
    assert length.startswith(b"HTTP/1.1 201"), length[:300]
    with httpx.Client(base_url=url, timeout=GUARD) as client:  # kept-alive requests still work
        for _ in range(3):
            assert client.get("/health").status_code in (200, 503)
    assert {"plain-chunked", "plain-length"} <= set(_stored_fact_ids(url, key))
    for fact_id in ("plain-chunked", "plain-length"):
        httpx.delete(f"{url}/v1/apps/x/facts/{fact_id}", headers={"Authorization": f"Bearer {key}"},
                     timeout=GUARD).raise_for_status()


@pytest.mark.slow
def test_the_mcp_http_transport_refuses_them_too(tmp_path):
    """`diarist mcp --transport http` runs on the same protocol: CL + TE is refused and closed."""
    db = tmp_path / "m.sqlite"
    port = free_port()
    with _serving(["mcp", "--app", "x", "--transport", "http", "--no-auth"], db, port, "/mcp"):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        host = f"Host: 127.0.0.1:{port}\r\n".encode()
        hidden = b"GET /mcp HTTP/1.1\r\n" + host + b"\r\n"
        raw = (b"POST /mcp HTTP/1.1\r\n" + host + b"Content-Type: application/json\r\n"
               b"Accept: application/json, text/event-stream\r\nContent-Length: "
               + str(len(_chunked(body) + hidden)).encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
               + _chunked(body) + hidden)
        _assert_refused("mcp cl-te", send_and_read_until_closed(("127.0.0.1", port), raw))
