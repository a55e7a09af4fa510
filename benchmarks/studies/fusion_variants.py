"""Fusion variants of issue 9, a closed study beside the lab (not shipped, not in the library).

A dense weight that follows each question's decisive channel (``adaptive-gap*``,
``adaptive-cosine``), scale-free normalisers (``z-score``, ``min-max``, ``lexical-kth``) and a
small learned ranker (``learned-linear``), each cross-validated on the lab's candidate pools as
``diarist bench fusion`` does the shipped ones (``diarist.bench.fusion_lab``). None beat the
shipped convex fusion out of sample (BENCHMARKS.md, "Fusion"); the report stays in
``benchmarks/results/fusion/fusion_cv.md``, written (with every fusion the lab reports) by

    python -m benchmarks.studies.fusion_variants benchmarks/results/fusion/pools/*.jsonl.gz \
        --out benchmarks/results/fusion [--no-learned]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from diarist.bench.fusion_lab import (ALPHAS, COSINE_FLOOR, FUSIONS, REPORTED, Pool, _pooled_metrics, channel_lists, folds, fusion_report,
                                      load, metrics_of, report_markdown, session_max, tmm_dense, tmm_lexical)

VARIANTS: dict = {}

# -- issue 9: a weight that follows each question's decisive channel, and scale-free normalisers --
#
# Every function below reads the channels as ``run_search`` hands them (``channel_lists``: each
# channel's top ``depth``, best first) and fuses chunks as ``convex`` does: a chunk absent from a
# list that was cut takes that list's last value, absent from a whole list the channel's floor
# (cosine -1, BM25 0) mapped by the same normaliser; a chunk in neither list is not reached.

GAMMAS = (0.0, 0.25, 0.5, 1.0, 2.0)  # 0: the plain convex weight
DEPTH = 200
LEXICAL_FLOOR = 0.0


@dataclass
class Lists:
    """One question's two channel lists as arrays, best first."""

    dense_ids: np.ndarray
    dense: np.ndarray
    lexical_ids: np.ndarray
    lexical: np.ndarray
    dense_cut: bool  # the list is ``depth`` long: it may have been cut
    lexical_cut: bool


def lists(pool: Pool, depth: int = DEPTH) -> Lists:
    key = ("lists", depth)
    if key not in pool.memo:
        dense, lexical = channel_lists(pool, depth)
        pool.memo[key] = Lists(
            np.array([i for i, _ in dense], dtype=np.int64), np.array([s for _, s in dense], dtype=np.float64),
            np.array([i for i, _ in lexical], dtype=np.int64), np.array([s for _, s in lexical], dtype=np.float64),
            len(dense) >= depth, len(lexical) >= depth)
    return pool.memo[key]


def _fuse_lists(pool: Pool, ls: Lists, dense_n: np.ndarray, dense_floor: float, lexical_n: np.ndarray,
                lexical_floor: float, weight: float) -> np.ndarray:
    """Session scores: each chunk's ``weight * dense + (1 - weight) * lexical``, its session's best."""
    n = len(pool.session)
    dense_absent = float(dense_n[-1]) if ls.dense_cut and len(dense_n) else dense_floor
    lexical_absent = float(lexical_n[-1]) if ls.lexical_cut and len(lexical_n) else lexical_floor
    d = np.full(n, dense_absent)
    d[ls.dense_ids] = dense_n
    lx = np.full(n, lexical_absent)
    lx[ls.lexical_ids] = lexical_n
    reached = np.zeros(n, dtype=bool)
    reached[ls.dense_ids] = True
    reached[ls.lexical_ids] = True
    return session_max(pool, np.where(reached, weight * d + (1.0 - weight) * lx, -np.inf))


