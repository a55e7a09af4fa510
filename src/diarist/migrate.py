"""Copying a whole store into another: ``diarist migrate SRC DST`` (SQLite -> PostgreSQL, back,
or any two stores), through the store contract only, verified before it commits.

What is copied: every app (empty ones too) with its sessions and facts (ids, dates, metadata,
messages, content hashes, list order), their chunks as stored (text, turns, roles, view, token
counts, which channels they are in) with their int8 vectors as stored (nothing is re-embedded,
so no model is loaded), the previous versions ``Memory.update`` kept of each item (their
replaced-at times included), every API key (its hash, prefix, label, dates; revoked ones stay revoked),
the record of the files ``diarist sync`` brought in (so a sync into the copy reads no unchanged file
again) and the recorded embedder and index plan (``META_KEYS``). The BM25 postings are written from the
stored chunk text with the one analyzer, as every write does. Not kept: chunk, item and key ids
(the destination numbers its own; a key id shown by ``diarist keys list`` may change), app
epochs and write counters (caches key on them, nothing else), the stored-at times of items.

Order. Items are written in the order of their chunk ids in SRC, all apps and both kinds merged
(``list_items`` order is chunk id order within a kind), so DST hands out chunk ids in the same
relative order: ties in both channels, broken by ascending chunk id, break alike, and rankings
are the same. A SRC that never deleted or replaced anything gets the same chunk ids and term ids
as it had (then BM25 sums its terms in the same order, to the last bit).

All or nothing. DST must be empty (no apps, no keys, no recorded embedder or plan other than
SRC's); a new file or a fresh schema is. Everything is written in one transaction of DST, which
holds DST's write lock throughout, and checked inside it before it commits (``verify``):

- apps, meta and per-app counts (sessions, messages, facts, chunks) are equal;
- every item is listed in the same order with the same date and content hash, keys are equal
  (hashes included), a sample of items are equal whole, chunks, vectors and history included,
  and so is the history of every item that has one;
- per app, up to ``sample`` queries built from stored chunks (BM25 over the words of a chunk's
  text, dense from a chunk's stored vector) rank the same top ``DEPTH`` chunks, by (session or
  fact id, position, view, text), with the same scores;
- SRC did not change meanwhile (its apps' versions and its keys are read again at the end):
  stop its writers first, or the copy is refused.

Any difference raises ``MigrationFailed`` and the transaction rolls back: DST is left as it was,
and a new SQLite file that the copy created is removed. Nothing half-copied is ever committed,
at the price of starting over after a failure (a copy is one transaction, not resumable).
"""

from __future__ import annotations

import heapq
import math
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import lexical
from .embed.base import dequantize
from .errors import ConfigError, DiaristError
from .lexical import LexicalChannel
from .store.switch import refuse_half_switched
from .store.base import (
    KINDS, AppCounts, IndexedChunk, Item, ItemVersion, KeyRecord, LexicalUnavailable, Store, StoredChunk,
)
from .store.open import open_store
from .vectors import ExactDenseIndex

#: What the store records about how it was built (``Memory`` claims these).
META_KEYS = ("embedder", "dim", "index_plan", "embedder_spec")
PAGE = 500  # items listed per read
# Items per put_items (all in the one transaction). Each call rewrites the last posting block
# of every term it touches: fewer, larger calls copy 100k chunks in 18.4 s instead of 19.7-22.3.
BATCH_ITEMS, BATCH_CHUNKS = 2000, 32768
DEPTH = 20  # ranks compared per query
QUERY_TERMS = 12  # words of a stored chunk that make a BM25 query
SCORE_TOL = 1e-9  # summation order of BM25 terms may differ in the last bits
PLACEHOLDER = "diarist-migrate-empty-app"  # stored and deleted at once: creates an empty app


class MigrationFailed(DiaristError):
    """A copy between stores was refused or did not verify; nothing was committed."""

    status, code = 409, "migration_failed"


@dataclass
class MigrationReport:
    source: str
    destination: str
    apps: dict[str, AppCounts]
    keys: int
    meta: dict[str, str]
    seconds: float = 0.0
    checked: dict[str, int] = field(default_factory=dict)  # what verify compared
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "destination": self.destination,
            "apps": {name: dict(c.__dict__) for name, c in self.apps.items()},
            "keys": self.keys, "meta": {k: v for k, v in self.meta.items() if k != "index_plan"},
            "seconds": round(self.seconds, 2), "checked": dict(self.checked), "notes": list(self.notes),
        }


