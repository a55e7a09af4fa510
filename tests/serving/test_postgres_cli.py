"""The command line, the HTTP server and MCP on PostgreSQL (the ``pg_server`` of tests/support/pg_server.py):

- ``DIARIST_DB=postgresql://...`` (or ``--db``) selects it for every command, and no output ever
  shows the password of the URL (``diarist serve`` prints the store's location);
- pool options ride on the URL (``pool_size``, ``pool_timeout``, ``write_lock_timeout``), so
  ``diarist serve`` workers, which get the URL through ``DIARIST_DB``, size their pools by it;
- ``diarist serve --workers 2`` answers /health and a search with a key; ``diarist mcp`` works;
- 8 writer processes (4 through ``diarist serve --workers 4``, 4 through ``Memory``) and 4
  readers on one database: no errors, and every acknowledged write is there afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import pg_server as pg_module

pg_module.require()  # skips without the postgres extra (fails in CI)

import httpx  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from pg_server import PgServer  # noqa: E402
from test_server_support import DIARIST, free_port, diarist_env, wait_for_http  # noqa: E402

from diarist.cli import main  # noqa: E402
from diarist.errors import ConfigError  # noqa: E402
from diarist.memory import Memory  # noqa: E402
from diarist.store import open_store  # noqa: E402
from diarist.store.postgres import PostgresStore  # noqa: E402
from diarist.store.postgres.connection import url_options  # noqa: E402

SECRET = "s3cret-pw"

SESSIONS = [
    {"session_id": "cat", "date": "2024-03-01T10:00:00", "messages": [
        {"role": "user", "content": "My cat is called Admon and she loves tuna."},
        {"role": "assistant", "content": "Admon is a lovely name for a cat."}]},
    {"session_id": "hike", "date": "2024-03-02T10:00:00", "messages": [
        {"role": "user", "content": "Last summer I hiked the Haute Route from Chamonix to Zermatt."},
        {"role": "assistant", "content": "That is a classic glacier trek."}]},
    {"session_id": "cello", "date": "2024-03-03T10:00:00", "messages": [
        {"role": "user", "content": "I play the cello in a quartet every Sunday."}]},
]


def secret_url(pg: PgServer, prefix: str) -> str:
    """A fresh schema's URL with a password in it (the test server trusts local logins)."""
    url = pg.new_url(prefix).replace("postgres:@", f"postgres:{SECRET}@", 1)
    assert SECRET in url
    return url


def run(args: list[str], env: dict[str, str] | None = None, code: int = 0) -> str:
    """A diarist command in this process; its output (stdout and stderr), never with the password."""
    result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    out = result.output + result.stderr
    assert result.exit_code == code, out
    assert SECRET not in out, out
    return result.stdout


# -- pool options on the URL -------------------------------------------------------------------


def test_pool_options_ride_on_the_url(pg_server: PgServer) -> None:
    url = pg_server.new_url("pool")
    clean, found = url_options(url + "&pool_size=3&pool_timeout=7.5&write_lock_timeout=0.5")
    assert clean == url and found == {"max_size": 3, "timeout": 7.5, "lock_timeout": 0.5}
    assert url_options("postgresql://me@db/mem?pool_size=2") == ("postgresql://me@db/mem", {"max_size": 2})
    store = open_store(url + "&pool_size=3&write_lock_timeout=0.5")
    try:
        assert isinstance(store, PostgresStore) and store._db.pool.max_size == 3
        assert store._db._lock_timeout_ms == 500 and "pool_size" not in store.location
    finally:
        store.close()
    store = open_store(url + "&pool_size=3", max_size=5)  # a keyword given wins over the URL
    try:
        assert store._db.pool.max_size == 5
    finally:
        store.close()
    for bad in ("pool_size=0", "pool_size=two", "pool_timeout=-1", "write_lock_timeout=nan"):
        with pytest.raises(ConfigError, match=bad.split("=")[0]):
            PostgresStore(url.replace("postgres:@", f"postgres:{SECRET}@") + "&" + bad)
    with pytest.raises(ConfigError) as info:
        PostgresStore(url.replace("postgres:@", f"postgres:{SECRET}@") + "&pool_size=x")
    assert SECRET not in str(info.value)