def _tmm(ls: Lists) -> tuple[np.ndarray, float, np.ndarray, float]:
    """The shipped normalisers: (cos + 1) / (best + 1) and bm25 / best, with their floors (0)."""
    dense_n = np.zeros(0)
    if len(ls.dense):
        dense_n = np.maximum((ls.dense - COSINE_FLOOR) / max(ls.dense[0] - COSINE_FLOOR, 1e-12), 0.0)
    lexical_n = ls.lexical / ls.lexical[0] if len(ls.lexical) and ls.lexical[0] > 0 else np.zeros(len(ls.lexical))
    return dense_n, 0.0, lexical_n, 0.0


def lead(normalised: np.ndarray, k: int) -> float:
    """How far a channel's best is ahead of its k-th best (its last if it lists fewer), in its
    normalised scores (best first, the best 1 unless the channel scored nothing); 0 if empty."""
    if not len(normalised):
        return 0.0
    return float(normalised[0] - normalised[min(k, len(normalised)) - 1])


def adaptive_weight(base_weight: float, gamma: float, dense_lead: float, lexical_lead: float) -> float:
    """The question's dense weight: each channel's base weight times its lead ** gamma, as a share
    of the two (gamma 0, or a base weight of 0 or 1: the base weight itself). A lead of 0 counts
    as 1e-6, so a channel with no lead keeps a trace of its weight rather than a division by 0."""
    if gamma == 0 or base_weight in (0.0, 1.0):
        return base_weight
    dense_w = base_weight * max(dense_lead, 1e-6) ** gamma
    lexical_w = (1.0 - base_weight) * max(lexical_lead, 1e-6) ** gamma
    return dense_w / (dense_w + lexical_w)


def convex_adaptive_gap(pool: Pool, params: dict) -> np.ndarray:
    """The shipped convex fusion with a per-question weight: ``alpha`` tilted toward the channel
    whose best leads its k-th best by more (``lead``), by ``gamma`` (measured, not shipped:
    on stemmed pools it no longer beats the convex fusion across datasets; BENCHMARKS.md)."""
    ls = lists(pool, params.get("depth", DEPTH))
    dense_n, dense_floor, lexical_n, lexical_floor = _tmm(ls)
    k = params["k"]
    w = adaptive_weight(params["alpha"], params["gamma"], lead(dense_n, k), lead(lexical_n, k))
    return _fuse_lists(pool, ls, dense_n, dense_floor, lexical_n, lexical_floor, w)


def convex_adaptive_cosine(pool: Pool, params: dict) -> np.ndarray:
    """The dense weight grows with the question's best cosine: base weights alpha * best_cos **
    gamma against (1 - alpha) * 0.5 ** gamma (0.5: a middling best cosine keeps ``alpha``)."""
    ls = lists(pool, params.get("depth", DEPTH))
    dense_n, dense_floor, lexical_n, lexical_floor = _tmm(ls)
    best = float(ls.dense[0]) if len(ls.dense) else 0.0
    w = adaptive_weight(params["alpha"], params["gamma"], max(best, 0.0) / 0.5, 1.0)
    return _fuse_lists(pool, ls, dense_n, dense_floor, lexical_n, lexical_floor, w)


def _standardised(scores: np.ndarray, floor: float) -> tuple[np.ndarray, float]:
    """(s - mean) / std over the channel's own list, and its floor on the same scale."""
    if not len(scores):
        return scores, 0.0
    mean, sd = float(scores.mean()), float(scores.std())
    if sd < 1e-12:
        return np.zeros_like(scores), (floor - mean if floor < mean else 0.0)
    return (scores - mean) / sd, (floor - mean) / sd


def convex_z(pool: Pool, params: dict) -> np.ndarray:
    """Standardised (z-score) fusion: each channel's scores as (s - mean) / std over its own top
    ``depth``, convex weight ``alpha``: scale-free, whatever the dataset's score ranges."""
    ls = lists(pool, params.get("depth", DEPTH))
    dense_n, dense_floor = _standardised(ls.dense, COSINE_FLOOR)
    lexical_n, lexical_floor = _standardised(ls.lexical, LEXICAL_FLOOR)
    return _fuse_lists(pool, ls, dense_n, dense_floor, lexical_n, lexical_floor, params["alpha"])


