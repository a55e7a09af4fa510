"""Slow and stalled clients are cut off: `diarist serve --timeout-seconds T` closes a connection
that sends nothing, trickles its headers (slowloris), or stalls inside its body, and closes idle
keep-alive connections, while normal requests still work.

Finding this guards (the old build): 250 idle connections held for 60 s were never closed.

Real sockets on loopback against a real `diarist serve` subprocess. The assertions are that the
server closed the socket (EOF or reset); socket timeouts are hang guards only, far above T.
"""

from __future__ import annotations

import subprocess

import httpx
import pytest
from raw_http import GUARD, connect, json_body, read_until_closed, readable, status, diarist_server
from test_server_support import DIARIST, free_port, diarist_env

T = 1.0  # the server's request timeout in this file


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("timeouts") / "m.sqlite"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with diarist_server(["serve", "--db", str(db), "--embedder", "hash", "--port", str(port),
                         "--timeout-seconds", str(T), "--log-level", "warning"], f"{url}/health"):
        yield ("127.0.0.1", port), url


@pytest.mark.slow
def test_idle_connections_that_send_nothing_are_closed(server):
    address, _ = server
    socks = [connect(address) for _ in range(50)]
    try:
        for sock in socks:
            assert read_until_closed(sock) == b""  # closed silently: nothing was asked
    finally:
        for sock in socks:
            sock.close()


@pytest.mark.slow
def test_slowloris_headers_are_cut_off(server):
    """Headers trickled a byte at a time never complete: the server answers 408 and closes."""
    address, _ = server
    sock = connect(address)
    try:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        trickle = b"X-Slow: " + b"a" * 10_000
        for i in range(len(trickle)):  # bounded: ~300 s of trickling at most, T is 1 s
            try:
                sock.sendall(trickle[i : i + 1])
            except (BrokenPipeError, ConnectionResetError):
                break
            if readable(sock, 0.03):  # an answer, or the connection closed
                break
        else:
            raise AssertionError("the server never cut the trickling client off")
        response = read_until_closed(sock)
        assert response == b"" or status(response) == 408, response[:200]
        if response:
            assert json_body(response)["error"]["code"] == "timeout"
    finally:
        sock.close()


@pytest.mark.slow
def test_a_stalled_body_gets_408_and_is_closed(server):
    address, _ = server
    sock = connect(address)
    try:
        sock.sendall(b"POST /v1/apps/x/facts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n" + b'{"text": "only the start')
        response = read_until_closed(sock)
        assert status(response) == 408, response[:300]
        body = json_body(response)
        assert body["error"]["code"] == "timeout" and "body" in body["error"]["message"]
    finally:
        sock.close()


@pytest.mark.slow
def test_idle_keep_alive_connections_are_closed(server):
    address, _ = server
    sock = connect(address)
    try:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        response = read_until_closed(sock)  # the answer, then EOF once the connection idles
        assert status(response) in (200, 503)
    finally:
        sock.close()


@pytest.mark.slow
def test_a_slow_second_request_on_a_kept_alive_connection_is_cut_off(server):
    """The deadline starts again with the first byte of each request, not only on connect."""
    address, _ = server
    sock = connect(address)
    try:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        first = b""
        while b"\r\n\r\n" not in first:
            first += sock.recv(65536)
        head, rest = first.split(b"\r\n\r\n", 1)
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
        while len(rest) < length:
            rest += sock.recv(65536)
        sock.sendall(b"GET /health HTTP/1.1\r\nHo")  # and never the rest
        response = read_until_closed(sock)
        assert response == b"" or status(response) == 408, response[:200]
    finally:
        sock.close()


def test_normal_requests_still_work(server):
    _, url = server
    with httpx.Client(base_url=url, timeout=GUARD) as client:
        for _ in range(3):  # one kept-alive connection, several requests
            assert client.get("/health").status_code == 200
        response = client.post("/v1/apps/x/facts", json={"text": "no key"})
        assert response.status_code == 401  # the body was read whole; the key check answered
        assert client.get("/openapi.json").status_code == 200


def test_the_option_is_documented():
    out = subprocess.run([DIARIST, "serve", "--help"], capture_output=True, text=True, env=diarist_env(), timeout=60)
    assert "--timeout-seconds" in out.stdout and "408" in out.stdout
