"""The benchmark lab end to end on a small slice, and verify on every committed result."""

from __future__ import annotations

import json
import importlib
import math
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmark_scripts import BENCHMARKS, load_benchmark_script
from conftest import LOCOMO_PATH, LONGMEMEVAL_PATH, data_file, needs_data

from diarist.bench.cli import bench
from diarist.bench.data import parse_evidence
from diarist.bench.metrics import session_metrics
from diarist.bench.report import find_runs, read_rows, sign_test, verify_run
from diarist.bench.configs import CONFIGS, get_config
from diarist.bench.runner import STUDY_HOOKS, Chunker, Runner
from diarist.embed import get_embedder
from diarist.types import Message

ROOT = Path(__file__).resolve().parents[2]
LME, LOCOMO = LONGMEMEVAL_PATH, LOCOMO_PATH
RESULTS = ROOT / "benchmarks" / "results"

needs_data = needs_data(LME, LOCOMO)


# -- metrics, as pure functions ----------------------------------------------------------------


def test_session_metrics_by_hand():
    ranked = ["a", "g1", "b", "c", "g2", "d", "e", "f", "h", "i", "j", "g3"]
    m = session_metrics(ranked, {"g1", "g2", "g3"}, n_sessions=len(ranked))
    assert m["r_any@1"] == 0.0 and m["r_any@3"] == 1.0
    assert m["r_all@5"] == 0.0 and m["r_all@10"] == 0.0
    assert m["mrr"] == 0.5
    dcg = 1 / math.log2(3) + 1 / math.log2(6)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert m["ndcg@5"] == pytest.approx(dcg / ideal)


def test_k_never_reaches_the_haystack_size():
    m = session_metrics(["g", "a", "b", "c", "d"], {"g"}, n_sessions=5)
    assert m["r_any@3"] == 1.0
    assert m["r_any@5"] is None and m["r_all@10"] is None and m["ndcg@5"] is None


def test_sign_test_is_exact_and_two_sided():
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 5) == 1.0
    assert sign_test(6, 0) == pytest.approx(2 / 64)
    assert sign_test(1, 9) == pytest.approx(2 * 11 / 1024)


def test_malformed_locomo_evidence_ids():
    assert parse_evidence(["D8:6; D9:17", "D30:05", "D1:3"]) == [(8, 6), (9, 17), (30, 5), (1, 3)]
    assert parse_evidence("no id here") == []


def test_extract_is_short_and_keeps_first_person_facts():
    condense = load_benchmark_script("studies/extract.py").condense  # a study's, not the library's
    messages = [
        Message("user", "Hi there. I adopted a greyhound named Biscuit on 3 May in Leeds. Can you help?"),
        Message("assistant", "Of course! Greyhounds are lovely dogs and need gentle exercise. " * 20),
    ]
    text = condense(messages, 120)
    assert "Biscuit" in text and len(text) <= 120


def test_the_retired_ablations_are_a_study_the_runner_refuses_without(monkeypatch):
    followup = replace(get_config("default"), name="followup-here", followup="previous")
    with pytest.raises(ValueError, match="needs the 'followup' of a study"):
        Runner(followup, "hash", None, progress=False)
    assert "session-doc" not in CONFIGS, "a retired ablation is not in the library's configs"
    configs, hooks = dict(CONFIGS), dict(STUDY_HOOKS)
    monkeypatch.syspath_prepend(str(BENCHMARKS.parent))
    try:
        importlib.import_module("benchmarks.studies.ablations").register()
        assert {"session-doc", "extract-fused", "followup"} <= set(CONFIGS)
        runner = Runner(followup, "hash", None, progress=False)
        assert runner._followup("How many Korean restaurants have I tried in my city?")[1] == "How many was that?"
    finally:
        CONFIGS.clear(), CONFIGS.update(configs), STUDY_HOOKS.clear(), STUDY_HOOKS.update(hooks)


def test_session_document_reads_one_window():
    embedder = get_embedder("hash")
    messages = [Message("user", "word " * 300), Message("assistant", "reply " * 50)]
    chunks = Chunker(embedder, "split", "session")(messages)
    dense = [c for c in chunks if c.dense]
    lexical = [c for c in chunks if c.lexical]
    assert len(dense) == 1 and embedder.count_tokens(dense[0].text) <= embedder.window
    assert len(lexical) == 1 and "reply" in lexical[0].text


# -- a small slice end to end ------------------------------------------------------------------


