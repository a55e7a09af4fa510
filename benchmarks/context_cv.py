"""Calibrate the context block's cut by cross-validation on both dev sets (issue 26 item 4; not a test).

    python benchmarks/context_cv.py [--runs benchmarks/results/context] [--out benchmarks/results/context/cut_cv.json]

Reads the context runs of today's block (``vestige bench locomo|longmemeval --context``:
``<runs>/locomo-today`` and ``<runs>/longmemeval-today``): every question's candidates (the
search results the block was built from, after the floor and the second stage, each with its
cosine, BM25 score, coverage of the question's terms and its cost in the block) and its row.
A cut is replayed on the candidates, then the budget is filled as ``vestige.context.build_context``
fills it (best first, a hit that does not fit is skipped); the replay of today's relative cut is
checked against the measured rows first (printed: the share of questions it reproduces).

The cut family: a hit stays when it carries evidence in one channel,

    cosine >= max(COSINE_MIN, best cosine - COSINE_GAP)            (the dense channel's meaning)
    or (coverage >= COVERAGE_MIN and bm25 >= BM25_SHARE * best bm25)  (the question's terms, and
                                                                     a lexical score near the best)

and a memory stays when one of its hits does. The best hit always passes the gap test, so the
block is empty only when no hit reaches ``COSINE_MIN`` nor the lexical test.

Fitting, as ``benchmarks/floor_cv.py`` and ``vestige.bench.fusion_lab`` fit: every grid point is
scored on the training rows; a point is admissible when on each training dataset the block holds
an evidence session at least as often as the ranking's top 5 does (the committed ``default``
ranking rows, the same questions), less one point; among admissible points the objective is the
mean over datasets of (the share of served snippet tokens from evidence sessions) plus (the
share of off-topic questions answered with an empty block); ties: the first in grid order (the
loosest cut). Three reports: in sample; fitted on one dataset and tested on the other; 5 folds
(``floor_cv.fold_of``: questions by haystack, off-topic questions by their text). Every report
gives, per dataset, the targets of issue 26: evidence in the block against the ranking's top 5,
the evidence token share against today's, the median off-topic tokens against today's.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from floor_cv import FOLDS, fold_of  # the floor's folds: questions by haystack, off-topic by text

from vestige import settings

HERE = Path(__file__).resolve().parent
RUNS = HERE / "results" / "context"
RANKING = HERE / "results"
DATASETS = ("locomo", "longmemeval")
QUESTION_SET = {"locomo": ("legitimate", "abstention"), "longmemeval": ("legitimate",)}  # LoCoMo "all", LME "no_abs"
OFFTOPIC = ("offtopic", "offtopic_personal")
GRID = {
    "cosine_min": [-1.0, 0.1, 0.15, 0.2, 0.25, 0.3],
    "cosine_gap": [1.0, 0.3, 0.2, 0.15, 0.1, 0.07, 0.05, 0.03, 0.02],
    "coverage_min": [0.5, 0.75, 1.0, 2.0],  # 2.0: the lexical test never keeps a hit
    "bm25_share": [0.0, 0.25, 0.5, 0.75],
}
ALLOWANCE = 0.01  # evidence in the block at least the ranking's top 5 less one point


class Question:
    """One question's candidates as arrays, and what it is scored against."""

    def __init__(self, dataset: str, row: dict, hits: list[dict], top5: float | None, frame: int):
        self.dataset, self.id, self.kind, self.unit = dataset, row["id"], row["kind"], row["unit"]
        self.row = {"id": row["id"], "kind": row["kind"], "question": row["question"]}  # what fold_of reads
        self.top5 = top5
        self.has_gold = bool(row["gold"])
        self.frame = frame
        self.cosine = np.array([-1.0 if h["cosine"] is None else h["cosine"] for h in hits])
        self.bm25 = np.array([0.0 if h["bm25"] is None else h["bm25"] for h in hits])
        self.coverage = np.array([h["coverage"] for h in hits])
        self.fused = np.array([h["fused"] for h in hits])
        self.cost = [h["cost"] for h in hits]
        self.gold = [h["gold"] for h in hits]
        self.turn = [h["evidence_turn"] for h in hits]
        self.memory = [h["id"] for h in hits]

    def keep_cut(self, p: dict) -> np.ndarray:
        if not len(self.cosine):
            return np.zeros(0, dtype=bool)
        best_cos, best_bm25 = self.cosine.max(), self.bm25.max()
        dense = self.cosine >= max(p["cosine_min"], best_cos - p["cosine_gap"])
        lexical = (self.coverage >= p["coverage_min"]) & (self.bm25 > 0) & (self.bm25 >= p["bm25_share"] * best_bm25)
        return dense | lexical

    def keep_relative(self, share: float) -> np.ndarray:
        return self.fused >= share * self.fused.max() if len(self.fused) else np.zeros(0, dtype=bool)

    def block(self, keep: np.ndarray) -> dict:
        """Fill the budget from the kept hits as build_context does; what the block holds."""
        budget = settings.CONTEXT_BUDGET_TOKENS - self.frame
        used, ev_tokens, memories, turn, gold = 0, 0, set(), False, False
        for i in np.flatnonzero(keep):
            if used + self.cost[i] > budget:
                continue
            used += self.cost[i]
            memories.add(self.memory[i])
            if self.gold[i]:
                ev_tokens += self.cost[i]
                gold = True
                turn = turn or self.turn[i]
        return {"evidence": gold, "turn": turn, "ev_tokens": ev_tokens, "tokens": used,
                "served": used + self.frame if used else 0, "memories": len(memories)}


