"""Cross-validate the MaxSim second stage (weight, depth, blend) on its replay rows.

Each question is replayed from its row (``benchmarks/maxsim_pools.py``): the default's top 50
fused candidates, the top ``depth`` blended with their MaxSim order by the library's own
``diarist.rerank.maxsim.blend_order``, then the library's ``evidence:time`` stage over the 50
(each candidate with its date, "now" the question's), sessions by their best chunk. Weight 0
is today's default: the replay of it is checked against the committed ``default`` rows first.

Every (mode, weight, depth) is chosen as every fitted value is (``diarist.bench.fusion_lab``):
objective the mean of recall_any@1/@5/@10 and NDCG@10 over both datasets; fitted on one
dataset and tested on the other, and 5 folds by haystack (each fold scored with the fit on the
other four folds of both datasets); in sample next to out of sample.

    python benchmarks/maxsim_cv.py --out benchmarks/results/maxsim/cv.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
from datetime import datetime
from pathlib import Path

import numpy as np

from diarist.bench import fusion_lab as lab
from diarist.bench.metrics import session_metrics
from diarist.bench.rows import read_jsonl, rows_path
from diarist.read.question import Question
from diarist.rerank.evidence import EvidenceReranker
from diarist.rerank.maxsim import blend_order
from diarist.types import Hit

RESULTS = Path(__file__).resolve().parent / "results"
DATASETS = ("locomo", "longmemeval")
REPORTED = ("r_any@1", "r_any@5", "r_any@10", "r_all@10", "ndcg@10")
GRID = ([{"mode": "convex", "weight": 0.0, "depth": 5}]
        + [{"mode": "convex", "weight": w, "depth": n} for n in (5, 10, 20) for w in (0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0)]
        + [{"mode": "rank", "weight": w, "depth": n} for n in (5, 10, 20) for w in (0.25, 0.5, 1.0, 2.0, 4.0)])
TIME = EvidenceReranker(signals=("time",))


class Replay:
    def __init__(self, row: dict):
        self.row = row
        self.question = Question(row["question"], now=datetime.fromisoformat(row["now"]) if row["now"] else None)
        self.pool = lab.Pool(row["id"], row["dataset"], row["unit"], row["type"], row["n_sessions"],
                             [row["sessions"].index(s) for s in row["gold"] if s in row["sessions"]],
                             np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int64))
        self._memo: dict[tuple, list[str]] = {}

    def ranked(self, mode: str, weight: float, depth: int) -> list[str]:
        key = (mode, weight, depth) if weight else ("convex", 0.0, 0)
        if key not in self._memo:
            head = self.row["head"]
            top = head[:depth]
            if weight and any(h[3] is None for h in top):
                raise ValueError(f"{self.row['id']}: MaxSim scored fewer than {depth} candidates")
            order = blend_order([h[1] for h in top], [h[3] for h in top], weight, mode) if weight else range(len(top))
            blended = [top[i] for i in order] + head[depth:]
            hits = [Hit(chunk_id=i, text="", score=h[1], session_id=str(h[0]), fact_id=None, date=h[2], roles=(),
                        view="") for i, h in enumerate(blended)]
            final = [int(h.session_id) for h in TIME.rerank_question(self.question, hits)] + self.row["tail"]
            seen = list(dict.fromkeys(final))
            ranked = seen + [s for s in range(self.row["n_sessions"]) if s not in set(seen)]
            self._memo[key] = [self.row["sessions"][s] for s in ranked]
        return self._memo[key]

    def metrics(self, params: dict) -> dict:
        ranked = self.ranked(params["mode"], params["weight"], params["depth"])
        return session_metrics(ranked, self.row["gold"], self.row["n_sessions"])


def load(path: Path) -> list[Replay]:
    with gzip.open(path, "rt") as f:
        return [Replay(json.loads(line)) for line in f if line.strip()]


def mean_metrics(pairs: list[tuple[Replay, dict]]) -> dict[str, float]:
    sums, counts = {t: 0.0 for t in REPORTED}, {t: 0 for t in REPORTED}
    for replay, params in pairs:
        m = replay.metrics(params)
        for t in REPORTED:
            if m.get(t) is not None:
                sums[t] += m[t]
                counts[t] += 1
    return {t: round(sums[t] / counts[t], 4) if counts[t] else math.nan for t in REPORTED} | {"n": counts["r_any@1"]}


def replay_check(replays: list[Replay], runs: Path) -> dict:
    """Share of questions whose weight-0 replay ranks sessions exactly as the committed default
    run (``runs/default``'s rows) did."""
    path = rows_path(runs / "default")
    if not path.exists():
        return {"skipped": f"{path} missing"}
    committed = {r["id"]: r["ranked"] for r in read_jsonl(path)}
    same = sum(r.ranked("convex", 0.0, 0) == committed.get(r.row["id"]) for r in replays)
    return {"questions": len(replays), "same_ranking": same}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", metavar="DATASET=FILE",
                        default=[f"{d}={RESULTS / 'maxsim' / 'pools' / f'{d}.jsonl.gz'}" for d in DATASETS],
                        help="replay rows per dataset (default: benchmarks/results/maxsim/pools/DATASET.jsonl.gz)")
    parser.add_argument("--out", default=None, help="write the report here (JSON)")
    parser.add_argument("--check", nargs="+", metavar="DATASET=DIR", default=[],
                        help="the committed runs the weight-0 replay is checked against, per dataset "
                        "(DIR/default/rows.jsonl.gz; default: benchmarks/results/DATASET)")
    args = parser.parse_args(argv)
    files = dict(item.split("=", 1) for item in args.rows)
    check = {d: Path(f) for d, f in (item.split("=", 1) for item in args.check)}
    unknown = set(files) - set(DATASETS)
    if unknown:
        parser.error(f"unknown datasets {sorted(unknown)}; use {', '.join(DATASETS)}")
    replays = {d: load(Path(f)) for d, f in files.items()}
    report_files = {d: str(f) for d, f in files.items()}
    by_id = {(d, r.pool.qid): r for d in replays for r in replays[d]}

    def fusion(pool: lab.Pool, params: dict) -> np.ndarray:
        replay = by_id[(pool.dataset, pool.qid)]
        index = {s: i for i, s in enumerate(replay.row["sessions"])}
        ranked = [index[s] for s in replay.ranked(params["mode"], params["weight"], params["depth"])]
        scores = np.empty(pool.n_sessions)
        scores[ranked] = -np.arange(len(ranked), dtype=float)
        return scores

    report: dict = {"rows": report_files, "grid": GRID, "replay_check": {d: replay_check(replays[d], check.get(d, RESULTS / d))
                                                           for d in replays}}
    pools = {d: [r.pool for r in replays[d]] for d in replays}
    lab.FUSIONS["maxsim"] = (fusion, GRID)  # registered for this call only
    try:
        memo: dict = {}
        fitted = lab.fit(pools, "maxsim", memo)
        report["fitted_on_all"] = fitted
        report["default"] = {d: mean_metrics([(r, GRID[0]) for r in replays[d]]) for d in replays}
        report["in_sample"] = {d: mean_metrics([(r, fitted) for r in replays[d]]) for d in replays}
        report["cross_dataset"] = {}
        for test in replays if len(replays) > 1 else []:
            params = lab.fit({d: p for d, p in pools.items() if d != test}, "maxsim", memo)
            report["cross_dataset"][test] = {"params": params, **mean_metrics([(r, params) for r in replays[test]])}
        split = {d: lab.folds(pools[d], 5) for d in replays}
        fold_params = [lab.fit({d: [p for g, fold in enumerate(split[d]) if g != f for p in fold] for d in replays},
                               "maxsim", memo) for f in range(5)]
        report["kfold"] = {d: {"params": fold_params, **mean_metrics(
            [(by_id[(d, p.qid)], fold_params[g]) for g, fold in enumerate(split[d]) for p in fold])} for d in replays}
        report["grid_metrics"] = [{**params, **{d: mean_metrics([(r, params) for r in replays[d]]) for d in replays}}
                                  for params in GRID]
    finally:
        del lab.FUSIONS["maxsim"]
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print("replay check (weight 0 against the committed default rows):", report["replay_check"])
    print("fitted on all:", fitted)
    for d in replays:
        print(f"{d}: default {report['default'][d]}")
        print(f"{d}: in sample {report['in_sample'][d]}")
        print(f"{d}: across datasets {report['cross_dataset'].get(d)}")
        print(f"{d}: 5-fold {report['kfold'][d]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
