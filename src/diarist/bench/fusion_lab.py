"""Fusion functions scored on candidate pools, with every parameter chosen by cross-validation.

Reads pools (``diarist.bench.pools``) and ranks each question's sessions with a fusion function;
a parameter (a convex weight, say) is fitted on one part of the data and scored on another:

- cross-dataset: fit on LongMemEval dev, test on LoCoMo dev, and the reverse;
- 5-fold: by question on LongMemEval (each question is its own haystack), by conversation on
  LoCoMo; the test folds' rankings are pooled into one out-of-sample figure;
- in sample: fitted and scored on the same rows (reported beside, never instead).

The fitting objective is the mean of recall_any@1, @5, @10 and NDCG@10 over both datasets'
training rows (each dataset weighted equally), so one weight serves both kinds of history.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .metrics import session_metrics

TARGETS = ("r_any@1", "r_any@5", "r_any@10", "ndcg@10")
COSINE_FLOOR = -1.0  # the theoretical minimum of a cosine (theoretical min-max, Bruch et al. 2023)


@dataclass
class Pool:
    """One question's candidates as arrays: a row per chunk."""

    qid: str
    dataset: str
    unit: str
    qtype: str
    n_sessions: int
    gold: list[int]
    session: np.ndarray  # int, the chunk's session index
    cosine: np.ndarray  # float, nan: the chunk has no vector
    bm25: np.ndarray  # float, 0: no query term in the chunk
    words: np.ndarray  # int
    memo: dict = field(default_factory=dict, repr=False, compare=False)  # derived arrays, per depth
    # Every BM25 column of the row by (k1, b), the first is ``bm25`` (pools written with several).
    bm25_by: dict[tuple[float, float], np.ndarray] = field(default_factory=dict, repr=False, compare=False)


def to_pool(row: dict[str, Any]) -> Pool:
    chunks = row["chunks"]
    params = [(float(k1), float(b)) for k1, b in row.get("bm25", [(1.5, 0.75)])]  # older rows: (1.5, 0.75)
    columns = {kb: np.array([0.0 if c[4 + i] is None else c[4 + i] for c in chunks], dtype=np.float64)
               for i, kb in enumerate(params)}
    return Pool(
        row["id"], row["dataset"], row["unit"], row["type"], row["n_sessions"], row["gold"],
        np.array([c[0] for c in chunks], dtype=np.int64),
        np.array([np.nan if c[3] is None else c[3] for c in chunks], dtype=np.float64),
        columns[params[0]],
        np.array([c[2] for c in chunks], dtype=np.int64),
        bm25_by=columns,
    )


# -- channel views --------------------------------------------------------------------------------


