"""The context benchmark: its rows describe the block Memory.context() serves, and verify re-derives them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import LONGMEMEVAL_PATH, needs_data

from diarist.bench import context_bench as cb
from diarist.bench.cli import bench
from diarist.bench.configs import get_config
from diarist.bench.data import Question
from diarist.bench.report import read_rows, verify_run, write_run
from diarist.write.validate import FactInput, SessionInput

ROOT = Path(__file__).resolve().parents[2]
LME = LONGMEMEVAL_PATH
needs_data = needs_data(LME)

CODING = [
    {"role": "user", "content": "How do I reverse a list in Python without copying it?"},
    {"role": "assistant", "content": "Call list.reverse(): it reverses the list in place and returns None."},
    {"role": "user", "content": "And for a string, which has no reverse method?"},
    {"role": "assistant", "content": "Slice it with a step of -1: text[::-1] builds the reversed string."},
]
PETS = [
    {"role": "user", "content": "My dog Biscuit is a beagle and he hates the vacuum cleaner."},
    {"role": "assistant", "content": "Beagles are often sensitive to loud noises."},
]


def _haystack() -> cb.ContextHaystack:
    sessions = [SessionInput(CODING, "code", "2025-03-01", {}), SessionInput(PETS, "pets", "2025-01-01", {})]
    questions = [
        Question("q-dog", "single-session-user", "What breed is my dog Biscuit?", "2025-04-01", ["pets"], None,
                 {"pets": {0}}),
        Question("q-fact", "single-session-user", "Where do I live?", "2025-04-01", ["porto"], None, {"porto": set()}),
        Question("q-off", "offtopic", "What is the melting point of tungsten?", "2025-04-01", [], None, {}),
    ]
    facts = [FactInput("The user moved to Porto in June 2024.", "porto", "2024-06-20", {})]
    return cb.ContextHaystack("h1", sessions, questions, facts=facts, kinds={"q-off": "offtopic"})


@pytest.fixture(scope="module")
def asked(tmp_path_factory):
    runner = cb.ContextRunner(get_config("default"), "hash", tmp_path_factory.mktemp("c") / "cache.sqlite",
                              progress=False)
    hay = _haystack()
    prepared = runner.base.prepare([hay], embed=False)
    memory = runner.memory(hay, prepared["h1"])
    yield runner, hay, prepared["h1"], memory
    memory.close()
    runner.close()


def test_the_block_is_what_memory_context_serves(asked):
    runner, hay, _, memory = asked
    for q in hay.questions:
        block, hits = runner.ask(memory, q)
        # No date word in these questions: "now" cannot move anything, so the plain call must agree.
        assert str(block) == str(memory.context(q.text, app=cb.APP))
        assert [s.hit.chunk_id for s in block.snippets] == [s.hit.chunk_id for s in memory.context(q.text, app=cb.APP).snippets]
        assert {s.hit.chunk_id for s in block.snippets} <= {h.chunk_id for h in hits}
    assert "search" not in vars(memory)  # the dated search is unbound afterwards


def test_row_cells_agree_with_the_block(asked):
    runner, hay, items, memory = asked
    sessions = {p.session_id: p.messages for p in items}
    dates = {p.session_id: p.date for p in items}
    q = hay.questions[0]
    block, hits = runner.ask(memory, q)
    row = runner.row(hay, q, block, hits, sessions, dates, 0.0, 0.0)
    ids = [s.hit.id for s in block.snippets]
    assert row["kind"] == "legitimate" and row["n_tokens"] == block.n_tokens
    assert row["memories"] == list(dict.fromkeys(ids)) and row["n_memories"] == len(set(ids))
    assert row["evidence_in_block"] == ("pets" in ids)
    assert row["snippet_tokens"] == sum(s.n_tokens for s in block.snippets)
    assert row["evidence_tokens"] == sum(s.n_tokens for s in block.snippets if s.hit.id == "pets")
    # turn 0 of "pets" is the evidence turn: in the block exactly when a pets snippet covers it
    covered = any(s.hit.id == "pets" and s.hit.first_turn <= 0 <= s.hit.last_turn for s in block.snippets)
    assert row["evidence_turn_in_block"] == covered


def test_a_candidate_records_scores_coverage_and_cost(asked):
    runner, hay, items, memory = asked
    q = hay.questions[0]
    _, hits = runner.ask(memory, q)
    terms = set(cb.lexical.analyze(q.text))
    c = cb.candidate(hits[0], terms, memory.embedder.count_tokens, set(q.gold), q.evidence_turns, None)
    assert c["fused"] == hits[0].score and c["cosine"] == hits[0].scores.get("dense")
    assert 0.0 <= c["coverage"] <= 1.0 and c["cost"] > 0
    assert cb.term_coverage({"dog", "beagl"}, "A beagle.") == 0.5
    assert cb.term_coverage(set(), "anything") == 0.0


def test_newest_evidence_shown_latest():
    dates = {"a": "2023-01-01", "b": "2023-05-01", "x": "2023-03-01"}
    assert cb.newest_shown_latest(["a", "x", "b"], ["a", "b"], dates) == {
        "newest": "b", "in_block": True, "marked_earlier": False, "shown_latest": True}
    # the older evidence printed after the newer one, or the newest marked earlier: not shown as the latest
    assert cb.newest_shown_latest(["b", "a"], ["a", "b"], dates)["shown_latest"] is False
    assert cb.newest_shown_latest(["a", "b"], ["a", "b"], dates, {"b"})["shown_latest"] is False
    assert cb.newest_shown_latest(["a", "x"], ["a", "b"], dates)["in_block"] is False


def test_turns_a_snippet_shows():
    from diarist.types import Hit, Message
    msgs = [Message("user", "I moved to Porto."), Message("assistant", "Nice city."), Message("user", "Yes, by the river.")]
    hit = Hit(1, "I moved to Porto.\nNice city.", 1.0, "s", None, None, ("user", "assistant"), "all",
              first_turn=0, last_turn=1)
    assert cb.covered_turns(hit, msgs) == [0, 1]
    # grouped: two passages spanning turns 0..2 show the turns whose text they hold, not turn 1
    hit.passages = ["I moved to Porto.", "Yes, by the river."]
    hit.text, hit.last_turn = "I moved to Porto.\n…\nYes, by the river.", 2
    assert cb.covered_turns(hit, msgs) == [0, 2]


def test_offtopic_questions_are_asked_as_floor_py_asks_them():
    hay = _haystack()
    lme = cb.with_offtopic("longmemeval", [hay, hay, hay], ["o1", "o2"], ["p1"])
    assert [[q.text for q in h.questions[3:]] for h in lme] == [["o1", "p1"], ["o2", "p1"], ["o1", "p1"]]
    locomo = cb.with_offtopic("locomo", [hay], ["o1", "o2"], ["p1"])[0]
    assert [locomo.kinds[q.qid] for q in locomo.questions[3:]] == ["offtopic", "offtopic", "offtopic_personal"]
    assert all(not q.gold for q in locomo.questions[3:])


def _rows(runner, hay, items, memory):
    sessions = {p.session_id: p.messages for p in items}
    dates = {p.session_id: p.date for p in items}
    rows = []
    for q in hay.questions:
        block, hits = runner.ask(memory, q)
        rows.append(runner.row(hay, q, block, hits, sessions, dates, 1.0, 2.0))
    return rows


def test_summary_verifies_then_fails_on_an_edited_cell(asked, tmp_path):
    rows = _rows(*asked)
    meta = {"benchmark": "context", "dataset": "locomo", "config_name": "default", "command": "test",
            "description": "test", "code_version": "git:abc1234"}
    run = tmp_path / "run"
    summary = write_run(run, rows, meta, [])
    assert verify_run(run) == []
    assert summary["overall"]["all"]["n"] == 2 and summary["offtopic"]["offtopic"]["n"] == 1
    cells = summary["overall"]["all"]
    assert cells["evidence_in_block"] == round(sum(bool(r["evidence_in_block"]) for r in rows[:2]) / 2, 4)
    for name in ("summary.json", "summary.md"):
        bad = tmp_path / name
        shutil.copytree(run, bad)
        if name == "summary.json":
            s = json.loads((bad / name).read_text())
            s["offtopic"]["offtopic"]["tokens_median"] += 1
            (bad / name).write_text(json.dumps(s))
        else:
            (bad / name).write_text((bad / name).read_text().replace("| all | 2 |", "| all | 3 |"))
        assert any(name in p for p in verify_run(bad))


def test_summary_cells_by_hand():
    def row(kind, gold, ev, ev_tokens, tokens, n_tokens, memories, abstention=False):
        return {"kind": kind, "gold": gold, "abstention": abstention, "type": "t", "evidence_in_block": ev,
                "evidence_turn_in_block": None, "evidence_tokens": ev_tokens, "snippet_tokens": tokens,
                "n_tokens": n_tokens, "empty": tokens == 0, "n_memories": memories, "query_ms": 1.0}
    rows = [row("legitimate", ["a"], True, 30, 100, 150, 2), row("legitimate", ["a"], False, 0, 300, 350, 3),
            row("abstention", ["a"], True, 50, 50, 100, 1, abstention=True),
            row("offtopic", [], None, 0, 0, 0, 0), row("offtopic", [], None, 0, 200, 250, 1),
            row("offtopic", [], None, 0, 100, 150, 1)]
    s = cb.summarise(rows, "longmemeval", "x")
    no_abs = s["overall"]["no_abs"]
    assert no_abs["n"] == 2 and no_abs["evidence_in_block"] == 0.5
    assert no_abs["evidence_token_share"] == round(30 / 400, 4)  # pooled over the set's snippet tokens
    assert no_abs["evidence_token_share_mean"] == round((0.3 + 0.0) / 2, 4)
    assert no_abs["tokens_median"] == 250.0 and s["overall"]["abs"]["n"] == 1
    assert s["offtopic"]["offtopic"] == {"n": 3, "empty": round(1 / 3, 4), "tokens_mean": 133.3,
                                         "tokens_median": 150.0, "tokens_p90": 250.0, "memories_mean": round(2 / 3, 4)}


def test_ranking_ablations_are_refused():
    with pytest.raises(ValueError, match="ranking ablation"):
        cb.ContextRunner(get_config("bm25-only"), "hash", None, progress=False)


@needs_data
@pytest.mark.slow
def test_shortfact_and_longmemeval_context_end_to_end(tmp_path):
    cli = CliRunner()
    cache = ["--embedder", "hash", "--cache", str(tmp_path / "cache.sqlite")]
    r = cli.invoke(bench, ["shortfact", "--data", str(ROOT / "benchmarks" / "data" / "short_fact_questions.json"),
                           "--sessions", str(LME), "--limit", "2", "--out", str(tmp_path / "sf"), *cache])
    assert r.exit_code == 0, r.output
    rows = read_rows(tmp_path / "sf")
    assert [r["id"] for r in rows] == ["sf01", "sf02"] and rows[0]["question"] == "Where do I live?"
    assert all(r["kind"] == "shortfact" and "shortfact" in r for r in rows)
    r = cli.invoke(bench, ["longmemeval", "--context", "--data", str(LME), "--limit", "2", "--stride", "90",
                           "--out", str(tmp_path / "lme"), *cache])
    assert r.exit_code == 0, r.output
    rows = read_rows(tmp_path / "lme")
    assert [r["kind"] for r in rows] == ["legitimate", "offtopic", "offtopic_personal"] * 2
    assert (tmp_path / "lme" / cb.CANDIDATES).exists()
    config = json.loads((tmp_path / "lme" / "config.json").read_text())
    assert "--context" in config["command"] and config["code_version"]
    r = cli.invoke(bench, ["verify", str(tmp_path)])
    assert r.exit_code == 0 and "2 of 2 runs verified" in r.output, r.output


def test_cut_option_is_checked(tmp_path):
    data = tmp_path / "x.json"
    data.write_text("[]")
    cli = CliRunner()
    r = cli.invoke(bench, ["locomo", "--context", "--data", str(data), "--out", str(tmp_path / "o"), "--cut", "0.2,0.1"])
    assert r.exit_code == 2 and "MIN_COSINE,MAX_GAP,MIN_COVERAGE" in r.output
    r = cli.invoke(bench, ["locomo", "--data", str(data), "--out", str(tmp_path / "o"), "--cut", "0.2,0.1,0.5"])
    assert r.exit_code == 2 and "--context" in r.output


def test_a_cut_reaches_the_memory(asked, tmp_path):
    from diarist.read.cut import CutParams
    runner = cb.ContextRunner(get_config("default"), "hash", tmp_path / "cache.sqlite", progress=False,
                              cut=CutParams(0.3, 0.05, 1.0))
    hay = _haystack()
    memory = runner.memory(hay, runner.base.prepare([hay], embed=False)["h1"])
    assert memory.cut == CutParams(0.3, 0.05, 1.0)
    memory.close()
    runner.close()


def test_compare_pairs_context_runs(asked, tmp_path):
    from diarist.bench.report import compare_runs
    rows = _rows(*asked)
    meta = {"benchmark": "context", "dataset": "locomo", "config_name": "default", "command": "test",
            "description": "test", "code_version": "git:abc1234"}
    write_run(tmp_path / "a", rows, meta, [])
    flipped = [dict(r) for r in rows]
    flipped[0]["evidence_in_block"] = not flipped[0]["evidence_in_block"]
    write_run(tmp_path / "b", flipped, meta, [])
    report = compare_runs(tmp_path / "a", tmp_path / "b")
    line = next(x for x in report.splitlines() if x.startswith("| evidence_in_block"))
    assert ("+1 | -0" in line) != ("+0 | -1" in line)
    with pytest.raises(ValueError, match="no question set"):
        cb.compare_context(tmp_path / "a", tmp_path / "b", "no_abs")