@pytest.fixture(scope="module")
def slice_runs(tmp_path_factory):
    data_file(LME), data_file(LOCOMO)
    out = tmp_path_factory.mktemp("bench")
    cache = out / "cache.sqlite"
    cli = CliRunner()
    common = ["--embedder", "hash", "--cache", str(cache)]
    r = cli.invoke(bench, ["longmemeval", "--data", str(LME), "--limit", "3", "--stride", "90",
                           "--config", "default,vectors-only", "--out", str(out / "lme"), *common])
    assert r.exit_code == 0, r.output
    r = cli.invoke(bench, ["locomo", "--data", str(LOCOMO), "--limit", "1", "--out", str(out / "locomo"), *common])
    assert r.exit_code == 0, r.output
    return out


@needs_data
@pytest.mark.slow
def test_slice_writes_every_output(slice_runs):
    for run in (slice_runs / "lme" / "default", slice_runs / "lme" / "vectors-only", slice_runs / "locomo"):
        for name in ("rows.jsonl.gz", "summary.json", "summary.md", "config.json", "recall_by_type.png"):
            assert (run / name).exists(), run / name
    rows = read_rows(slice_runs / "lme" / "default")
    assert len(rows) == 3
    for row in rows:
        assert row["config"] == "default" and row["gold"] and set(row["gold"]) <= set(row["ranked"])
        assert len(row["ranked"]) == row["n_sessions"] == len(set(row["ranked"]))
        assert "r_any@10" in row["metrics"] and "first_evidence_turn_rank" in row["turn"]
    config = json.loads((slice_runs / "locomo" / "config.json").read_text())
    assert len(config["data_sha256"]) == 64 and config["config"]["rrf_k"] == 60
    assert config["config"]["k1"] == 1.5 and config["config"]["b"] == 0.75
    summary = json.loads((slice_runs / "locomo" / "summary.json").read_text())
    assert set(summary["overall"]) == {"all", "no_adv"}
    assert "5-adversarial" in summary["by_type"]["all"]


@needs_data
@pytest.mark.slow
def test_a_second_run_reads_the_cache_and_ranks_the_same(slice_runs, tmp_path):
    r = CliRunner().invoke(bench, ["locomo", "--data", str(LOCOMO), "--limit", "1", "--embedder", "hash",
                                   "--cache", str(slice_runs / "cache.sqlite"), "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "config.json").read_text())["embedded_this_run"]["texts"] == 0
    first = [r["ranked"] for r in read_rows(slice_runs / "locomo")]
    again = [r["ranked"] for r in read_rows(tmp_path)]
    assert first == again


@needs_data
@pytest.mark.slow
def test_verify_passes_then_fails_on_an_edited_cell(slice_runs, tmp_path):
    cli = CliRunner()
    r = cli.invoke(bench, ["verify", str(slice_runs)])
    assert r.exit_code == 0, r.output
    assert "3 of 3 runs verified" in r.output

    import shutil

    for target in ("summary.json", "summary.md"):
        run = tmp_path / target
        shutil.copytree(slice_runs / "locomo", run)
        if target == "summary.json":
            summary = json.loads((run / target).read_text())
            summary["overall"]["no_adv"]["r_any@5"] = round(summary["overall"]["no_adv"]["r_any@5"] + 0.01, 4)
            (run / target).write_text(json.dumps(summary, indent=2))
        else:
            md = (run / target).read_text()
            line = next(x for x in md.splitlines() if x.startswith("| no_adv |"))
            cells = line.split(" | ")
            cells[4] = "0.9999" if cells[4] != "0.9999" else "0.9998"
            (run / target).write_text(md.replace(line, " | ".join(cells)))
        r = cli.invoke(bench, ["verify", str(run)])
        assert r.exit_code == 1, r.output
        assert "FAIL" in r.output and target in r.output


@needs_data
@pytest.mark.slow
def test_compare_pairs_questions(slice_runs):
    r = CliRunner().invoke(bench, ["compare", str(slice_runs / "lme" / "default"), str(slice_runs / "lme" / "vectors-only"), "--set", "all"])
    assert r.exit_code == 0, r.output
    assert "| r_any@5 | 3 |" in r.output and "sign test" in r.output


@pytest.mark.slow
def test_every_committed_result_verifies():
    runs = find_runs([RESULTS]) if RESULTS.exists() else []
    if not runs:
        pytest.skip("no committed results under benchmarks/results")
    failures = {str(run): verify_run(run) for run in runs}
    assert not {k: v for k, v in failures.items() if v}