def _ranks(scores: np.ndarray, present: np.ndarray) -> np.ndarray:
    """1-based ranks by descending score (stable by chunk order); inf where absent."""
    order = np.argsort(-np.where(present, scores, -np.inf), kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    return np.where(present, ranks, np.inf)


def session_max(pool: Pool, chunk_scores: np.ndarray) -> np.ndarray:
    """Each session's best chunk score (-inf: no chunk)."""
    out = np.full(pool.n_sessions, -np.inf)
    np.maximum.at(out, pool.session, chunk_scores)
    return out


def rank_sessions(pool: Pool, session_scores: np.ndarray) -> list[int]:
    """Sessions best first; ties and unreached sessions by haystack order."""
    return [int(i) for i in np.argsort(-session_scores, kind="stable")]


# -- fusion functions: pool, params -> session scores ---------------------------------------------


def dense_only(pool: Pool, _: dict) -> np.ndarray:
    return session_max(pool, np.where(np.isnan(pool.cosine), -np.inf, pool.cosine))


def lexical_only(pool: Pool, _: dict) -> np.ndarray:
    return session_max(pool, np.where(pool.bm25 > 0, pool.bm25, -np.inf))


def rrf_chunks(pool: Pool, params: dict) -> np.ndarray:
    k = params.get("k", 60)
    d = _ranks(pool.cosine, ~np.isnan(pool.cosine))
    lex = _ranks(pool.bm25, pool.bm25 > 0)
    return session_max(pool, 1.0 / (k + d) + 1.0 / (k + lex))


def tmm_dense(cosine: np.ndarray) -> np.ndarray:
    """Theoretical min-max: (cos - (-1)) / (best - (-1)); no vector scores 0."""
    best = np.nanmax(cosine) if np.any(~np.isnan(cosine)) else 1.0
    span = max(best - COSINE_FLOOR, 1e-9)
    return np.where(np.isnan(cosine), 0.0, (cosine - COSINE_FLOOR) / span)


def tmm_lexical(bm25: np.ndarray) -> np.ndarray:
    """Theoretical min-max: BM25 >= 0, so bm25 / best."""
    best = bm25.max() if len(bm25) else 0.0
    return bm25 / best if best > 0 else np.zeros_like(bm25)


def convex_chunks(pool: Pool, params: dict) -> np.ndarray:
    """alpha * dense + (1 - alpha) * lexical, both theoretically min-max normalised, per chunk."""
    a = params["alpha"]
    return session_max(pool, a * tmm_dense(pool.cosine) + (1 - a) * tmm_lexical(pool.bm25))


def convex_sessions(pool: Pool, params: dict) -> np.ndarray:
    """The same convex combination at session grain: each channel's best chunk per session."""
    a = params["alpha"]
    d = session_max(pool, np.where(np.isnan(pool.cosine), COSINE_FLOOR, pool.cosine))
    lex = session_max(pool, pool.bm25)
    d = np.where(np.isinf(d), COSINE_FLOOR, d)
    lex = np.where(np.isinf(lex), 0.0, lex)
    dn = (d - COSINE_FLOOR) / max(d.max() - COSINE_FLOOR, 1e-9)
    ln = lex / lex.max() if lex.max() > 0 else np.zeros_like(lex)
    return a * dn + (1 - a) * ln


FUSIONS: dict[str, tuple[Callable[[Pool, dict], np.ndarray], list[dict]]] = {
    "vectors-only": (dense_only, [{}]),
    "bm25-only": (lexical_only, [{}]),
    "rrf": (rrf_chunks, [{"k": 60}]),
    "convex": (convex_chunks, [{"alpha": round(a, 2)} for a in np.arange(0, 1.0001, 0.05)]),
    "convex-session": (convex_sessions, [{"alpha": round(a, 2)} for a in np.arange(0, 1.0001, 0.05)]),
}


# -- scoring and cross-validation -----------------------------------------------------------------


def metrics_of(pools: Sequence[Pool], fusion: Callable[[Pool, dict], np.ndarray], params: dict,
               memo: dict | None = None) -> dict[str, float]:
    return _pooled_metrics([(pool, params) for pool in pools], fusion, memo)


def objective(by_dataset: dict[str, dict[str, float]]) -> float:
    """Mean of the targets, each dataset weighted equally."""
    return float(np.mean([np.mean([m[t] for t in TARGETS]) for m in by_dataset.values()]))


def fit(pools_by_dataset: dict[str, list[Pool]], name: str, memo: dict | None = None) -> dict:
    """The grid point with the best objective on these pools (ties: the first, the smaller weight)."""
    fusion, grid = FUSIONS[name]
    best, best_score = grid[0], -math.inf
    for params in grid:
        score = objective({d: metrics_of(p, fusion, params, memo) for d, p in pools_by_dataset.items() if p})
        if score > best_score + 1e-12:
            best, best_score = params, score
    return best


def folds(pools: list[Pool], n: int = 5) -> list[list[Pool]]:
    """n folds by haystack (unit): questions of one conversation never straddle folds."""
    units = sorted({p.unit for p in pools})
    assignment = {u: i % n for i, u in enumerate(units)}
    return [[p for p in pools if assignment[p.unit] == f] for f in range(n)]


def cross_validate(pools_by_dataset: dict[str, list[Pool]], name: str, n_folds: int = 5,
                   memo: dict | None = None) -> dict[str, Any]:
    """In-sample, cross-dataset and k-fold figures for one fusion function. ``memo``: shared by
    fusions whose grids read the same function (a question's metrics per grid point)."""
    fusion, _ = FUSIONS[name]
    memo = {} if memo is None else memo  # each question's metrics under each grid point, computed once for every fit
    datasets = sorted(pools_by_dataset)
    report: dict[str, Any] = {"fusion": name}
    params_all = fit(pools_by_dataset, name, memo)
    report["fitted_on_all"] = params_all
    report["in_sample"] = {d: metrics_of(pools_by_dataset[d], fusion, params_all, memo) for d in datasets}
    cross = {}
    for test in datasets if len(datasets) > 1 else []:
        train = {d: p for d, p in pools_by_dataset.items() if d != test}
        params = fit(train, name, memo)
        cross[test] = {"params": params, **metrics_of(pools_by_dataset[test], fusion, params, memo)}
    report["cross_dataset"] = cross
    split = {d: folds(pools_by_dataset[d], n_folds) for d in datasets}
    # One fit per fold, on the other folds of every dataset; each fold is scored with its own fit.
    fold_params = [fit({d: [p for g, fold in enumerate(split[d]) if g != f for p in fold] for d in datasets},
                       name, memo)
                   for f in range(n_folds)]
    report["kfold"] = {
        d: {"params": fold_params,
            **_pooled_metrics([(p, fold_params[g]) for g, fold in enumerate(split[d]) for p in fold], fusion, memo)}
        for d in datasets
    }
    return report


def _pooled_metrics(pairs: list[tuple[Pool, dict]], fusion: Callable[[Pool, dict], np.ndarray],
                    memo: dict | None = None) -> dict[str, float]:
    """The targets' means; ``memo`` keeps each (question, params)'s metrics for later fits (the
    same figures, summed in the same order)."""
    sums = {t: 0.0 for t in TARGETS}
    counts = {t: 0 for t in TARGETS}
    for pool, params in pairs:
        key = None if memo is None else (pool.dataset, pool.qid, tuple(sorted(params.items())))
        m = None if key is None else memo.get(key)
        if m is None:
            m = session_metrics(rank_sessions(pool, fusion(pool, params)), pool.gold, pool.n_sessions)
            m = {t: m.get(t) for t in TARGETS}
            if key is not None:
                memo[key] = m
        for t in TARGETS:
            if m.get(t) is not None:
                sums[t] += m[t]
                counts[t] += 1
    return {t: round(sums[t] / counts[t], 4) if counts[t] else math.nan for t in TARGETS}


# -- what ships: the library's own fusion over channels cut at the search depth -----------------


def channel_lists(pool: Pool, depth: int) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """Each channel's (chunk, score) list, best first, cut at ``depth``: what ``run_search``
    hands the fusion (chunks without a vector or without a query term are in neither)."""
    has = ~np.isnan(pool.cosine)
    dense_ids = np.flatnonzero(has)[np.argsort(-pool.cosine[has], kind="stable")][:depth]
    matched = pool.bm25 > 0
    lexical_ids = np.flatnonzero(matched)[np.argsort(-pool.bm25[matched], kind="stable")][:depth]
    return ([(int(i), float(pool.cosine[i])) for i in dense_ids],
            [(int(i), float(pool.bm25[i])) for i in lexical_ids])


def shipped_fused(pool: Pool, alpha: float, depth: int = 200) -> list[tuple[int, float, dict[str, int | None]]]:
    """``diarist.read.fusion.convex`` as ``run_search`` calls it: chunks, best first."""
    from ..read.fusion import convex

    return convex(*channel_lists(pool, depth), alpha, depth)


def shipped_convex(pool: Pool, params: dict) -> np.ndarray:
    """Session scores from the library's own fusion over channels cut at ``depth``."""
    fused = shipped_fused(pool, params["alpha"], params.get("depth", 200))
    chunk_scores = np.full(len(pool.session), -np.inf)
    for item, score, _ in fused:
        chunk_scores[item] = score
    return session_max(pool, chunk_scores)


FUSIONS["shipped-convex"] = (shipped_convex, [{"alpha": round(a, 2)} for a in np.arange(0, 1.0001, 0.05)])
#: The convex weights a fit tries (the grid above, as plain floats).
ALPHAS = [round(float(a), 2) for a in np.arange(0, 1.0001, 0.05)]


# -- issue 9: BM25's k1 and b, fitted with the weight (pools with one BM25 column per (k1, b)) ---


def bm25_view(pool: Pool, k1: float, b: float) -> Pool:
    """The pool with BM25 scored under (k1, b): the same chunks and cosines, its own memo."""
    key = ("bm25", k1, b)
    if key not in pool.memo:
        pool.memo[key] = replace(pool, bm25=pool.bm25_by[(k1, b)], bm25_by={}, memo={})
    return pool.memo[key]


def _with_bm25(fusion: Callable[[Pool, dict], np.ndarray]) -> Callable[[Pool, dict], np.ndarray]:
    """``fusion`` on the BM25 column the params' k1 and b name; its other params passed on."""
    def fused(pool: Pool, params: dict) -> np.ndarray:
        rest = {k: v for k, v in params.items() if k not in ("k1", "b")}
        return fusion(bm25_view(pool, params["k1"], params["b"]), rest)
    return fused


bm25_only_at = _with_bm25(lexical_only)
shipped_convex_at = _with_bm25(shipped_convex)


def bm25_pairs(pools_by_dataset: dict[str, list[Pool]]) -> list[tuple[float, float]]:
    """The (k1, b) every pool carries, in the first pool's column order (its first: the searched one)."""
    pools = [p for ps in pools_by_dataset.values() for p in ps]
    common = set.intersection(*(set(p.bm25_by) for p in pools))
    return [kb for kb in pools[0].bm25_by if kb in common]


def _bm25_grid(pairs: Sequence[tuple[float, float]], alphas: Sequence[float] | None) -> list[dict]:
    # (k1, b) outermost and the reference pair first: a tie keeps it (``fit`` keeps the first best).
    return [{**({} if alphas is None else {"alpha": a}), "k1": k1, "b": b} for k1, b in pairs for a in (alphas or [None])]


def _tag(kb: tuple[float, float]) -> str:
    return f"k1={kb[0]:g} b={kb[1]:g}"


def bm25_params_report(pools_by_dataset: dict[str, list[Pool]], reference: tuple[float, float] = (1.5, 0.75),
                       alpha: float = 0.75) -> dict[str, Any]:
    """Every (k1, b) the pools carry: BM25 alone and the shipped convex fusion with the weight
    cross-validated, then (k1, b) fitted jointly with it, against the reference setting.
    Registers its fusions in ``FUSIONS`` (``out_of_sample`` and ``paired_report`` read them)."""
    pairs = bm25_pairs(pools_by_dataset)
    if reference not in pairs:
        raise ValueError(f"the pools carry no BM25 column for the reference {reference}")
    pairs = [reference] + [kb for kb in pairs if kb != reference]
    FUSIONS[f"today ({_tag(reference)}, alpha={alpha:g})"] = (shipped_convex_at, _bm25_grid([reference], [alpha]))
    for kb in pairs:
        FUSIONS[f"bm25-only {_tag(kb)}"] = (bm25_only_at, _bm25_grid([kb], None))
    for kb in pairs:
        FUSIONS[f"shipped-convex {_tag(kb)}"] = (shipped_convex_at, _bm25_grid([kb], ALPHAS))
    FUSIONS["bm25-only, k1 b fitted"] = (bm25_only_at, _bm25_grid(pairs, None))
    FUSIONS["shipped-convex, k1 b alpha fitted"] = (shipped_convex_at, _bm25_grid(pairs, ALPHAS))
    memos: dict[Callable, dict] = {}  # one per function: the per-pair and joint grids share their points
    report: dict[str, Any] = {"targets": list(TARGETS), "datasets": {d: len(p) for d, p in pools_by_dataset.items()},
                              "reference": {"k1": reference[0], "b": reference[1], "alpha": alpha},
                              "pairs": [list(kb) for kb in pairs], "fusions": {}}
    names = ["vectors-only", f"today ({_tag(reference)}, alpha={alpha:g})"]
    names += [f"bm25-only {_tag(kb)}" for kb in pairs] + ["bm25-only, k1 b fitted"]
    names += [f"shipped-convex {_tag(kb)}" for kb in pairs] + ["shipped-convex, k1 b alpha fitted"]
    for name in names:
        fn = FUSIONS[name][0]
        report["fusions"][name] = cross_validate(pools_by_dataset, name, memo=memos.setdefault(fn, {}))
    for r in report["fusions"].values():
        r["objective"] = {"in_sample": objective(r["in_sample"]), "kfold": objective(r["kfold"])}
        if len(r["cross_dataset"]) == len(pools_by_dataset) > 1:
            r["objective"]["cross_dataset"] = objective(r["cross_dataset"])
    joint = "shipped-convex, k1 b alpha fitted"
    report["paired"] = {f"{b} vs {a}": paired_report(pools_by_dataset, report, a, b)
                        for a, b in ((f"shipped-convex {_tag(reference)}", joint),
                                     (f"bm25-only {_tag(reference)}", "bm25-only, k1 b fitted"))}
    return report


def bm25_params_markdown(report: dict[str, Any]) -> str:
    """The objective of every fusion in / cross / 5-fold, the joint fits' parameters, then the
    lab's per-dataset tables."""
    lines = ["**objective** (mean of the targets, each dataset weighted equally)", "",
             "| fusion | fitted on all | in sample | cross-dataset | 5-fold |", "|---|---|---|---|---|"]
    for name, r in report["fusions"].items():
        o = r["objective"]
        lines.append(f"| {name} | {_params(r['fitted_on_all']) or '-'} | {o['in_sample']:.4f} | {o.get('cross_dataset', math.nan):.4f} | {o['kfold']:.4f} |")
    lines.append("")
    lines += ["**the parameters each out-of-sample fit chose**", "", "| fusion | fitted without | params |", "|---|---|---|"]
    for name in ("bm25-only, k1 b fitted", "shipped-convex, k1 b alpha fitted"):
        r = report["fusions"][name]
        for test, c in sorted(r["cross_dataset"].items()):
            lines.append(f"| {name} | {test} | {_params(c['params'])} |")
        folds_ = next(iter(r["kfold"].values()))["params"]
        lines.append(f"| {name} | each 5-fold fold | " + "; ".join(_params(p) for p in folds_) + " |")
    lines.append("")
    return "\n".join(lines) + "\n" + report_markdown(report)


def _params(params: dict) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in params.items())


