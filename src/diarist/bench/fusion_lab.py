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


# -- issue 9: a weight that follows each question's decisive channel, and scale-free normalisers --
#
# Every function below reads the channels as ``run_search`` hands them (``channel_lists``: each
# channel's top ``depth``, best first) and fuses chunks as ``convex`` does: a chunk absent from a
# list that was cut takes that list's last value, absent from a whole list the channel's floor
# (cosine -1, BM25 0) mapped by the same normaliser; a chunk in neither list is not reached.

ALPHAS = [round(float(a), 2) for a in np.arange(0, 1.0001, 0.05)]
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
    FUSIONS[f"adaptive-gap{_k}"] = (convex_adaptive_gap, _grid(alpha=ALPHAS, gamma=GAMMAS, k=[_k]))
FUSIONS["adaptive-gap-k"] = (convex_adaptive_gap, _grid(alpha=ALPHAS, gamma=GAMMAS, k=[2, 5, 10]))  # k fitted too
FUSIONS["adaptive-cosine"] = (convex_adaptive_cosine, _grid(alpha=ALPHAS, gamma=GAMMAS))
FUSIONS["z-score"] = (convex_z, _grid(alpha=ALPHAS))
FUSIONS["min-max"] = (convex_min_max, _grid(alpha=ALPHAS))
FUSIONS["lexical-kth"] = (convex_lexical_kth, _grid(alpha=ALPHAS, k=[2, 5, 10, 20, 50]))


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


# -- the report: every fusion, cross-validated, against the single channels ---------------------

REPORTED = ("vectors-only", "bm25-only", "rrf", "convex", "convex-session", "shipped-convex",
            "adaptive-gap2", "adaptive-gap5", "adaptive-gap10", "adaptive-gap-k", "adaptive-cosine",
            "z-score", "min-max", "lexical-kth")


PAIRED = (("shipped-convex", "adaptive-gap5"), ("bm25-only", "adaptive-gap5"))  # (A, B): B against A


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


def load(paths: Sequence[str]) -> dict[str, list[Pool]]:
    from .pools import read_pools

    out: dict[str, list[Pool]] = {}
    for path in paths:
        for row in read_pools(path):
            out.setdefault(row["dataset"], []).append(to_pool(row))
    return out


def fusion_report(pools_by_dataset: dict[str, list[Pool]], learned: bool = True) -> dict[str, Any]:
    """Every reported fusion cross-validated; a parameter-free one reports in sample only."""
    report: dict[str, Any] = {"targets": list(TARGETS), "datasets": {d: len(p) for d, p in pools_by_dataset.items()},
                              "fusions": {}}
    for name in REPORTED:
        report["fusions"][name] = cross_validate(pools_by_dataset, name)
    if learned:
        report["fusions"]["learned-linear"] = cross_validate_learned(pools_by_dataset)
    report["paired"] = {f"{b} vs {a}": paired_report(pools_by_dataset, report, a, b) for a, b in PAIRED
                        if a in report["fusions"] and b in report["fusions"]}
    if "adaptive-gap5" in report["fusions"]:
        report["adaptive_weights"] = question_weights(pools_by_dataset, report["fusions"]["adaptive-gap5"]["fitted_on_all"])
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
    if "adaptive_weights" in report:
        lines += ["**adaptive-gap5**: the dense weight each question gets (fitted on all), and the median leads", "",
                  "| dataset | mean | p10 | p50 | p90 | dense lead p50 | lexical lead p50 |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {d} | " + " | ".join(f"{v:.3f}" for v in w.values()) + " |"
                  for d, w in sorted(report["adaptive_weights"].items())]
        lines.append("")
    return "\n".join(lines)
