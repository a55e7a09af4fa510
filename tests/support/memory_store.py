"""``DictStore``: a second ``Store``, in memory and in plain Python, written only against the
contract (``diarist.store.base``) and the shared lexical upkeep (``diarist.lexical.postings``).

It exists to keep the contract honest: the contract suite (``store_contract.py``) runs on it and
on SQLite, and for the same sequence of calls it hands out the same chunk ids and ranks
identically. It mirrors the reference backend where the contract leaves a choice open:

- chunk ids come from one global counter that starts at 1 and never goes back;
- terms get integer ids in the sorted order ``term_ids(create=True)`` receives them, each the
  largest id in the dictionary + 1 (SQLite's rowid rule, so a dropped largest id comes back);
- an app's epoch is ``secrets.token_hex(16)``; ``generation`` +1 on every write of the app,
  ``purge_generation`` +1 on the writes that removed chunks (a replace, a delete);
- creating an app resets its lexical stats to (lexical.VERSION, 0, 0); ``mark_lexical_stale``
  removes them; ``rebuild_lexical`` re-indexes from the stored chunk text.

Transactions hold one re-entrant lock, nest by joining, and are all-or-nothing: the whole state
is deep-copied at the outermost entry and put back when an exception escapes it.
"""

from __future__ import annotations

