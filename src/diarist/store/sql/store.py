"""``SQLStore``: the store contract over diarist's tables, for every SQL backend.

Each method is a thin composition of the row-level modules beside it (records, postings, keys)
inside one write transaction or one snapshot. A backend subclass opens its connection
(``self._db``: ``write()``, ``snapshot()``, ``single()``, ``read()``), names its ``dialect``
and adds what only it offers. A new contract method that both backends answer with the same
SQL goes here, its differing pieces (if any) as ``Dialect`` methods.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar, cast

import numpy as np

from ...dates import now_iso
from ...lexical import postings as lexical_postings
from ..base import (
    AppCounts,
    AppVersion,
    ChunkRow,
    Conflict,
    DocLengths,
    HitRow,
    IndexedChunk,
    Item,
    ItemSummary,
    ItemVersion,
    KeyRecord,
    LexicalStats,
    PostingsRead,
    SampleChunk,
    Store,
    StoredChunk,
    SyncedFile,
    VectorBatch,
)
from . import keys, lines, postings, records, sentences, synced
from .dialect import Cursor, Dialect

Items = Sequence[tuple[Item, Sequence[IndexedChunk]]]
_T = TypeVar("_T")


class SQLStore(Store):
    dialect: ClassVar[Dialect]
    _db: Any  # the backend's connection (see the module docstring)
    location: str

    # -- plumbing ---------------------------------------------------------------------------

    def _after_write(self, removed: bool) -> None:
        """Called after a committed write that can delete (``removed``: it did), after an outer
        transaction, and at close: SQLite checkpoints its log there so deleted text is gone."""

    def close(self) -> None:
        self._after_write(False)
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._db.write():
            yield
        self._after_write(False)  # deletes inside an outer transaction waited for its end

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction for this thread's reads inside (see ``Store.snapshot``)."""
        with self._db.snapshot():
            yield

    def _app_id(self, cur: Cursor, app: str) -> int | None:
        row = cur.execute(self.dialect.sql("SELECT id FROM apps WHERE name = ?"), (self.dialect.to_db(app),)).fetchone()
        return int(row[0]) if row else None

    def _version(self, cur: Cursor, app: str) -> tuple[int, AppVersion] | None:
        d = self.dialect
        row = cur.execute(
            d.sql("SELECT id, epoch, generation, purge_generation FROM apps WHERE name = ?"), (d.to_db(app),)
        ).fetchone()
        return (int(row[0]), AppVersion(row[1], int(row[2]), int(row[3]))) if row else None

    def _ensure_app(self, cur: Cursor, app: str) -> int:
        found = self._app_id(cur, app)
        if found is not None:
            return found
        # Under the write lock no other writer creates it meanwhile. No INSERT ... ON CONFLICT:
        # on PostgreSQL each one draws an id from the sequence even when nothing is inserted.
        d = self.dialect
        cur.execute(d.sql("INSERT INTO apps (name, created_at, epoch) VALUES (?, ?, ?)"),
                    (d.to_db(app), now_iso(), secrets.token_hex(16)))
        app_id = self._app_id(cur, app)
        assert app_id is not None
        postings.reset_stats(d, cur, app_id)  # an existing app without statistics stays untrusted
        return app_id

    def _bump(self, cur: Cursor, app_id: int, purge: bool) -> None:
        cur.execute(
            self.dialect.sql("UPDATE apps SET generation = generation + 1, "
                             "purge_generation = purge_generation + ? WHERE id = ?"),
            (1 if purge else 0, app_id),
        )

    # -- meta and apps ----------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        d = self.dialect
        rows = self._db.read(d.sql("SELECT value FROM meta WHERE key = ?"), (d.to_db(key),))
        return d.from_db(rows[0][0]) if rows else None

    def _read_meta(self, cur: Cursor, names: Sequence[str]) -> dict[str, str]:
        d = self.dialect
        out: dict[str, str] = {}
        for test, params in d.in_list("key", [d.to_db(k) for k in names], "text"):
            rows = cur.execute(d.sql(f"SELECT key, value FROM meta WHERE {test}"), params).fetchall()
            out.update((d.from_db(k), d.from_db(v)) for k, v in rows)
        return out

    def claim_meta(self, values: Mapping[str, str]) -> dict[str, str]:
        d = self.dialect
        with self._db.snapshot() as cur:
            stored = self._read_meta(cur, list(values))
        if all(k in stored for k in values):
            return stored  # nothing to claim: no write (read-only files stay readable)
        with self._db.write() as cur:
            cur.executemany(d.sql("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING"),
                            [(d.to_db(k), d.to_db(v)) for k, v in values.items()])
            return self._read_meta(cur, list(values))

    def put_meta(self, values: Mapping[str, str]) -> None:
        d = self.dialect
        with self._db.write() as cur:
            cur.executemany(d.sql("INSERT INTO meta (key, value) VALUES (?, ?) "
                                  "ON CONFLICT (key) DO UPDATE SET value = excluded.value"),
                            [(d.to_db(k), d.to_db(v)) for k, v in values.items()])

    def delete_meta(self, keys: Sequence[str]) -> None:
        d = self.dialect
        with self._db.write() as cur:
            cur.executemany(d.sql("DELETE FROM meta WHERE key = ?"), [(d.to_db(k),) for k in keys])

    def apps(self) -> list[str]:
        return [self.dialect.from_db(r[0]) for r in self._db.read("SELECT name FROM apps ORDER BY name")]

    def app_version(self, app: str) -> AppVersion | None:
        with self._db.single() as cur:
            found = self._version(cur, app)
        return found[1] if found else None

    def delete_app(self, app: str) -> bool:
        d = self.dialect
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            if app_id is None:
                return False
            terms = postings.app_terms(d, cur, app_id)
            cur.execute(d.sql("DELETE FROM apps WHERE id = ?"), (app_id,))  # cascades everywhere
            d.blocks(cur, app_id).drop_unused_terms(terms)
        self._after_write(True)
        return True

    # -- items --------------------------------------------------------------------------------

    def content_hashes(self, app: str, kind: str, external_ids: Sequence[str]) -> dict[str, str]:
        records.table(kind)
        if not external_ids:
            return {}
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return {} if app_id is None else records.content_hashes(self.dialect, cur, app_id, kind, external_ids)

    def put_items(self, app: str, items: Items, *, expect: Mapping[tuple[str, str], str | None] | None = None,
                  archive: bool = False) -> None:
        if not items and not expect:
            return
        for kind in [item.kind for item, _ in items] + [kind for kind, _ in expect or {}]:
            records.table(kind)  # refuse an unknown kind before anything is written
        with self._db.write() as cur:
            # Compare before anything is written (an app that does not exist holds nothing).
            existing = self._app_id(cur, app)
            for (kind, external_id), wanted in (expect or {}).items():
                now = None
                if existing is not None:
                    now = records.content_hashes(self.dialect, cur, existing, kind, [external_id]).get(external_id)
                if now != wanted:
                    raise Conflict(f"{kind} {external_id!r} of app {app!r} changed meanwhile")
            if not items:
                return
            app_id = self._ensure_app(cur, app)
            replaced = self._put(cur, app_id, items, archive)
            self._bump(cur, app_id, purge=replaced)
        self._after_write(replaced)

    def _put(self, cur: Cursor, app_id: int, items: Items, archive: bool) -> bool:
        """Insert the items in runs of new ones, one bulk insert per table and run; an item
        already stored (or given earlier in the call) ends the run and is replaced. Postings
        are written once per run. Returns whether anything was replaced."""
        d = self.dialect
        blocks = cast(postings.Blocks, d.blocks(cur, app_id))  # with no_postings_above
        pending = lexical_postings.Batch(blocks)
        stored = {kind: set(records.item_pks(d, cur, app_id, kind, [i.external_id for i, _ in items if i.kind == kind]))
                  for kind in dict.fromkeys(item.kind for item, _ in items)}
        run: list[tuple[Item, Sequence[IndexedChunk]]] = []
        replaced = False
        for item, chunks in items:
            if item.external_id in stored[item.kind]:
                self._insert_run(cur, blocks, pending, run)
                run = []
                pending.flush()  # the delete reads the blocks and statistics
                if archive:
                    old = records.get_item(d, cur, app_id, item.kind, item.external_id)
                    assert old is not None
                    records.archive_item(d, cur, app_id, old, now_iso())
                replaced |= self._delete(cur, app_id, item.kind, item.external_id)
            stored[item.kind].add(item.external_id)  # a second copy in this call replaces it
            run.append((item, chunks))
        self._insert_run(cur, blocks, pending, run)
        pending.flush()
        return replaced

    def _insert_run(self, cur: Cursor, blocks: postings.Blocks, pending: lexical_postings.Batch, run: Items) -> None:
        if not run:
            return
        # Read before the inserts: the blocks of the run's chunk ids past it cannot exist yet.
        blocks.no_postings_above(self.dialect.last_chunk_id(cur))
        for indexed in records.insert_items(self.dialect, cur, blocks.app_id, run):
            pending.add(indexed)  # one call per item: term ids as item-by-item writes give them

    def _delete(self, cur: Cursor, app_id: int, kind: str, external_id: str) -> bool:
        d = self.dialect
        pk = records.item_pk(d, cur, app_id, kind, external_id)
        if pk is None:
            return False
        lexical_postings.remove(d.blocks(cur, app_id), records.lexical_chunks(d, cur, kind, pk))
        records.delete_item_row(d, cur, kind, pk)
        return True

    def delete_item(self, app: str, kind: str, external_id: str) -> bool:
        records.table(kind)
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            if app_id is None or not self._delete(cur, app_id, kind, external_id):
                return False
            records.delete_versions(self.dialect, cur, app_id, kind, external_id)  # its history goes with it
            self._bump(cur, app_id, purge=True)
        self._after_write(True)
        return True

    def get_item(self, app: str, kind: str, external_id: str) -> Item | None:
        records.table(kind)
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return None if app_id is None else records.get_item(self.dialect, cur, app_id, kind, external_id)

    def list_items(self, app: str, kind: str, limit: int, offset: int, *, newest_first: bool = False) -> list[ItemSummary]:
        records.table(kind)
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            if app_id is None:
                return []
            return records.list_items(self.dialect, cur, app_id, kind, limit, offset, newest_first)

    def item_history(self, app: str, kind: str, external_id: str) -> list[ItemVersion]:
        records.table(kind)
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return [] if app_id is None else records.item_history(self.dialect, cur, app_id, kind, external_id)

    def _append_versions(self, app: str, versions: Sequence[ItemVersion]) -> None:
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            assert app_id is not None  # put_history writes the item first
            for version in versions:
                records.archive_item(self.dialect, cur, app_id, version.item, version.replaced_at)

    def chunk_ids_where(self, app: str, where: Mapping[str, Any]) -> np.ndarray:
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return np.zeros(0, np.int64) if app_id is None else records.chunk_ids_where(self.dialect, cur, app_id, where)

    def counts(self, app: str) -> AppCounts | None:
        d = self.dialect
        with self._db.single() as cur:  # one statement: one snapshot
            row = cur.execute(
                d.sql("SELECT a.id, "
                      "(SELECT count(*) FROM sessions s WHERE s.app_id = a.id), "
                      "(SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.app_id = a.id), "
                      "(SELECT count(*) FROM facts f WHERE f.app_id = a.id), "
                      "(SELECT count(*) FROM chunks c WHERE c.app_id = a.id) "
                      "FROM apps a WHERE a.name = ?"),
                (d.to_db(app),),
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
            return {} if app_id is None else records.fetch_chunks(self.dialect, cur, app_id, chunk_ids)

    def hit_rows(self, app: str, chunk_ids: Sequence[int]) -> dict[int, HitRow]:
        if not len(chunk_ids):
            return {}
        statements = records.hit_rows_statements(self.dialect, app, chunk_ids)
        if len(statements) == 1:  # a search's reads: one statement, one state, no BEGIN and COMMIT around it
            return records.hit_rows(self.dialect, [self._db.read(*statements[0])])
        with self._db.snapshot() as cur:
            return records.hit_rows(self.dialect, [cur.execute(sql, params).fetchall() for sql, params in statements])

    def chunks_in_other_languages(self, app: str, chunk_ids: Sequence[int], language: str) -> set[int]:
        if not len(chunk_ids):
            return set()
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return set() if app_id is None else records.chunks_in_other_languages(
                self.dialect, cur, app_id, chunk_ids, language)

    def language_counts(self, app: str) -> dict[str | None, int]:
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return {} if app_id is None else records.language_counts(self.dialect, cur, app_id)

    def sample_chunk(self, app: str) -> SampleChunk | None:
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return None if app_id is None else records.sample_chunk(self.dialect, cur, app_id)

    def item_chunks(self, app: str, kind: str, external_id: str) -> list[StoredChunk]:
        records.table(kind)
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            pk = None if app_id is None else records.item_pk(self.dialect, cur, app_id, kind, external_id)
            return [] if pk is None else records.item_chunks(self.dialect, cur, kind, pk)

    def items_with_chunks(self, app: str, kind: str,
                          external_ids: Sequence[str]) -> list[tuple[Item, list[StoredChunk]]]:
        records.table(kind)
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return [] if app_id is None else records.items_with_chunks(self.dialect, cur, app_id, kind, external_ids)

    # -- the lines' vectors (the lines-by-meaning trim) ------------------------------------------

    keeps_lines = True

    def line_vectors(self, app: str, digests: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        if not digests:
            return {}
        return self._read_in_app(app, lambda cur, app_id: lines.lookup(self.dialect, cur, app_id, digests), {})

    def chunks_without_lines(self, app: str, after_id: int, limit: int) -> list[tuple[int, str]]:
        return self._read_in_app(app, lambda cur, app_id: lines.chunks_without(self.dialect, cur, app_id, after_id, limit), [])

    def _read_in_app(self, app: str, read: Callable[[Cursor, int], _T], empty: _T) -> _T:
        """``read(cursor, app id)`` in a snapshot; ``empty`` when the app does not exist."""
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return empty if app_id is None else read(cur, app_id)

    def put_line_vectors(self, app: str, chunks: lines.ChunkLines) -> int:
        return self._put_in_app(app, lambda cur, app_id: lines.put(self.dialect, cur, app_id, chunks)) if chunks else 0

    def _put_in_app(self, app: str, put: Callable[[Cursor, int], int]) -> int:
        """``put(cursor, app id)`` in a write transaction; 0 when the app does not exist."""
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            return 0 if app_id is None else put(cur, app_id)

    def drop_line_vectors(self) -> int:
        with self._db.write() as cur:
            return int(cur.execute("DELETE FROM line_vectors").rowcount or 0)

    # -- the sentences' vectors (the read path's sentences stage) ---------------------------------

    keeps_sentences = True

    def sentence_vectors(self, app: str, chunk_ids: Sequence[int]) -> dict[int, np.ndarray]:
        if not chunk_ids:
            return {}
        return self._read_in_app(app, lambda cur, app_id: sentences.lookup(self.dialect, cur, app_id, chunk_ids), {})

    def put_sentence_vectors(self, app: str, chunks: sentences.ChunkSentences) -> int:
        return self._put_in_app(app, lambda cur, app_id: sentences.put(self.dialect, cur, app_id, chunks)) if chunks else 0

    def drop_sentence_vectors(self) -> int:
        with self._db.write() as cur:
            return int(cur.execute("DELETE FROM sentence_vectors").rowcount or 0)

    def sentences_indexed(self, app: str) -> bool:
        return self._app_flag(app, "sentences_indexed")

    def mark_sentences_indexed(self, app: str, indexed: bool = True) -> None:
        self._mark_app_flag(app, "sentences_indexed", indexed)

    # -- the channels' storage --------------------------------------------------------------------

    def read_vectors(self, app: str, after_id: int = 0) -> VectorBatch:
        with self._db.snapshot() as cur:
            found = self._version(cur, app)
            if found is None:
                return VectorBatch(None, np.zeros(0, np.int64), np.zeros((0, 0), np.int8))
            ids, matrix = records.read_vectors(self.dialect, cur, found[0], after_id)
        return VectorBatch(found[1], ids, matrix)

    def doc_lengths(self, app: str) -> DocLengths:
        with self._db.snapshot() as cur:
            found = self._version(cur, app)
            if found is None:
                return DocLengths(None, np.zeros(0, np.int64), np.zeros(0, np.float64))
            ids, lengths = self.dialect.doc_lengths(cur, found[0])
        return DocLengths(found[1], ids, lengths)

    def read_postings(self, app: str, terms: Collection[str]) -> PostingsRead:
        d = self.dialect
        with self._db.snapshot() as cur:
            row = cur.execute(
                d.sql("SELECT a.id, a.epoch, a.generation, a.purge_generation, s.version, s.n_docs, s.total_len "
                      "FROM apps a LEFT JOIN lex_stats s ON s.app_id = a.id WHERE a.name = ?"),
                (d.to_db(app),),
            ).fetchone()
            if row is None:
                return PostingsRead(None, None, {})
            version = AppVersion(row[1], int(row[2]), int(row[3]))
            stats = LexicalStats(int(row[4]), int(row[5]), int(row[6])) if row[4] is not None else None
            blocks = d.read_postings(cur, int(row[0]), set(terms)) if terms else {}
            return PostingsRead(version, stats, blocks)

    def read_posting_block(self, app: str, term: str, block: int) -> bytes | None:
        """One posting block of one term in one read (``/health`` checks a chunk's postings with
        it; ``read_postings`` reads the term's whole list)."""
        d = self.dialect
        with self._db.snapshot() as cur:
            row = cur.execute(
                d.sql("SELECT p.data FROM apps a JOIN lex_terms t ON t.term = ? "
                      "JOIN lex_postings p ON p.app_id = a.id AND p.term_id = t.id AND p.block = ? WHERE a.name = ?"),
                (term, block, d.to_db(app)),
            ).fetchone()
        return None if row is None else bytes(row[0])

    def titles_indexed(self, app: str) -> bool:
        return self._app_flag(app, "titles_indexed")

    def mark_titles_indexed(self, app: str, indexed: bool = True) -> None:
        self._mark_app_flag(app, "titles_indexed", indexed)

    def _app_flag(self, app: str, column: str) -> bool:
        """An app's "indexed" column (True for an app not stored: nothing waits)."""
        with self._db.snapshot() as cur:
            row = cur.execute(self.dialect.sql(f"SELECT {column} FROM apps WHERE name = ?"),
                              (self.dialect.to_db(app),)).fetchone()
        return True if row is None else bool(row[0])

    def _mark_app_flag(self, app: str, column: str, indexed: bool) -> None:
        with self._db.write() as cur:
            cur.execute(self.dialect.sql(f"UPDATE apps SET {column} = ? WHERE name = ?"), (indexed, self.dialect.to_db(app)))

    def mark_lexical_stale(self, app: str) -> None:
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            if app_id is not None:
                cur.execute(self.dialect.sql("DELETE FROM lex_stats WHERE app_id = ?"), (app_id,))

    def rebuild_lexical(self, app: str) -> int:
        with self._db.write() as cur:
            app_id = self._app_id(cur, app)
            if app_id is None:
                return 0
            count = postings.rebuild(self.dialect, cur, app_id)
            self._bump(cur, app_id, purge=False)
        return count

    # -- synced files -----------------------------------------------------------------------------

    def synced_files(self, app: str) -> list[SyncedFile]:
        with self._db.snapshot() as cur:
            app_id = self._app_id(cur, app)
            return [] if app_id is None else synced.read_all(self.dialect, cur, app_id)

    def record_synced_files(self, app: str, put: Sequence[SyncedFile], drop: Sequence[tuple[str, str]] = ()) -> None:
        if not put and not drop:
            return
        with self._db.write() as cur:
            app_id = self._ensure_app(cur, app) if put else self._app_id(cur, app)
            if app_id is not None:
                synced.write(self.dialect, cur, app_id, put, drop)

    # -- API keys ---------------------------------------------------------------------------------

    def add_key(self, app: str, key_hash: str, prefix: str, label: str | None, created_at: str) -> KeyRecord:
        with self._db.write() as cur:
            return keys.add_key(self.dialect, cur, app, key_hash, prefix, label, created_at, self.location)

    def find_keys(self, *, key_id: int | None = None, key_hash: str | None = None,
                  prefix: str | None = None) -> list[KeyRecord]:
        given = [(c, v) for c, v in (("id", key_id), ("key_hash", key_hash), ("prefix", prefix)) if v is not None]
        if len(given) != 1:
            raise ValueError("find_keys takes exactly one of key_id, key_hash, prefix")
        with self._db.single() as cur:
            return keys.find_keys(self.dialect, cur, *given[0])

    def list_keys(self, app: str | None = None, *, include_revoked: bool = False) -> list[KeyRecord]:
        with self._db.single() as cur:
            return keys.list_keys(self.dialect, cur, app, include_revoked)

    def revoke_key(self, key_id: int, at: str) -> KeyRecord | None:
        with self._db.write() as cur:
            return keys.revoke_key(self.dialect, cur, key_id, at)

    def key_hashes(self) -> dict[int, str]:
        return {int(i): self.dialect.from_db(h) for i, h in self._db.read("SELECT id, key_hash FROM api_keys")}
