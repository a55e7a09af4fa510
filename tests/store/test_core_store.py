"""The SQLite store: schema, persistence, idempotent re-ingest, deletion (with BM25 statistics)."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from diarist import lexical
from diarist.embed.hashing import HashEmbedder
from diarist.errors import EmbedderMismatch, NotFound, SchemaError, UnknownApp
from diarist.memory import Memory
from diarist.store.sqlite.migrations import MIGRATIONS
from diarist.store.sqlite import SQLiteStore

from conftest import WORDS, add_all, chunk_keys, make_sessions

QUERIES = ["garden river", "copper falcon pepper", "zephyr", "quartz raven sorrel timber", "tavern plaza"]


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it is asked to embed."""

    def __init__(self):
        super().__init__()
        self.calls: list[int] = []

    def embed_batch(self, texts):
        self.calls.append(len(texts))
        return super().embed_batch(texts)


def _rows(path, sql, params=()):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def _lexical_by_key(mem: Memory, app: str, query: str) -> list[tuple]:
    keys = chunk_keys(mem, app)
    pairs = mem.lexical.search(app, lexical.analyze(query), 10_000, 1.5, 0.75)
    return sorted((keys[c], round(s, 10)) for c, s in pairs)


def _dense_by_key(mem: Memory, app: str, query: str) -> list[tuple]:
    keys = chunk_keys(mem, app)
    pairs = mem.dense.search(app, mem.embedder.embed([query]), 10_000)
    return sorted((keys[c], round(s, 6)) for c, s in pairs)


def _lex_stats(mem: Memory, app: str) -> tuple[int, int]:
    return _rows(mem.store.path, "SELECT n_docs, total_len FROM lex_stats JOIN apps a ON a.id = app_id WHERE a.name = ?", (app,))[0]


# -- schema and persistence ----------------------------------------------------------------------


def test_schema_pragmas_and_migrations(db_path):
    store = SQLiteStore(db_path)
    conn = store._db.conn  # the store's own connection: foreign_keys and busy_timeout are per connection
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    store.close()
    SQLiteStore(db_path).close()  # re-opening an up-to-date file migrates nothing
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    conn.close()
    with pytest.raises(SchemaError, match="newer"):
        SQLiteStore(db_path)


def test_data_survives_reopening(db_path):
    with Memory(db_path, embedder="hash") as mem:
        sid = mem.add_session([{"role": "user", "content": "My cat is called Admon."}], app="me", date="2024-05-01 14:30")
        fid = mem.add_fact("Admon likes tuna.", app="me", date="2024/05/02")
        before = [h.to_dict() for h in mem.search("Admon", app="me", k=5)]
    with Memory(db_path, embedder="hash") as mem:
        assert [h.to_dict() for h in mem.search("Admon", app="me", k=5)] == before
        session = mem.get(sid, app="me")
        assert session["date"] == "2024-05-01T14:30:00"
        assert session["messages"] == [{"role": "user", "content": "My cat is called Admon.", "time": None}]
        assert mem.get(fid, app="me")["date"] == "2024-05-02T00:00:00"
        assert {h["date"] for h in before} == {"2024-05-01T14:30:00", "2024-05-02T00:00:00"}


def test_undated_items_get_a_date(memory):
    sid = memory.add_session([{"role": "user", "content": "hello there"}])
    assert memory.get(sid)["date"]
    assert memory.search("hello", k=1)[0].date


def test_embedder_mismatch_is_refused(db_path):
    Memory(db_path, embedder="hash").close()
    with pytest.raises(EmbedderMismatch, match="hash-64-64"):
        Memory(db_path, embedder="hash:32")


def test_vectors_are_normalised_int8(memory):
    add_all(memory, make_sessions(3), app="a")
    rows = _rows(memory.store.path, "SELECT vector FROM chunks WHERE vector IS NOT NULL")
    assert rows
    for (blob,) in rows:
        vec = np.frombuffer(blob, dtype=np.int8).astype(np.float32)
        assert len(vec) == memory.embedder.dim
        assert np.linalg.norm(vec / 127) == pytest.approx(1.0, abs=0.02)


# -- idempotent re-ingest ------------------------------------------------------------------------


