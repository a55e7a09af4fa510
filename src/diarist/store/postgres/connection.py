"""Connecting to PostgreSQL: the location (never with the password), pgvector, migrations, a
connection pool, transactions and what failures mean to a user.

Transactions. A write transaction takes one connection from the pool for the thread that opened
it; store calls of that thread inside it join it (nesting joins, as in SQLite), other threads use
other connections and see only what is committed. Its first statement takes the store's write
lock, a transaction-level advisory lock keyed on the schema: writers are serialised, like
SQLite's one writer, and readers never wait. The lock is what keeps three things right:

- chunk ids grow in commit order (the dense cache extends by id): they are taken from a counter
  row inside the locked transaction, so no later commit can hold a smaller id;
- the term dictionary is shared by every app, a new term gets the largest id + 1 (SQLite's rowid
  rule) and a term no app uses any more is deleted; none of this is safe with two writers;
- read-modify-write of posting blocks and of ``expect`` (compare-and-swap) needs no retry.

Writes run at READ COMMITTED: every statement after the lock sees every earlier commit. Reads
that must agree (a version with the rows it describes) run in one REPEATABLE READ, READ ONLY
transaction: one snapshot. Single-statement reads run in autocommit.

An SQL error inside a transaction aborts it in PostgreSQL (in SQLite only the statement fails):
the store avoids raising them for expected cases (a duplicate key hash is found with ON CONFLICT).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote, urlsplit

from ...errors import ConfigError, DatabaseNotFound, MissingDependency, StoreError

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout
except ImportError as exc:  # pragma: no cover - depends on the extra being installed
    raise MissingDependency(
        f"PostgreSQL stores need psycopg 3 and psycopg-pool ({exc.name} is missing): "
        "pip install 'diarist[postgres]'"
    ) from None

from .migrations import migrate

#: Advisory lock classes (high 32 bits of the key; the low ones are the schema's oid).
WRITE_LOCK = 0x56455354  # "VEST"
MIGRATE_LOCK = 0x564D4947  # "VMIG"


def redact(url: str) -> str:
    """The URL without its password (in the user part or as a ``password=`` parameter)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}@{host}" if user else host
    query = "&".join(
        p for p in parts.query.split("&") if p and "password" not in p.split("=", 1)[0].lower()
    )
    # Not urlunsplit: it drops the empty host of a socket URL ("postgresql:///db?host=/run").
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "") + (
        f"#{parts.fragment}" if parts.fragment else "")


#: URL parameters that are diarist's, not libpq's (taken out of the URL before connecting):
#: parameter -> (keyword of ``PostgresStore``, type).
URL_OPTIONS: dict[str, tuple[str, type]] = {
    "pool_size": ("max_size", int),  # connections of one process's pool, at most
    "pool_timeout": ("timeout", float),  # seconds to wait for a free connection
    "write_lock_timeout": ("lock_timeout", float),  # seconds a writer waits for the write lock
}


def url_options(url: str) -> tuple[str, dict[str, Any]]:
    """The URL without diarist's own parameters (``URL_OPTIONS``), and their values by keyword:
    ``postgresql://me@db/mem?pool_size=20&write_lock_timeout=60`` -> ``max_size=20, lock_timeout=60.0``."""
    head, sep, query = url.partition("?")
    if not sep or "://" not in head:
        return url, {}
    query, hash_, fragment = query.partition("#")
    kept, found = [], {}
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if name not in URL_OPTIONS:
            kept.append(part)
            continue
        keyword, kind = URL_OPTIONS[name]
        try:
            number = kind(unquote(value))
            if not number > 0 or number != number:  # positive, not NaN
                raise ValueError
        except ValueError:
            raise ConfigError(
                f"{redact(url)}: {name}={unquote(value)!r} is not a positive {'integer' if kind is int else 'number'}"
            ) from None
        found[keyword] = number
    rest = "&".join(p for p in kept if p)
    return head + (f"?{rest}" if rest else "") + hash_ + fragment, found


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0].strip() if text else type(exc).__name__


