"""Inspector sessions (issue 45): a cookie forged from a copy of the database does not open a
session; logout ends one (its copied cookie too); a session expires."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import shutil
import sqlite3
import time

import pytest
from fastapi.testclient import TestClient

import diarist.ui.session as session_module
from diarist.memory import Memory
from diarist.server.app import create_app
from diarist.ui.session import COOKIE

from test_ui import _csrf, _login, _seed


@pytest.fixture
def seeded(memory):
    _seed(memory)
    return memory


def _forged(secret: str, key_hash: str) -> str:
    """A session cookie signed as the inspector signed one, from what a file holds."""
    body = base64.urlsafe_b64encode(json.dumps({"n": "forged-nonce", "k": key_hash, "t": int(time.time())}).encode()).decode()
    mac = hmac.new(secret.encode(), f"session:{body}".encode(), hashlib.sha256).digest()
    return f"{body}.{base64.urlsafe_b64encode(mac).decode().rstrip('=')}"


def test_a_cookie_forged_from_a_copy_of_the_database_opens_no_session(seeded, db_path, tmp_path):
    alice_key, _ = seeded.keys.create("alice")
    with TestClient(create_app(seeded)) as client:
        _login(client, alice_key)  # whatever a login leaves in the file is in the copy
        assert client.get("/ui/apps/alice").status_code == 200
        copy = tmp_path / "copy.sqlite"
        seeded.backup(copy)
        conn = sqlite3.connect(copy)
        texts = [v for (v,) in conn.execute("SELECT value FROM meta") if isinstance(v, str)]
        hashes = [h for (h,) in conn.execute("SELECT key_hash FROM api_keys")]
        conn.close()
        assert hashes, "the copy holds the key's hash"
        forger = TestClient(create_app(seeded))
        tried = 0
        for secret in texts:
            for key_hash in hashes:
                forger.cookies.set(COOKIE, _forged(secret, key_hash))
                answer = forger.get("/ui/apps/alice", follow_redirects=False)
                assert answer.status_code == 303 and answer.headers["location"].endswith("/ui/login"), secret
                assert "Admon" not in answer.text
                tried += 1
        assert tried >= 1 or texts == []


def test_logout_ends_the_session_and_its_copied_cookie(seeded):
    alice_key, _ = seeded.keys.create("alice")
    with TestClient(create_app(seeded)) as client:
        token = _login(client, alice_key)
        copied = client.cookies.get(COOKIE)
        assert client.post("/ui/logout", data={"csrf": token}, follow_redirects=False).status_code == 303
        thief = TestClient(create_app(seeded))
        thief.cookies.set(COOKIE, copied)
        answer = thief.get("/ui/apps/alice", follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"].endswith("/ui/login")


def test_a_session_expires(seeded, monkeypatch):
    alice_key, _ = seeded.keys.create("alice")
    with TestClient(create_app(seeded)) as client:
        _login(client, alice_key)
        assert client.get("/ui/apps/alice").status_code == 200
        later = time.time() + session_module.SESSION_SECONDS + 60
        monkeypatch.setattr(session_module.time, "time", lambda: later)
        answer = client.get("/ui/apps/alice", follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"].endswith("/ui/login")


# -- `diarist ui` under serve's protocol and deadlines -----------------------------------------------


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory):
    from raw_http import diarist_server
    from test_server_support import diarist_env, free_port

    db = tmp_path_factory.mktemp("ui") / "m.sqlite"
    port = free_port()
    with diarist_server(["ui", "--db", str(db), "--embedder", "hash", "--port", str(port)],
                        f"http://127.0.0.1:{port}/ui/", {**diarist_env(), "DIARIST_TIMEOUT_SECONDS": "1"}):
        yield ("127.0.0.1", port)


@pytest.mark.slow
def test_diarist_ui_refuses_a_smuggled_request(ui_server):
    from raw_http import send_and_read_until_closed, status

    hidden = b"GET /ui/?smuggled=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    chunked = b"0\r\n\r\n"
    raw = (b"POST /ui/logout HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + str(len(chunked + hidden)).encode()
           + b"\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked + hidden)
    response = send_and_read_until_closed(ui_server, raw)
    assert response.count(b"HTTP/1.1 ") == 1, response[:600]
    assert status(response) == 400 and b"connection: close" in response.lower()


@pytest.mark.slow
def test_diarist_ui_cuts_off_a_slowloris_client(ui_server):
    from raw_http import connect, read_until_closed, readable

    sock = connect(ui_server)
    try:
        sock.sendall(b"GET /ui/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        cut = False
        while time.monotonic() - started < 15:  # the deadline is 1 s
            try:
                sock.sendall(b"a")
            except (BrokenPipeError, ConnectionResetError):
                cut = True
                break
            if readable(sock, 0.05):
                read_until_closed(sock)
                cut = True
                break
        assert cut, "diarist ui never closed a client trickling its headers"
    finally:
        sock.close()