def test_reingesting_the_same_sessions_changes_nothing(db_path):
    embedder = CountingEmbedder()
    mem = Memory(db_path, embedder=embedder)
    sessions = make_sessions(10, seed=4)
    add_all(mem, sessions, app="a")
    mem.add_fact("a standalone fact about walnuts", app="a", fact_id="f")
    tables = ("sessions", "messages", "facts", "chunks", "lex_postings", "lex_stats", "lex_terms")
    snapshot = {t: _rows(db_path, f"SELECT * FROM {t} ORDER BY 1, 2") for t in tables}
    calls = len(embedder.calls)
    from diarist.write.validate import SessionInput

    report = mem.add_sessions([SessionInput(s["messages"], s["session_id"], s["date"]) for s in sessions], app="a")
    assert report.unchanged == [f"s{i}" for i in range(10)]
    assert report.added == report.replaced == [] and report.chunks == 0
    assert mem.add_fact("a standalone fact about walnuts", app="a", fact_id="f") == "f"
    assert len(embedder.calls) == calls, "nothing is embedded again"
    assert {t: _rows(db_path, f"SELECT * FROM {t} ORDER BY 1, 2") for t in tables} == snapshot
    mem.close()


def test_session_without_id_gets_a_content_id(memory):
    messages = [{"role": "user", "content": "the same words"}]
    first = memory.add_session(messages, app="a")
    assert memory.add_session(messages, app="a") == first
    assert memory.stats("a")["apps"]["a"]["sessions"] == 1


def test_changed_content_replaces(memory):
    sessions = make_sessions(6, seed=5)
    add_all(memory, sessions, app="a")
    n_chunks = memory.stats("a")["apps"]["a"]["chunks"]
    sessions[2]["messages"] = [{"role": "user", "content": "Entirely new words: xylophone zeppelin."}]
    from diarist.write.validate import SessionInput

    report = memory.add_sessions([SessionInput(s["messages"], s["session_id"], s["date"]) for s in sessions], app="a")
    assert report.replaced == ["s2"] and len(report.unchanged) == 5 and report.added == []
    assert memory.get("s2", app="a")["messages"] == [
        {"role": "user", "content": "Entirely new words: xylophone zeppelin.", "time": None}
    ]
    hits = memory.search("xylophone", app="a", k=3)
    assert hits[0].session_id == "s2" and hits[0].ranks["lexical"] == 1
    stats = memory.stats("a")["apps"]["a"]
    assert stats["sessions"] == 6 and stats["lexical_index"] == "complete"
    assert stats["chunks"] < n_chunks  # the old chunks of s2 are gone
    # no postings point at the old text: the index equals a fresh build
    fresh = Memory(memory.store.path.replace(".sqlite", "_fresh.sqlite"), embedder="hash")
    add_all(fresh, sessions, app="a")
    for query in QUERIES + ["xylophone zeppelin"]:
        assert _lexical_by_key(memory, "a", query) == _lexical_by_key(fresh, "a", query), query
        assert _dense_by_key(memory, "a", query) == _dense_by_key(fresh, "a", query), query
    assert _lex_stats(memory, "a") == _lex_stats(fresh, "a")
    # a changed date alone also replaces
    sessions[0]["date"] = "2020-01-01"
    report = memory.add_sessions([SessionInput(sessions[0]["messages"], "s0", sessions[0]["date"])], app="a")
    assert report.replaced == ["s0"] and memory.get("s0", app="a")["date"] == "2020-01-01T00:00:00"
    fresh.close()


def test_duplicate_ids_in_one_batch_are_refused(memory):
    from diarist.errors import InvalidInput
    from diarist.write.validate import SessionInput

    s = [{"role": "user", "content": "x"}]
    with pytest.raises(InvalidInput, match="'dup' appears twice"):
        memory.add_sessions([SessionInput(s, "dup"), SessionInput(s, "dup")], app="a")
    assert memory.apps() == []


# -- deletion ------------------------------------------------------------------------------------


def _build(path, sessions, facts, app="a"):
    mem = Memory(path, embedder="hash")
    add_all(mem, sessions, app=app)
    for fid, text in facts:
        mem.add_fact(text, app=app, fact_id=fid)
    return mem