import copy
import json
import secrets
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diarist import lexical
from diarist.dates import now_iso
from diarist.errors import StoreError
from diarist.lexical import postings as lexical_postings
from diarist.store.base import (
    KINDS,
    ItemVersion,
    AppCounts,
    AppVersion,
    ChunkRow,
    Conflict,
    DocLengths,
    IndexedChunk,
    Item,
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
from diarist.types import Chunk


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown item kind {kind!r}; use one of {', '.join(KINDS)}")


@dataclass
class _Chunk:
    id: int
    kind: str
    external_id: str
    text: str
    date: str | None
    roles: tuple[str, ...]
    view: str
    position: int
    first_turn: int
    last_turn: int
    n_tokens: int
    lex_len: int
    in_lexical: bool
    vector: bytes | None  # int8 bytes
    embed_text: str | None
    language: str = "en"  # what its terms were analysed as


@dataclass
class _Record:
    item: Item
    seq: int  # list order: when the (kind, id) was last stored
    chunk_ids: list[int]


@dataclass
class _App:
    epoch: str
    generation: int = 0
    purge_generation: int = 0
    items: dict[tuple[str, str], _Record] = field(default_factory=dict)
    chunks: dict[int, _Chunk] = field(default_factory=dict)  # inserted in ascending id order
    postings: dict[tuple[int, int], bytes] = field(default_factory=dict)  # (term id, block) -> data
    stats: LexicalStats | None = None
    versions: dict[tuple[str, str], list[ItemVersion]] = field(default_factory=dict)  # kept by archive
    synced: dict[tuple[str, str], SyncedFile] = field(default_factory=dict)  # (root, path) -> record


@dataclass
class _State:
    meta: dict[str, str] = field(default_factory=dict)
    apps: dict[str, _App] = field(default_factory=dict)
    terms: dict[str, int] = field(default_factory=dict)  # shared by every app
    next_chunk_id: int = 1
    next_seq: int = 1
    keys: dict[int, dict[str, Any]] = field(default_factory=dict)


class _Blocks:
    """``PostingBlocks`` over one app of the state, inside an open transaction."""

    def __init__(self, state: _State, app: _App):
        self.state = state
        self.app = app

    def term_ids(self, terms: Collection[str], *, create: bool) -> dict[str, int]:
        known = self.state.terms
        out: dict[str, int] = {}
        for term in sorted(terms):
            if term not in known and create:
                known[term] = max(known.values(), default=0) + 1
            if term in known:
                out[term] = known[term]
        return out

    def read_blocks(self, keys: Collection[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        return {key: self.app.postings[key] for key in keys if key in self.app.postings}

    def write_blocks(self, blocks: Mapping[tuple[int, int], bytes]) -> None:
        for key, data in blocks.items():
            if data:
                self.app.postings[key] = bytes(data)
            else:
                self.app.postings.pop(key, None)

    def add_stats(self, n_docs: int, total_len: int) -> None:
        stats = self.app.stats
        if stats is not None:  # a stale index stays stale: writes never make it look trusted
            self.app.stats = LexicalStats(stats.version, stats.n_docs + n_docs, stats.total_len + total_len)

    def stats(self) -> LexicalStats | None:
        return self.app.stats

    def indexed_count(self) -> int:
        return sum(1 for c in self.app.chunks.values() if c.in_lexical)

    def drop_unused_terms(self, term_ids: Collection[int]) -> None:
        doomed = set(term_ids)
        if not doomed:
            return
        for app in self.state.apps.values():
            doomed -= {term_id for term_id, _ in app.postings}
        if doomed:
            self.state.terms = {t: i for t, i in self.state.terms.items() if i not in doomed}


class DictStore(Store):
    location = "memory (DictStore)"

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._state = _State()
        self._closed = False

    # -- plumbing ---------------------------------------------------------------------------

    def close(self) -> None:
        self._closed = True

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            saved = copy.deepcopy(self._state)
            self._depth = 1
            try:
                yield
            except BaseException:
                self._state = saved
                raise
            finally:
                self._depth = 0

    @contextmanager
    def _read(self) -> Iterator[_State]:
        with self._lock:
            yield self._state

    @staticmethod
    def _version(app: _App) -> AppVersion:
        return AppVersion(app.epoch, app.generation, app.purge_generation)

    def _ensure_app(self, name: str) -> _App:
        state = self._state
        app = state.apps.get(name)
        if app is None:
            app = state.apps[name] = _App(secrets.token_hex(16), stats=LexicalStats(lexical.VERSION, 0, 0))
        return app

    @staticmethod
    def _bump(app: _App, purge: bool) -> None:
        app.generation += 1
        if purge:
            app.purge_generation += 1

    # -- meta and apps ----------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self._read() as state:
            return state.meta.get(key)

    def claim_meta(self, values: Mapping[str, str]) -> dict[str, str]:
        with self.transaction():
            meta = self._state.meta
            for key, value in values.items():
                meta.setdefault(key, value)
            return {key: meta[key] for key in values}

    def apps(self) -> list[str]:
        with self._read() as state:
            return sorted(state.apps)

    def app_version(self, app: str) -> AppVersion | None:
        with self._read() as state:
            found = state.apps.get(app)
            return self._version(found) if found else None

    def delete_app(self, app: str) -> bool:
        with self.transaction():
            state = self._state
            found = state.apps.pop(app, None)
            if found is None:
                return False
            _Blocks(state, found).drop_unused_terms({term_id for term_id, _ in found.postings})
        return True

    # -- items --------------------------------------------------------------------------------

    def content_hashes(self, app: str, kind: str, external_ids: Sequence[str]) -> dict[str, str]:
        _check_kind(kind)
        with self._read() as state:
            found = state.apps.get(app)
            if found is None:
                return {}
            return {
                e: found.items[(kind, e)].item.content_hash for e in external_ids if (kind, e) in found.items
            }

    def put_items(
        self,
        app: str,
        items: Sequence[tuple[Item, Sequence[IndexedChunk]]],
        *,
        expect: Mapping[tuple[str, str], str | None] | None = None,
        archive: bool = False,
    ) -> None:
        if not items:
            return
        for item, _ in items:
            _check_kind(item.kind)
        with self.transaction():
            state = self._state
            # Compare before anything is written, so a Conflict writes nothing even when this
            # call joins an outer transaction.
            existing = state.apps.get(app)
            for (kind, external_id), wanted in (expect or {}).items():
                _check_kind(kind)
                record = existing.items.get((kind, external_id)) if existing else None
                now = record.item.content_hash if record else None
                if now != wanted:
                    raise Conflict(f"{kind} {external_id!r} of app {app!r} changed meanwhile")
            target = self._ensure_app(app)
            blocks = _Blocks(state, target)
            replaced = False
            for item, chunks in items:
                old = target.items.get((item.kind, item.external_id))
                if archive and old is not None:
                    target.versions.setdefault((item.kind, item.external_id), []).append(
                        ItemVersion(now_iso(), copy.deepcopy(old.item)))
                replaced |= self._delete(target, item.kind, item.external_id) is not None
                seq = state.next_seq  # stored last: listed last, a replace included
                state.next_seq += 1
                indexed = self._insert(target, item, chunks, seq)
                lexical_postings.add(blocks, indexed)
            self._bump(target, purge=replaced)

    def _insert(self, app: _App, item: Item, chunks: Sequence[IndexedChunk], seq: int) -> list[tuple[int, list[str]]]:
        state = self._state
        if item.kind == "session":
            stored = Item("session", item.external_id, item.date, item.content_hash,
                          copy.deepcopy(dict(item.metadata)), tuple(item.messages))
        else:
            stored = Item("fact", item.external_id, item.date, item.content_hash,
                          copy.deepcopy(dict(item.metadata)), text=item.text)
        record = _Record(stored, seq, [])
        app.items[(item.kind, item.external_id)] = record
        indexed: list[tuple[int, list[str]]] = []
        for ic in chunks:
            c = ic.chunk
            chunk_id = state.next_chunk_id
            state.next_chunk_id += 1
            app.chunks[chunk_id] = _Chunk(
                id=chunk_id, kind=item.kind, external_id=item.external_id, text=c.text, date=item.date,
                roles=tuple(c.roles), view=c.view, position=c.position, first_turn=c.first_turn,
                last_turn=c.last_turn, n_tokens=c.n_tokens, lex_len=len(ic.terms) if c.lexical else 0,
                in_lexical=bool(c.lexical),
                vector=np.ascontiguousarray(ic.vector, dtype=np.int8).tobytes() if c.dense else None,
                embed_text=c.embed_text if c.dense else None, language=ic.language,
            )
            record.chunk_ids.append(chunk_id)
            if c.lexical:
                indexed.append((chunk_id, list(ic.terms)))
        return indexed

    def _delete(self, app: _App, kind: str, external_id: str) -> int | None:
        """Remove an item with its chunks and postings; returns its list position, None if absent."""
        record = app.items.get((kind, external_id))
        if record is None:
            return None
        doomed = [app.chunks[i] for i in sorted(record.chunk_ids)]
        lexical_postings.remove(
            _Blocks(self._state, app), [(c.id, c.text, c.lex_len, c.language) for c in doomed if c.in_lexical]
        )
        for c in doomed:
            del app.chunks[c.id]
        del app.items[(kind, external_id)]
        return record.seq

    def delete_item(self, app: str, kind: str, external_id: str) -> bool:
        _check_kind(kind)
        with self.transaction():
            found = self._state.apps.get(app)
            if found is None or self._delete(found, kind, external_id) is None:
                return False
            found.versions.pop((kind, external_id), None)  # its history goes with it
            self._bump(found, purge=True)
        return True

    def get_item(self, app: str, kind: str, external_id: str) -> Item | None:
        _check_kind(kind)
        with self._read() as state:
            found = state.apps.get(app)
            record = found.items.get((kind, external_id)) if found else None
            return copy.deepcopy(record.item) if record else None

    def list_items(self, app: str, kind: str, limit: int, offset: int, *, newest_first: bool = False) -> list[ItemSummary]:
        _check_kind(kind)
        with self._read() as state:
            found = state.apps.get(app)
            if found is None:
                return []
            records = sorted((r for (k, _), r in found.items.items() if k == kind), key=lambda r: r.seq,
                             reverse=newest_first)
            start = max(offset, 0)
            page = records[start:] if limit < 0 else records[start : start + limit]  # LIMIT -1: all
            return [ItemSummary(kind, r.item.external_id, r.item.date) for r in page]

    def item_history(self, app: str, kind: str, external_id: str) -> list[ItemVersion]:
        _check_kind(kind)
        with self._read() as state:
            found = state.apps.get(app)
            return copy.deepcopy(found.versions.get((kind, external_id), [])) if found else []

    def _append_versions(self, app: str, versions: Sequence[ItemVersion]) -> None:
        found = self._state.apps[app]
        for version in versions:
            key = (version.item.kind, version.item.external_id)
            found.versions.setdefault(key, []).append(copy.deepcopy(version))

    def chunk_ids_where(self, app: str, where: Mapping[str, Any]) -> np.ndarray:
        with self._read() as state:
            found = state.apps.get(app)
            if found is None:
                return np.zeros(0, np.int64)
            # JSON equality, as the SQL stores compare (true is not 1, 1 is not "1")
            same = lambda a, b: json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)  # noqa: E731
            ids = [cid for record in found.items.values()
                   if all(k in record.item.metadata and same(record.item.metadata[k], v) for k, v in where.items())
                   for cid in record.chunk_ids]
            return np.asarray(sorted(ids), dtype=np.int64)

    def counts(self, app: str) -> AppCounts | None:
        with self._read() as state:
            found = state.apps.get(app)
            if found is None:
                return None
            sessions = [r.item for (k, _), r in found.items.items() if k == "session"]
            return AppCounts(
                sessions=len(sessions),
                messages=sum(len(i.messages) for i in sessions),
                facts=sum(1 for k, _ in found.items if k == "fact"),
                chunks=len(found.chunks),
            )

    # -- chunks ---------------------------------------------------------------------------------

    def fetch_chunks(self, app: str, chunk_ids: Sequence[int]) -> dict[int, ChunkRow]:
        with self._read() as state:
            found = state.apps.get(app)
            if found is None:
                return {}
            out: dict[int, ChunkRow] = {}
            for chunk_id in chunk_ids:
                c = found.chunks.get(int(chunk_id))
                if c is None:
                    continue
                out[c.id] = ChunkRow(
                    chunk_id=c.id, text=c.text,
                    session_id=c.external_id if c.kind == "session" else None,
                    fact_id=c.external_id if c.kind == "fact" else None,
                    date=c.date, roles=c.roles, view=c.view, position=c.position,
                    first_turn=c.first_turn, last_turn=c.last_turn,
                    metadata=copy.deepcopy(dict(found.items[(c.kind, c.external_id)].item.metadata)),
                )
            return out

    def item_chunks(self, app: str, kind: str, external_id: str) -> list[StoredChunk]:
        _check_kind(kind)
        with self._read() as state:
            found = state.apps.get(app)
            record = found.items.get((kind, external_id)) if found else None
            if record is None:
                return []
            out = []
            for chunk_id in sorted(record.chunk_ids):
                c = found.chunks[chunk_id]
                chunk = Chunk(text=c.text, position=c.position, roles=c.roles, first_turn=c.first_turn,
                              last_turn=c.last_turn, view=c.view, n_tokens=c.n_tokens, dense=c.vector is not None,
                              lexical=c.in_lexical, embed_text=c.embed_text)
                vector = np.frombuffer(c.vector, dtype=np.int8).copy() if c.vector is not None else None
                out.append(StoredChunk(c.id, chunk, vector))
            return out

    def sample_chunk(self, app: str) -> SampleChunk | None:
        with self._read() as state:
            found = state.apps.get(app)
            if found is None or not found.chunks:
                return None
            c = found.chunks[max(found.chunks)]
            vector = np.frombuffer(c.vector, dtype=np.int8).copy() if c.vector is not None else None
            return SampleChunk(c.id, c.text, vector, c.in_lexical, c.embed_text)

    # -- the channels' storage --------------------------------------------------------------------

    def read_vectors(self, app: str, after_id: int = 0) -> VectorBatch:
        with self._read() as state:
            found = state.apps.get(app)
            if found is None:
                return VectorBatch(None, np.zeros(0, np.int64), np.zeros((0, 0), np.int8))
            rows = sorted((i, c.vector) for i, c in found.chunks.items() if i > after_id and c.vector is not None)
            version = self._version(found)
        if not rows:
            return VectorBatch(version, np.zeros(0, np.int64), np.zeros((0, 0), np.int8))
        ids = np.fromiter((i for i, _ in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(v for _, v in rows), dtype=np.int8).reshape(len(rows), -1)
        return VectorBatch(version, ids, matrix)

    def doc_lengths(self, app: str) -> DocLengths:
        with self._read() as state:
            found = state.apps.get(app)
            if found is None:
                return DocLengths(None, np.zeros(0, np.int64), np.zeros(0, np.float64))
            rows = sorted((i, c.lex_len) for i, c in found.chunks.items() if c.in_lexical)
            version = self._version(found)
        arr = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
        return DocLengths(version, arr[:, 0].copy(), arr[:, 1].astype(np.float64))

    def read_postings(self, app: str, terms: Collection[str]) -> PostingsRead:
        with self._read() as state:
            found = state.apps.get(app)
            if found is None:
                return PostingsRead(None, None, {})
            wanted = {state.terms[t] for t in set(terms) if t in state.terms}
            blocks: dict[int, list[tuple[int, bytes]]] = {}
            for (term_id, block), data in sorted(found.postings.items()):
                if term_id in wanted:
                    blocks.setdefault(term_id, []).append((block, data))
            return PostingsRead(self._version(found), found.stats, blocks)

    def mark_lexical_stale(self, app: str) -> None:
        with self.transaction():
            found = self._state.apps.get(app)
            if found is not None:
                found.stats = None

    def rebuild_lexical(self, app: str) -> int:
        with self.transaction():
            state = self._state
            found = state.apps.get(app)
            if found is None:
                return 0
            old_terms = {term_id for term_id, _ in found.postings}
            found.postings.clear()
            found.stats = LexicalStats(lexical.VERSION, 0, 0)
            rows = sorted((i, c) for i, c in found.chunks.items() if c.in_lexical)
            analysed = [lexical.analyze_passage(c.text) for _, c in rows]
            chunks = [(chunk_id, terms) for (chunk_id, _), (terms, _) in zip(rows, analysed)]
            for (_, c), (terms, language) in zip(rows, analysed):
                c.lex_len, c.language = len(terms), language
            blocks = _Blocks(state, found)
            lexical_postings.add(blocks, chunks)
            blocks.drop_unused_terms(old_terms)
            self._bump(found, purge=False)
        return len(rows)

    # -- synced files -----------------------------------------------------------------------------

    def synced_files(self, app: str) -> list[SyncedFile]:
        with self._read() as state:
            found = state.apps.get(app)
            return [] if found is None else [found.synced[key] for key in sorted(found.synced)]

    def record_synced_files(self, app: str, put: Sequence[SyncedFile], drop: Sequence[tuple[str, str]] = ()) -> None:
        if not put and not drop:
            return
        with self.transaction():
            found = self._ensure_app(app) if put else self._state.apps.get(app)
            if found is None:
                return
            for key in drop:
                found.synced.pop(key, None)
            for file in put:
                found.synced[(file.root, file.path)] = file

    # -- API keys ---------------------------------------------------------------------------------

    @staticmethod
    def _key(key_id: int, row: dict[str, Any]) -> KeyRecord:
        return KeyRecord(key_id, row["app"], row["prefix"], row["label"], row["created_at"], row["revoked_at"])

    def add_key(self, app: str, key_hash: str, prefix: str, label: str | None, created_at: str) -> KeyRecord:
        with self.transaction():
            keys = self._state.keys
            if any(row["key_hash"] == key_hash for row in keys.values()):
                raise StoreError(f"{self.location}: an API key with this hash is already stored")
            key_id = max(keys, default=0) + 1
            keys[key_id] = {"app": app, "key_hash": key_hash, "prefix": prefix, "label": label,
                            "created_at": created_at, "revoked_at": None}
            return self._key(key_id, keys[key_id])

    def find_keys(self, *, key_id: int | None = None, key_hash: str | None = None,
                  prefix: str | None = None) -> list[KeyRecord]:
        given = [(c, v) for c, v in (("id", key_id), ("key_hash", key_hash), ("prefix", prefix)) if v is not None]
        if len(given) != 1:
            raise ValueError("find_keys takes exactly one of key_id, key_hash, prefix")
        column, value = given[0]
        with self._read() as state:
            return [
                self._key(i, row) for i, row in sorted(state.keys.items())
                if (i if column == "id" else row[column]) == value
            ]

    def list_keys(self, app: str | None = None, *, include_revoked: bool = False) -> list[KeyRecord]:
        with self._read() as state:
            return [
                self._key(i, row) for i, row in sorted(state.keys.items())
                if (app is None or row["app"] == app) and (include_revoked or row["revoked_at"] is None)
            ]

    def key_hashes(self) -> dict[int, str]:
        with self._read() as state:
            return {i: row["key_hash"] for i, row in state.keys.items()}

    def revoke_key(self, key_id: int, at: str) -> KeyRecord | None:
        with self.transaction():
            row = self._state.keys.get(key_id)
            if row is None:
                return None
            if row["revoked_at"] is None:
                row["revoked_at"] = at
            return self._key(key_id, row)