def translate(exc: BaseException, where: str) -> StoreError:
    """A psycopg (or pool) failure as a diarist error that names the database and what to do."""
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, PoolClosed):
        return StoreError(f"{where}: this store was closed")
    if isinstance(exc, PoolTimeout):
        return StoreError(f"{where}: no database connection became free in time ({_first_line(exc)}); try again")
    text = _first_line(exc)
    if isinstance(exc, pg_errors.LockNotAvailable):
        return StoreError(f"{where} is locked by another writer for too long ({text}); try again")
    if isinstance(exc, pg_errors.DiskFull):
        return StoreError(f"the disk of the PostgreSQL server of {where} is full; nothing was stored")
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        return StoreError(f"{where} is read-only: diarist cannot write to it ({text})")
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return StoreError(f"{where}: the PostgreSQL user lacks a privilege diarist needs ({text})")
    if isinstance(exc, pg_errors.UniqueViolation):
        return StoreError(f"{where}: already stored ({text})")
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(f"{where}: the connection to the PostgreSQL server failed ({text}); is it running?")
    return StoreError(f"{where}: {text}")


class _Local(threading.local):
    conn: Any = None  # the connection of this thread's open transaction
    writing: bool = False
    depth: int = 0


class Connection:
    """A pool of connections to one database (and schema), with the store's transactions."""

    def __init__(self, url: str, *, create: bool, min_size: int = 1, max_size: int = 10,
                 timeout: float = 30.0, lock_timeout_s: float = 30.0, connect_timeout_s: int = 10):
        self.url = url
        self.location = redact(url)
        self._lock_timeout_ms = int(lock_timeout_s * 1000)
        self._local = _Local()
        params = self._params(url)
        self._connect_kwargs: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in params:
            self._connect_kwargs["connect_timeout"] = connect_timeout_s
        if "application_name" not in params:
            self._connect_kwargs["application_name"] = "diarist"
        first = self._connect_first(params, create)
        try:
            schema, oid = self._schema(first)
            self.schema = schema
            self.vector_type = self._ensure_vector(first, params)
            migrate(first, vector_type=self.vector_type, lock_key=(MIGRATE_LOCK << 32) | oid,
                    create=create, where=self.location)
        except psycopg.Error as exc:
            raise translate(exc, self.location) from None
        finally:
            first.close()
        self.write_key = (WRITE_LOCK << 32) | oid
        self.pool = ConnectionPool(
            url, min_size=min_size, max_size=max_size, kwargs=self._connect_kwargs, open=False,
            timeout=timeout, configure=self._configure, check=ConnectionPool.check_connection,
            name=f"diarist {self.location}",
        )
        try:
            self.pool.open(wait=True, timeout=timeout)
        except (PoolTimeout, psycopg.Error) as exc:
            self.pool.close()
            raise translate(exc, self.location) from None

    # -- opening ----------------------------------------------------------------------------

    def _params(self, url: str) -> dict[str, Any]:
        try:
            return conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            reason = _first_line(exc)
            secret = urlsplit(url).password
            if secret and secret in reason:  # libpq may quote the string it could not parse
                reason = reason.replace(secret, "***")
            raise StoreError(f"{self.location} is not a valid PostgreSQL URL ({reason})") from None

    def _connect_first(self, params: dict[str, Any], create: bool) -> psycopg.Connection:
        """One connection, made directly, so that its failure can be explained."""
        try:
            return psycopg.connect(self.url, **self._connect_kwargs)
        except psycopg.Error as exc:
            text = _first_line(exc)
            low = str(exc).lower()
            db = params.get("dbname") or params.get("user") or "the database"
            if "does not exist" in low and "database" in low:
                hint = "`diarist ingest` creates the tables, not the database" if not create else ""
                raise DatabaseNotFound(
                    f"no database {db!r} on the PostgreSQL server of {self.location}; create it "
                    f"(createdb {db}, or CREATE DATABASE) {hint}".rstrip()
                ) from None
            refused = ("authentication failed", "no password supplied", "pg_hba.conf", "role \"")
            if any(r in low for r in refused):
                raise StoreError(f"the PostgreSQL server refused the login for {self.location} ({text})") from None
            raise StoreError(
                f"cannot reach the PostgreSQL server for {self.location} ({text}); is it running, "
                "and is the host, port or socket right?"
            ) from None

    def _schema(self, conn: psycopg.Connection) -> tuple[str, int]:
        row = conn.execute(
            "SELECT current_schema(), (SELECT oid FROM pg_namespace WHERE nspname = current_schema()), "
            "current_setting('search_path')"
        ).fetchone()
        if row is None or row[0] is None:
            path = row[2] if row else "?"
            raise StoreError(
                f"{self.location}: no schema of the search_path ({path}) exists to keep diarist's tables "
                "in; create it (CREATE SCHEMA name) or set another one (options=-csearch_path=NAME)"
            )
        return row[0], int(row[1])

    def _ensure_vector(self, conn: psycopg.Connection, params: dict[str, Any]) -> str:
        """pgvector's type, qualified with its schema; creates the extension when allowed."""
        query = (
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'vector'"
        )
        row = conn.execute(query).fetchone()
        if row is None:
            db = params.get("dbname") or params.get("user") or "this database"
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except pg_errors.InsufficientPrivilege:
                raise StoreError(
                    f"{self.location}: the pgvector extension is not enabled in database {db!r} and this "
                    f"user may not enable it; as a superuser (or the database owner, where pgvector is "
                    f"trusted), run in {db!r}: CREATE EXTENSION vector;"
                ) from None
            except (pg_errors.UniqueViolation, pg_errors.DuplicateObject):
                pass  # another process created it at the same moment
            except psycopg.Error as exc:
                raise StoreError(
                    f"{self.location}: the pgvector extension is not installed on the PostgreSQL server "
                    f"({_first_line(exc)}); install pgvector (https://github.com/pgvector/pgvector), "
                    f"then run in {db!r}: CREATE EXTENSION vector;"
                ) from None
            row = conn.execute(query).fetchone()
            if row is None:
                raise StoreError(f"{self.location}: CREATE EXTENSION vector did not create it")
        return sql.Identifier(row[0]).as_string(conn) + ".vector"

    def _configure(self, conn: psycopg.Connection) -> None:
        # A writer waits this long for the write lock, then gives up with a clear error.
        conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{self._lock_timeout_ms}ms",))

    def close(self) -> None:
        self.pool.close()

    # -- transactions -----------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[psycopg.Cursor]:
        """One write transaction holding the write lock; an inner one joins the outer."""
        local = self._local
        if local.conn is not None:
            if not local.writing:
                raise RuntimeError("a store write inside a read snapshot")
            local.depth += 1
            try:
                yield local.conn.cursor()
            finally:
                local.depth -= 1
            return
        try:
            with self.pool.connection() as conn, conn.transaction():
                cur = conn.cursor()
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (self.write_key,))
                local.conn, local.writing, local.depth = conn, True, 1
                try:
                    yield cur
                finally:
                    local.conn, local.writing, local.depth = None, False, 0
        except (psycopg.Error, PoolTimeout, PoolClosed) as exc:
            raise translate(exc, self.location) from None

    @contextmanager
    def snapshot(self) -> Iterator[psycopg.Cursor]:
        """Reads that see one state of the database (joins this thread's open transaction)."""
        local = self._local
        if local.conn is not None:
            yield local.conn.cursor()
            return
        try:
            with self.pool.connection() as conn:
                cur = conn.cursor()
                cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                local.conn, local.writing = conn, False
                try:
                    yield cur
                finally:
                    local.conn = None
                    if conn.info.transaction_status != psycopg.pq.TransactionStatus.UNKNOWN:
                        conn.execute("COMMIT")  # also ends a transaction an error aborted
        except (psycopg.Error, PoolTimeout, PoolClosed) as exc:
            raise translate(exc, self.location) from None

    @contextmanager
    def single(self) -> Iterator[psycopg.Cursor]:
        """A cursor for one statement: autocommit, or this thread's open transaction."""
        local = self._local
        if local.conn is not None:
            yield local.conn.cursor()
            return
        try:
            with self.pool.connection() as conn:
                yield conn.cursor()
        except (psycopg.Error, PoolTimeout, PoolClosed) as exc:
            raise translate(exc, self.location) from None

    def read(self, query: str, params: tuple | list = ()) -> list[tuple]:
        with self.single() as cur:
            try:
                return cur.execute(query, params).fetchall()
            except psycopg.Error as exc:
                raise translate(exc, self.location) from None