# -- the copy -----------------------------------------------------------------------------------


def migrate(
    source: str | os.PathLike[str] | Store,
    destination: str | os.PathLike[str] | Store,
    *,
    sample: int = 20,
    progress: Callable[[int], None] | None = None,
) -> MigrationReport:
    """Copy everything ``source`` holds into the empty ``destination`` (locations or stores; a
    store given is not closed), in one transaction of the destination, verified before it
    commits. ``progress(n)`` is called with the number of items just written."""
    start = time.perf_counter()
    src = open_store(_location(source), create=False)
    try:
        refuse_half_switched(src)  # a copy would carry vectors of two models and no record of it
        new_file = _new_sqlite_file(destination)
        try:
            dst = open_store(_location(destination), create=True)
        except BaseException:
            _remove(new_file)
            raise
        try:
            if dst is src or (dst.location == src.location and src.location != ":memory:"):
                raise ConfigError(f"the source and the destination are the same store ({src.location})")
            report = _copy(src, dst, sample, progress)
        except BaseException:
            if dst is not destination:
                dst.close()
                _remove(new_file)
            raise
        if dst is not destination:
            dst.close()
    finally:
        if src is not source:
            src.close()
    report.seconds = time.perf_counter() - start
    return report


def _location(where: str | os.PathLike[str] | Store) -> str | Store:
    return where if isinstance(where, Store) else os.fspath(where)


def _new_sqlite_file(where: str | os.PathLike[str] | Store) -> Path | None:
    """The file a SQLite destination will create, or None (it exists, or is no file)."""
    if isinstance(where, Store):
        return None
    text = os.fspath(where)
    scheme, sep, rest = text.partition("://")
    if sep and scheme != "sqlite":
        return None
    path = (rest[1:] if rest.startswith("/") else rest) if sep else text
    if path in ("", ":memory:"):
        return None
    file = Path(path).expanduser()
    return None if file.exists() else file


def _remove(file: Path | None) -> None:
    if file is None:
        return
    for each in (file, Path(f"{file}-wal"), Path(f"{file}-shm"), Path(f"{file}-journal")):
        try:
            each.unlink()
        except OSError:
            pass


def _state(store: Store) -> tuple[dict[str, Any], list[KeyRecord]]:
    """What must not move in SRC while it is copied."""
    return {app: store.app_version(app) for app in store.apps()}, store.list_keys(include_revoked=True)


def _copy(src: Store, dst: Store, sample: int, progress: Callable[[int], None] | None) -> MigrationReport:
    before = _state(src)
    apps = list(before[0])
    meta = {k: v for k in META_KEYS if (v := src.get_meta(k)) is not None}
    report = MigrationReport(src.location, dst.location, {}, 0, meta)
    with dst.transaction():  # one transaction, DST's write lock held: all of it commits, or none
        _require_empty(src, dst, meta)
        if meta:
            dst.claim_meta(meta)
        samples = {app: _Samples(sample) for app in apps}
        for app in apps:
            counts = src.counts(app)
            if counts is not None and counts.sessions == counts.facts == 0:
                # An app that exists with nothing in it: created through the contract's only door.
                dst.put_items(app, [(Item("fact", PLACEHOLDER, None, "", {}, text=""), [])])
                dst.delete_item(app, "fact", PLACEHOLDER)
        batch: list[tuple[Item, list[IndexedChunk]]] = []
        batch_app, batch_chunks = None, 0
        # Previous versions (Memory.update's history) of the batch's items: written once the
        # items are, since a version is kept only beside its item.
        pending: list[tuple[Item, list[ItemVersion]]] = []
        with_history: list[tuple[str, str, str]] = []

        def flush() -> None:
            nonlocal batch, batch_chunks, pending
            if batch:
                dst.put_items(batch_app, batch)  # type: ignore[arg-type]
                for item, versions in pending:
                    dst.put_history(batch_app, item.kind, item.external_id, versions)  # type: ignore[arg-type]
                    with_history.append((batch_app, item.kind, item.external_id))  # type: ignore[arg-type]
                if progress is not None:
                    progress(len(batch))
            batch, batch_chunks, pending = [], 0, []

        for app, item, chunks in _in_chunk_order(src, apps):
            if app != batch_app or len(batch) >= BATCH_ITEMS or batch_chunks >= BATCH_CHUNKS:
                flush()
                batch_app = app
            indexed = [_indexed(c) for c in chunks]
            for one, lines in zip(indexed, _lines(src, app, chunks)):
                one.lines = lines
            sentences = src.sentence_vectors(app, [c.chunk_id for c in chunks])
            for one, chunk in zip(indexed, chunks):
                one.sentences = list(sentences.get(chunk.chunk_id, ()))
            batch.append((item, indexed))
            batch_chunks += len(chunks)
            versions = src.item_history(app, item.kind, item.external_id)
            if versions:
                pending.append((item, versions))
            samples[app].add(item, chunks)
        flush()
        hashes = src.key_hashes()
        for key in src.list_keys(include_revoked=True):
            _copy_key(dst, key, hashes, src.location)
        report.keys = len(before[1])
        for app in apps:
            files = src.synced_files(app)
            if files:
                dst.record_synced_files(app, files)
            if not src.titles_indexed(app):  # chunks copied as stored: still waiting for `reindex`
                dst.mark_titles_indexed(app, False)
            if not src.sentences_indexed(app):  # likewise: its short memories' sentences still to add
                dst.mark_sentences_indexed(app, False)
        _unchanged(src, dst, before)
        verify(src, dst, samples, report, with_history)
        _unchanged(src, dst, before)  # nor while it was compared
    return report


