"""Opening a SQLite file, its transactions, and what its failures mean to a user.

One connection per store, guarded by a re-entrant lock (threads of one server share it). Writes
run in ``BEGIN IMMEDIATE`` transactions that nest by joining; reads that must agree with each
other run in one deferred transaction, which in WAL mode is a snapshot.
"""

from __future__ import annotations

import functools
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Any
from contextlib import contextmanager
from pathlib import Path

from ...errors import DatabaseNotFound, NotADatabase, SchemaError, StoreError
from ...files import not_regular
from .migrations import migrate


def _kind(exc: sqlite3.Error) -> str:
    """What went wrong, by SQLite's primary result code (Python 3.11+), else by its message."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        name = {
            sqlite3.SQLITE_NOTADB: "notadb", sqlite3.SQLITE_CORRUPT: "corrupt", sqlite3.SQLITE_READONLY: "readonly",
            sqlite3.SQLITE_FULL: "full", sqlite3.SQLITE_BUSY: "busy", sqlite3.SQLITE_LOCKED: "busy",
            sqlite3.SQLITE_CANTOPEN: "cantopen", sqlite3.SQLITE_IOERR: "ioerr", sqlite3.SQLITE_PERM: "readonly",
        }.get(code & 0xFF)
        if name:
            return name
    low = str(exc).lower()
    for words, name in (
        (("file is not a database",), "notadb"), (("malformed", "corrupt"), "corrupt"),
        (("readonly", "read-only"), "readonly"), (("disk is full",), "full"), (("locked", "busy"), "busy"),
        (("unable to open",), "cantopen"), (("disk i/o error",), "ioerr"),
    ):
        if any(w in low for w in words):
            return name
    return "other"


def _folder_read_only(path: str) -> bool:
    folder = Path(path).expanduser().parent
    return folder.is_dir() and not os.access(folder, os.W_OK)


def translate(exc: sqlite3.Error, path: str) -> StoreError:
    """A sqlite3 failure as a diarist error that names the file and what to do."""
    text = str(exc)
    kind = _kind(exc)
    if kind == "notadb":
        return NotADatabase(f"{path} is not a diarist database (not a SQLite file)")
    if kind == "corrupt":
        return StoreError(f"{path} is corrupt ({text}); restore it from a backup")
    if kind == "readonly":
        if _folder_read_only(path):
            return StoreError(f"{path} is read-only, and so is its folder: diarist cannot write to it, nor read it "
                              f"without its -shm file beside it ({text})")
        return StoreError(f"{path} is read-only: diarist cannot write to it ({text})")
    if kind == "full":
        return StoreError(f"the disk holding {path} is full ({text}); this write was rolled back, "
                          "nothing of it was stored: free some space and try again")
    if kind == "busy":
        return StoreError(f"{path} is locked by another process for too long ({text}); try again")
    if kind == "cantopen":
        if _folder_read_only(path):
            return StoreError(f"cannot open {path}: its folder is read-only (a read-only file system or no "
                              "permission), and diarist needs to write its -wal and -shm files beside it")
        return StoreError(f"cannot open {path} ({text})")
    if kind == "ioerr":
        why = "its folder is read-only; " if _folder_read_only(path) else ""
        return StoreError(f"disk I/O error on {path} ({text}); {why}check the disk and the file system")
    return StoreError(f"{path}: {text}")


#: Page size of a new database file. Posting blocks (up to 32 KiB) and chunk rows overflow 4 KiB
#: pages into chains read a page at a time: at a million chunks, 16 KiB pages made the file 27%
#: smaller (2.7 against 3.7 GB) and a question's posting read 25% faster (1.10 against 1.46 ms),
#: fetching 32 hits' text about as fast (0.37 against 0.31 ms) (BENCHMARKS.md, stop 22).
PAGE_SIZE = 16_384
#: The write-ahead log is checkpointed after this many pages (SQLite's default: 1,000, 16 MB
#: at 16 KiB pages) and cut back to WAL_BYTES after a checkpoint.
WAL_PAGES = 128
WAL_BYTES = 2 * 1024 * 1024
#: The page cache, per connection, in KiB (SQLite's default: 2 MiB, 125 pages of 16 KiB): a
#: search reads its hits' rows from random pages (a grouped search of 200 memories, ~280 rows)
#: plus its terms' postings, more than the default holds, so every search read them again from
#: the OS. 32 MiB holds a 10k-chunk app's rows (18 MiB); filled only as pages are read.
CACHE_KIB = 32 * 1024


_SCHEMA_OBJECTS = "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"


def _definition(conn: sqlite3.Connection, kind: str, name: str) -> tuple[Any, ...]:
    """What a schema object does, independent of how its SQL was spelled: a table's columns
    (name, type, NOT NULL, default, key), its foreign keys with their ON DELETE/UPDATE actions and
    whether it has a rowid; another object's SQL, comments dropped, spaces collapsed, lower case."""
    if kind == "table":
        quoted = name.replace('"', '""')
        columns = tuple(tuple(row) for row in conn.execute(f'PRAGMA table_info("{quoted}")'))
        foreign = tuple(sorted(tuple(row) for row in conn.execute(f'PRAGMA foreign_key_list("{quoted}")')))
        return columns, foreign, _normalised(_sql(conn, name)).endswith("without rowid")
    return (_normalised(_sql(conn, name)),)