# -- the report: every fusion, cross-validated, against the single channels ---------------------

#: The fusions ``diarist bench fusion`` reports: the single channels, RRF and the convex fusions.
#: The variants of issue 9 (adaptive weights, other normalisers, a learned ranker) are a study:
#: ``python -m benchmarks.studies.fusion_variants`` adds them to this report.
REPORTED = ("vectors-only", "bm25-only", "rrf", "convex", "convex-session", "shipped-convex")


def out_of_sample(pools_by_dataset: dict[str, list[Pool]], report: dict[str, Any], name: str,
                  n_folds: int = 5) -> dict[str, dict[str, dict[str, dict]]]:
    """Each question's metrics as ``cross_validate`` scored it out of sample: setting ("cross",
    "kfold") -> dataset -> question -> metrics, with the parameters fitted without it."""
    fusion, _ = FUSIONS[name]
    out: dict[str, dict[str, dict[str, dict]]] = {"cross": {}, "kfold": {}}
    for d, pools in pools_by_dataset.items():
        split = folds(pools, n_folds)
        settings = {"kfold": [(p, report["kfold"][d]["params"][g]) for g, fold in enumerate(split) for p in fold]}
        if d in report.get("cross_dataset", {}):
            settings["cross"] = [(p, report["cross_dataset"][d]["params"]) for p in pools]
        for setting, pairs in settings.items():
            out[setting][d] = {p.qid: session_metrics(rank_sessions(p, fusion(p, params)), p.gold, p.n_sessions)
                               for p, params in pairs}
    return out


