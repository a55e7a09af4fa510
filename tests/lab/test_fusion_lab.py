"""The fusion lab: its functions agree with the library, its folds keep haystacks whole, and the
shipped dense weight is what the committed training rows choose."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmark_scripts import load_study

from diarist import settings
from diarist.bench import fusion_lab as lab
from diarist.read.fusion import convex, rrf

ROOT = Path(__file__).resolve().parents[2]
variants = load_study("fusion_variants")  # the issue-9 variants: a study beside the lab
POOLS = sorted((ROOT / "benchmarks" / "results" / "fusion" / "pools").glob("*.jsonl.gz"))


def _pool(seed: int, unit: str = "u", n_sessions: int = 6, n_chunks: int = 30) -> lab.Pool:
    rng = np.random.default_rng(seed)
    cosine = rng.uniform(-0.2, 0.8, n_chunks)
    cosine[rng.random(n_chunks) < 0.1] = np.nan  # chunks without a vector
    bm25 = np.where(rng.random(n_chunks) < 0.5, rng.uniform(0, 12, n_chunks), 0.0)
    return lab.Pool(f"q{seed}", "synthetic", unit, "t", n_sessions, [int(rng.integers(n_sessions))],
                    rng.integers(0, n_sessions, n_chunks), cosine, bm25, rng.integers(5, 200, n_chunks))


def _session_order(pool: lab.Pool, fused: list) -> list[int]:
    return list(dict.fromkeys(int(pool.session[i]) for i, _, _ in fused))


@pytest.mark.parametrize("seed", range(10))
def test_lab_rrf_and_convex_rank_sessions_as_the_library_does(seed):
    pool = _pool(seed)
    dense, lexical = lab.channel_lists(pool, depth=200)
    assert all(a[1] >= b[1] for a, b in zip(dense, dense[1:])) and all(a[1] >= b[1] for a, b in zip(lexical, lexical[1:]))
    by_rrf = _session_order(pool, rrf({"dense": [c for c, _ in dense], "lexical": [c for c, _ in lexical]}))
    by_convex = _session_order(pool, convex(dense, lexical, 0.6, depth=200))
    reached = set(by_rrf)
    assert lab.rank_sessions(pool, lab.rrf_chunks(pool, {}))[: len(reached)] == by_rrf
    assert lab.rank_sessions(pool, lab.shipped_convex(pool, {"alpha": 0.6}))[: len(reached)] == by_convex
    assert lab.rank_sessions(pool, lab.convex_chunks(pool, {"alpha": 0.6}))[: len(reached)] == by_convex


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("depth", [200, 12])
def test_the_lab_adaptive_function_without_tilt_is_the_librarys_convex_fusion(seed, depth):
    # gamma 0: every question gets the base weight, which is the shipped convex fusion.
    pool = _pool(seed, n_chunks=40)
    fused = convex(*lab.channel_lists(pool, depth), 0.75, depth)
    by_library = list(dict.fromkeys(int(pool.session[i]) for i, _, _ in fused))
    params = {"alpha": 0.75, "gamma": 0.0, "k": 5, "depth": depth}
    assert lab.rank_sessions(pool, variants.convex_adaptive_gap(pool, params))[: len(by_library)] == by_library


@pytest.fixture
def with_variants():
    """The lab's fusions with the study's variants registered, as they were after the test."""
    before = dict(lab.FUSIONS)
    variants.register()
    yield
    lab.FUSIONS.clear()
    lab.FUSIONS.update(before)


def test_paired_report_counts_questions_out_of_sample(with_variants):
    pools = {"a": [_pool(i, unit=f"a{i % 5}") for i in range(15)], "b": [_pool(50 + i, unit=f"b{i % 5}") for i in range(15)]}
    report = {"fusions": {n: lab.cross_validate(pools, n) for n in ("bm25-only", "adaptive-gap5")}}
    same = lab.paired_report(pools, report, "adaptive-gap5", "adaptive-gap5")
    assert set(same) == {"cross", "kfold"} and set(same["kfold"]) == {"a", "b"}
    assert all(c == {"gained": 0, "lost": 0, "p": 1.0} for s in same.values() for d in s.values() for c in d.values())
    other = lab.paired_report(pools, report, "bm25-only", "adaptive-gap5")
    for d in ("a", "b"):  # gained - lost over the questions = the difference of the two recall@1 means
        cell = other["kfold"][d]["r_any@1"]
        diff = report["fusions"]["adaptive-gap5"]["kfold"][d]["r_any@1"] - report["fusions"]["bm25-only"]["kfold"][d]["r_any@1"]
        assert (cell["gained"] - cell["lost"]) / len(pools[d]) == pytest.approx(diff, abs=1e-4)
    weights = variants.question_weights(pools, {"alpha": 0.9, "gamma": 0.5, "k": 5})
    assert all(0.0 <= w["p10"] <= w["p50"] <= w["p90"] <= 1.0 for w in weights.values())


def test_folds_keep_each_haystack_whole():
    pools = [_pool(i, unit=f"conv{i % 7}") for i in range(35)]
    folds = lab.folds(pools, 5)
    assert sum(len(f) for f in folds) == len(pools)
    for f in folds:
        units = {p.unit for p in f}
        assert all(p.unit not in units for g in folds if g is not f for p in g)


def test_learned_ranker_fits_and_scores():
    pools = {"a": [_pool(i) for i in range(20)], "b": [_pool(100 + i) for i in range(20)]}
    w = variants.train_linear(pools, {})
    assert w.shape == (len(variants.FEATURES),) and np.all(np.isfinite(w))
    assert variants.linear_scores(pools["a"][0], {"weights": w}).shape == (6,)


def test_the_study_writes_the_committed_reports_fusions_and_the_lab_its_own():
    committed = json.loads((ROOT / "benchmarks" / "results" / "fusion" / "fusion_cv.json").read_text())
    names = [*lab.REPORTED, *variants.VARIANTS, "learned-linear"]
    assert list(committed["fusions"]) == names and set(committed["paired"]) == {f"{b} vs {a}" for a, b in variants.PAIRED}
    pools = {"a": [_pool(i, unit=f"a{i % 5}") for i in range(10)], "b": [_pool(50 + i, unit=f"b{i % 5}") for i in range(10)]}
    before = dict(lab.FUSIONS)
    assert list(lab.fusion_report(pools)["fusions"]) == list(lab.REPORTED)
    try:
        report = variants.variants_report(pools, learned=False)
    finally:
        lab.FUSIONS.clear(), lab.FUSIONS.update(before)
    assert list(report["fusions"]) == names[:-1] and "adaptive-gap5" in variants.variants_markdown(report)


@pytest.mark.skipif(len(POOLS) != 2, reason="the committed fusion pools are missing")
@pytest.mark.slow
def test_the_committed_pools_choose_the_shipped_weight():
    pools = lab.load([str(p) for p in POOLS])
    assert set(pools) == {"longmemeval", "locomo"}
    assert lab.fit(pools, "convex") == {"alpha": settings.FUSION_DENSE_WEIGHT}
    committed = json.loads((POOLS[0].parents[1] / "fusion_cv.json").read_text())
    shipped = committed["fusions"]["shipped-convex"]
    assert shipped["fitted_on_all"] == {"alpha": settings.FUSION_DENSE_WEIGHT}
    assert lab.metrics_of(pools["locomo"], lab.convex_chunks, {"alpha": 0.75}) == committed["fusions"]["convex"]["in_sample"]["locomo"]


def test_a_pools_row_lists_its_chunks_whatever_order_the_search_returned():
    """Chunks tied on session, first turn and length used to keep the search's order, so a
    pools file written under another fusion listed them differently (seen on 4 of 250 rows)."""
    from types import SimpleNamespace

    from diarist.bench.pools import _row

    def hit(session, first_turn, text, dense, lexical):
        return SimpleNamespace(session_id=session, first_turn=first_turn, text=text,
                               scores={"dense": dense, "lexical": lexical})

    hits = [hit("s1", 0, "a b c", -0.003, 2.4), hit("s1", 0, "x y z", -0.09, 3.45),
            hit("s1", 0, "p q r", 0.05, None), hit("s0", 2, "one", None, 1.0), hit("s1", 0, "u v w", 0.05, 0.7)]
    q = SimpleNamespace(qid="q", qtype="t", abstention=False, gold=["s1"], date=None)
    items = [SimpleNamespace(session_id="s0", date=None), SimpleNamespace(session_id="s1", date=None)]
    index = {"s0": 0, "s1": 1}
    first = _row("longmemeval", "u", q, items, index, hits)
    assert _row("longmemeval", "u", q, items, index, hits[::-1]) == first
    assert [c[:2] for c in first["chunks"]] == [[0, 2]] + [[1, 0]] * 4


def _two_column_pool(seed: int, unit: str) -> lab.Pool:
    """A pool with BM25 under two (k1, b): the reference, and another that reorders it."""
    pool = _pool(seed, unit=unit, n_sessions=12, n_chunks=40)  # @10 needs more than 10 sessions
    other = np.where(pool.bm25 > 0, pool.bm25 * np.random.default_rng(seed + 1000).uniform(0.5, 1.5, len(pool.bm25)), 0.0)
    pool.bm25_by = {(1.5, 0.75): pool.bm25, (1.2, 0.4): other}
    return pool


def test_a_pools_row_keeps_one_bm25_column_per_k1_b_and_the_lab_reads_each():
    from types import SimpleNamespace

    from diarist.bench.pools import _row

    def hit(cid, session, first_turn, text, dense, lexical):
        return SimpleNamespace(chunk_id=cid, session_id=session, first_turn=first_turn, text=text,
                               scores={"dense": dense, "lexical": lexical})

    hits = [hit(1, "s0", 0, "a b", 0.2, 3.0), hit(2, "s1", 0, "c d", 0.1, None), hit(3, "s1", 4, "e", None, 1.0)]
    q = SimpleNamespace(qid="q", qtype="t", abstention=False, gold=["s1"], date=None)
    items = [SimpleNamespace(session_id="s0", date=None), SimpleNamespace(session_id="s1", date=None)]
    row = _row("locomo", "u", q, items, {"s0": 0, "s1": 1}, hits, [(1.5, 0.75), (1.2, 0.4)], [{1: 2.5, 3: 0.8}])
    assert row["bm25"] == [[1.5, 0.75], [1.2, 0.4]]
    assert row["chunks"] == [[0, 0, 2, 0.2, 3.0, 2.5], [1, 0, 2, 0.1, None, None], [1, 4, 1, None, 1.0, 0.8]]
    assert _row("locomo", "u", q, items, {"s0": 0, "s1": 1}, hits[::-1], [(1.5, 0.75), (1.2, 0.4)],
                [{1: 2.5, 3: 0.8}]) == row
    pool = lab.to_pool(row)
    assert set(pool.bm25_by) == {(1.5, 0.75), (1.2, 0.4)} and pool.bm25.tolist() == [3.0, 0.0, 1.0]
    assert lab.bm25_view(pool, 1.2, 0.4).bm25.tolist() == [2.5, 0.0, 0.8]
    old = lab.to_pool({k: v for k, v in row.items() if k != "bm25"} | {"chunks": [c[:5] for c in row["chunks"]]})
    assert list(old.bm25_by) == [(1.5, 0.75)]  # rows written before the column list: (1.5, 0.75)


@pytest.mark.parametrize("seed", range(5))
def test_the_k1_b_fusions_on_the_reference_column_are_the_lab_fusions(seed):
    pool = _two_column_pool(seed, "u")
    for alpha in (0.0, 0.6, 1.0):
        assert np.array_equal(lab.shipped_convex_at(pool, {"alpha": alpha, "k1": 1.5, "b": 0.75}),
                              lab.shipped_convex(pool, {"alpha": alpha}))
    assert np.array_equal(lab.bm25_only_at(pool, {"k1": 1.2, "b": 0.4}),
                          lab.lexical_only(lab.bm25_view(pool, 1.2, 0.4), {}))


@pytest.mark.slow
def test_bm25_params_report_fits_k1_b_with_the_weight():
    pools = {"a": [_two_column_pool(i, f"a{i % 5}") for i in range(15)],
             "b": [_two_column_pool(50 + i, f"b{i % 5}") for i in range(15)]}
    report = lab.bm25_params_report(pools)
    assert report["pairs"] == [[1.5, 0.75], [1.2, 0.4]]
    fusions = report["fusions"]
    today = fusions["today (k1=1.5 b=0.75, alpha=0.75)"]
    expected = {d: lab.metrics_of(pools[d], lab.shipped_convex, {"alpha": 0.75}) for d in pools}
    assert today["in_sample"] == expected
    assert {d: {t: m[t] for t in lab.TARGETS} for d, m in today["kfold"].items()} == expected
    joint = fusions["shipped-convex, k1 b alpha fitted"]
    per_pair = [fusions[f"shipped-convex k1={k1:g} b={b:g}"] for k1, b in ((1.5, 0.75), (1.2, 0.4))]
    # the joint fit in sample is the better of the per-pair fits
    assert joint["objective"]["in_sample"] == pytest.approx(max(r["objective"]["in_sample"] for r in per_pair))
    assert (joint["fitted_on_all"]["k1"], joint["fitted_on_all"]["b"]) in {(1.5, 0.75), (1.2, 0.4)}
    assert set(report["paired"]) == {"shipped-convex, k1 b alpha fitted vs shipped-convex k1=1.5 b=0.75",
                                     "bm25-only, k1 b fitted vs bm25-only k1=1.5 b=0.75"}
    assert "shipped-convex, k1 b alpha fitted" in lab.bm25_params_markdown(report)


@pytest.mark.parametrize("value", ["1.5", "1.5,0.75,2", "x,0.75"])
def test_bench_pools_refuses_a_bm25_that_is_not_k1_b(value, tmp_path):
    from click.testing import CliRunner

    from diarist.bench.cli import bench

    data = tmp_path / "data.json"
    data.write_text("[]")
    result = CliRunner().invoke(bench, ["pools", "--dataset", "locomo", "--data", str(data),
                                        "--out", str(tmp_path / "p.jsonl.gz"), "--bm25", value])
    assert result.exit_code == 2 and "--bm25 takes K1,B" in result.output
