"""A missing feature beats a wrong answer: an incomplete lexical index is not used (search falls
back to vectors and says so; `diarist doctor` says why; `diarist reindex` repairs it), and
DIARIST_LEXICAL_FUSION=0 restores the vector-only ranking byte for byte."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from diarist import lexical
from diarist.cli import main
from diarist.memory import Memory

from conftest import add_all, first_per_memory, make_sessions

QUERIES = ["garden river lantern", "copper falcon", "zephyr wharf yarrow", "quartz"]


def _cli(*args, env=None):
    return CliRunner().invoke(main, [*args], env=env or {}, catch_exceptions=False)


def _dense_order(mem: Memory, app: str, query: str, k: int) -> list[tuple[int, float]]:
    """The dense ranking as search gives it: each memory once, at its best chunk."""
    return first_per_memory(mem, app, mem.dense.search(app, mem.embedder.embed([query]), 200))[:k]


def _assert_vector_only(mem: Memory, hits, app: str, query: str, k: int) -> None:
    assert [(h.chunk_id, h.score) for h in hits] == _dense_order(mem, app, query, k)
    ranking = [c for c, _ in mem.dense.search(app, mem.embedder.embed([query]), 200)]
    assert [h.ranks for h in hits] == [{"dense": ranking.index(h.chunk_id) + 1, "lexical": None} for h in hits]
    assert {h.stage for h in hits} == {"dense"}


@pytest.fixture
def built(db_path):
    mem = Memory(db_path, embedder="hash")
    add_all(mem, make_sessions(30, seed=11), app="a")
    mem.add_fact("The quartz lighthouse is in Aberdeen.", app="a", fact_id="lighthouse", date="2024-02-02")
    mem.close()
    return db_path


def _corrupt(db_path, sql: str) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute(sql)
    conn.commit()
    conn.close()


@pytest.mark.slow
def test_index_lexical_false_falls_back_to_vectors(db_path):
    mem = Memory(db_path, embedder="hash", index_lexical=False)
    add_all(mem, make_sessions(10, seed=12), app="a")
    reason = mem.lexical.status("a")
    assert reason and "reindex" in reason
    assert mem.stats("a")["apps"]["a"]["lexical_index"] == reason
    for query in QUERIES:
        hits = mem.search(query, app="a", k=8)
        assert len(hits.notes) == 1 and "lexical channel off" in hits.notes[0] and reason in hits.notes[0]
        _assert_vector_only(mem, hits, "a", query, 8)
    assert mem.reindex("a") == mem.stats("a")["apps"]["a"]["chunks"]
    assert mem.lexical.status("a") is None
    hits = mem.search(QUERIES[0], app="a", k=8)
    # both channels again, so the default second stage re-reads the fused candidates
    assert not hits.notes and {h.stage for h in hits} == {"evidence"}
    assert all(h.ranks["lexical"] or h.ranks["dense"] for h in hits)
    mem.close()


@pytest.mark.parametrize(
    "sql,why",
    [
        ("UPDATE lex_stats SET n_docs = n_docs - 3", "covers"),
        ("UPDATE lex_stats SET version = version + 1", "analyzer version"),
        ("DELETE FROM lex_stats", "never built"),
    ],
)
def test_corrupted_statistics_fall_back_and_doctor_says_why(built, sql, why):
    mem = Memory(built, embedder="hash")
    before = {q: [h.to_dict() for h in mem.search(q, app="a", k=10)] for q in QUERIES}
    mem.close()
    ok = _cli("doctor", "--db", str(built), "--embedder", "hash")
    assert ok.exit_code == 0, ok.output
    _corrupt(built, sql)

    mem = Memory(built, embedder="hash")
    for query in QUERIES:
        hits = mem.search(query, app="a", k=10)
        assert hits.notes and why in hits.notes[0]
        _assert_vector_only(mem, hits, "a", query, 10)
    # writes while the index is untrusted keep it untrusted (no half-updated statistics)
    mem.add_fact("A new fact about the quartz mine.", app="a", fact_id="new")
    mem.delete("lighthouse", app="a")
    assert mem.lexical.status("a")
    mem.close()

    doctor = _cli("doctor", "--db", str(built), "--embedder", "hash")
    assert doctor.exit_code == 1
    (line,) = [l for l in doctor.output.splitlines() if "app 'a'" in l and "sessions" in l]
    assert line.startswith("FAIL") and "falls back to vectors" in line and why in line and "diarist reindex" in line
    searched = _cli("search", "quartz", "--db", str(built), "--app", "a", "--embedder", "hash", "--json")
    assert searched.exit_code == 0 and "note: lexical channel off" in searched.stderr
    assert {h["ranks"]["lexical"] for h in json.loads(searched.stdout)} == {None}

    fixed = _cli("reindex", "--db", str(built), "--app", "a", "--embedder", "hash")
    assert fixed.exit_code == 0 and "reindexed" in fixed.output
    doctor = _cli("doctor", "--db", str(built), "--embedder", "hash")
    assert doctor.exit_code == 0, doctor.output
    (line,) = [l for l in doctor.output.splitlines() if "app 'a'" in l and "sessions" in l]
    assert line.startswith("ok")

    # after the repair the index equals a fresh build of the same data
    mem = Memory(built, embedder="hash")
    mem.delete("new", app="a")
    mem.add_fact("The quartz lighthouse is in Aberdeen.", app="a", fact_id="lighthouse", date="2024-02-02")
    for query in QUERIES:
        hits = mem.search(query, app="a", k=10)
        assert not hits.notes
        strip = lambda h: {k: v for k, v in h.items() if k != "chunk_id"}  # noqa: E731
        assert [strip(h) for h in (x.to_dict() for x in hits)] == [strip(h) for h in before[query]]
    mem.close()


def test_kill_switch_is_the_vector_only_ranking_byte_for_byte(built):
    mem = Memory(built, embedder="hash")
    vector_only = Memory(mem.store, embedder="hash", lexical_fusion=False)
    differs = 0
    for query in QUERIES + ["Aberdeen lighthouse"]:
        for k in (1, 5, 20):
            off = _cli("search", query, "--db", str(built), "--app", "a", "--embedder", "hash", "--json", "-k", str(k),
                       env={"DIARIST_LEXICAL_FUSION": "0"})
            assert off.exit_code == 0 and off.stderr == ""
            hits = json.loads(off.stdout)
            assert [(h["chunk_id"], h["score"]) for h in hits] == _dense_order(mem, "a", query, k)
            api = vector_only.search(query, app="a", k=k)
            assert not api.notes
            _assert_vector_only(mem, api, "a", query, k)
            assert off.stdout == json.dumps([h.to_dict() for h in api], indent=2, ensure_ascii=False) + "\n"
            on = _cli("search", query, "--db", str(built), "--app", "a", "--embedder", "hash", "--json", "-k", str(k))
            fused = json.loads(on.stdout)
            differs += [h["chunk_id"] for h in fused] != [h["chunk_id"] for h in hits]
    assert differs, "with fusion on, the lexical channel changes some ranking"
    for value in ("false", "off", "no", " 0 "):
        off = _cli("search", "quartz", "--db", str(built), "--app", "a", "--embedder", "hash", "--json",
                   env={"DIARIST_LEXICAL_FUSION": value})
        assert {h["stage"] for h in json.loads(off.stdout)} == {"dense"}, value
    mem.close()


def test_kill_switch_does_not_consult_a_broken_index(built):
    _corrupt(built, "UPDATE lex_stats SET n_docs = 0")
    off = _cli("search", "quartz", "--db", str(built), "--app", "a", "--embedder", "hash", "--json",
               env={"DIARIST_LEXICAL_FUSION": "0"})
    assert off.exit_code == 0 and off.stderr == ""
    mem = Memory(built, embedder="hash")
    assert [h["chunk_id"] for h in json.loads(off.stdout)] == [c for c, _ in _dense_order(mem, "a", "quartz", 5)]
    mem.close()


def test_lexical_analyzer_version_is_recorded(built):
    conn = sqlite3.connect(built)
    assert conn.execute("SELECT DISTINCT version FROM lex_stats").fetchall() == [(lexical.VERSION,)]
    conn.close()


def test_an_untrusted_index_stays_untrusted_until_reindexed(db_path):
    """Regression: chunks written and deleted while the index was off left postings behind; a
    later write recreated empty statistics, the index looked complete, and a search for a
    deleted chunk's word crashed on the ghost posting."""
    off = Memory(db_path, embedder="hash", index_lexical=False)
    off.add_session([{"role": "user", "content": "the zorblax ate my homework"}], app="a", session_id="s1")
    off.delete("s1", app="a")
    off.close()
    mem = Memory(db_path, embedder="hash")
    mem.add_session([{"role": "user", "content": "an ordinary note about tea"}], app="a", session_id="s2")
    assert "never built" in mem.lexical.status("a")
    hits = mem.search("zorblax", app="a", k=5)
    assert hits.notes and [h.session_id for h in hits] == ["s2"]
    assert mem.reindex("a") == 1
    assert mem.lexical.search("a", ["zorblax"], 10, 1.5, 0.75) == []
    hits = mem.search("zorblax tea", app="a", k=5)
    assert not hits.notes and [(h.session_id, h.ranks["lexical"]) for h in hits] == [("s2", 1)]
    mem.close()
