"""Calibrate the context block's relative cut on the committed fusion pools (not a test).

    python benchmarks/context_cut.py [--out benchmarks/results/fusion/context_cut.json]

For every dev question (benchmarks/results/fusion/pools), the shipped fusion ranks the chunks
(``diarist.read.fusion.convex``, each channel cut at depth 200) and the top 32 are what
``Memory.context`` would consider. A cut at ratio r leaves out every hit scoring under r times
the best. Reported per dataset and r: questions whose evidence would leave the block (their best
evidence chunk in the top 32 falls under the cut) and the share of the top 32 left out. The
ratio is chosen on each dataset alone and on both (the largest grid value that loses no
question), and each choice is scored on the other dataset.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from diarist import settings
from diarist.bench import fusion_lab as lab

POOLS = Path(__file__).resolve().parent / "results" / "fusion" / "pools"
GRID = [round(0.05 * i, 2) for i in range(8, 20)]  # 0.40 ... 0.95
TOP = settings.CONTEXT_K


def question_ratios(pool: lab.Pool) -> tuple[float | None, np.ndarray]:
    """(best evidence chunk's score over the best score, or None if no evidence in the top
    TOP; every top-TOP chunk's score over the best)."""
    fused = lab.shipped_fused(pool, settings.FUSION_DENSE_WEIGHT, settings.DEPTH)[:TOP]
    best = fused[0][1]
    shares = np.array([s / best for _, s, _ in fused])
    evidence = [s / best for i, s, _ in fused if int(pool.session[i]) in pool.gold]
    return (max(evidence) if evidence else None), shares


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=POOLS.parent / "context_cut.json")
    args = parser.parse_args(argv)
    pools = lab.load([str(p) for p in sorted(POOLS.glob("*.jsonl.gz"))])
    per: dict[str, dict] = {}
    for dataset, items in pools.items():
        measured = [question_ratios(p) for p in items if p.gold]
        evidence = np.array([r for r, _ in measured if r is not None])
        per[dataset] = {
            "questions_with_evidence_in_top": int(len(evidence)),
            "table": {str(r): {"lost": int(np.sum(evidence < r)),
                               "share_left_out": round(float(np.mean([np.mean(s < r) for _, s in measured])), 4)}
                      for r in GRID},
        }
    def largest_safe(datasets: list[str]) -> float:
        return max(r for r in GRID if all(per[d]["table"][str(r)]["lost"] == 0 for d in datasets))
    names = sorted(per)
    choice = {"both": largest_safe(names), **{f"{d} alone": largest_safe([d]) for d in names}}
    cross = {f"fitted on {d}, lost on {o}": per[o]["table"][str(choice[f'{d} alone'])]["lost"]
             for d in names for o in names if o != d}
    result = {"command": " ".join(["python", *sys.argv]), "top": TOP, "grid": GRID, "per_dataset": per,
              "chosen": choice, "cross_dataset": cross, "shipped": settings.CONTEXT_RELATIVE_CUT}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({"chosen": choice, "cross_dataset": cross,
                      "at_shipped": {d: per[d]["table"][str(settings.CONTEXT_RELATIVE_CUT)] for d in names}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
