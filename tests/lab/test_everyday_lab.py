"""The everyday set (issue 41): its files match their sources, it holds what the issue asks for,
and `diarist bench everyday` scores it, verifies and compares its runs."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from diarist.bench.everyday import EverydayQuestion, changed_cells, haystack_sessions, load_questions, question_row
from diarist.bench.everyday_summary import summarise
from diarist.bench.rows import read_rows
from diarist.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "everyday"


def _build():
    spec = importlib.util.spec_from_file_location("everyday_build", DATA / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows() -> list[dict]:
    return [json.loads(line) for line in (DATA / "questions.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_committed_files_are_what_the_sources_write():
    done = subprocess.run([sys.executable, str(DATA / "build.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_alternatives_expand_to_every_phrasing():
    build = _build()
    assert build.expand("Where do I live[| now| these days]?") == [
        "Where do I live?", "Where do I live now?", "Where do I live these days?"]
    assert build.expand("Do I [|still ]drive it?") == ["Do I drive it?", "Do I still drive it?"]


def test_the_set_holds_what_the_issue_asks_for():
    build = _build()
    questions = rows()
    groups = Counter(r["group"] for r in questions if r["kind"] in ("fact", "changed"))
    assert len(groups) >= 40 and min(groups.values()) >= 6
    assert sum(len(h["facts"]) for h in build.HAYSTACKS) >= 40
    assert len(build.HAYSTACKS) >= 3 and all(len(h["conversations"]) >= 8 for h in build.HAYSTACKS)
    fillers = ("now", "these days", "at the moment", "currently", "still", "anymore")
    texts = [r["question"].lower() for r in questions if r["kind"] in ("fact", "changed")]
    assert all(any(f" {w}" in t for t in texts) for w in fillers)
    assert len(build.NOTES) >= 60
    kinds = Counter(r["kind"] for r in questions)
    for kind in ("changed", "title", "front", "impersonal", "keyword", "bullet", "offtopic"):
        assert kinds[kind] >= 5, kind
    assert {r["haystack"] for r in questions if r["kind"] == "offtopic"} == {r["haystack"] for r in questions}
    # every phrasing of one fact, every question about one note, in one half; both halves used
    halves: dict[str, set[str]] = {}
    for r in questions:
        halves.setdefault(r["group"], set()).add(r["half"])
    assert all(len(h) == 1 for h in halves.values())
    assert {r["half"] for r in questions} == {"dev", "heldout"}


def test_no_note_repeats_its_title_in_its_body():
    build = _build()
    for note in build.NOTES:
        first = note["body"].lstrip().splitlines()[0].lstrip("# ").strip().lower()
        assert first != build.note_title(note).lower(), note["path"]


def test_every_gold_and_older_entry_is_a_memory_of_its_haystack(tmp_path):
    questions = rows()
    for haystack in sorted({r["haystack"] for r in questions}):
        sessions, facts = haystack_sessions(DATA, haystack, tmp_path / haystack)
        ids = {s.session_id for s in sessions} | {f.fact_id for f in facts}
        for r in questions:
            if r["haystack"] == haystack:
                assert set(r["gold"]) | set(r["older"]) <= ids, r["id"]


def test_notes_without_a_front_matter_date_are_dated_alike_on_every_checkout(tmp_path):
    sessions, _ = haystack_sessions(DATA, "notes", tmp_path / "v")
    readme = next(s for s in sessions if s.session_id == "Readme.md")
    assert readme.date == pytest.approx(1768478400.0)  # 2026-01-15 12:00 UTC, not the checkout's time


def test_halves_split_the_questions():
    dev, held, both = (load_questions(DATA, h) for h in ("dev", "heldout", "all"))
    assert len(dev) + len(held) == len(both) and {q.half for q in dev} == {"dev"}
    with pytest.raises(ValueError):
        load_questions(DATA, "train")


def _snippet(memory_id: str, score: float, earlier: int | None = None):
    return SimpleNamespace(hit=SimpleNamespace(id=memory_id, score=score), earlier_than=earlier)


def _question(kind="changed", gold=("new",), older=("old",)):
    return EverydayQuestion("q1", "p", kind, "Where do I live now?", list(gold), list(older), "dev", "2026-03-02")


def test_a_changed_fact_passes_only_newest_first_with_the_older_marked():
    q = _question()
    assert changed_cells(q, ["old", "new"], ["new", "old"], {"old"})["passed"]
    assert changed_cells(q, ["new"], ["new"], set())["passed"]  # the older left out: nothing to mark
    assert not changed_cells(q, ["old", "new"], ["old", "new"], {"old"})["passed"]  # older ranked first
    assert not changed_cells(q, ["old", "new"], ["new", "old"], set())["passed"]  # older not marked
    assert not changed_cells(q, ["old"], ["old"], {"old"})["passed"]  # newest missing


def test_a_row_reads_the_block_by_rank_not_by_print_order():
    block = SimpleNamespace(snippets=[_snippet("old", 0.4, 2), _snippet("other", 0.5), _snippet("new", 0.9)],
                            n_tokens=120)
    hits = [SimpleNamespace(id="new"), SimpleNamespace(id="other")]
    row = question_row(_question(), block, hits, 5.0, "default")
    assert row["memories"] == ["old", "other", "new"] and row["ranked"] == ["new", "other", "old"]
    assert row["in_block"] and row["first"] and row["top_hit"] and row["rank"] == 1
    assert row["changed"]["passed"]
    empty = question_row(_question("title", ("note.md",), ()), SimpleNamespace(snippets=[], n_tokens=0), [], 1.0, "d")
    summary = summarise([row, empty], "everyday", "default")
    assert summary["answerable"]["empty_n"] == 1 and summary["title"]["empty_n"] == 1


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("everyday")
    cache = ["--embedder", "hash", "--cache", str(out / "cache.sqlite")]
    runner = CliRunner()
    for half in ("dev", "heldout"):
        result = runner.invoke(main, ["bench", "everyday", "--data", str(DATA), "--half", half, "--haystack", "maya",
                                      "--out", str(out / half), *cache])
        assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow
def test_a_run_verifies_and_a_tampered_summary_does_not(runs):
    runner = CliRunner()
    result = runner.invoke(main, ["bench", "verify", str(runs / "dev")])
    assert result.exit_code == 0, result.output
    summary = json.loads((runs / "dev" / "summary.json").read_text(encoding="utf-8"))
    summary["facts"]["in_block"] = 1.0 if summary["facts"]["in_block"] != 1.0 else 0.0
    (runs / "dev" / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    assert runner.invoke(main, ["bench", "verify", str(runs / "dev")]).exit_code == 1


def test_each_half_asks_only_its_questions_and_the_manifest_names_the_command(runs):
    for half in ("dev", "heldout"):
        rows = read_rows(runs / half)
        assert rows and {row["half"] for row in rows} == {half}
        manifest = json.loads((runs / half / "manifest.json").read_text(encoding="utf-8"))
        assert f"--half {half}" in manifest["command"] and (runs / half / "candidates.jsonl.gz").exists()


def test_compare_pairs_two_runs_of_the_set(tmp_path, runs):
    out = tmp_path / "same"
    result = CliRunner().invoke(main, ["bench", "everyday", "--data", str(DATA), "--half", "heldout", "--haystack",
                                       "maya", "--out", str(out), "--embedder", "hash", "--cache",
                                       str(runs / "cache.sqlite")])
    assert result.exit_code == 0, result.output
    report = CliRunner().invoke(main, ["bench", "compare", str(runs / "heldout"), str(out), "--set", "answerable"])
    assert report.exit_code == 0, report.output
    assert "| in_block |" in report.output and "+0 | -0" in report.output  # the same code: nothing moves