def paired_report(pools_by_dataset: dict[str, list[Pool]], report: dict[str, Any], a: str, b: str) -> dict[str, Any]:
    """B against A question by question, out of sample: per setting, dataset and target, the
    questions B gained and lost and the sign test's p (NDCG@10: any difference counts)."""
    from .rows import sign_test

    qa, qb = (out_of_sample(pools_by_dataset, report["fusions"][n], n) for n in (a, b))
    result: dict[str, Any] = {}
    for setting in qa:
        for d in qa[setting]:
            cells = {}
            for t in TARGETS:
                both = [(qa[setting][d][q][t], qb[setting][d][q][t]) for q in qa[setting][d]
                        if qa[setting][d][q][t] is not None]
                gained = sum(1 for x, y in both if y > x + 1e-12)
                lost = sum(1 for x, y in both if y < x - 1e-12)
                cells[t] = {"gained": gained, "lost": lost, "p": float(f"{sign_test(gained, lost):.3g}")}
            result.setdefault(setting, {})[d] = cells
    return result


def load(paths: Sequence[str]) -> dict[str, list[Pool]]:
    from .pools import read_pools

    out: dict[str, list[Pool]] = {}
    for path in paths:
        for row in read_pools(path):
            out.setdefault(row["dataset"], []).append(to_pool(row))
    return out