def _unchanged(src: Store, dst: Store, before: tuple[dict[str, Any], list[KeyRecord]]) -> None:
    if _state(src) != before:
        raise MigrationFailed(
            f"{src.location} changed while it was copied (a writer is running); nothing was committed "
            f"to {dst.location}: stop its writers (diarist serve, agents) and run the copy again"
        )


def _require_empty(src: Store, dst: Store, meta: dict[str, str]) -> None:
    held = dst.apps()
    n_keys = len(dst.list_keys(include_revoked=True))
    if held or n_keys:
        what = ", ".join(filter(None, [_plural(len(held), "app"), _plural(n_keys, "API key")]))
        raise MigrationFailed(
            f"{dst.location} is not empty ({what}); copy into a new file, a new database or an empty schema "
            "(options=-csearch_path=NAME)"
        )
    for key, value in meta.items():
        stored = dst.get_meta(key)
        if stored is not None and stored != value:
            raise MigrationFailed(f"{dst.location} already records {key} {stored!r}, not {src.location}'s {value!r}")


def _plural(n: int, noun: str) -> str:
    return "" if not n else f"{n} {noun}" + ("s" if n != 1 else "")


def _indexed(chunk: StoredChunk) -> IndexedChunk:
    c = chunk.chunk
    terms, language = lexical.analyze_passage(c.text) if c.lexical else ([], lexical.detect(c.text))
    return IndexedChunk(c, chunk.vector, terms, language)


def _lines(src: Store, app: str, chunks: list[StoredChunk]) -> list[list[tuple[bytes, Any]]]:
    """Each chunk's lines' vectors as SRC holds them, when it holds all of them (else none:
    ``diarist reindex`` gives them to it, as to a chunk stored before they were kept)."""
    from .read.lines import line_digest
    from .read.trim import lines_of

    digests = [[line_digest(line) for line in lines_of(c.chunk.text)] for c in chunks]
    found = src.line_vectors(app, [d for each in digests for d in each])
    return [[(d, found[d]) for d in each] if all(d in found for d in each) else [] for each in digests]


def _copy_key(dst: Store, key: KeyRecord, hashes: dict[int, str], where: str) -> None:
    if key.id not in hashes:
        raise MigrationFailed(f"API key {key.id} of {where} appeared while it was copied; nothing was committed")
    copied = dst.add_key(key.app, hashes[key.id], key.prefix, key.label, key.created_at)
    if key.revoked_at is not None:
        dst.revoke_key(copied.id, key.revoked_at)


def _items(src: Store, app: str, kind: str) -> Iterator[tuple[int, str, Item, list[StoredChunk]]]:
    """(first chunk id, app, item, chunks) of one app and kind, in list order (chunk id order);
    an item without chunks takes the key of the item before it."""
    offset, key = 0, 0
    while True:
        page = src.list_items(app, kind, PAGE, offset)
        for summary in page:
            item = src.get_item(app, kind, summary.external_id)
            if item is None:
                raise MigrationFailed(f"{kind} {summary.external_id!r} of app {app!r} vanished from {src.location} "
                                      "while it was copied; stop its writers and run the copy again")
            chunks = src.item_chunks(app, kind, summary.external_id)
            if chunks:
                key = chunks[0].chunk_id
            yield key, app, item, chunks
        if len(page) < PAGE:
            return
        offset += len(page)