def load_run(run: Path, dataset: str) -> list[Question]:
    rows = [json.loads(x) for x in (run / "rows.jsonl").open()]
    with gzip.open(run / "candidates.jsonl.gz", "rt") as f:
        candidates = {c["id"]: c["hits"] for c in map(json.loads, f)}
    ranking = {}
    with open(RANKING / dataset / "default" / "rows.jsonl") as f:
        for r in map(json.loads, f):
            ranking[r["id"]] = r["metrics"]["r_any@5"]
    served = [r["n_tokens"] - r["snippet_tokens"] for r in rows if not r["empty"]]
    frame = int(statistics.median(served))  # header, footer and separators: the same for every block
    return [Question(dataset, r, candidates[r["id"]], ranking.get(r["id"]), frame) for r in rows
            if r["kind"] in OFFTOPIC or (r["kind"] in QUESTION_SET[dataset] and r["gold"])]


def points() -> list[dict]:
    keys = list(GRID)
    return [dict(zip(keys, values)) for values in itertools.product(*(GRID[k] for k in keys))]


def outcomes(questions: list[Question], grid: list[dict]) -> dict[str, np.ndarray]:
    """Every question under every grid point (rows: questions, columns: points)."""
    shape = (len(questions), len(grid))
    out = {k: np.zeros(shape) for k in ("evidence", "ev_tokens", "tokens", "served", "empty", "memories")}
    for i, q in enumerate(questions):
        for j, p in enumerate(grid):
            b = q.block(q.keep_cut(p))
            out["evidence"][i, j] = b["evidence"]
            out["ev_tokens"][i, j] = b["ev_tokens"]
            out["tokens"][i, j] = b["tokens"]
            out["served"][i, j] = b["served"]
            out["empty"][i, j] = b["served"] == 0
            out["memories"][i, j] = b["memories"]
    return out


def scores(questions: list[Question], idx: np.ndarray, out: dict[str, np.ndarray], j: int | slice) -> dict:
    """The targets on the questions ``idx`` under grid point(s) ``j``, per dataset."""
    result = {}
    for d in DATASETS:
        legit = [i for i in idx if questions[i].dataset == d and questions[i].kind not in OFFTOPIC]
        off = [i for i in idx if questions[i].dataset == d and questions[i].kind in OFFTOPIC]
        if not legit:
            continue
        result[d] = {
            "n": len(legit),
            "evidence_in_block": out["evidence"][legit, j].mean(axis=0),
            "ranking_top5": float(np.mean([questions[i].top5 for i in legit])),
            "evidence_token_share": out["ev_tokens"][legit, j].sum(axis=0) / np.maximum(out["tokens"][legit, j].sum(axis=0), 1),
            "tokens_median": np.median(out["served"][legit, j], axis=0),
            "memories_mean": out["memories"][legit, j].mean(axis=0),
            "offtopic_n": len(off),
            "offtopic_empty": out["empty"][off, j].mean(axis=0) if off else np.nan,
            "offtopic_tokens_median": np.median(out["served"][off, j], axis=0) if off else np.nan,
        }
    return result


def fit(questions: list[Question], idx: np.ndarray, out: dict[str, np.ndarray], grid: list[dict]) -> int:
    s = scores(questions, idx, out, slice(None))
    admissible = np.ones(len(grid), dtype=bool)
    objective = np.zeros(len(grid))
    for cells in s.values():
        admissible &= cells["evidence_in_block"] >= cells["ranking_top5"] - ALLOWANCE - 1e-12
        objective += cells["evidence_token_share"] + np.nan_to_num(cells["offtopic_empty"])
    if not admissible.any():  # nothing keeps the evidence: the point that keeps it most often
        return int(np.argmax(sum(c["evidence_in_block"] for c in s.values())))
    objective[~admissible] = -np.inf
    return int(np.argmax(objective))  # ties: the first (loosest) point


def _plain(cells: dict) -> dict:
    return {k: (round(float(v), 4) if isinstance(v, (float, np.floating)) else v) for k, v in cells.items()}