def _sql(conn: sqlite3.Connection, name: str) -> str:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return (row[0] if row else None) or ""


def _normalised(sql: str) -> str:
    return " ".join(re.sub(r"--[^\n]*", " ", sql).replace("(", " ( ").replace(")", " ) ").replace(",", " , ").split()).lower()


@functools.lru_cache(maxsize=1)
def known_schema_objects() -> dict[tuple[str, str], tuple[Any, ...]]:
    """(type, name) of every table, index, trigger and view diarist's migrations create, with its
    definition (``_definition``)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(conn)
        return {(kind, name): _definition(conn, kind, name) for kind, name in conn.execute(_SCHEMA_OBJECTS).fetchall()}
    finally:
        conn.close()


def unknown_schema_objects(conn: sqlite3.Connection) -> list[str]:
    """Schema objects of a file that diarist did not make ("trigger 'keep_text'", ...), or made
    and someone redefined under the same name ("table 'messages' (its definition differs ...)"): a
    trigger ``AFTER DELETE ON messages`` copying the text elsewhere, or ``messages`` rebuilt
    without ``ON DELETE CASCADE``, would keep every deleted message, so restore refuses them and
    ``diarist doctor`` reports them. SQLite's own (``sqlite_*``) pass."""
    rows = conn.execute(_SCHEMA_OBJECTS).fetchall()
    known = known_schema_objects()
    found = []
    for kind, name in sorted(rows):
        if (kind, name) not in known:
            found.append(f"{kind} {name!r}")
        elif _definition(conn, kind, name) != known[(kind, name)]:
            found.append(f"{kind} {name!r} (its definition differs from diarist's: columns, foreign keys or "
                         "their ON DELETE actions)")
    return found


def check_sidecars(file: Path) -> None:
    """StoreError when the database's -wal, -shm or -journal name holds something that is not a
    regular file (a FIFO, a folder, a link to /dev/zero): SQLite said only "unable to open"."""
    for sidecar in (f"{file}-wal", f"{file}-shm", f"{file}-journal"):
        if (what := not_regular(sidecar)) is not None:
            raise StoreError(f"{sidecar} is {what}: SQLite keeps {file.name}'s "
                             f"{sidecar.rpartition('-')[2]} file there; move it away")