def test_delete_equals_a_fresh_build_of_the_rest(tmp_path):
    sessions = make_sessions(40, seed=6)
    # a term that only the deleted sessions hold: its postings must disappear entirely
    sessions[5]["messages"][0]["content"] += " Unobtanium sighting."
    sessions[17]["messages"][1]["content"] += " unobtanium again"
    facts = [(f"f{i}", f"Fact {i}: {' '.join(WORDS[i : i + 6])}") for i in range(8)]
    mem = _build(tmp_path / "full.sqlite", sessions, facts)
    before = _lex_stats(mem, "a")
    for doomed in ("s5", "s17", "s30", "f3"):
        mem.delete(doomed, app="a")
    keep_sessions = [s for s in sessions if s["session_id"] not in ("s5", "s17", "s30")]
    keep_facts = [f for f in facts if f[0] != "f3"]
    fresh = _build(tmp_path / "fresh.sqlite", keep_sessions, keep_facts)
    assert _lex_stats(mem, "a") == _lex_stats(fresh, "a") != before
    assert mem.lexical.status("a") is None
    for query in QUERIES + ["fact 3", "unobtanium"]:
        assert _lexical_by_key(mem, "a", query) == _lexical_by_key(fresh, "a", query), query
        assert _dense_by_key(mem, "a", query) == _dense_by_key(fresh, "a", query), query
    assert mem.lexical.search("a", ["unobtanium"], 10, 1.5, 0.75) == []
    # a term that only deleted text held leaves the dictionary too (deleted text leaves nothing)
    assert _rows(mem.store.path, "SELECT count(*) FROM lex_terms WHERE term = 'unobtanium'") == [(0,)]
    # text, messages and vectors are gone too
    for table, column in (("sessions", "external_id"), ("facts", "external_id")):
        ids = {r[0] for r in _rows(mem.store.path, f"SELECT {column} FROM {table}")}
        assert not ids & {"s5", "s17", "s30", "f3"}
    n_messages = sum(len(s["messages"]) for s in keep_sessions)
    assert _rows(mem.store.path, "SELECT count(*) FROM messages") == [(n_messages,)]
    assert _rows(mem.store.path, "SELECT count(*) FROM chunks") == _rows(fresh.store.path, "SELECT count(*) FROM chunks")
    assert not any("nobtanium" in r[0] for r in _rows(mem.store.path, "SELECT text FROM chunks"))
    for deleted in ("s5", "f3"):
        with pytest.raises(NotFound):
            mem.get(deleted, app="a")
        with pytest.raises(NotFound):
            mem.delete(deleted, app="a")
    # the full search pipeline agrees too (chunk ids differ between the files: compare by name)
    for query in QUERIES:
        a = [(h.session_id, h.fact_id, h.ranks, round(h.score, 12)) for h in mem.search(query, app="a", k=20)]
        b = [(h.session_id, h.fact_id, h.ranks, round(h.score, 12)) for h in fresh.search(query, app="a", k=20)]
        assert a == b, query
    mem.close()
    fresh.close()


def test_delete_then_add_again(memory, tmp_path):
    sessions = make_sessions(8, seed=7)
    add_all(memory, sessions, app="a")
    memory.search("garden", app="a")  # warm the in-memory caches
    memory.delete("s1", app="a")
    assert all(h.session_id != "s1" for h in memory.search("garden river", app="a", k=100))
    add_all(memory, [sessions[1]], app="a")
    fresh = _build(tmp_path / "fresh.sqlite", sessions, [])
    for query in QUERIES:
        assert _lexical_by_key(memory, "a", query) == _lexical_by_key(fresh, "a", query)
        assert _dense_by_key(memory, "a", query) == _dense_by_key(fresh, "a", query)
    fresh.close()


def test_delete_app_removes_everything(memory):
    add_all(memory, make_sessions(5, seed=8), app="a")
    memory.add_fact("a fact", app="a")
    add_all(memory, make_sessions(3, seed=9), app="b")
    memory.search("garden", app="a")
    memory.delete_app("a")
    assert memory.apps() == ["b"]
    path = memory.store.path
    for table in ("sessions", "facts", "chunks", "lex_postings", "lex_stats"):
        assert _rows(path, f"SELECT count(*) FROM {table} t JOIN apps a ON a.id = t.app_id WHERE a.name = 'a'") == [(0,)]
    assert _rows(path, "SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_id") == [(12,)]
    with pytest.raises(UnknownApp):
        memory.search("garden", app="a")
    with pytest.raises(UnknownApp):
        memory.delete_app("a")
    # the name can be used again, from scratch
    add_all(memory, make_sessions(2, seed=10), app="a")
    assert memory.stats("a")["apps"]["a"]["sessions"] == 2
    assert {h.session_id for h in memory.search("garden river", app="a", k=50)} <= {"s0", "s1"}