def _in_chunk_order(src: Store, apps: list[str]) -> Iterator[tuple[str, Item, list[StoredChunk]]]:
    streams = [_items(src, app, kind) for app in apps for kind in KINDS]
    for _, app, item, chunks in heapq.merge(*streams, key=lambda t: t[0]):
        yield app, item, chunks


# -- the check ---------------------------------------------------------------------------------


class _Samples:
    """A seeded reservoir of chunks (queries) and items (compared whole) of one app."""

    def __init__(self, size: int):
        self.size = size
        self.rng = random.Random(0)
        self.chunks: list[StoredChunk] = []
        self.items: list[tuple[str, str]] = []
        self._seen_chunks = self._seen_items = 0

    def _keep(self, pool: list, seen: int, value: Any) -> None:
        if len(pool) < self.size:
            pool.append(value)
        else:
            j = self.rng.randrange(seen)
            if j < self.size:
                pool[j] = value

    def add(self, item: Item, chunks: list[StoredChunk]) -> None:
        self._seen_items += 1
        self._keep(self.items, self._seen_items, (item.kind, item.external_id))
        for chunk in chunks:
            self._seen_chunks += 1
            self._keep(self.chunks, self._seen_chunks, chunk)


def _mismatch(what: str, src: Store, dst: Store) -> MigrationFailed:
    return MigrationFailed(f"the copy of {src.location} into {dst.location} differs: {what}; nothing was committed")


def verify(src: Store, dst: Store, samples: dict[str, _Samples], report: MigrationReport,
           with_history: Sequence[tuple[str, str, str]] = ()) -> None:
    """Compare DST with SRC (see the module docstring); raises MigrationFailed on a difference.
    ``with_history``: (app, kind, id) of every item whose versions were copied."""
    if dst.apps() != src.apps():
        raise _mismatch(f"apps {dst.apps()} instead of {src.apps()}", src, dst)
    for key in META_KEYS:
        if dst.get_meta(key) != src.get_meta(key):
            raise _mismatch(f"meta {key!r}", src, dst)
    checked = {"items": 0, "whole_items": 0, "histories": 0, "dense_queries": 0, "lexical_queries": 0, "keys": 0,
               "synced_files": 0}
    for app, kind, external_id in with_history:
        if dst.item_history(app, kind, external_id) != src.item_history(app, kind, external_id):
            raise _mismatch(f"the history of {kind} {external_id!r} of app {app!r}", src, dst)
        checked["histories"] += 1
    for app in src.apps():
        counts = src.counts(app)
        if dst.counts(app) != counts:
            raise _mismatch(f"app {app!r} holds {dst.counts(app)}, not {counts}", src, dst)
        assert counts is not None
        report.apps[app] = counts
        checked["items"] += _same_lists(src, dst, app)
        files = src.synced_files(app)
        if dst.synced_files(app) != files:
            raise _mismatch(f"the record of synced files of app {app!r}", src, dst)
        checked["synced_files"] += len(files)
        for kind, external_id in samples[app].items:
            _same_item(src, dst, app, kind, external_id)
            if dst.item_history(app, kind, external_id) != src.item_history(app, kind, external_id):
                raise _mismatch(f"the history of {kind} {external_id!r} of app {app!r}", src, dst)
            checked["whole_items"] += 1
        dense, lex = _same_rankings(src, dst, app, samples[app].chunks, report)
        checked["dense_queries"] += dense
        checked["lexical_queries"] += lex
    keys = [(k.app, k.prefix, k.label, k.created_at, k.revoked_at) for k in src.list_keys(include_revoked=True)]
    got = [(k.app, k.prefix, k.label, k.created_at, k.revoked_at) for k in dst.list_keys(include_revoked=True)]
    src_hashes, dst_hashes = src.key_hashes(), dst.key_hashes()
    src_ids = [k.id for k in src.list_keys(include_revoked=True)]
    dst_ids = [k.id for k in dst.list_keys(include_revoked=True)]
    if got != keys or [dst_hashes[i] for i in dst_ids] != [src_hashes[i] for i in src_ids]:
        raise _mismatch("the API keys", src, dst)
    checked["keys"] = len(keys)
    report.checked = checked


