"""Bulk writes of the SQLite store (one statement per table and run of new items, postings once
per run): the same database as item-by-item writes, all-or-nothing, history and isolation kept."""

from __future__ import annotations

import hashlib
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from memory_store import DictStore

from diarist import lexical
from diarist.errors import StoreError
from diarist.lexical.bm25 import LexicalChannel
from diarist.store.base import Conflict, IndexedChunk, Item, Store
from diarist.store.sqlite import postings as sqlite_postings
from diarist.store.sqlite.store import SQLiteStore
from diarist.types import Chunk, Message

WORDS = [f"w{i}" for i in range(300)] + ["apple", "orchard", "lantern", "the", "and"]
QUERIES = [["apple"], ["w1", "w2", "w3"], ["orchard", "lantern", "w7"], ["w250", "apple", "w9"]]

# Every table a write fills, without the columns that hold the time of the write.
TABLES = {
    "lex_terms": "id, term", "lex_postings": "app_id, term_id, block, data",
    "lex_stats": "app_id, version, n_docs, total_len",
    "chunks": "id, app_id, session_id, fact_id, position, view, roles, first_turn, last_turn, text, date, "
              "n_tokens, lex_len, in_lexical, vector, embed_text",
    "sessions": "id, app_id, external_id, date, metadata, content_hash", "messages": "*",
    "facts": "id, app_id, external_id, text, date, metadata, content_hash",
    "item_versions": "id, app_id, kind, external_id, date, metadata, content_hash, body",
    "sqlite_sequence": "*",
}


def rows(path: Path) -> dict[str, list[tuple]]:
    with sqlite3.connect(path) as conn:
        return {t: sorted(conn.execute(f"SELECT {cols} FROM {t}").fetchall(), key=repr) for t, cols in TABLES.items()}


