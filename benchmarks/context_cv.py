"""Calibrate the context block's cut by cross-validation on both dev sets (issue 26 item 4; not a test).

    python benchmarks/context_cv.py [--runs benchmarks/results/context] [--out benchmarks/results/context/cut_cv.json]

Reads the context runs of today's block (``diarist bench locomo|longmemeval --context``:
``<runs>/locomo-today`` and ``<runs>/longmemeval-today``): every question's candidates (the
search results the block was built from, after the floor and the second stage, each with its
cosine, BM25 score, coverage of the question's terms and its cost in the block) and its row.
A cut is replayed on the candidates, then the budget is filled as ``diarist.context.build_context``
fills it (best first, a hit that does not fit is skipped); the replay of today's relative cut is
checked against the measured rows first (printed: the share of questions it reproduces).

The cut is read's (``diarist.read.cut``): after grouping by memory (each memory once, at its best
chunk's place, with at most ``GROUP_PASSAGES`` of its chunks as passages), the first memory stays;
another stays when it holds ``min_coverage`` of the question's terms (and some), or when its
best passage's cosine reaches ``min_cosine`` within ``max_gap`` of the best memory's cosine. The
budget then takes passages in passes (every kept memory's best passage, best memory first; then each shown
memory's second best; then its third), skipping a passage that does not fit. The replay
approximates what it cannot read from the recorded candidates (the real block is measured
afterwards by the context benchmark): a memory's coverage is its best passage's (not the union
of its passages'), each passage costs a header line, and it sees the top ``CONTEXT_K`` chunks,
not ``CONTEXT_K`` memories.

Fitting, as ``benchmarks/floor_cv.py`` and ``diarist.bench.fusion_lab`` fit: every grid point is
scored on the training rows; a point is admissible when on each training dataset the block holds
an evidence session at least as often as the ranking's top 5 does (the committed ``default``
ranking rows, the same questions) less one point, or, where no point reaches that (LoCoMo: the
budget holds about four chunks, the top 5 five sessions), at least as often as today's block
does on those questions; among admissible points the objective is the mean over datasets of (the
share of served snippet tokens from evidence sessions) plus (one less the off-topic questions'
mean tokens over the budget); ties: the first in grid order (the loosest cut). Three reports: in sample; fitted on one dataset and tested on the other; 5 folds
(``floor_cv.fold_of``: questions by haystack, off-topic questions by their text). Every report
gives, per dataset, the targets of issue 26: evidence in the block against the ranking's top 5,
the evidence token share against today's, the median off-topic tokens against today's.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from floor_cv import FOLDS, fold_of  # the floor's folds: questions by haystack, off-topic by text

from diarist import settings
from diarist.bench.report import CANDIDATES
from diarist.bench.rows import has_rows, read_jsonl, read_rows

GROUP_PASSAGES = 3  # diarist.settings.GROUP_PASSAGES on the read branch (the grouping this replays)

HERE = Path(__file__).resolve().parent
RUNS = HERE / "results" / "context"
RANKING = HERE / "results"
DATASETS = ("locomo", "longmemeval")
QUESTION_SET = {"locomo": ("legitimate", "abstention"), "longmemeval": ("legitimate",)}  # LoCoMo "all", LME "no_abs"
OFFTOPIC = ("offtopic", "offtopic_personal")
GRID = {  # loosest first: ties go to the looser cut
    "min_cosine": [-1.0, 0.05, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3],
    "max_gap": [1.0, 0.4, 0.3, 0.25, 0.2, 0.15, 0.1, 0.07, 0.05, 0.03],
    "min_coverage": [0.34, 0.5, 0.67, 0.75, 1.0, 2.0],  # 2.0: coverage never keeps a memory
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
        self.cosines = [h["cosine"] for h in hits]
        self.grouped = self.memories()
        self.today = self.block(self.keep_relative(settings.CONTEXT_RELATIVE_CUT))

    def memories(self) -> list[list[int]]:
        """The candidates grouped by memory as ``diarist.read.group`` groups them: each memory's
        passages (candidate indexes, best first), at most ``GROUP_PASSAGES``. Only chunks of two
        views covering the same turns are one passage there; the default plan indexes one view,
        so no candidate here is merged into another."""
        groups: dict[str, list[int]] = {}
        for i, m in enumerate(self.memory):
            chosen = groups.setdefault(m, [])
            if len(chosen) < GROUP_PASSAGES:
                chosen.append(i)
        return list(groups.values())

    def block_cut(self, p: dict) -> dict:
        """The new block: grouped, cut as diarist.read.cut cuts, then the budget filled in passes
        as diarist.context fills it (every kept memory's best passage, then second bests, ...)."""
        items = self.grouped
        cosines = [self.cosines[g[0]] for g in items]
        best = max((c for c in cosines if c is not None), default=None)
        kept = []
        for place, g in enumerate(items):
            cosine, coverage = cosines[place], max(self.coverage[i] for i in g)
            if place == 0 or (coverage >= p["min_coverage"] and coverage > 0) or (
                    cosine is not None and best is not None and cosine >= p["min_cosine"]
                    and best - cosine <= p["max_gap"]):
                kept.append(g)
        budget = settings.CONTEXT_BUDGET_TOKENS - self.frame
        used = ev_tokens = 0
        shown: set[int] = set()
        gold = turn = False
        for rank in range(GROUP_PASSAGES):
            for n, g in enumerate(kept):
                if rank >= len(g) or (rank > 0 and n not in shown):
                    continue
                i = g[rank]
                if used + self.cost[i] > budget:
                    continue
                used += self.cost[i]
                shown.add(n)
                if self.gold[i]:
                    ev_tokens += self.cost[i]
                    gold, turn = True, turn or self.turn[i]
        return {"evidence": gold, "turn": turn, "ev_tokens": ev_tokens, "tokens": used,
                "served": used + self.frame if used else 0, "memories": len(shown)}

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
    rows = read_rows(run)
    candidates = {c["id"]: c["hits"] for c in read_jsonl(run / CANDIDATES)}
    ranking = {r["id"]: r["metrics"]["r_any@5"] for r in read_rows(RANKING / dataset / "default")}
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
            b = q.block_cut(p)
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
        personal = [i for i in off if questions[i].kind == "offtopic_personal"]
        if not legit:
            continue
        result[d] = {
            "n": len(legit),
            "evidence_in_block": out["evidence"][legit, j].mean(axis=0),
            **({"evidence_turn_in_block": out["turn"][legit, j].mean(axis=0)} if "turn" in out else {}),
            "ranking_top5": float(np.mean([questions[i].top5 for i in legit])),
            "evidence_token_share": out["ev_tokens"][legit, j].sum(axis=0) / np.maximum(out["tokens"][legit, j].sum(axis=0), 1),
            "tokens_median": np.median(out["served"][legit, j], axis=0),
            "memories_mean": out["memories"][legit, j].mean(axis=0),
            "offtopic_n": len(off),
            "offtopic_empty": out["empty"][off, j].mean(axis=0) if off else np.nan,
            "offtopic_tokens_median": np.median(out["served"][off, j], axis=0) if off else np.nan,
            "offtopic_tokens_mean": out["served"][off, j].mean(axis=0) if off else np.nan,
            "personal_tokens_median": np.median(out["served"][personal, j], axis=0) if personal else np.nan,
        }
    return result


def fit(questions: list[Question], idx: np.ndarray, out: dict[str, np.ndarray], grid: list[dict],
        turn: bool = False, keep_turn: bool = False) -> int:
    """The grid point the objective prefers on the questions ``idx``. ``turn``: the evidence turn in
    the block counts in the objective beside the share (a trim that shows lines can lose the answer
    turn while it keeps the session). ``keep_turn``: admissible points also show the evidence turn
    at least as often as the shipped block does (``today["turn"]``), less ``ALLOWANCE``."""
    s = scores(questions, idx, out, slice(None))
    admissible = np.ones(len(grid), dtype=bool)
    objective = np.zeros(len(grid))
    for d, cells in s.items():
        today = np.mean([questions[i].today["evidence"] for i in idx
                         if questions[i].dataset == d and questions[i].kind not in OFFTOPIC])
        reach = cells["evidence_in_block"] >= cells["ranking_top5"] - ALLOWANCE - 1e-12
        admissible &= reach if reach.any() else cells["evidence_in_block"] >= today - 1e-12
        if keep_turn:
            shipped_turn = np.mean([questions[i].today["turn"] for i in idx
                                    if questions[i].dataset == d and questions[i].kind not in OFFTOPIC])
            admissible &= cells["evidence_turn_in_block"] >= shipped_turn - ALLOWANCE - 1e-12
        off_tokens = np.nan_to_num(cells["offtopic_tokens_mean"]) / settings.CONTEXT_BUDGET_TOKENS
        objective += cells["evidence_token_share"] + (1.0 - off_tokens)
        if turn:
            objective += cells["evidence_turn_in_block"]
    if not admissible.any():  # nothing keeps the evidence: the point that keeps it most often
        return int(np.argmax(sum(c["evidence_in_block"] for c in s.values())))
    objective[~admissible] = -np.inf
    return int(np.argmax(objective))  # ties: the first (loosest) point


def _plain(cells: dict) -> dict:
    return {k: (round(float(v), 4) if isinstance(v, (float, np.floating)) else v) for k, v in cells.items()}


def report(questions: list[Question], grid: list[dict], out: dict[str, np.ndarray], today: dict,
           turn: bool = False, keep_turn: bool = False) -> dict:
    everything = np.arange(len(questions))
    choose = functools.partial(fit, turn=turn, keep_turn=keep_turn)
    j = choose(questions, everything, out, grid)
    result: dict = {"grid": GRID, "allowance": ALLOWANCE, "today": today, "objective": "share + off-topic" + (" + evidence turn" if turn else ""),
                    "admissible": "evidence >= top 5 less the allowance" + (
                        "; evidence turn >= the shipped block's less the allowance" if keep_turn else ""),
                    "in_sample": {"params": grid[j], **{d: _plain(c) for d, c in scores(questions, everything, out, j).items()}}}
    cross = {}
    for test in [d for d in DATASETS if any(q.dataset == d for q in questions)]:
        train = np.array([i for i in everything if questions[i].dataset != test])
        held = np.array([i for i in everything if questions[i].dataset == test])
        jt = choose(questions, train, out, grid)
        cross[test] = {"params": grid[jt], **_plain(scores(questions, held, out, jt)[test])}
    result["cross_dataset"] = cross
    fold = np.array([fold_of(q.row) for q in questions])
    chosen = [choose(questions, everything[fold != k], out, grid) for k in range(FOLDS)]
    pooled: dict[str, dict] = {}
    for d in [d for d in DATASETS if any(q.dataset == d for q in questions)]:
        # Each question scored under its own fold's fit, pooled over the folds.
        cols = np.array([chosen[f] for f in fold])
        legit = [i for i in everything if questions[i].dataset == d and questions[i].kind not in OFFTOPIC]
        off = [i for i in everything if questions[i].dataset == d and questions[i].kind in OFFTOPIC]
        personal = [i for i in off if questions[i].kind == "offtopic_personal"]
        pick = lambda key, ids: np.array([out[key][i, cols[i]] for i in ids])  # noqa: E731
        pooled[d] = _plain({
            "n": len(legit),
            "evidence_in_block": pick("evidence", legit).mean(),
            **({"evidence_turn_in_block": pick("turn", legit).mean()} if "turn" in out else {}),
            "ranking_top5": float(np.mean([questions[i].top5 for i in legit])),
            "evidence_token_share": pick("ev_tokens", legit).sum() / max(pick("tokens", legit).sum(), 1),
            "tokens_median": float(np.median(pick("served", legit))),
            "memories_mean": pick("memories", legit).mean(),
            "offtopic_n": len(off),
            "offtopic_empty": pick("empty", off).mean(),
            "offtopic_tokens_median": float(np.median(pick("served", off))),
            "offtopic_tokens_mean": pick("served", off).mean(),
            "personal_tokens_median": float(np.median(pick("served", personal))),
        })
    result["five_fold"] = {"params": [grid[c] for c in chosen], **pooled}
    return result


def replay_today(questions: list[Question]) -> dict:
    """Today's relative cut replayed, against the measured rows: how faithful the replay is."""
    out = {}
    for d in [d for d in DATASETS if any(q.dataset == d for q in questions)]:
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
            "offtopic_tokens_mean": np.mean([b["served"] for b in off]),
            "personal_tokens_median": float(np.median([b["served"] for q, b in zip(qs, blocks) if q.kind == "offtopic_personal"])),
        })
    return out


def fidelity(run: Path, questions: list[Question]) -> dict:
    """Share of questions whose replayed block (today's cut) holds the evidence as measured and
    serves the measured tokens within 5."""
    rows = {r["id"]: r for r in read_rows(run)}
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
        if not has_rows(run):
            print(f"no run {run}: {d} left out", file=sys.stderr)
            continue
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
