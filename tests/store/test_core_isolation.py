"""App isolation lives in the store: no path returns another app's memory."""

from __future__ import annotations

import sqlite3

import pytest

from diarist import lexical
from diarist.errors import NotFound, UnknownApp
from diarist.memory import Memory

from conftest import add_all, chunk_keys, make_sessions

SHARED = "The quartz lighthouse keeper Zebulon feeds seventeen herons every morning."


def _chunk_ids(mem: Memory, app: str) -> set[int]:
    return set(chunk_keys(mem, app))


@pytest.fixture
def two_apps(memory):
    """alice and bob hold overlapping content: the same session ids, a shared sentence."""
    alice = make_sessions(12, seed=1)
    bob = make_sessions(12, seed=2)
    for sessions, owner in ((alice, "alice"), (bob, "bob")):
        sessions[0]["messages"].append({"role": "user", "content": f"{SHARED} Only {owner} knows this."})
        sessions[3]["messages"][0]["content"] = SHARED  # identical text in both apps
    add_all(memory, alice, app="alice")
    add_all(memory, bob, app="bob")
    memory.add_fact(f"{SHARED} A fact of {'alice'}.", app="alice", fact_id="f1")
    memory.add_fact(f"{SHARED} A fact of {'bob'}.", app="bob", fact_id="f1")
    return memory


QUERIES = ["quartz lighthouse herons", "Zebulon", "garden river lantern", "only bob knows", "alice"]


def test_search_never_returns_another_apps_chunks(two_apps):
    mem = two_apps
    ids = {app: _chunk_ids(mem, app) for app in ("alice", "bob")}
    assert ids["alice"] and ids["bob"] and not ids["alice"] & ids["bob"]
    for app, other in (("alice", "bob"), ("bob", "alice")):
        for query in QUERIES:
            hits = mem.search(query, app=app, k=100)
            assert hits, query
            assert {h.chunk_id for h in hits} <= ids[app]
            assert all(h.app == app for h in hits)
            assert not any(f"Only {other} knows" in h.text or f"fact of {other}" in h.text for h in hits)


def test_channels_filter_by_app_inside_the_store(two_apps):
    mem = two_apps
    for app in ("alice", "bob"):
        own = _chunk_ids(mem, app)
        for query in QUERIES:
            vec = mem.embedder.embed([query])
            dense = mem.dense.search(app, vec, 10_000)
            lex = mem.lexical.search(app, lexical.analyze(query), 10_000, 1.5, 0.75)
            assert {c for c, _ in dense} <= own
            assert {c for c, _ in lex} <= own
        # the dense channel sees every chunk of the app that has a vector, and nothing else
        with_vector = {
            c for (c,) in sqlite3.connect(mem.store.path).execute(
                "SELECT c.id FROM chunks c JOIN apps a ON a.id = c.app_id "
                "WHERE a.name = ? AND c.vector IS NOT NULL", (app,))
        }
        assert with_vector and with_vector <= own
        assert {c for c, _ in mem.dense.search(app, mem.embedder.embed(["x"]), 10_000)} == with_vector
    # fetching another app's chunk ids yields nothing
    assert mem.store.fetch_chunks("alice", sorted(_chunk_ids(mem, "bob"))) == {}
    assert mem.dense.search("nobody", mem.embedder.embed(["x"]), 10) == []
    assert mem.lexical.search("nobody", ["quartz"], 10, 1.5, 0.75) == []


def test_bm25_statistics_are_per_app(two_apps, tmp_path):
    """bob's lexical scores are exactly those of a database holding bob alone."""
    alone = Memory(tmp_path / "bob_alone.sqlite", embedder="hash")
    bob = make_sessions(12, seed=2)
    bob[0]["messages"].append({"role": "user", "content": f"{SHARED} Only bob knows this."})
    bob[3]["messages"][0]["content"] = SHARED
    add_all(alone, bob, app="bob")
    alone.add_fact(f"{SHARED} A fact of bob.", app="bob", fact_id="f1")
    shared_keys, alone_keys = chunk_keys(two_apps, "bob"), chunk_keys(alone, "bob")
    for query in QUERIES:
        terms = lexical.analyze(query)
        a = [(shared_keys[c], round(s, 12)) for c, s in two_apps.lexical.search("bob", terms, 1000, 1.5, 0.75)]
        b = [(alone_keys[c], round(s, 12)) for c, s in alone.lexical.search("bob", terms, 1000, 1.5, 0.75)]
        assert a == b, query
    alone.close()


def test_get_list_and_stats_are_per_app(two_apps):
    mem = two_apps
    a, b = mem.get("s0", app="alice"), mem.get("s0", app="bob")
    assert "Only alice knows" in a["messages"][-1]["content"]
    assert "Only bob knows" in b["messages"][-1]["content"]
    assert mem.get("f1", app="alice")["text"].endswith("fact of alice.")
    with pytest.raises(NotFound):
        mem.get("s0", app="carol")
    assert [i["session_id"] for i in mem.list(app="alice", kind="session", limit=100, newest_first=False)] == [f"s{i}" for i in range(12)]
    stats = mem.stats()
    assert set(stats["apps"]) == {"alice", "bob"}
    assert stats["apps"]["alice"]["sessions"] == 12 and stats["apps"]["alice"]["facts"] == 1
    assert mem.stats("alice")["apps"].keys() == {"alice"}
    with pytest.raises(UnknownApp):
        mem.stats("carol")
    with pytest.raises(UnknownApp, match="carol"):
        mem.search("quartz", app="carol")


def test_delete_touches_only_its_app(two_apps):
    mem = two_apps
    bob_before = {q: mem.search(q, app="bob", k=50) for q in QUERIES}
    mem.delete("s0", app="alice")
    mem.delete("f1", app="alice")
    with pytest.raises(NotFound):
        mem.get("s0", app="alice")
    assert "Only bob knows" in mem.get("s0", app="bob")["messages"][-1]["content"]
    assert mem.get("f1", app="bob")
    for query in QUERIES:
        after = mem.search(query, app="bob", k=50)
        assert [h.to_dict() for h in after] == [h.to_dict() for h in bob_before[query]]
        assert not any("Only alice knows" in h.text for h in mem.search(query, app="alice", k=50))
    mem.delete_app("alice")
    assert mem.apps() == ["bob"]
    for query in QUERIES:
        assert [h.to_dict() for h in mem.search(query, app="bob", k=50)] == [h.to_dict() for h in bob_before[query]]
    conn = sqlite3.connect(mem.store.path)
    for table in ("sessions", "facts", "chunks", "lex_postings", "lex_stats"):
        apps = {r[0] for r in conn.execute(f"SELECT DISTINCT app_id FROM {table}")}
        assert len(apps) == 1, table
    conn.close()
