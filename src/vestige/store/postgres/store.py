"""``PostgresStore``: the store contract on PostgreSQL + pgvector.

Each method is a thin composition of the row-level modules beside it (records, postings,
vectors, keys) inside one write transaction or one snapshot, method for method as in the SQLite
store (``store/sqlite/store.py``), which is the reference.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from ...dates import now_iso
from ...lexical import postings as lexical_postings
from ..base import (
    AppCounts,
    AppVersion,
    ChunkRow,
    Conflict,
    DocLengths,
    IndexedChunk,
    Item,
    ItemVersion,
    ItemSummary,
    KeyRecord,
    LexicalStats,
    PostingsRead,
    SampleChunk,
    Store,
    StoredChunk,
    SyncedFile,
    VectorBatch,
)
from . import dense, keys, postings, records, synced, vectors
from .connection import Connection, url_options
from .text import from_db, to_db

if TYPE_CHECKING:
    import psycopg


class PostgresStore(Store):
    """A vestige store in one PostgreSQL database (and schema): ``postgresql://user@host/db``.

    ``min_size``/``max_size``: the connection pool (threads of one process share it; default
    1 and 10); ``timeout``: seconds to wait for a free connection (30); ``lock_timeout``: seconds
    a writer waits for the write lock before giving up (30). The URL may carry the last three as
    ``pool_size=``, ``pool_timeout=`` and ``write_lock_timeout=`` (taken out before connecting:
    how ``VESTIGE_DB`` sizes the pools of ``vestige serve`` workers); a keyword given wins."""

    def __init__(self, url: str, *, create: bool = True, min_size: int | None = None, max_size: int | None = None,
                 timeout: float | None = None, lock_timeout: float | None = None):
        url, given = url_options(url)
        given.update({k: v for k, v in (("max_size", max_size), ("timeout", timeout),
                                        ("lock_timeout", lock_timeout)) if v is not None})
        max_size = int(given.get("max_size", 10))
        min_size = min(max_size, 1 if min_size is None else min_size)
        self._db = Connection(url, create=create, min_size=min_size, max_size=max_size,
                              timeout=float(given.get("timeout", 30.0)),
                              lock_timeout_s=float(given.get("lock_timeout", 30.0)))
        self.location = self._db.location
        self.schema = self._db.schema

    # -- plumbing ---------------------------------------------------------------------------

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._db.write():
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction for this thread's reads inside (see ``Store.snapshot``)."""
        with self._db.snapshot():
            yield

    @staticmethod
    def _app_id(cur: psycopg.Cursor, app: str) -> int | None:
        row = cur.execute("SELECT id FROM apps WHERE name = %s", (to_db(app),)).fetchone()
        return int(row[0]) if row else None

    @staticmethod
    def _version(cur: psycopg.Cursor, app: str) -> tuple[int, AppVersion] | None:
        row = cur.execute(
            "SELECT id, epoch, generation, purge_generation FROM apps WHERE name = %s", (to_db(app),)
        ).fetchone()
        return (int(row[0]), AppVersion(row[1], int(row[2]), int(row[3]))) if row else None

    @staticmethod
    def _ensure_app(cur: psycopg.Cursor, app: str) -> int:
        row = cur.execute(
            "INSERT INTO apps (name, created_at, epoch) VALUES (%s, %s, %s) ON CONFLICT (name) DO NOTHING RETURNING id",
            (to_db(app), now_iso(), secrets.token_hex(16)),
        ).fetchone()
        if row is not None:  # created: an existing app without statistics stays untrusted until reindexed
            postings.reset_stats(cur, int(row[0]))
            return int(row[0])
        return int(cur.execute("SELECT id FROM apps WHERE name = %s", (to_db(app),)).fetchone()[0])

    @staticmethod
    def _bump(cur: psycopg.Cursor, app_id: int, purge: bool) -> None:
        cur.execute(
            "UPDATE apps SET generation = generation + 1, purge_generation = purge_generation + %s WHERE id = %s",
            (1 if purge else 0, app_id),
        )

    # -- meta and apps ----------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        rows = self._db.read("SELECT value FROM meta WHERE key = %s", (to_db(key),))
        return from_db(rows[0][0]) if rows else None

    def claim_meta(self, values: Mapping[str, str]) -> dict[str, str]:
        keys_ = [to_db(k) for k in values]
        query = "SELECT key, value FROM meta WHERE key = ANY(%s::text[])"
        stored = {from_db(k): from_db(v) for k, v in self._db.read(query, (keys_,))}
        if all(k in stored for k in values):
            return stored  # type: ignore[return-value]  # nothing to claim: no write
        with self._db.write() as cur:
            cur.execute(
                "INSERT INTO meta (key, value) SELECT k, v FROM unnest(%s::text[], %s::text[]) AS u(k, v) "
                "ON CONFLICT (key) DO NOTHING",
                (keys_, [to_db(v) for v in values.values()]),
            )
            return {from_db(k): from_db(v) for k, v in cur.execute(query, (keys_,)).fetchall()}  # type: ignore[misc]

    def apps(self) -> list[str]:
        return [from_db(r[0]) for r in self._db.read("SELECT name FROM apps ORDER BY name")]  # type: ignore[misc]

    def app_version(self, app: str) -> AppVersion | None:
        with self._db.single() as cur:
            found = self._version(cur, app)
        return found[1] if found else None

    def delete_app(self, app: str) -> bool:
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            if app_id is None:
                return False
            terms = postings.app_terms(cur, app_id)
            cur.execute("DELETE FROM apps WHERE id = %s", (app_id,))  # cascades everywhere
            postings.Blocks(cur, app_id).drop_unused_terms(terms)
        return True

    # -- items --------------------------------------------------------------------------------

    def content_hashes(self, app: str, kind: str, external_ids: Sequence[str]) -> dict[str, str]:
        records.table(kind)
        if not external_ids:
            return {}
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            if app_id is None:
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
        for item, _ in items:
            records.table(item.kind)  # refuse an unknown kind before anything is written
        for kind, _ in expect or {}:
            records.table(kind)
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
            blocks = postings.Blocks(cur, app_id)
            replaced = False
            for item, chunks in items:
                if archive and (old := records.get_item(cur, app_id, item.kind, item.external_id)) is not None:
                    records.archive_item(cur, app_id, old, now_iso())
                replaced |= self._delete(cur, app_id, item.kind, item.external_id)
                pk = records.insert_item(cur, app_id, item)
                indexed = records.insert_chunks(cur, app_id, item.kind, pk, chunks, item.date, self._db.vector_type)
                lexical_postings.add(blocks, indexed)
            self._bump(cur, app_id, purge=replaced)

    @staticmethod
    def _delete(cur: psycopg.Cursor, app_id: int, kind: str, external_id: str) -> bool:
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
        with self._db.single() as cur:  # one statement: one snapshot
            row = cur.execute(
                "SELECT a.id, "
                "(SELECT count(*) FROM sessions s WHERE s.app_id = a.id), "
                "(SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.app_id = a.id), "
                "(SELECT count(*) FROM facts f WHERE f.app_id = a.id), "
                "(SELECT count(*) FROM chunks c WHERE c.app_id = a.id) "
                "FROM apps a WHERE a.name = %s",
                (to_db(app),),
            ).fetchone()
        if row is None:
            return None
        return AppCounts(sessions=int(row[1]), messages=int(row[2]), facts=int(row[3]), chunks=int(row[4]))

    # -- chunks ---------------------------------------------------------------------------------

    def fetch_chunks(self, app: str, chunk_ids: Sequence[int]) -> dict[int, ChunkRow]:
        if not len(chunk_ids):
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

    # -- dense search in SQL (dense.py: pgvector HNSW; not part of the store contract) ----------

    def native_dense_index(self, mode: str) -> dense.PgvectorDenseIndex:
        """pgvector's HNSW index: ``auto`` for apps of at least ``dense.CROSSOVER`` vectors."""
        return dense.PgvectorDenseIndex(self, min_vectors=dense.CROSSOVER if mode == "auto" else 0)

    def vector_count(self, app: str) -> tuple[int, int | None]:
        """The app's dense vectors and their dimension (None: none, or no such app)."""
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return (0, None) if app_id is None else dense.vector_count(cur, app_id)

    def analyze(self) -> None:
        """Refresh the planner's statistics of every table (ANALYZE), as after a bulk load."""
        with self._db.single() as cur:
            cur.execute("ANALYZE")

    def ensure_hnsw(self, dim: int, *, concurrently: bool = True, maintenance_work_mem: str | None = None,
                    repair: bool = False) -> bool:
        """Create the HNSW index of vectors of ``dim`` dimensions unless it exists (True: built)."""
        with self._db.single() as cur:
            return dense.ensure_hnsw(cur, self._db.vector_type, dim, concurrently=concurrently,
                                     maintenance_work_mem=maintenance_work_mem, repair=repair)

    def hnsw_candidates(self, app: str, queries: np.ndarray, count: int, *, ef_search: int,
                        max_scan_tuples: int, iterative: bool = True,
                        index_forced: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The app's chunks nearest the queries by the HNSW index: ids and int8 vectors.
        ``index_forced``: the planner may not sort the app's rows instead (what a benchmark of
        the filtered scan itself measures)."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        with self._db.snapshot() as cur:
            if index_forced:
                cur.execute("SET LOCAL enable_sort = off")
            app_id = self._app_id(cur, app)
            if app_id is None:
                return np.zeros(0, np.int64), np.zeros((0, queries.shape[1]), np.int8)
            return dense.candidates(cur, self._db.vector_type, app_id, queries, count, ef_search=ef_search,
                                    max_scan_tuples=max_scan_tuples, iterative=iterative)

    def doc_lengths(self, app: str) -> DocLengths:
        with self._db.snapshot() as cur:
            found = self._version(cur, app)
            if found is None:
                return DocLengths(None, np.zeros(0, np.int64), np.zeros(0, np.float64))
            ids, lengths = postings.doc_lengths(cur, found[0])
        return DocLengths(found[1], ids, lengths)

    def read_postings(self, app: str, terms: Collection[str]) -> PostingsRead:
        with self._db.snapshot() as cur:
            row = cur.execute(
                "SELECT a.id, a.epoch, a.generation, a.purge_generation, s.version, s.n_docs, s.total_len "
                "FROM apps a LEFT JOIN lex_stats s ON s.app_id = a.id WHERE a.name = %s",
                (to_db(app),),
            ).fetchone()
            if row is None:
                return PostingsRead(None, None, {})
            version = AppVersion(row[1], int(row[2]), int(row[3]))
            stats = LexicalStats(int(row[4]), int(row[5]), int(row[6])) if row[4] is not None else None
            blocks = postings.read_blocks_for_terms(cur, int(row[0]), terms) if terms else {}
            return PostingsRead(version, stats, blocks)

    def mark_lexical_stale(self, app: str) -> None:
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            if app_id is not None:
                cur.execute("DELETE FROM lex_stats WHERE app_id = %s", (app_id,))

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
            return keys.add_key(cur, app, key_hash, prefix, label, created_at, self.location)

    def find_keys(self, *, key_id: int | None = None, key_hash: str | None = None,
                  prefix: str | None = None) -> list[KeyRecord]:
        given = [(c, v) for c, v in (("id", key_id), ("key_hash", key_hash), ("prefix", prefix)) if v is not None]
        if len(given) != 1:
            raise ValueError("find_keys takes exactly one of key_id, key_hash, prefix")
        with self._db.single() as cur:
            return keys.find_keys(cur, *given[0])

    def list_keys(self, app: str | None = None, *, include_revoked: bool = False) -> list[KeyRecord]:
        with self._db.single() as cur:
            return keys.list_keys(cur, app, include_revoked)

    def revoke_key(self, key_id: int, at: str) -> KeyRecord | None:
        with self._db.write() as cur:
            return keys.revoke_key(cur, key_id, at)

    def key_hashes(self) -> dict[int, str]:
        return {int(i): from_db(h) for i, h in self._db.read("SELECT id, key_hash FROM api_keys")}  # type: ignore[misc]

    # -- size -------------------------------------------------------------------------------------

    def size_bytes(self) -> int | None:
        """Bytes of vestige's tables and their indexes in this schema (not the whole database)."""
        rows = self._db.read(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) AND c.relkind = 'r'"
        )
        return int(rows[0][0]) if rows else None