def _same_lists(src: Store, dst: Store, app: str) -> int:
    n = 0
    for kind in KINDS:
        offset = 0
        while True:
            want = src.list_items(app, kind, PAGE, offset)
            got = dst.list_items(app, kind, PAGE, offset)
            if got != want:
                raise _mismatch(f"the {kind}s of app {app!r} (from #{offset})", src, dst)
            ids = [s.external_id for s in want]
            if dst.content_hashes(app, kind, ids) != src.content_hashes(app, kind, ids):
                raise _mismatch(f"the content of {kind}s of app {app!r} (from #{offset})", src, dst)
            n += len(want)
            if len(want) < PAGE:
                break
            offset += PAGE
    return n


def _same_item(src: Store, dst: Store, app: str, kind: str, external_id: str) -> None:
    if dst.get_item(app, kind, external_id) != src.get_item(app, kind, external_id):
        raise _mismatch(f"{kind} {external_id!r} of app {app!r}", src, dst)
    want, got = src.item_chunks(app, kind, external_id), dst.item_chunks(app, kind, external_id)
    same = len(want) == len(got) and all(
        w.chunk == g.chunk and (w.vector is None) == (g.vector is None)
        and (w.vector is None or np.array_equal(w.vector, g.vector))
        for w, g in zip(want, got)
    )
    if not same:
        raise _mismatch(f"the chunks of {kind} {external_id!r} of app {app!r}", src, dst)


def _keyed(store: Store, app: str, ranked: list[tuple[int, float]]) -> list[tuple[tuple, float]]:
    rows = store.fetch_chunks(app, [i for i, _ in ranked])
    out = []
    for chunk_id, score in ranked:
        r = rows[chunk_id]
        out.append(((r.session_id, r.fact_id, r.position, r.view, r.text), score))
    return out


def same_ranking(want: list[tuple[Any, float]], got: list[tuple[Any, float]], depth: int = DEPTH,
                 tol: float = SCORE_TOL) -> bool:
    """The same top ``depth`` (key, score), best first. Lists may run longer than ``depth`` so
    that two items whose scores differ only in the last bits (summed in another order) may
    swap places, even across the cut."""
    if min(len(want), depth) != min(len(got), depth):
        return False
    for i in range(min(len(want), depth)):
        (wk, ws), (gk, gs) = want[i], got[i]
        if not math.isclose(ws, gs, rel_tol=0, abs_tol=tol):
            return False
        if wk != gk and not any(k == wk and math.isclose(s, ws, rel_tol=0, abs_tol=tol) for k, s in got):
            return False
    return True


def _same_rankings(src: Store, dst: Store, app: str, chunks: list[StoredChunk],
                   report: MigrationReport) -> tuple[int, int]:
    """Queries from stored chunks, each through both channels of both stores."""
    dense = (ExactDenseIndex(src), ExactDenseIndex(dst))
    bm25 = (LexicalChannel(src), LexicalChannel(dst))
    lexical_ok = bm25[0].status(app) is None
    if not lexical_ok:
        report.notes.append(f"app {app!r}: the source's lexical index was not complete ({bm25[0].status(app)}); "
                            "the copy's is built from the stored text")
    n_dense = n_lexical = 0
    depth = DEPTH + 10  # room for near ties across the cut
    for chunk in chunks:
        if chunk.vector is not None:
            query = dequantize(chunk.vector[None])
            want, got = (_keyed(s, app, d.search(app, query, depth)) for s, d in zip((src, dst), dense))
            if not same_ranking(want, got):
                raise _mismatch(f"dense ranking of app {app!r} for the vector of chunk {chunk.chunk_id}", src, dst)
            n_dense += 1
        terms = lexical.analyze(" ".join(chunk.chunk.text.split()[:QUERY_TERMS]))
        if lexical_ok and terms:
            try:
                want, got = (_keyed(s, app, b.search(app, terms, depth)) for s, b in zip((src, dst), bm25))
            except LexicalUnavailable as exc:
                raise _mismatch(f"the lexical index of app {app!r} ({exc})", src, dst) from None
            if not same_ranking(want, got):
                raise _mismatch(f"BM25 ranking of app {app!r} for {' '.join(terms)!r}", src, dst)
            n_lexical += 1
    return n_dense, n_lexical