def fusion_report(pools_by_dataset: dict[str, list[Pool]], names: Sequence[str] = REPORTED,
                  more: dict[str, Callable[[dict[str, list[Pool]]], dict[str, Any]]] | None = None,
                  paired: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """Every fusion of ``names`` cross-validated (a parameter-free one reports in sample only),
    then each of ``more`` (name -> its own cross-validation, a study's), then each (A, B) of
    ``paired``: B against A question by question, out of sample."""
    report: dict[str, Any] = {"targets": list(TARGETS), "datasets": {d: len(p) for d, p in pools_by_dataset.items()},
                              "fusions": {}}
    for name in names:
        report["fusions"][name] = cross_validate(pools_by_dataset, name)
    for name, validate in (more or {}).items():
        report["fusions"][name] = validate(pools_by_dataset)
    report["paired"] = {f"{b} vs {a}": paired_report(pools_by_dataset, report, a, b) for a, b in paired
                        if a in report["fusions"] and b in report["fusions"]}
    return report


def report_markdown(report: dict[str, Any]) -> str:
    """One table per dataset: in sample, cross-dataset and 5-fold out of sample, per fusion."""
    lines = []
    for d in sorted(report["datasets"]):
        lines += [f"**{d}** ({report['datasets'][d]} questions)", "",
                  "| fusion | fitted on all (in sample) | " + " | ".join(f"{t} in / cross / 5-fold" for t in TARGETS) + " |",
                  "|---|---|" + "---|" * len(TARGETS)]
        for name, r in report["fusions"].items():
            params = r.get("fitted_on_all", "weights" if "weights_all" in r else "")
            if isinstance(params, dict):
                params = ", ".join(f"{k}={v}" for k, v in params.items()) or "-"
            cross = r.get("cross_dataset", {}).get(d, {})
            cells = []
            for t in TARGETS:
                c = cross.get(t)
                cells.append(f"{r['in_sample'][d][t]:.4f} / {'-' if c is None else f'{c:.4f}'} / {r['kfold'][d][t]:.4f}")
            lines.append(f"| {name} | {params} | " + " | ".join(cells) + " |")
        lines.append("")
    for label, by_setting in report.get("paired", {}).items():
        lines += [f"**{label}**, question by question out of sample (gained / lost, sign test p)", "",
                  "| setting | dataset | " + " | ".join(TARGETS) + " |", "|---|---|" + "---|" * len(TARGETS)]
        for setting, by_dataset in by_setting.items():
            for d, cells in sorted(by_dataset.items()):
                lines.append(f"| {setting} | {d} | " + " | ".join(
                    f"+{c['gained']} / -{c['lost']} (p {c['p']:.3g})" for c in cells.values()) + " |")
        lines.append("")
    return "\n".join(lines)
