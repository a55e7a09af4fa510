"""The embedded default store: everything in one SQLite file (WAL, foreign keys, busy timeout).

Each method is a thin composition of the row-level modules beside it (records, postings,
vectors, keys) inside one transaction or one snapshot.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from pathlib import Path

import numpy as np

from ...dates import now_iso
from ...errors import StoreError
from ...lexical import postings as lexical_postings
from ..base import (
    AppCounts,
    AppVersion,
    ChunkRow,
    Conflict,
    DocLengths,
    IndexedChunk,
    Item,
    ItemSummary,
    ItemVersion,
    KeyRecord,
    PostingsRead,
    SampleChunk,
    Store,
    StoredChunk,
    SyncedFile,
    VectorBatch,
)
from . import backup as backups
from . import keys, postings, records, synced, vectors
from .compact import CompactReport, compact_database
from .connection import PAGE_SIZE, Connection, unknown_schema_objects


class SQLiteStore(Store):
    def __init__(self, path: str | Path = ":memory:", *, create: bool = True, busy_timeout_ms: int = 30_000):
        self._db = Connection(str(path), create=create, busy_timeout_ms=busy_timeout_ms)
        self.path = self._db.path
        self.location = self.path
        # True while a write that removed data could not truncate the write-ahead log yet (see
        # _forget): the next write of this store, or its close, tries again.
        self._unforgotten = False

    # -- plumbing ---------------------------------------------------------------------------

    def close(self) -> None:
        if self._unforgotten:
            self._forget(True)
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._db.write():
            yield
        self._forget(False)  # an outer transaction: deletes inside it could not checkpoint

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction for this thread's reads inside (see ``Store.snapshot``). The
        store has one connection: other threads of this process wait until the block ends."""
        with self._db.snapshot():
            yield

    def _forget(self, removed: bool) -> None:
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

    @staticmethod
    def _app_id(cur: sqlite3.Cursor, app: str) -> int | None:
        row = cur.execute("SELECT id FROM apps WHERE name = ?", (app,)).fetchone()
        return row[0] if row else None

    @staticmethod
    def _version(cur: sqlite3.Cursor, app: str) -> tuple[int, AppVersion] | None:
        row = cur.execute(
            "SELECT id, epoch, generation, purge_generation FROM apps WHERE name = ?", (app,)
        ).fetchone()
        return (row[0], AppVersion(row[1], row[2], row[3])) if row else None

    @staticmethod
    def _ensure_app(cur: sqlite3.Cursor, app: str) -> int:
        created = cur.execute(
            "INSERT OR IGNORE INTO apps (name, created_at, epoch) VALUES (?, ?, ?)",
            (app, now_iso(), secrets.token_hex(16)),
        ).rowcount == 1
        app_id = cur.execute("SELECT id FROM apps WHERE name = ?", (app,)).fetchone()[0]
        if created:  # an existing app without statistics stays untrusted until reindexed
            postings.reset_stats(cur, app_id)
        return app_id

    @staticmethod
    def _bump(cur: sqlite3.Cursor, app_id: int, purge: bool) -> None:
        cur.execute(
            "UPDATE apps SET generation = generation + 1, "
            "purge_generation = purge_generation + ? WHERE id = ?",
            (1 if purge else 0, app_id),
        )

    # -- meta and apps ----------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self._db.read("SELECT value FROM meta WHERE key = ?", (key,))
        return row[0][0] if row else None

    def claim_meta(self, values: Mapping[str, str]) -> dict[str, str]:
        keys_ = list(values)
        marks = ",".join("?" * len(keys_))
        stored = dict(self._db.read(f"SELECT key, value FROM meta WHERE key IN ({marks})", keys_))
        if all(k in stored for k in keys_):
            return stored  # nothing to claim: no write (read-only files stay readable)
        with self._db.write() as cur:
            cur.executemany("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", list(values.items()))
            return dict(cur.execute(f"SELECT key, value FROM meta WHERE key IN ({marks})", keys_).fetchall())

    def apps(self) -> list[str]:
        return [r[0] for r in self._db.read("SELECT name FROM apps ORDER BY name")]

    def app_version(self, app: str) -> AppVersion | None:
        with self._db.snapshot() as cur:
            found = self._version(cur, app)
        return found[1] if found else None

    def delete_app(self, app: str) -> bool:
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            if app_id is None:
                return False
            terms = [r[0] for r in cur.execute("SELECT DISTINCT term_id FROM lex_postings WHERE app_id = ?", (app_id,))]
            cur.execute("DELETE FROM apps WHERE id = ?", (app_id,))  # cascades everywhere
            postings.Blocks(cur, app_id).drop_unused_terms(terms)
        self._forget(True)
        return True

    # -- items --------------------------------------------------------------------------------

    def content_hashes(self, app: str, kind: str, external_ids: Sequence[str]) -> dict[str, str]:
        records.table(kind)
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            if app_id is None or not external_ids:
                return {}
            return records.content_hashes(cur, app_id, kind, external_ids)

    def put_items(
        self,
        app: str,
        items: Sequence[tuple[Item, Sequence[IndexedChunk]]],
        *,
        expect: Mapping[tuple[str, str], str | None] | None = None,
        archive: bool = False,
    ) -> None:
        if not items and not expect:
            return
        with self._db.write() as cur:
            # Compare before anything is written (an app that does not exist holds nothing).
            existing = self._app_id(cur, app)
            for (kind, external_id), wanted in (expect or {}).items():
                now = None
                if existing is not None:
                    now = records.content_hashes(cur, existing, kind, [external_id]).get(external_id)
                if now != wanted:
                    raise Conflict(f"{kind} {external_id!r} of app {app!r} changed meanwhile")
            if not items:
                return
            app_id = self._ensure_app(cur, app)
            replaced = self._put(cur, app_id, items, archive)
            self._bump(cur, app_id, purge=replaced)
        self._forget(replaced)

    @classmethod
    def _put(cls, cur: sqlite3.Cursor, app_id: int, items: Sequence[tuple[Item, Sequence[IndexedChunk]]],
             archive: bool) -> bool:
        """Insert the items in runs of new ones, one statement per table and run; an item already
        stored (or given earlier in the call) ends the run and is replaced. Postings are
        written once per run. Returns whether anything was replaced."""
        blocks = postings.Blocks(cur, app_id)
        pending = lexical_postings.Batch(blocks)
        stored = {kind: set(records.item_pks(cur, app_id, kind, [i.external_id for i, _ in items if i.kind == kind]))
                  for kind in dict.fromkeys(item.kind for item, _ in items)}
        run: list[tuple[Item, Sequence[IndexedChunk]]] = []
        replaced = False
        for item, chunks in items:
            if item.external_id in stored[item.kind]:
                cls._insert_run(cur, blocks, pending, run)
                run = []
                pending.flush()  # the delete reads the blocks and statistics
                if archive:
                    old = records.get_item(cur, app_id, item.kind, item.external_id)
                    assert old is not None
                    records.archive_item(cur, app_id, old, now_iso())
                replaced |= cls._delete(cur, app_id, item.kind, item.external_id)
            stored[item.kind].add(item.external_id)  # a second copy in this call replaces it
            run.append((item, chunks))
        cls._insert_run(cur, blocks, pending, run)
        pending.flush()
        return replaced

    @staticmethod
    def _insert_run(cur: sqlite3.Cursor, blocks: postings.Blocks, pending: lexical_postings.Batch,
                    run: Sequence[tuple[Item, Sequence[IndexedChunk]]]) -> None:
        if not run:
            return
        # Read before the inserts: the blocks of the run's chunk ids past it cannot exist yet.
        blocks.no_postings_above(records.last_chunk_id(cur))
        for indexed in records.insert_items(cur, blocks.app_id, run):
            pending.add(indexed)  # one call per item: term ids as item-by-item writes give them

    @staticmethod
    def _delete(cur: sqlite3.Cursor, app_id: int, kind: str, external_id: str) -> bool:
        pk = records.item_pk(cur, app_id, kind, external_id)
        if pk is None:
            return False
        lexical_postings.remove(postings.Blocks(cur, app_id), records.lexical_chunks(cur, kind, pk))
        records.delete_item_row(cur, kind, pk)
        return True

    def delete_item(self, app: str, kind: str, external_id: str) -> bool:
        records.table(kind)
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            if app_id is None or not self._delete(cur, app_id, kind, external_id):
                return False
            records.delete_versions(cur, app_id, kind, external_id)  # its history goes with it
            self._bump(cur, app_id, purge=True)
        self._forget(True)
        return True

    def get_item(self, app: str, kind: str, external_id: str) -> Item | None:
        records.table(kind)
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return None if app_id is None else records.get_item(cur, app_id, kind, external_id)

    def list_items(self, app: str, kind: str, limit: int, offset: int, *, newest_first: bool = False) -> list[ItemSummary]:
        records.table(kind)
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return [] if app_id is None else records.list_items(cur, app_id, kind, limit, offset, newest_first)

    def item_history(self, app: str, kind: str, external_id: str) -> list[ItemVersion]:
        records.table(kind)
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return [] if app_id is None else records.item_history(cur, app_id, kind, external_id)

    def _append_versions(self, app: str, versions: Sequence[ItemVersion]) -> None:
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            for version in versions:
                records.archive_item(cur, app_id, version.item, version.replaced_at)

    def chunk_ids_where(self, app: str, where: Mapping[str, Any]) -> np.ndarray:
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return np.zeros(0, np.int64) if app_id is None else records.chunk_ids_where(cur, app_id, where)

    def counts(self, app: str) -> AppCounts | None:
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            if app_id is None:
                return None
            count = lambda sql: cur.execute(sql, (app_id,)).fetchone()[0]  # noqa: E731
            return AppCounts(
                sessions=count("SELECT count(*) FROM sessions WHERE app_id = ?"),
                messages=count(
                    "SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.app_id = ?"
                ),
                facts=count("SELECT count(*) FROM facts WHERE app_id = ?"),
                chunks=count("SELECT count(*) FROM chunks WHERE app_id = ?"),
            )

    # -- chunks ---------------------------------------------------------------------------------

    def fetch_chunks(self, app: str, chunk_ids: Sequence[int]) -> dict[int, ChunkRow]:
        if not chunk_ids:
            return {}
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return {} if app_id is None else records.fetch_chunks(cur, app_id, chunk_ids)

    def sample_chunk(self, app: str) -> SampleChunk | None:
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return None if app_id is None else records.sample_chunk(cur, app_id)

    def item_chunks(self, app: str, kind: str, external_id: str) -> list[StoredChunk]:
        records.table(kind)
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            pk = None if app_id is None else records.item_pk(cur, app_id, kind, external_id)
            return [] if pk is None else records.item_chunks(cur, kind, pk)

    # -- the channels' storage --------------------------------------------------------------------

    def read_vectors(self, app: str, after_id: int = 0) -> VectorBatch:
        with self._db.snapshot() as cur:
            found = self._version(cur, app)
            if found is None:
                return VectorBatch(None, np.zeros(0, np.int64), np.zeros((0, 0), np.int8))
            ids, matrix = vectors.read_vectors(cur, found[0], after_id)
        return VectorBatch(found[1], ids, matrix)

    def doc_lengths(self, app: str) -> DocLengths:
        with self._db.snapshot() as cur:
            found = self._version(cur, app)
            if found is None:
                return DocLengths(None, np.zeros(0, np.int64), np.zeros(0, np.float64))
            ids, lengths = postings.doc_lengths(cur, found[0])
        return DocLengths(found[1], ids, lengths)

    def read_postings(self, app: str, terms: Collection[str]) -> PostingsRead:
        with self._db.snapshot() as cur:
            found = self._version(cur, app)
            if found is None:
                return PostingsRead(None, None, {})
            app_id, version = found
            blocks = postings.read_blocks_for_terms(cur, app_id, terms) if terms else {}
            return PostingsRead(version, postings.stats(cur, app_id), blocks)

    def mark_lexical_stale(self, app: str) -> None:
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            if app_id is not None:
                cur.execute("DELETE FROM lex_stats WHERE app_id = ?", (app_id,))

    def rebuild_lexical(self, app: str) -> int:
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            if app_id is None:
                return 0
            count = postings.rebuild(cur, app_id)
            self._bump(cur, app_id, purge=False)
        return count

    # -- synced files -----------------------------------------------------------------------------

    def synced_files(self, app: str) -> list[SyncedFile]:
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return [] if app_id is None else synced.read_all(cur, app_id)

    def record_synced_files(self, app: str, put: Sequence[SyncedFile], drop: Sequence[tuple[str, str]] = ()) -> None:
        if not put and not drop:
            return
        with self._db.write() as cur:
            app_id = self._ensure_app(cur, app) if put else self._app_id(cur, app)
            if app_id is not None:
                synced.write(cur, app_id, put, drop)

    # -- API keys ---------------------------------------------------------------------------------

    def add_key(self, app: str, key_hash: str, prefix: str, label: str | None, created_at: str) -> KeyRecord:
        with self._db.write() as cur:
            return keys.add_key(cur, app, key_hash, prefix, label, created_at)

    def find_keys(self, *, key_id: int | None = None, key_hash: str | None = None,
                  prefix: str | None = None) -> list[KeyRecord]:
        given = [(c, v) for c, v in (("id", key_id), ("key_hash", key_hash), ("prefix", prefix)) if v is not None]
        if len(given) != 1:
            raise ValueError("find_keys takes exactly one of key_id, key_hash, prefix")
        with self._db.snapshot() as cur:
            return keys.find_keys(cur, *given[0])

    def list_keys(self, app: str | None = None, *, include_revoked: bool = False) -> list[KeyRecord]:
        with self._db.snapshot() as cur:
            return keys.list_keys(cur, app, include_revoked)

    def revoke_key(self, key_id: int, at: str) -> KeyRecord | None:
        with self._db.write() as cur:
            return keys.revoke_key(cur, key_id, at)

    def key_hashes(self) -> dict[int, str]:
        return dict(self._db.read("SELECT id, key_hash FROM api_keys"))

    # -- backup -----------------------------------------------------------------------------------

    def backup(self, dest: str, *, overwrite: bool = False) -> None:
        """A consistent copy into a new file ``dest``, taken while writers run (SQLite's online
        backup API; see ``vestige.store.sqlite.backup``)."""
        backups.backup_database(self._db, dest, overwrite=overwrite)

    # -- size -------------------------------------------------------------------------------------

    def page_size(self) -> int:
        """The file's page size in bytes (files of earlier versions: 4 KiB; new ones: 16 KiB)."""
        with self._db.snapshot() as cur:
            return int(cur.execute("PRAGMA page_size").fetchone()[0])

    def unknown_schema_objects(self) -> list[str]:
        """Tables, indexes, triggers or views in the file that vestige did not create."""
        with self._db.snapshot() as cur:
            return unknown_schema_objects(cur.connection)

    def compacted_page_size(self) -> int | None:
        """What ``vestige compact`` rewrites a file in (``connection.PAGE_SIZE``); None in memory."""
        return None if self._db.in_memory else PAGE_SIZE

    def index_directory(self) -> Path | None:
        """``<file>.hnsw/``, beside the database file (None in memory, or for a ``file:`` URI)."""
        if self._db.in_memory or not self.path or self.path.startswith("file:"):
            return None
        return Path(f"{self.path}.hnsw")

    @classmethod
    def restore(cls, src: str, location: str, *, force: bool = False) -> backups.RestoreReport:
        """See ``vestige.store.sqlite.backup.restore_database``."""
        if location == ":memory:":
            return super().restore(src, location, force=force)
        return backups.restore_database(src, location, force=force)

    @classmethod
    def compact(cls, location: str) -> CompactReport:
        """See ``vestige.store.sqlite.compact``."""
        if location == ":memory:":
            return super().compact(location)
        return compact_database(location)

    def size_bytes(self) -> int | None:
        if self._db.in_memory or not Path(self.path).exists():
            return None
        return Path(self.path).stat().st_size