def report(questions: list[Question], grid: list[dict], out: dict[str, np.ndarray], today: dict) -> dict:
    everything = np.arange(len(questions))
    j = fit(questions, everything, out, grid)
    result: dict = {"grid": GRID, "allowance": ALLOWANCE, "today": today,
                    "in_sample": {"params": grid[j], **{d: _plain(c) for d, c in scores(questions, everything, out, j).items()}}}
    cross = {}
    for test in DATASETS:
        train = np.array([i for i in everything if questions[i].dataset != test])
        held = np.array([i for i in everything if questions[i].dataset == test])
        jt = fit(questions, train, out, grid)
        cross[test] = {"params": grid[jt], **_plain(scores(questions, held, out, jt)[test])}
    result["cross_dataset"] = cross
    fold = np.array([fold_of(q.row) for q in questions])
    chosen = [fit(questions, everything[fold != k], out, grid) for k in range(FOLDS)]
    pooled: dict[str, dict] = {}
    for d in DATASETS:
        # Each question scored under its own fold's fit, pooled over the folds.
        cols = np.array([chosen[f] for f in fold])
        legit = [i for i in everything if questions[i].dataset == d and questions[i].kind not in OFFTOPIC]
        off = [i for i in everything if questions[i].dataset == d and questions[i].kind in OFFTOPIC]
        pick = lambda key, ids: np.array([out[key][i, cols[i]] for i in ids])  # noqa: E731
        pooled[d] = _plain({
            "n": len(legit),
            "evidence_in_block": pick("evidence", legit).mean(),
            "ranking_top5": float(np.mean([questions[i].top5 for i in legit])),
            "evidence_token_share": pick("ev_tokens", legit).sum() / max(pick("tokens", legit).sum(), 1),
            "tokens_median": float(np.median(pick("served", legit))),
            "memories_mean": pick("memories", legit).mean(),
            "offtopic_n": len(off),
            "offtopic_empty": pick("empty", off).mean(),
            "offtopic_tokens_median": float(np.median(pick("served", off))),
        })
    result["five_fold"] = {"params": [grid[c] for c in chosen], **pooled}
    return result


def replay_today(questions: list[Question]) -> dict:
    """Today's relative cut replayed, against the measured rows: how faithful the replay is."""
    out = {}
    for d in DATASETS:
        qs = [q for q in questions if q.dataset == d]
        blocks = [q.block(q.keep_relative(settings.CONTEXT_RELATIVE_CUT)) for q in qs]
        legit = [(q, b) for q, b in zip(qs, blocks) if q.kind not in OFFTOPIC]
        off = [b for q, b in zip(qs, blocks) if q.kind in OFFTOPIC]
        out[d] = _plain({
            "evidence_in_block": np.mean([b["evidence"] for _, b in legit]),
            "ranking_top5": float(np.mean([q.top5 for q, _ in legit])),
            "evidence_token_share": sum(b["ev_tokens"] for _, b in legit) / max(sum(b["tokens"] for _, b in legit), 1),
            "tokens_median": float(np.median([b["served"] for _, b in legit])),
            "offtopic_empty": np.mean([b["served"] == 0 for b in off]),
            "offtopic_tokens_median": float(np.median([b["served"] for b in off])),
        })
    return out


def fidelity(run: Path, questions: list[Question]) -> dict:
    """Share of questions whose replayed block (today's cut) holds the evidence as measured and
    serves the measured tokens within 5."""
    rows = {r["id"]: r for r in map(json.loads, (run / "rows.jsonl").open())}
    same_evidence = same_tokens = 0
    for q in questions:
        b, r = q.block(q.keep_relative(settings.CONTEXT_RELATIVE_CUT)), rows[q.id]
        same_evidence += (not q.has_gold) or b["evidence"] == bool(r["evidence_in_block"])
        same_tokens += abs(b["served"] - r["n_tokens"]) <= 5
    return {"n": len(questions), "same_evidence": same_evidence, "served_within_5": same_tokens}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=RUNS)
    parser.add_argument("--out", type=Path, default=RUNS / "cut_cv.json")
    args = parser.parse_args(argv)
    questions: list[Question] = []
    checks = {}
    for d in DATASETS:
        run = args.runs / f"{d}-today"
        qs = load_run(run, d)
        checks[d] = fidelity(run, qs)
        questions += qs
    print(json.dumps({"replay_fidelity": checks}))
    grid = points()
    out = outcomes(questions, grid)
    result = {"command": " ".join(["python", *sys.argv]), "replay_fidelity": checks,
              **report(questions, grid, out, replay_today(questions))}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("today", "in_sample", "cross_dataset")}, indent=1))
    print(json.dumps({k: v for k, v in result["five_fold"].items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
