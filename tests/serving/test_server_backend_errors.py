"""A store's backend errors, translated by the store itself (``Store.translate_error``), reach
HTTP clients and MCP agents as diarist's errors with their status, on SQLite and PostgreSQL alike.

Before, the server caught ``sqlite3.Error`` only: a psycopg error that escaped a store call was
a 500 "internal error" (issue 29 item 4). Each store translates its own backend's errors and no
other's; the server names no backend.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

import pg_server as pg_module

pg_module.require()  # skips without the postgres extra (fails in CI)

import anyio  # noqa: E402
import httpx  # noqa: E402
import psycopg  # noqa: E402
from mcp import Client  # noqa: E402
from pg_server import PgServer  # noqa: E402
from test_server_support import ServerThread  # noqa: E402

from diarist.errors import StoreError  # noqa: E402
from diarist.memory import Memory  # noqa: E402
from diarist.server.app import create_app  # noqa: E402
from diarist.server.mcp_server import build_mcp  # noqa: E402
from diarist.store.base import Store  # noqa: E402
from diarist.store.postgres import PostgresStore  # noqa: E402
from diarist.store.sqlite import SQLiteStore  # noqa: E402

READ_ONLY = "options=-cdefault_transaction_read_only%3Don%20-csearch_path%3D"


def read_only_url(url: str) -> str:
    """The same schema, on connections whose transactions are all read-only."""
    assert "options=-csearch_path%3D" in url
    return url.replace("options=-csearch_path%3D", READ_ONLY, 1)


def real_psycopg_errors(pg: PgServer) -> dict[str, psycopg.Error]:
    """Errors raised by the test server itself: a write in a read-only transaction, a statement
    on a connection the server terminated, and a full disk (psycopg's class for SQLSTATE 53100)."""
    found: dict[str, psycopg.Error] = {}
    with pg.connect() as conn:
        try:
            with conn.transaction():
                conn.execute("SET TRANSACTION READ ONLY")
                conn.execute("CREATE TABLE never_made (x int)")
        except psycopg.Error as exc:
            found["read-only"] = exc
    with pg.connect() as victim, pg.connect() as killer:
        killer.execute("SELECT pg_terminate_backend(%s)", (victim.info.backend_pid,))
        try:
            victim.execute("SELECT 1")
        except psycopg.Error as exc:
            found["connection lost"] = exc
    found["disk full"] = psycopg.errors.DiskFull("could not extend file: No space left on device")
    assert set(found) == {"read-only", "connection lost", "disk full"}, found
    return found


def fill(url: str) -> tuple[Memory, str]:
    memory = Memory(url, embedder="hash")
    memory.add_fact("The cat is called Admon.", app="me")
    return memory, memory.keys.create("me")[0]


def test_each_store_translates_its_own_backend_s_errors_and_no_other_s(pg_server: PgServer, tmp_path) -> None:
    errors = real_psycopg_errors(pg_server)
    sqlite_full = sqlite3.OperationalError("database or disk is full")
    # SQLite's twin of each PostgreSQL failure (a lost connection's: a file that cannot be opened).
    sqlite_twins = {"disk full": sqlite_full,
                    "read-only": sqlite3.OperationalError("attempt to write a readonly database"),
                    "connection lost": sqlite3.OperationalError("unable to open database file")}
    pg_store, sqlite_store = PostgresStore(pg_server.new_url("translate")), SQLiteStore(tmp_path / "m.sqlite")
    try:
        for what, exc in errors.items():
            translated = pg_store.translate_error(exc)
            assert isinstance(translated, StoreError) and translated.status == 503, (what, translated)
            assert sqlite_store.translate_error(exc) is None, what
        assert "read-only" in str(pg_store.translate_error(errors["read-only"]))
        assert "is full" in str(pg_store.translate_error(errors["disk full"]))
        assert "connection to the PostgreSQL server failed" in str(pg_store.translate_error(errors["connection lost"]))
        for what, twin in sqlite_twins.items():  # the same failure, the same status on both backends
            on_sqlite, on_pg = sqlite_store.translate_error(twin), pg_store.translate_error(errors[what])
            assert isinstance(on_sqlite, StoreError), what
            assert (on_sqlite.status, on_sqlite.code) == (on_pg.status, on_pg.code), what
            assert pg_store.translate_error(twin) is None, what
        for store in (pg_store, sqlite_store):
            assert store.translate_error(ValueError("not a backend error")) is None
        assert Store.translate_error(sqlite_store, sqlite_full) is None  # the contract's default
    finally:
        pg_store.close()
        sqlite_store.close()


@pytest.mark.parametrize("what", ["read-only", "connection lost", "disk full"])
def test_a_postgresql_error_escaping_a_store_call_is_a_clean_json_503(pg_server: PgServer, monkeypatch, caplog,
                                                                    what: str) -> None:
    """The net under the store's own translation: a psycopg error that reaches the server (here
    raised from ``Memory.search``) is the store's StoreError, 503 and JSON, naming no host or
    schema, over HTTP and through an MCP tool; before, it was a 500."""
    exc = real_psycopg_errors(pg_server)[what]
    memory, key = fill(pg_server.new_url("escaped"))
    location = memory.store.location

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise exc

    monkeypatch.setattr(memory, "search", failing)
    try:
        with ServerThread(create_app(memory)) as srv, caplog.at_level("ERROR", logger="diarist"):
            r = httpx.post(f"{srv.url}/v1/apps/me/search", json={"query": "cat"},
                           headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert r.status_code == 503, r.text
        body = r.json()["error"]
        assert body["code"] == "store_error" and body["status"] == 503, body
        assert location not in body["message"] and "the database" in body["message"], body
        assert location in caplog.text  # the operator's log names the database

        async def recall() -> Any:
            async with Client(build_mcp(memory, "me")) as client:
                return await client.call_tool("recall", {"query": "cat"})

        result = anyio.run(recall)
        text = " ".join(part.text for part in result.content)
        assert result.is_error and str(memory.store.translate_error(exc)) in text, text
    finally:
        memory.close()


def test_a_read_only_postgresql_database_refuses_writes_with_503_and_still_reads(pg_server: PgServer) -> None:
    """Provoked for real: every transaction of the server's connections is read-only."""
    url = pg_server.new_url("read_only")
    memory, key = fill(url)
    memory.close()
    read_only = Memory(read_only_url(url), embedder="hash", create=False)
    headers = {"Authorization": f"Bearer {key}"}
    try:
        with ServerThread(create_app(read_only)) as srv:
            write = httpx.post(f"{srv.url}/v1/apps/me/facts", json={"text": "A new fact."}, headers=headers, timeout=30)
            search = httpx.post(f"{srv.url}/v1/apps/me/search", json={"query": "cat"}, headers=headers, timeout=30)
        assert write.status_code == 503, write.text
        assert write.json()["error"]["code"] == "store_error" and "read-only" in write.json()["error"]["message"]
        assert search.status_code == 200 and search.json()["hits"][0]["text"] == "The cat is called Admon."
    finally:
        read_only.close()


def test_terminated_postgresql_connections_are_replaced(pg_server: PgServer) -> None:
    """Provoked for real: the server terminates every connection of the store's pool; the next
    requests are answered (the pool checks a connection before lending it), never a 500."""
    memory, key = fill(pg_server.new_url("killed") + "&application_name=diarist_killed&pool_size=2")
    headers = {"Authorization": f"Bearer {key}"}
    try:
        with ServerThread(create_app(memory)) as srv:
            with pg_server.connect() as conn:
                killed = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                      "WHERE application_name = 'diarist_killed'").fetchone()[0]
            assert killed >= 1
            answers = [httpx.post(f"{srv.url}/v1/apps/me/search", json={"query": "cat"}, headers=headers, timeout=30)
                       for _ in range(3)]
            answers.append(httpx.post(f"{srv.url}/v1/apps/me/facts", json={"text": "The dog is Rex."}, headers=headers,
                                      timeout=30))
        assert [a.status_code for a in answers] == [200, 200, 200, 201], [a.text for a in answers]
    finally:
        memory.close()
