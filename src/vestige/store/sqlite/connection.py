"""Opening a SQLite file, its transactions, and what its failures mean to a user.

One connection per store, guarded by a re-entrant lock (threads of one server share it). Writes
run in ``BEGIN IMMEDIATE`` transactions that nest by joining; reads that must agree with each
other run in one deferred transaction, which in WAL mode is a snapshot.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...errors import DatabaseNotFound, NotADatabase, SchemaError, StoreError
from .migrations import migrate


def translate(exc: sqlite3.Error, path: str) -> StoreError:
    """A sqlite3 failure as a vestige error that names the file and what to do."""
    text = str(exc)
    low = text.lower()
    if "file is not a database" in low:
        return NotADatabase(f"{path} is not a vestige database (not a SQLite file)")
    if "malformed" in low or "corrupt" in low:
        return StoreError(f"{path} is corrupt ({text}); restore it from a backup")
    if "readonly" in low or "read-only" in low:
        return StoreError(f"{path} is read-only: vestige cannot write to it ({text})")
    if "disk is full" in low or "database or disk is full" in low:
        return StoreError(f"the disk holding {path} is full; nothing was stored")
    if "locked" in low or "busy" in low:
        return StoreError(f"{path} is locked by another process for too long ({text}); try again")
    if "unable to open" in low:
        return StoreError(f"cannot open {path} ({text})")
    return StoreError(f"{path}: {text}")


class Connection:
    """The store's one connection: opening rules, pragmas, migrations, transactions."""

    def __init__(self, path: str, *, create: bool, busy_timeout_ms: int):
        self.path = path
        self.in_memory = path == ":memory:"
        if not self.in_memory:
            file = Path(path).expanduser()
            self.path = str(file)
            if not file.exists():
                if not create:
                    raise DatabaseNotFound(f"no database at {file}; `vestige ingest` creates one")
                file.parent.mkdir(parents=True, exist_ok=True)
            elif file.is_dir():
                raise NotADatabase(f"{file} is a folder, not a vestige database")
        self.lock = threading.RLock()
        self._depth = 0
        try:
            self.conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
            )
            self._setup(busy_timeout_ms)
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from None

    def _setup(self, busy_timeout_ms: int) -> None:
        conn = self.conn
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]  # fails on a foreign file
        if version == 0:
            tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
            if tables:
                raise NotADatabase(f"{self.path} is a SQLite database of another program (no vestige schema)")
        if not self.in_memory:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        # Forgetting is real: freed pages are overwritten with zeros, whatever this SQLite build's
        # compile-time default is (see checkpoint() for the copy in the write-ahead log).
        conn.execute("PRAGMA secure_delete = ON")
        try:
            migrate(conn)
        except SchemaError as exc:
            raise SchemaError(f"{self.path}: {exc}") from None

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
                    self.conn.execute("COMMIT")

    def checkpoint(self) -> bool:
        """Copy the write-ahead log into the database and truncate it, so that text a delete
        removed survives in neither file. False when a reader of another connection still
        holds an older snapshot (the log is then truncated by a later checkpoint)."""
        if self.in_memory:
            return True
        with self.lock:
            if self.conn.in_transaction:
                return False
            try:
                busy, _, _ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from None
            return busy == 0

    def read(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        with self.lock:
            try:
                return self.conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from None