# -- every command --------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_command_on_postgresql(pg_server: PgServer, tmp_path: Path) -> None:
    url = secret_url(pg_server, "cli") + "&pool_size=4"
    data = tmp_path / "sessions.jsonl"
    data.write_text("".join(json.dumps(s) + "\n" for s in SESSIONS), encoding="utf-8")
    env = {**diarist_env(), "DIARIST_DB": url}

    # A real process, selected by $DIARIST_DB alone.
    done = subprocess.run([DIARIST, "ingest", str(data), "--embedder", "hash", "--app", "me"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr and "postgresql://postgres@" in done.stdout
    assert "3 sessions added" in done.stdout

    hits = json.loads(run(["search", "What is my cat called?", "--app", "me", "--json", "-k", "2"], env))
    assert hits[0]["session_id"] == "cat" and "Admon" in hits[0]["text"]
    stats = json.loads(run(["stats"], env))
    assert stats["path"].startswith("postgresql://postgres@") and stats["embedder"] == "hash-64-64"
    assert stats["apps"]["me"]["sessions"] == 3 and stats["apps"]["me"]["lexical_index"] == "complete"
    assert "ok" in run(["doctor"], env).lower()

    # --db wins over $DIARIST_DB (here: a file that does not exist, which would be refused).
    other = {"DIARIST_DB": str(tmp_path / "none.sqlite")}
    fact_id = run(["add", "The user is allergic to peanuts.", "--app", "me", "--id", "allergy", "--db", url],
                  other).strip()
    assert fact_id == "allergy"
    assert run(["list", "--app", "me", "--db", url], other).split()[::2] == ["cello", "hike", "cat"]  # newest first
    assert run(["list", "--app", "me", "--kind", "fact", "--db", url], other).startswith("allergy")
    assert "Haute Route" in run(["show", "hike", "--app", "me", "--db", url], other)
    lines = run(["export", "--app", "me", "--db", url], other).splitlines()
    assert [json.loads(line).get("session_id") or json.loads(line)["fact_id"] for line in lines] == \
        ["cat", "hike", "cello", "allergy"]
    assert "reindexed 4 chunks" in run(["reindex", "--app", "me"], env)
    assert "deleted 'cello'" in run(["delete", "cello", "--app", "me"], env)
    assert json.loads(run(["stats", "--app", "me"], env))["apps"]["me"]["sessions"] == 2

    key = run(["keys", "create", "--app", "me", "--label", "cli"], env).strip()
    assert key.startswith("vst_")
    listed = json.loads(run(["keys", "list", "--json"], env))
    assert [(k["app"], k["label"]) for k in listed] == [("me", "cli")]
    assert "revoked key" in run(["keys", "revoke", str(listed[0]["id"])], env)
    assert run(["keys", "list"], env).strip() == "no keys"

    # A read-only command never creates a memory: a fresh schema is "no diarist database".
    empty = secret_url(pg_server, "empty")
    result = CliRunner().invoke(main, ["stats", "--db", empty])
    assert result.exit_code == 1 and "no diarist database" in result.output and SECRET not in result.output


@pytest.mark.slow
def test_serve_with_workers_and_mcp_on_postgresql(pg_server: PgServer, tmp_path: Path) -> None:
    url = secret_url(pg_server, "serve") + "&pool_size=3"
    with Memory(url, embedder="hash") as mem:
        for s in SESSIONS:
            mem.add_session(s["messages"], app="me", session_id=s["session_id"], date=s["date"])
        key, _ = mem.keys.create("me", label="http")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [DIARIST, "serve", "--db", url, "--port", str(port), "--workers", "2", "--log-level", "info"],
        env=diarist_env(), stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        wait_for_http(f"{base}/health", server)
        health = httpx.get(f"{base}/health", timeout=60)
        assert health.status_code == 200, health.text
        assert health.json()["ok"] and health.json()["embedder"] == "hash-64-64"
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
            for _ in range(6):  # two workers, each with its own pool: both answer alike
                r = http.post("/v1/apps/me/search", json={"query": "Which instrument do I play?", "k": 2})
                assert r.status_code == 200, r.text
                assert r.json()["hits"][0]["session_id"] == "cello"
            r = http.post("/v1/apps/me/facts", json={"text": "Written through the server.", "fact_id": "srv"})
            assert r.status_code == 201, r.text
            assert http.get("/v1/apps/other/stats").status_code == 403  # the key reaches its app only
    finally:
        server.terminate()
        out, err = server.communicate(timeout=60)
    assert SECRET not in out + err, err
    assert "serving postgresql://postgres@" in err and "Traceback" not in err, err[-3000:]
    with Memory(url) as mem:
        assert mem.get("srv", app="me")["text"] == "Written through the server."

    # MCP over stdio, selected by $DIARIST_DB.
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from test_mcp import remember_then_recall

    params = StdioServerParameters(command=DIARIST, args=["mcp", "--app", "agent"],
                                   env={**diarist_env(), "DIARIST_DB": url})

    async def session() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            await remember_then_recall(client)

    anyio.run(session)
    with Memory(url) as mem:
        assert mem.apps() == ["agent", "me"]


# -- many processes on one database ---------------------------------------------------------------

WORKER = r"""
import json, sys, time
role, via, db, n, base, key, name, start_at = sys.argv[1:9]
n = int(n)
if via == "http":
    import httpx
    http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120)
else:
    from diarist.memory import Memory
    memory = Memory(db)
errors = 0
def say(**what):
    print(json.dumps(what), flush=True)
time.sleep(max(0.0, float(start_at) - time.time()))  # all start together (late starters at once)
for i in range(n):
    token = f"tok{name}x{i}"
    try:
        if role == "write":
            messages = [{"role": "user", "content": f"session {token} from {name}"},
                        {"role": "assistant", "content": "noted"}]
            append = [{"role": "user", "content": f"append {token}"}]
            if i % 3 == 2:
                if via == "http":
                    http.post("/v1/apps/conc/facts", json={"text": f"note {token}", "fact_id": token}).raise_for_status()
                else:
                    memory.add_fact(f"note {token}", app="conc", fact_id=token)
                say(kind="fact", id=token)
            else:
                if via == "http":
                    http.post("/v1/apps/conc/sessions", json={"session_id": token, "messages": messages}).raise_for_status()
                else:
                    memory.add_session(messages, app="conc", session_id=token)
                say(kind="session", id=token)
            if i % 4 == 0:  # everyone appends to one shared session too
                if via == "http":
                    http.post("/v1/apps/conc/sessions/together/messages", json={"messages": append}).raise_for_status()
                else:
                    memory.append_messages("together", append, app="conc")
                say(kind="append", id=token)
        else:
            query = f"session from w{i % 8}"
            if via == "http":
                http.post("/v1/apps/conc/search", json={"query": query, "k": 5}).raise_for_status()
                http.get("/v1/apps/conc/sessions", params={"limit": 5}).raise_for_status()
            else:
                memory.search(query, app="conc", k=5)
                memory.list(app="conc", limit=5)
                memory.stats("conc")
            say(kind="read")
            time.sleep(0.02)
    except Exception as exc:
        errors += 1
        say(error=f"{type(exc).__name__}: {exc}")
sys.exit(1 if errors else 0)
"""

WRITES = 16  # per writer
READS = 25  # per reader


@pytest.mark.slow
def test_eight_writers_and_four_readers_on_one_database(pg_server: PgServer) -> None:
    """Bounded: 8 writers x 16 writes (sessions, facts, appends to one shared session), half of
    them through `diarist serve --workers 4`, half through Memory in their own processes, and 4
    readers (2 over HTTP, 2 direct) at the same time."""
    started = time.monotonic()
    url = pg_server.new_url("conc") + "&pool_size=4"
    with Memory(url, embedder="hash") as mem:
        mem.add_session([{"role": "user", "content": "the shared session starts"}], app="conc",
                        session_id="together")
        key, _ = mem.keys.create("conc")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [DIARIST, "serve", "--db", url, "--port", str(port), "--workers", "4", "--log-level", "warning"],
        env=diarist_env(), stderr=subprocess.PIPE, text=True,
    )
    procs: list[tuple[str, Any]] = []
    try:
        wait_for_http(f"{base}/health", server)
        plan = [("write", "http" if w % 2 else "direct", f"w{w}") for w in range(8)]
        plan += [("read", "http" if r % 2 else "direct", f"r{r}") for r in range(4)]
        start_at = str(time.time() + 3)
        for role, via, name in plan:
            n = WRITES if role == "write" else READS
            procs.append((name, subprocess.Popen(
                [sys.executable, "-c", WORKER, role, via, url, str(n), base, key, name, start_at],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=diarist_env())))
        acknowledged, appended, reads = [], [], 0
        for name, proc in procs:
            out, err = proc.communicate(timeout=150)
            lines = [json.loads(line) for line in out.splitlines() if line.strip()]
            failures = [line["error"] for line in lines if "error" in line]
            assert proc.returncode == 0 and not failures, f"{name}: {failures} {err[-2000:]}"
            acknowledged += [line for line in lines if line.get("kind") in ("fact", "session")]
            appended += [line["id"] for line in lines if line.get("kind") == "append"]
            reads += sum(line.get("kind") == "read" for line in lines)
    finally:
        for _, proc in procs:
            if proc.poll() is None:
                proc.kill()
        server.terminate()
        _, server_err = server.communicate(timeout=60)
    assert "Traceback" not in server_err, server_err[-3000:]
    assert len(acknowledged) == 8 * WRITES and reads == 4 * READS
    assert len(appended) == 8 * len(range(0, WRITES, 4))

    with Memory(url) as mem:
        for item in acknowledged:
            found = mem.get(item["id"], app="conc")
            assert found["kind"] == item["kind"]
        together = [m["content"] for m in mem.get("together", app="conc")["messages"]]
        assert sorted(together[1:]) == sorted(f"append {token}" for token in appended)
        counts = mem.store.counts("conc")
        assert counts.sessions + counts.facts == 8 * WRITES + 1
        assert mem.app_stats("conc")["lexical_index"] == "complete"  # the BM25 counters survived
        for item in acknowledged[::7]:
            top = mem.search(item["id"], app="conc", k=1)
            assert (top[0].session_id or top[0].fact_id) == item["id"]
    assert time.monotonic() - started < 120  # bounded (11-18 s on two busy cores)


def test_a_read_only_session_serves_every_read(pg_server: PgServer) -> None:
    """What a read replica (a hot standby) can serve: a session whose transactions are read-only
    searches, gets, lists, exports and checks keys; a write is refused with a clear error."""
    from diarist.errors import StoreError
    from diarist.export import jsonl_lines

    url = pg_server.new_url("ro")
    with Memory(url, embedder="hash") as mem:
        for s in SESSIONS:
            mem.add_session(s["messages"], app="me", session_id=s["session_id"], date=s["date"])
        key, _ = mem.keys.create("me")
        want = list(jsonl_lines(mem, "me"))
    replica = url.replace("options=-csearch_path%3D", "options=-cdefault_transaction_read_only%3Don%20-csearch_path%3D")
    with Memory(replica) as ro:
        assert ro.search("What is my cat called?", app="me", k=1)[0].session_id == "cat"
        assert ro.get("hike", app="me")["messages"][0]["content"].startswith("Last summer")
        assert [s["session_id"] for s in ro.list(app="me", newest_first=False)] == ["cat", "hike", "cello"]
        assert list(jsonl_lines(ro, "me")) == want
        assert ro.keys.app_for(key) == "me" and ro.stats()["apps"]["me"]["sessions"] == 3
        with pytest.raises(StoreError, match="read-only"):
            ro.add_fact("a write on a replica", app="me")
    assert "ok" in run(["doctor", "--db", replica]).lower()