def _min_max(scores: np.ndarray, floor: float, low_at: int | None = None) -> tuple[np.ndarray, float]:
    """(s - low) / (best - low), low the list's ``low_at``-th score (its last if None or too
    short); not clipped, so below ``low`` is negative; the floor on the same scale."""
    if not len(scores):
        return scores, 0.0
    low = float(scores[-1] if low_at is None else scores[min(low_at, len(scores)) - 1])
    span = float(scores[0]) - low
    if span < 1e-12:
        return np.zeros_like(scores), (floor - low if floor < low else 0.0)
    return (scores - low) / span, (floor - low) / span


def convex_min_max(pool: Pool, params: dict) -> np.ndarray:
    """Min-max over each channel's own list (the list's last score is 0, its best 1), convex."""
    ls = lists(pool, params.get("depth", DEPTH))
    dense_n, dense_floor = _min_max(ls.dense, COSINE_FLOOR)
    lexical_n, lexical_floor = _min_max(ls.lexical, LEXICAL_FLOOR)
    return _fuse_lists(pool, ls, dense_n, dense_floor, lexical_n, lexical_floor, params["alpha"])


def convex_lexical_kth(pool: Pool, params: dict) -> np.ndarray:
    """The shipped dense normaliser; BM25 as (bm25 - kth) / (best - kth): the lexical channel's
    scale is its best's lead over its k-th best, not the best itself."""
    ls = lists(pool, params.get("depth", DEPTH))
    dense_n, dense_floor, _, _ = _tmm(ls)
    lexical_n, lexical_floor = _min_max(ls.lexical, LEXICAL_FLOOR, params["k"])
    return _fuse_lists(pool, ls, dense_n, dense_floor, lexical_n, lexical_floor, params["alpha"])


def _grid(**axes: Sequence) -> list[dict]:
    out: list[dict] = [{}]
    for name, values in axes.items():
        out = [{**p, name: v} for v in values for p in out]
    return out


for _k in (2, 5, 10):
    VARIANTS[f"adaptive-gap{_k}"] = (convex_adaptive_gap, _grid(alpha=ALPHAS, gamma=GAMMAS, k=[_k]))
VARIANTS["adaptive-gap-k"] = (convex_adaptive_gap, _grid(alpha=ALPHAS, gamma=GAMMAS, k=[2, 5, 10]))  # k fitted too
VARIANTS["adaptive-cosine"] = (convex_adaptive_cosine, _grid(alpha=ALPHAS, gamma=GAMMAS))
VARIANTS["z-score"] = (convex_z, _grid(alpha=ALPHAS))
VARIANTS["min-max"] = (convex_min_max, _grid(alpha=ALPHAS))
VARIANTS["lexical-kth"] = (convex_lexical_kth, _grid(alpha=ALPHAS, k=[2, 5, 10, 20, 50]))


# -- a small learned ranker (lab): session features, a linear model trained on pairs -------------

FEATURES = ("dense_tmm", "lexical_tmm", "dense_rrf", "lexical_rrf", "dense_z", "lexical_z",
            "dense_2nd", "lexical_2nd", "convex", "log_chunks", "lexical_coverage",
            "lexical_gap_x", "dense_gap_x")


def _second(pool: Pool, chunk: np.ndarray) -> np.ndarray:
    """Each session's second-best chunk score (its best if it has one chunk; 0 if none)."""
    out = np.zeros(pool.n_sessions)
    for s in range(pool.n_sessions):
        v = np.sort(chunk[pool.session == s])[::-1]
        out[s] = v[1] if len(v) > 1 else (v[0] if len(v) else 0.0)
    return out


def _z(x: np.ndarray) -> np.ndarray:
    sd = x.std()
    return (x - x.mean()) / sd if sd > 1e-12 else np.zeros_like(x)


