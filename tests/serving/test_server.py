"""The HTTP API over real HTTP on loopback: every endpoint, auth, isolation, limits, bad input."""

from __future__ import annotations

import subprocess

import sqlite3

import httpx

import pytest
from test_server_support import DIARIST, ServerThread, free_port, diarist_env, wait_for_http

from diarist.memory import Memory
from diarist.server.app import create_app
from diarist.keys import KeyStore

SESSION = {
    "session_id": "s1",
    "date": "2024-05-01T10:00:00",
    "metadata": {"source": "test"},
    "messages": [
        {"role": "user", "content": "My cat is called Admon and she loves tuna."},
        {"role": "assistant", "content": "Admon is a lovely name."},
    ],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("srv") / "memory.sqlite"
    memory = Memory(db, embedder="hash")
    keys = KeyStore(memory.store)
    with ServerThread(create_app(memory, max_body_bytes=64 * 1024)) as srv:
        srv.memory = memory
        srv.keys = {app: keys.create(app)[0] for app in ("alpha", "beta", "gamma")}
        srv.keystore = keys
        yield srv
    memory.close()


def client(server, app: str | None = "alpha", key: str | None = None) -> httpx.Client:
    headers = {}
    token = key if key is not None else (server.keys[app] if app else None)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


def error_of(response: httpx.Response) -> dict:
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["status"] == response.status_code
    assert body["error"]["message"]
    return body["error"]


# -- every endpoint -------------------------------------------------------------------------


def test_every_endpoint_round_trip(server):
    with client(server, "alpha") as c:
        r = c.post("/v1/apps/alpha/sessions", json=SESSION)
        assert r.status_code == 201 and r.json()["id"] == "s1" and r.json()["status"] == "added"
        assert c.post("/v1/apps/alpha/sessions", json=SESSION).json()["status"] == "unchanged"

        r = c.post("/v1/apps/alpha/sessions/batch", json={"sessions": [
            {"session_id": "s2", "messages": [{"role": "user", "content": "I moved to Lisbon in March."}]},
            {"session_id": "s3", "messages": [{"role": "user", "content": "I play the cello on Sundays."}]},
        ]})
        assert r.status_code == 201 and sorted(r.json()["added"]) == ["s2", "s3"]

        r = c.post("/v1/apps/alpha/sessions/s3/messages", json={"messages": [
            {"role": "assistant", "content": "Which piece are you practising?"},
            {"role": "user", "content": "The Elgar concerto."}]})
        assert r.status_code == 201 and r.json()["status"] == "replaced"
        r = c.post("/v1/apps/alpha/sessions/s4/messages", json={"messages": [{"role": "user", "content": "A new chat."}]})
        assert r.status_code == 201 and r.json()["status"] == "added"

        r = c.post("/v1/apps/alpha/facts", json={"text": "The user is vegetarian.", "fact_id": "f1", "date": "2024-02-01"})
        assert r.status_code == 201 and r.json()["id"] == "f1"

        r = c.post("/v1/apps/alpha/search", json={"query": "What is my cat called?", "k": 3})
        assert r.status_code == 200
        hits = r.json()["hits"]
        assert hits[0]["session_id"] == "s1" and "Admon" in hits[0]["text"]
        assert set(hits[0]["ranks"]) == {"dense", "lexical"} and hits[0]["app"] == "alpha"

        r = c.post("/v1/apps/alpha/context", json={"query": "Which concerto?", "budget_tokens": 400})
        assert r.status_code == 200
        body = r.json()
        assert "Elgar" in body["context"] and "past records" in body["context"] and body["snippets"]
        r = c.post("/v1/apps/alpha/context", json={"query": "Which concerto?", "trim": "lines", "explain": True})
        assert r.status_code == 200 and "Elgar" in r.json()["context"]
        assert "trim" in [t["stage"] for t in r.json()["trace"]]
        r = c.post("/v1/apps/alpha/context", json={"query": "Which concerto?", "trim": "pointers"})
        assert r.status_code == 200 and "Elgar" in r.json()["context"]
        assert c.post("/v1/apps/alpha/context", json={"query": "Which concerto?", "trim": "words"}).status_code == 422

        chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Where do I live now?"}]
        r = c.post("/v1/apps/alpha/context", json={"messages": chat, "budget_tokens": 400})
        placed = r.json()["messages"]
        assert [m["role"] for m in placed] == ["system", "user"]
        assert "Lisbon" in placed[-1]["content"] and placed[-1]["content"].endswith("Where do I live now?")

        r = c.get("/v1/apps/alpha/sessions/s3")
        assert r.status_code == 200 and [m["content"] for m in r.json()["messages"]][-1] == "The Elgar concerto."
        r = c.get("/v1/apps/alpha/facts/f1")
        assert r.json()["text"] == "The user is vegetarian." and r.json()["date"].startswith("2024-02-01")

        r = c.get("/v1/apps/alpha/stats")
        assert r.json()["sessions"] == 4 and r.json()["facts"] == 1 and r.json()["embedder"] == "hash-64-64"

        assert c.delete("/v1/apps/alpha/facts/f1").json() == {"deleted": "f1"}
        assert c.get("/v1/apps/alpha/facts/f1").status_code == 404
        assert c.delete("/v1/apps/alpha/sessions/s4").json() == {"deleted": "s4"}
        assert c.delete("/v1/apps/alpha/sessions/s4").status_code == 404
        r = c.post("/v1/apps/alpha/search", json={"query": "A new chat", "k": 10})
        assert all(h["session_id"] != "s4" for h in r.json()["hits"])


def test_pagination(server):
    with client(server, "gamma") as c:
        for i in range(7):
            c.post("/v1/apps/gamma/facts", json={"text": f"Numbered note {i}", "fact_id": f"n{i}"}).raise_for_status()
        seen, offset, pages = [], 0, 0
        while offset is not None and pages < 10:
            body = c.get("/v1/apps/gamma/facts", params={"limit": 3, "offset": offset}).json()
            seen += [item["fact_id"] for item in body["items"]]
            offset, pages = body["next_offset"], pages + 1
        assert seen == [f"n{i}" for i in range(7)] and pages == 3
        assert c.get("/v1/apps/gamma/sessions").json() == {"items": [], "limit": 50, "offset": 0, "next_offset": None}
        assert c.get("/v1/apps/gamma/facts", params={"limit": 0}).status_code == 422
        assert c.get("/v1/apps/gamma/facts", params={"limit": 100000}).status_code == 422


def test_delete_whole_app_needs_confirmation(server):
    with client(server, "gamma") as c:
        c.post("/v1/apps/gamma/facts", json={"text": "to be deleted"}).raise_for_status()
        r = c.delete("/v1/apps/gamma")
        assert r.status_code == 422
        r = c.delete("/v1/apps/gamma", params={"confirm": "beta"})
        assert r.status_code == 422 and "confirm" in error_of(r)["message"]
        assert c.delete("/v1/apps/gamma", params={"confirm": "gamma"}).json() == {"deleted": "gamma"}
        assert c.get("/v1/apps/gamma/stats").json()["facts"] == 0
        assert c.delete("/v1/apps/gamma", params={"confirm": "gamma"}).status_code == 404
        # the key still works for new memory
        assert c.post("/v1/apps/gamma/facts", json={"text": "fresh start"}).status_code == 201


def test_empty_app_searches_to_nothing(server):
    with client(server, "beta") as c:
        r = c.post("/v1/apps/beta/search", json={"query": "anything"})
        assert r.status_code == 200 and r.json()["hits"] == []
        r = c.post("/v1/apps/beta/context", json={"query": "anything"})
        assert r.status_code == 200 and r.json()["context"] == ""


# -- auth and isolation ----------------------------------------------------------------------


def test_missing_and_wrong_keys_are_refused(server):
    with client(server, None) as c:
        r = c.post("/v1/apps/alpha/search", json={"query": "cat"})
        assert r.status_code == 401 and "missing API key" in error_of(r)["message"]
        assert r.headers["www-authenticate"] == "Bearer"
    with client(server, key="vst_not-a-real-key") as c:
        r = c.get("/v1/apps/alpha/stats")
        assert r.status_code == 401 and error_of(r)["message"] == "unknown API key"
    with httpx.Client(base_url=server.url, headers={"Authorization": "Basic abc"}) as c:
        assert c.get("/v1/apps/alpha/stats").status_code == 401


def test_other_apps_key_is_refused_everywhere(server):
    beta_key = server.keys["beta"]
    with client(server, key=beta_key) as c:
        calls = [
            ("POST", "/v1/apps/alpha/sessions", SESSION),
            ("POST", "/v1/apps/alpha/sessions/batch", {"sessions": [SESSION]}),
            ("POST", "/v1/apps/alpha/sessions/s1/messages", {"messages": SESSION["messages"]}),
            ("POST", "/v1/apps/alpha/facts", {"text": "x"}),
            ("POST", "/v1/apps/alpha/search", {"query": "cat"}),
            ("POST", "/v1/apps/alpha/context", {"query": "cat"}),
            ("GET", "/v1/apps/alpha/sessions", None),
            ("GET", "/v1/apps/alpha/facts", None),
            ("GET", "/v1/apps/alpha/sessions/s1", None),
            ("GET", "/v1/apps/alpha/facts/f1", None),
            ("GET", "/v1/apps/alpha/stats", None),
            ("DELETE", "/v1/apps/alpha/sessions/s1", None),
            ("DELETE", "/v1/apps/alpha/facts/f1", None),
            ("DELETE", "/v1/apps/alpha?confirm=alpha", None),
            ("GET", "/v1/apps/no-such-app/stats", None),
        ]
        for method, path, body in calls:
            r = c.request(method, path, json=body)
            assert r.status_code == 403, (method, path, r.text)
            assert error_of(r)["code"] == "forbidden"
    with client(server, "alpha") as c:  # and nothing was touched
        assert c.get("/v1/apps/alpha/sessions/s1").status_code == 200


def test_isolation_between_apps(server):
    with client(server, "beta") as c:
        c.post("/v1/apps/beta/facts", json={"text": "Beta's cat is called Zorro.", "fact_id": "zorro"}).raise_for_status()
        hits = c.post("/v1/apps/beta/search", json={"query": "cat called Admon", "k": 20}).json()["hits"]
        assert hits and all(h["app"] == "beta" and "Admon" not in h["text"] for h in hits)
        assert c.get("/v1/apps/beta/sessions/s1").status_code == 404  # alpha's session, not visible
    with client(server, "alpha") as c:
        hits = c.post("/v1/apps/alpha/search", json={"query": "Zorro", "k": 20}).json()["hits"]
        assert all("Zorro" not in h["text"] for h in hits)
        assert c.get("/v1/apps/alpha/facts/zorro").status_code == 404


def test_revoked_key_is_refused(server):
    key, info = server.keystore.create("alpha", "short-lived")
    with client(server, key=key) as c:
        assert c.get("/v1/apps/alpha/stats").status_code == 200
        server.keystore.revoke(str(info.id))
        r = c.get("/v1/apps/alpha/stats")
        assert r.status_code == 401 and "revoked" in error_of(r)["message"]


def test_only_a_hash_of_each_key_is_stored(server):
    rows = sqlite3.connect(server.memory.store.path).execute("SELECT key_hash, prefix FROM api_keys").fetchall()
    dump = "\n".join(str(r) for r in rows)
    for key in server.keys.values():
        assert key not in dump
        assert key[: len(rows[0][1])] in dump  # the short prefix is kept, to tell keys apart


# -- limits and bad input --------------------------------------------------------------------


def test_request_size_limit(server):
    big = {"text": "x" * (70 * 1024)}
    with client(server, "alpha") as c:
        r = c.post("/v1/apps/alpha/facts", json=big)
        assert r.status_code == 413 and "limit" in error_of(r)["message"]

        def chunks():  # no Content-Length: the body is counted as it streams in
            for _ in range(20):
                yield b"x" * 8192

        r = c.post("/v1/apps/alpha/facts", content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413


@pytest.mark.parametrize(
    "path, body, needle",
    [
        ("/v1/apps/alpha/sessions", {"messages": []}, "messages"),
        ("/v1/apps/alpha/sessions", {"messages": [{"role": "robot", "content": "hi"}]}, "role"),
        ("/v1/apps/alpha/sessions", {"messages": [{"role": "user", "content": "   "}]}, "empty"),
        ("/v1/apps/alpha/sessions", {"date": "last tuesday", "messages": [{"role": "user", "content": "hi"}]}, "date"),
        ("/v1/apps/alpha/sessions", {"messages": [{"role": "user", "content": "hi"}], "surprise": 1}, "surprise"),
        ("/v1/apps/alpha/facts", {"text": ""}, "text"),
        ("/v1/apps/alpha/facts", {"text": "   "}, "non-empty"),
        ("/v1/apps/alpha/search", {"query": "cat", "k": 0}, "k"),
        ("/v1/apps/alpha/search", {"query": "   "}, "empty"),
        ("/v1/apps/alpha/search", {}, "query"),
        ("/v1/apps/alpha/context", {"budget_tokens": 100}, "query"),
        ("/v1/apps/alpha/context", {"query": "cat", "budget_tokens": 0}, "budget_tokens"),
        ("/v1/apps/alpha/context", {"messages": [{"role": "system", "content": "x"}]}, "user turn"),
    ],
)
def test_bad_input_is_a_clear_422(server, path, body, needle):
    with client(server, "alpha") as c:
        r = c.post(path, json=body)
    assert r.status_code == 422, r.text
    err = error_of(r)
    assert err["code"] == "invalid_input" and needle in err["message"]


def test_malformed_json_and_unknown_routes(server):
    with client(server, "alpha") as c:
        r = c.post("/v1/apps/alpha/search", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and error_of(r)["code"] == "invalid_input"
        r = c.post("/v1/apps/alpha/facts", content=b'{"text": "x", "metadata": {"a": NaN}}',
                   headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and "metadata" in error_of(r)["message"]
        r = c.get("/nowhere")
        assert r.status_code == 404 and error_of(r)["code"] == "not_found"
        r = c.put("/v1/apps/alpha/stats")
        assert r.status_code == 405 and error_of(r)["code"] == "method_not_allowed"


# -- spec, health, CLI -----------------------------------------------------------------------


def test_openapi_spec(server):
    spec = httpx.get(f"{server.url}/openapi.json").json()
    paths = spec["paths"]
    for path in ("/v1/apps/{app}/sessions", "/v1/apps/{app}/facts", "/v1/apps/{app}/search",
                 "/v1/apps/{app}/context", "/v1/apps/{app}/stats", "/v1/apps/{app}", "/health"):
        assert path in paths
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert "401" in paths["/v1/apps/{app}/search"]["post"]["responses"]


def test_health_over_http(server):
    r = httpx.get(f"{server.url}/health", timeout=30)
    assert r.status_code == 200
    body = r.json()
    assert body["ok"] and body["probe"]["dense"]["ok"] and body["probe"]["lexical"]["ok"]
    assert body["apps_failing"] == 0 and body["apps_checked"] >= 1
    assert "alpha" not in r.text  # no app names without a key


@pytest.mark.slow
def test_serve_command_binds_loopback_by_default(tmp_path):
    from diarist.server.cli import serve

    assert next(p for p in serve.params if p.name == "host").default == "127.0.0.1"
    db, port = tmp_path / "cli.sqlite", free_port()
    proc = subprocess.Popen([DIARIST, "serve", "--db", str(db), "--embedder", "hash", "--port", str(port),
                             "--log-level", "warning"], env=diarist_env(), stderr=subprocess.PIPE, text=True)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/health", proc)
        r = httpx.get(f"http://127.0.0.1:{port}/health", timeout=30)
        assert r.status_code == 200 and r.json()["embedder"] == "hash-64-64"
        key = subprocess.run([DIARIST, "keys", "create", "--db", str(db), "--app", "cli"], env=diarist_env(),
                             capture_output=True, text=True, check=True).stdout.strip()
        r = httpx.post(f"http://127.0.0.1:{port}/v1/apps/cli/facts", json={"text": "made over the CLI's server"},
                       headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert r.status_code == 201
    finally:
        proc.terminate()
        proc.wait(timeout=30)