def text_of(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def entry(kind: str, ext: str, texts: list[str], *, lexical_flags: list[bool] | None = None,
          dense: bool = True) -> tuple[Item, list[IndexedChunk]]:
    digest = hashlib.sha256(repr((kind, ext, texts)).encode()).hexdigest()
    if kind == "session":
        item = Item(kind, ext, "2024-01-02", digest, {"n": len(texts)}, tuple(Message("user", t) for t in texts))
    else:
        item = Item(kind, ext, None, digest, {}, text="\n".join(texts))
    flags = lexical_flags or [True] * len(texts)
    chunks = []
    for i, (text, flag) in enumerate(zip(texts, flags)):
        chunk = Chunk(text, i, ("user",), i, i, "all", len(text.split()), dense=dense, lexical=flag)
        vector = np.full(8, i % 100, np.int8) if dense else None
        chunks.append(IndexedChunk(chunk, vector, lexical.analyze(text)))
    return item, chunks


def workload(seed: int = 3) -> list[tuple[str, list[tuple[Item, list[IndexedChunk]]], bool]]:
    """Calls of (app, items, archive): two apps interleaved, runs crossing 1,024-id posting
    blocks, replacements of stored items and of items given earlier in the same call,
    chunks without postings, without vectors, and of stopwords only."""
    rng = random.Random(seed)
    big = [entry("session", f"s{i}", [text_of(rng, rng.randint(1, 12)) for _ in range(rng.randint(1, 30))])
           for i in range(160)]
    facts = [entry("fact", f"f{i}", [text_of(rng, rng.randint(1, 6))]) for i in range(40)]
    mixed = [
        entry("session", "s3", [text_of(rng, 5), "the and"], lexical_flags=[True, True]),  # replaces
        entry("fact", "new-a", ["zyzzyva quokka"]),
        entry("fact", "new-a", ["zyzzyva quokka again"]),  # replaces the one just given
        entry("session", "quiet", [text_of(rng, 4), text_of(rng, 3)], lexical_flags=[False, True]),
        entry("fact", "f2", ["apple orchard"], dense=False),  # replaces, no vector
        entry("session", "s200", ["the and the"]),  # stopwords only: counted, no posting
    ]
    return [("a", big[:100], False), ("b", facts, False), ("a", big[100:], False), ("a", mixed, True),
            ("b", [entry("fact", "f1", ["lantern apple"])], True)]


def build(store: Store, one_by_one: bool) -> None:
    for app, items, archive in workload():
        calls = [[it] for it in items] if one_by_one else [items]
        for call in calls:
            store.put_items(app, call, archive=archive)


def scores(store: Store) -> list[list[tuple[int, float]]]:
    channel = LexicalChannel(store)
    return [channel.search(app, q, 50) for app in ("a", "b") for q in QUERIES + [["zyzzyva"], ["again"]]]


@pytest.mark.slow
def test_bulk_writes_the_same_database_as_item_by_item(tmp_path: Path) -> None:
    stores = {}
    for name in ("bulk", "single"):
        store = SQLiteStore(tmp_path / f"{name}.sqlite")
        build(store, one_by_one=name == "single")
        stores[name] = store
    assert max(r[0] for r in rows(tmp_path / "bulk.sqlite")["chunks"]) > 2 * 1024  # blocks crossed
    assert rows(tmp_path / "bulk.sqlite") == rows(tmp_path / "single.sqlite")
    # BM25 identical to the last bit, and the same as a store written only against the contract.
    reference = DictStore()
    build(reference, one_by_one=True)
    assert scores(stores["bulk"]) == scores(stores["single"]) == scores(reference)
    for store in stores.values():
        store.close()


def test_an_item_given_twice_in_one_call_keeps_its_terms(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.sqlite")
    store.put_items("a", [entry("fact", "x", ["zyzzyva quokka"]), entry("fact", "x", ["zyzzyva quokka again"])])
    hits = LexicalChannel(store).search("a", ["zyzzyva"], 10)
    assert len(hits) == 1  # the second copy, indexed under a term id the dictionary holds
    with sqlite3.connect(tmp_path / "m.sqlite") as conn:
        assert not conn.execute(
            "SELECT 1 FROM lex_postings p LEFT JOIN lex_terms t ON t.id = p.term_id WHERE t.id IS NULL").fetchall()
    store.close()


@pytest.mark.parametrize("where", ["chunks", "postings"])
def test_a_bulk_call_that_fails_midway_stores_nothing(tmp_path: Path, where: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.sqlite"
    store = SQLiteStore(path)
    calls = workload()
    for app, items, archive in calls[:2]:
        store.put_items(app, items, archive=archive)
    before = rows(path)
    app, items, archive = calls[3]
    if where == "chunks":  # a NOT NULL column: the chunk statement fails after the items went in
        item, chunks = items[-1]
        broken = IndexedChunk(Chunk(None, 0, ("user",), 0, 0, "all", 1), np.zeros(8, np.int8), [])  # type: ignore[arg-type]
        items = [*items[:-1], (item, [*chunks, broken])]
    else:  # the posting write fails after every row and every new term is in
        def fail(self: sqlite_postings.Blocks, blocks: object) -> None:
            raise RuntimeError("disk gone")
        monkeypatch.setattr(sqlite_postings.Blocks, "write_blocks", fail)
    with pytest.raises((StoreError, RuntimeError)):
        store.put_items(app, items, archive=archive)
    assert rows(path) == before
    store.close()


def test_a_conflict_in_a_bulk_call_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    store = SQLiteStore(path)
    app, items, _ = workload()[0]
    store.put_items(app, items[:5])
    before = rows(path)
    with pytest.raises(Conflict):
        store.put_items(app, items, expect={("session", "s1"): "not what is stored"})
    assert rows(path) == before
    stored = store.content_hashes(app, "session", ["s1"])["s1"]
    store.put_items(app, items[5:], expect={("session", "s1"): stored})  # the right hash: written
    assert store.counts(app).sessions == len(items)
    store.close()


def test_bulk_replacements_keep_history_in_order(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.sqlite")
    first, second, third = (entry("fact", "x", [t]) for t in ("one apple", "two apple", "three apple"))
    store.put_items("a", [first])
    store.put_items("a", [second, entry("fact", "y", ["other"]), third], archive=True)
    history = [v.item.text for v in store.item_history("a", "fact", "x")]
    assert history == ["one apple", "two apple"]
    assert store.get_item("a", "fact", "x").text == "three apple"
    assert store.item_history("b", "fact", "x") == []  # per app
    store.close()


def test_doc_lengths_match_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    store = SQLiteStore(path)
    build(store, one_by_one=False)
    with sqlite3.connect(path) as conn:
        for app_id, app in ((1, "a"), (2, "b")):
            want = conn.execute("SELECT id, lex_len FROM chunks WHERE app_id = ? AND in_lexical = 1 ORDER BY id",
                                (app_id,)).fetchall()
            got = store.doc_lengths(app)
            assert list(zip(got.ids.tolist(), got.lengths.tolist())) == [(i, float(n)) for i, n in want]
    assert len(store.doc_lengths("absent").ids) == 0
    store.close()