def session_features(pool: Pool) -> np.ndarray:
    """(n_sessions, len(FEATURES)): every feature is normalised within the question."""
    dn = tmm_dense(pool.cosine)
    ln = tmm_lexical(pool.bm25)
    sd, sl = session_max(pool, dn), session_max(pool, ln)
    sd, sl = np.where(np.isinf(sd), 0.0, sd), np.where(np.isinf(sl), 0.0, sl)
    rank_d = np.empty(pool.n_sessions)
    rank_d[np.argsort(-sd, kind="stable")] = np.arange(1, pool.n_sessions + 1)
    rank_l = np.empty(pool.n_sessions)
    rank_l[np.argsort(-sl, kind="stable")] = np.arange(1, pool.n_sessions + 1)
    cv = session_max(pool, 0.5 * dn + 0.5 * ln)
    cv = np.where(np.isinf(cv), 0.0, cv)
    n_chunks = np.bincount(pool.session, minlength=pool.n_sessions)
    matched = np.bincount(pool.session, weights=(pool.bm25 > 0).astype(float), minlength=pool.n_sessions)
    top_l = np.sort(sl)[::-1]
    top_d = np.sort(sd)[::-1]
    gap_l = top_l[0] - top_l[1] if len(top_l) > 1 else 0.0
    gap_d = top_d[0] - top_d[1] if len(top_d) > 1 else 0.0
    cols = [sd, sl, 60.0 / (60 + rank_d), 60.0 / (60 + rank_l), _z(sd), _z(sl),
            _second(pool, dn), _second(pool, ln), cv, np.log1p(n_chunks), matched / np.maximum(n_chunks, 1),
            sl * gap_l, sd * gap_d]
    return np.stack(cols, axis=1)


def _pairs(pools: Sequence[Pool], cache: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Feature differences gold - other, and each pair's weight (each question weighs 1)."""
    diffs, weights = [], []
    for pool in pools:
        x = cache.setdefault(pool.qid, session_features(pool))
        gold = [g for g in pool.gold if g < pool.n_sessions]
        others = [s for s in range(pool.n_sessions) if s not in set(gold)]
        if not gold or not others:
            continue
        d = (x[gold][:, None, :] - x[others][None, :, :]).reshape(-1, x.shape[1])
        diffs.append(d)
        weights.append(np.full(len(d), 1.0 / len(d)))
    return np.concatenate(diffs), np.concatenate(weights)


def train_linear(pools_by_dataset: dict[str, list[Pool]], cache: dict[str, np.ndarray],
                 l2: float = 1e-2, steps: int = 30) -> np.ndarray:
    """RankNet with a linear scorer: the L2-regularised logistic loss of (gold - other) pairs,
    minimised by Newton's method (convex, 13 weights); each dataset weighs the same, each
    question the same within it."""
    parts = [_pairs(p, cache) for p in pools_by_dataset.values() if p]
    x = np.concatenate([d for d, _ in parts])
    c = np.concatenate([w / w.sum() for _, w in parts]) / len(parts)
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(np.clip(x @ w, -30, 30)))  # P(pair misordered)
        grad = -(c * p) @ x + l2 * w
        hess = (x * (c * p * (1 - p))[:, None]).T @ x + l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def linear_scores(pool: Pool, params: dict) -> np.ndarray:
    return session_features(pool) @ params["weights"]


