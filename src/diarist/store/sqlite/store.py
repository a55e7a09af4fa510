"""The embedded default store: everything in one SQLite file (WAL, foreign keys, busy timeout).

The contract's methods are ``SQLStore``'s (``store/sql``), with SQLite's dialect; this class
opens the file, keeps forgetting real (``_after_write``) and offers what only a file has:
backup, restore, compact, its page size and the HNSW folder beside it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ...errors import StoreError
from ..sql import SQLStore
from . import backup as backups
from .compact import CompactReport, compact_database
from .connection import PAGE_SIZE, Connection, unknown_schema_objects
from .dialect import DIALECT


class SQLiteStore(SQLStore):
    dialect = DIALECT

    def __init__(self, path: str | Path = ":memory:", *, create: bool = True, busy_timeout_ms: int = 30_000):
        self._db = Connection(str(path), create=create, busy_timeout_ms=busy_timeout_ms)
        self.path = self._db.path
        self.location = self.path
        # True while a write that removed data could not truncate the write-ahead log yet (see
        # _after_write): the next write of this store, or its close, tries again.
        self._unforgotten = False

    # -- plumbing ---------------------------------------------------------------------------

    def _after_write(self, removed: bool) -> None:
        """After a committed write that removed data (``removed``), or while an earlier one is
        pending: checkpoint the write-ahead log into the database and truncate it. With
        ``secure_delete`` on, the freed bytes are zeros in the database file, so after this no
        copy of the removed text is left in ``-wal``, ``-shm`` or the file itself.

        The checkpoint cannot finish while a reader of another connection (another process, or
        another ``Memory`` on the file) holds a snapshot older than the delete: that snapshot
        still reads the old pages, in the log. It is then left pending, and the next write or
        ``close`` of this store retries it; SQLite also checkpoints when the last connection to
        the file closes. The delete itself is committed either way, and never fails for this."""
        if not (removed or self._unforgotten):
            return
        try:
            self._unforgotten = not self._db.checkpoint()
        except StoreError:  # the data is deleted; only the log's copy waits for the next write
            self._unforgotten = True

    # -- backup -----------------------------------------------------------------------------------

    def backup(self, dest: str, *, overwrite: bool = False) -> None:
        """A consistent copy into a new file ``dest``, taken while writers run (SQLite's online
        backup API; see ``diarist.store.sqlite.backup``)."""
        backups.backup_database(self._db, dest, overwrite=overwrite)

    # -- size -------------------------------------------------------------------------------------

    def page_size(self) -> int:
        """The file's page size in bytes (files of earlier versions: 4 KiB; new ones: 16 KiB)."""
        with self._db.snapshot() as cur:
            return int(cur.execute("PRAGMA page_size").fetchone()[0])

    def unknown_schema_objects(self) -> list[str]:
        """Tables, indexes, triggers or views in the file that diarist did not create."""
        with self._db.snapshot() as cur:
            return unknown_schema_objects(cur.connection)

    def translate_error(self, exc: BaseException) -> StoreError | None:
        """A sqlite3 error as the StoreError it means (``connection.translate``)."""
        from .connection import translate

        return translate(exc, self.location) if isinstance(exc, sqlite3.Error) else None

    def compacted_page_size(self) -> int | None:
        """What ``diarist compact`` rewrites a file in (``connection.PAGE_SIZE``); None in memory."""
        return None if self._db.in_memory else PAGE_SIZE

    def index_directory(self) -> Path | None:
        """``<file>.hnsw/``, beside the database file (None in memory, or for a ``file:`` URI)."""
        if self._db.in_memory or not self.path or self.path.startswith("file:"):
            return None
        return Path(f"{self.path}.hnsw")

    @classmethod
    def restore(cls, src: str, location: str, *, force: bool = False) -> backups.RestoreReport:
        """See ``diarist.store.sqlite.backup.restore_database``."""
        if location == ":memory:":
            return super().restore(src, location, force=force)
        return backups.restore_database(src, location, force=force)

    @classmethod
    def compact(cls, location: str) -> CompactReport:
        """See ``diarist.store.sqlite.compact``."""
        if location == ":memory:":
            return super().compact(location)
        return compact_database(location)

    def size_bytes(self) -> int | None:
        if self._db.in_memory or not Path(self.path).exists():
            return None
        return Path(self.path).stat().st_size
