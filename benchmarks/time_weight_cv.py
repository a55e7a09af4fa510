"""Cross-validate the weight of the second stage's time signal, on the committed candidate pools.

The default second stage (``diarist.rerank.evidence``, signal ``time``) re-orders the top 50
fused chunks by Reciprocal Rank Fusion of two rankings with equal weight: the fused order and
the order by distance to the span the question names. This script gives the time ranking a
weight ``w`` (``1 / (60 + fused rank) + w / (60 + time rank)``; w = 1 is what ships, w = 0 is
no second stage) and chooses ``w`` as every fitted value is chosen (``diarist.bench.fusion_lab``):
fit on one dataset and test on the other, and 5 folds by haystack, objective the mean of
recall_any@1/@5/@10 and NDCG@10 over both datasets.

Each question is replayed from its pool (``benchmarks/results/fusion/pools``): the library's
convex fusion over the two channels' scores (its dense weight leaning on meaning as the search's
does, ``fusion.lean_on_meaning``), then the library's own evidence stage computes both
rankings of the top 50 (each chunk dated by its session, "now" the question's date). With w = 1
the replay gives the committed ``default`` rows' recall@1 and @5 on every LoCoMo question and on
249 of 250 LongMemEval questions (printed first).

    python benchmarks/time_weight_cv.py [--out benchmarks/results/fusion/time_weight_cv.json]
    python benchmarks/time_weight_cv.py --depth 80     # the stage re-reading another depth
"""

from __future__ import annotations

import argparse
import gzip
import json
from datetime import datetime
from pathlib import Path

import numpy as np

from diarist import settings
from diarist.bench import fusion_lab as lab
from diarist.bench.rows import read_rows
from diarist.dates import normalise_date
from diarist.read.fusion import RRF_K, lean_on_meaning
from diarist.rerank.evidence import EvidenceReranker
from diarist.types import Hit

RESULTS = Path(__file__).resolve().parent / "results"
DATASETS = ("locomo", "longmemeval")
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)


def _when(value: str | None) -> datetime | None:
    iso = normalise_date(value) if value else None
    return datetime.fromisoformat(iso).replace(tzinfo=None) if iso else None


class Replay:
    """One question: its pool, the fused chunk order, and the evidence stage's two rankings."""

    def __init__(self, row: dict, question: str, depth: int = settings.RERANK_DEPTH):
        self.pool = lab.to_pool(row)
        self.depth = depth
        # The shipped weight as the search sets it: raised when the question's best BM25 is low.
        lexical = [(i, float(s)) for i, s in enumerate(self.pool.bm25) if s > 0]
        weight = lean_on_meaning(settings.FUSION_DENSE_WEIGHT, lexical)
        self.fused = [chunk for chunk, _, _ in lab.shipped_fused(self.pool, weight)]
        head = self.fused[:depth]
        dates = row["session_dates"]
        hits = [Hit(chunk_id=c, text="", score=0.0, session_id=None, fact_id=None,
                    date=normalise_date(dates[self.pool.session[c]]) if dates[self.pool.session[c]] else None,
                    roles=(), view="") for c in head]
        rankings = EvidenceReranker(signals=("time",)).rankings(question, hits, _when(row["question_date"]))
        self.time_rank = {i: r for r, i in enumerate(rankings["time"], 1)} if "time" in rankings else None

    def sessions(self, weight: float) -> list[int]:
        head, rest = self.fused[: self.depth], self.fused[self.depth :]
        order = list(range(len(head)))
        if self.time_rank is not None and weight > 0:
            t = self.time_rank
            # As the stage breaks ties: the candidate the time signal ranks higher, then fused order.
            order.sort(key=lambda i: (-(1 / (RRF_K + i + 1) + weight / (RRF_K + t[i])), t[i], i))
        ranked = list(dict.fromkeys(int(self.pool.session[c]) for c in [head[i] for i in order] + rest))
        seen = set(ranked)
        return ranked + [s for s in range(self.pool.n_sessions) if s not in seen]


def load(dataset: str, depth: int = settings.RERANK_DEPTH) -> tuple[list[Replay], dict[str, dict]]:
    questions = {row["id"]: row for row in read_rows(RESULTS / dataset / "default")}
    with gzip.open(RESULTS / "fusion" / "pools" / f"{dataset}.jsonl.gz", "rt") as f:
        rows = [json.loads(line) for line in f]
    return [Replay(row, questions[row["id"]]["question"], depth) for row in rows], questions


def replay_check(replays: list[Replay], committed: dict[str, dict]) -> dict[str, float]:
    """Share of questions whose replayed recall@1 and @5 (w = 1) equal the committed default's."""
    same = {1: 0, 5: 0}
    n = 0
    for r in replays:
        metrics = committed[r.pool.qid]["metrics"]
        if not r.pool.gold or metrics["r_any@1"] is None:
            continue
        n += 1
        ranked = r.sessions(1.0)
        for k in same:
            same[k] += float(bool(set(ranked[:k]) & set(r.pool.gold))) == metrics[f"r_any@{k}"]
    return {f"r_any@{k}_same": same[k] / n for k in same} | {"questions": n}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="write the report here (JSON)")
    parser.add_argument("--depth", type=int, default=settings.RERANK_DEPTH,
                        help=f"candidates the stage re-reads (default: {settings.RERANK_DEPTH}, what ships)")
    args = parser.parse_args(argv)
    if args.depth < 1:
        parser.error("--depth must be at least 1")
    replays, report = {}, {"depth": args.depth, "weights": list(WEIGHTS), "replay_check": {}, "grid": {}}
    for dataset in DATASETS:
        replays[dataset], committed = load(dataset, args.depth)
        report["replay_check"][dataset] = replay_check(replays[dataset], committed)
    by_id = {(d, r.pool.qid): r for d in DATASETS for r in replays[d]}

    def fusion(pool: lab.Pool, params: dict) -> np.ndarray:
        ranked = by_id[(pool.dataset, pool.qid)].sessions(params["w"])
        scores = np.empty(pool.n_sessions)
        scores[ranked] = -np.arange(len(ranked), dtype=float)
        return scores

    pools = {d: [r.pool for r in replays[d]] for d in DATASETS}
    memo: dict = {}
    for w in WEIGHTS:
        report["grid"][str(w)] = {d: lab.metrics_of(pools[d], fusion, {"w": w}, memo) for d in DATASETS}
    # The lab cross-validates what its registry names: registered for this call only.
    lab.FUSIONS["time-weight"] = (fusion, [{"w": w} for w in WEIGHTS])
    try:
        report["cross_validated"] = cv = lab.cross_validate(pools, "time-weight", memo=memo)
    finally:
        del lab.FUSIONS["time-weight"]
    if args.out:  # written before anything is printed: a closed stdout cannot lose it
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print("replay of w = 1 against the committed default rows:", report["replay_check"])
    for w in WEIGHTS:
        print(f"w = {w}:", report["grid"][str(w)])
    print("fitted on all:", cv["fitted_on_all"])
    for d in DATASETS:
        print(f"{d}: across datasets {cv['cross_dataset'][d]}; 5-fold {cv['kfold'][d]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