class Connection:
    """The store's one connection: opening rules, pragmas, migrations, transactions."""

    def __init__(self, path: str, *, create: bool, busy_timeout_ms: int):
        self.path = path
        self.in_memory = path == ":memory:"
        if not self.in_memory:
            try:
                file = Path(path).expanduser()
                self.path = str(file)
                self.path.encode("utf-8")
                if not file.exists():
                    if not create:
                        raise DatabaseNotFound(f"no database at {file}; `diarist ingest` creates one")
                    file.parent.mkdir(parents=True, exist_ok=True)
                elif (what := not_regular(file)) is not None:  # /dev/zero, a FIFO, a folder
                    raise NotADatabase(f"{file} is {what}, not a diarist database (a regular file)")
                check_sidecars(file)
            except (OSError, ValueError, UnicodeError, RuntimeError) as exc:  # no permission, a NUL, ~nouser...
                reason = getattr(exc, "strerror", None) or str(exc)
                raise StoreError(f"cannot open {path!r}: {reason}") from None
        self.lock = threading.RLock()
        self._depth = 0
        try:
            self.conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
            )
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from None
        except (ValueError, UnicodeError) as exc:  # a NUL in the path
            raise StoreError(f"cannot open {path!r}: {exc}") from None
        try:
            self._setup(busy_timeout_ms)
        except BaseException as exc:
            self.conn.close()  # a file refused is not left open
            if isinstance(exc, sqlite3.Error):
                raise translate(exc, self.path) from None
            raise

    def _setup(self, busy_timeout_ms: int) -> None:
        conn = self.conn
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        # One statement, so one snapshot: read apart, another process creating the schema in
        # between made a fresh file look like another program's database (version 0, tables).
        version, tables = conn.execute(
            "SELECT (SELECT user_version FROM pragma_user_version), "
            "(SELECT count(*) FROM sqlite_master WHERE type = 'table')"
        ).fetchone()  # fails on a foreign file
        if version == 0 and tables:
            raise NotADatabase(f"{self.path} is a SQLite database of another program (no diarist schema)")
        if version == 0 and not self.in_memory:
            # A new file: set before its first page is written (and before WAL mode, which
            # fixes the size). An existing file keeps the size it was made with.
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        if not self.in_memory:
            self._enter_wal(busy_timeout_ms)
        if not self.in_memory:
            # A small commit writes every page it touches to the log, 16 KiB each (5 small
            # sessions: a 1.79 MB -wal), and SQLite's default checkpoint every 1,000 pages let
            # the log grow to 16 MB and stay that size. Checkpointing every WAL_PAGES pages
            # and truncating the log back to WAL_BYTES after each bounds it near WAL_BYTES plus
            # one transaction (RELIABILITY.md, "Write-ahead log size").
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_PAGES}")
            conn.execute(f"PRAGMA journal_size_limit = {WAL_BYTES}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        # Forgetting is real: freed pages are overwritten with zeros, whatever this SQLite build's
        # compile-time default is (see checkpoint() for the copy in the write-ahead log).
        conn.execute("PRAGMA secure_delete = ON")
        try:
            migrate(conn)
        except SchemaError as exc:
            raise SchemaError(f"{self.path}: {exc}") from None

    def _enter_wal(self, busy_timeout_ms: int) -> None:
        """Switch the file into WAL mode (recorded in the file: later opens find it there).

        The switch needs an exclusive lock, and SQLite answers SQLITE_BUSY at once, without the
        busy handler, to the loser of two connections that each hold a shared lock and want it
        (deadlock avoidance): two processes opening a new file at once made one fail with
        "database is locked". The statement holds no lock once it has failed, so waiting and
        trying again is the busy wait SQLite skipped, bounded by the same busy timeout."""
        deadline = time.monotonic() + busy_timeout_ms / 1000
        delay = 0.001
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
                busy = code & 0xFF == sqlite3.SQLITE_BUSY if code is not None else "locked" in str(exc)
                if not busy or time.monotonic() >= deadline:
                    raise
            time.sleep(delay)
            delay = min(2 * delay, 0.05)

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Cursor]:
        """One write transaction; an inner one joins the outer."""
        with self.lock:
            cur = self.conn.cursor()
            if self._depth:
                self._depth += 1
                try:
                    yield cur
                finally:
                    self._depth -= 1
                return
            self._depth = 1
            try:
                cur.execute("BEGIN IMMEDIATE")
                yield cur
                cur.execute("COMMIT")
            except BaseException as exc:
                # A failed COMMIT (disk full) may already have rolled back: never mask it.
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise translate(exc, self.path) from None
                raise
            finally:
                self._depth = 0

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Cursor]:
        """Reads that see one state of the database (joins an open write transaction)."""
        with self.lock:
            cur = self.conn.cursor()
            if self.conn.in_transaction:
                yield cur
                return
            try:
                cur.execute("BEGIN")
                yield cur
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from None
            finally:
                if self.conn.in_transaction:
                    try:
                        self.conn.execute("COMMIT")
                    except sqlite3.Error as exc:  # on a corrupt file even this fails: never raw
                        if self.conn.in_transaction:
                            self.conn.execute("ROLLBACK")
                        raise translate(exc, self.path) from None

    # One statement reads one state of the file: a snapshot (PostgreSQL's runs in autocommit).
    single = snapshot

    def checkpoint(self, wait_ms: int = 100) -> bool:
        """Copy the write-ahead log into the database and truncate it, so that text a delete
        removed survives in neither file. False when a reader of another connection still
        holds an older snapshot (the log is then truncated by a later checkpoint), or another
        writer holds the lock. A TRUNCATE checkpoint waits on the busy handler for such readers:
        with the full busy timeout it held this connection (and its lock) for 30 s behind one
        long read, so it waits at most ``wait_ms`` here."""
        if self.in_memory:
            return True
        with self.lock:
            if self.conn.in_transaction:
                return False
            try:
                timeout = self.conn.execute("PRAGMA busy_timeout").fetchone()[0]
                self.conn.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
                try:
                    busy, _, _ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                finally:
                    self.conn.execute(f"PRAGMA busy_timeout = {int(timeout)}")
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from None
            return busy == 0

    def read(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        with self.lock:
            try:
                return self.conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from None