def cross_validate_learned(pools_by_dataset: dict[str, list[Pool]], n_folds: int = 5) -> dict[str, Any]:
    cache: dict[str, np.ndarray] = {}
    datasets = sorted(pools_by_dataset)
    report: dict[str, Any] = {"fusion": "learned-linear"}
    w_all = train_linear(pools_by_dataset, cache)
    report["weights_all"] = dict(zip(FEATURES, np.round(w_all, 4).tolist()))
    report["in_sample"] = {d: metrics_of(pools_by_dataset[d], linear_scores, {"weights": w_all}) for d in datasets}
    report["cross_dataset"] = {}
    for test in datasets if len(datasets) > 1 else []:
        w = train_linear({d: p for d, p in pools_by_dataset.items() if d != test}, cache)
        report["cross_dataset"][test] = metrics_of(pools_by_dataset[test], linear_scores, {"weights": w})
    split = {d: folds(pools_by_dataset[d], n_folds) for d in datasets}
    pairs: dict[str, list] = {d: [] for d in datasets}
    for f in range(n_folds):
        train = {d: [p for g, fold in enumerate(split[d]) if g != f for p in fold] for d in datasets}
        w = train_linear(train, cache)
        for d in datasets:
            pairs[d] += [(p, {"weights": w}) for p in split[d][f]]
    report["kfold"] = {d: _pooled_metrics(pairs[d], linear_scores) for d in datasets}
    return report


def question_weights(pools_by_dataset: dict[str, list[Pool]], params: dict) -> dict[str, dict[str, float]]:
    """The dense weight ``convex_adaptive_gap`` gives each question: per dataset its mean and
    10th / 50th / 90th percentiles, and the median lead of each channel."""
    out = {}
    for d, pools in pools_by_dataset.items():
        weights, leads = [], []
        for pool in pools:
            dense_n, _, lexical_n, _ = _tmm(lists(pool, params.get("depth", DEPTH)))
            leads.append((lead(dense_n, params["k"]), lead(lexical_n, params["k"])))
            weights.append(adaptive_weight(params["alpha"], params["gamma"], *leads[-1]))
        w, by_channel = np.array(weights), np.array(leads)
        out[d] = {"mean": round(float(w.mean()), 4),
                  **{f"p{q}": round(float(np.percentile(w, q)), 4) for q in (10, 50, 90)},
                  "dense_lead_p50": round(float(np.median(by_channel[:, 0])), 4),
                  "lexical_lead_p50": round(float(np.median(by_channel[:, 1])), 4)}
    return out


PAIRED = (("shipped-convex", "adaptive-gap5"), ("bm25-only", "adaptive-gap5"))  # (A, B): B against A


def register() -> None:
    """Add the variants to the lab's fusions (``fit`` and ``cross_validate`` look them up there)."""
    FUSIONS.update(VARIANTS)


def variants_report(pools_by_dataset: dict[str, list[Pool]], learned: bool = True) -> dict[str, Any]:
    """The lab's report with every variant, as ``diarist bench fusion`` wrote it before they left the library."""
    register()
    more = {"learned-linear": cross_validate_learned} if learned else {}
    report = fusion_report(pools_by_dataset, (*REPORTED, *VARIANTS), more, PAIRED)
    report["adaptive_weights"] = question_weights(pools_by_dataset, report["fusions"]["adaptive-gap5"]["fitted_on_all"])
    return report


def variants_markdown(report: dict[str, Any]) -> str:
    lines = [report_markdown(report)]
    lines += ["**adaptive-gap5**: the dense weight each question gets (fitted on all), and the median leads", "",
              "| dataset | mean | p10 | p50 | p90 | dense lead p50 | lexical lead p50 |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {d} | " + " | ".join(f"{v:.3f}" for v in w.values()) + " |"
              for d, w in sorted(report["adaptive_weights"].items())]
    lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", help="pools files (diarist bench pools)")
    parser.add_argument("--out", help="folder for fusion_cv.json and fusion_cv.md")
    parser.add_argument("--no-learned", action="store_true", help="leave out the learned ranker (the slowest to fit)")
    args = parser.parse_args(argv)
    report = variants_report(load(args.paths), learned=not args.no_learned)
    text = variants_markdown(report)
    print(text)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "fusion_cv.json").write_text(json.dumps(report, indent=1, default=float) + "\n", encoding="utf-8")
        (Path(args.out) / "fusion_cv.md").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
