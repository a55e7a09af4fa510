"""Exploration: fusion cross-validated on e5-small's pools beside MiniLM's, the same chunks.

Why: fused with BM25 by the shipped convex fusion, e5-small's vectors lost to MiniLM's on both
dev sets although alone they beat them (BENCHMARKS.md, "A stronger dense model"). e5's cosines
sit in a narrow band (best ~0.85, tenth ~0.83), and theoretical min-max, (cos + 1) / (best + 1),
squeezes that band about 8x against BM25's score / best. This asks whether a normalisation fitted
to the data closes that: ``convex-floor`` maps a cosine to (cos - floor) / (best - floor), floored
at 0, with the floor and the weight chosen together by the lab's cross-validation (fit on one
dataset, test on the other; 5 folds by haystack), as every fitted parameter is. ``three-way``
asks whether the two embedders add up: MiniLM's and e5's cosines and BM25 in one convex sum.

    python benchmarks/e5_locomo.py --dataset locomo --cache E5_CACHE \\
        --pools benchmarks/results/explore-e5/pools/locomo.jsonl.gz        # and --dataset longmemeval
    python benchmarks/e5_fusion.py --out benchmarks/results/explore-e5/fusion

MiniLM's pools are the committed ones of the fusion lab (``benchmarks/results/fusion/pools``;
written again with this tree by ``diarist bench pools``, they give the same figures).

Nothing here ships: the library's fusion is untouched.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from diarist.bench import fusion_lab
from diarist.bench.fusion_lab import Pool, session_max

RESULTS = Path(__file__).resolve().parent / "results" / "explore-e5"
FLOORS = (-1.0, 0.0, 0.5, 0.6, 0.7, 0.75)
COMPARED = ("vectors-only", "bm25-only", "rrf", "convex", "shipped-convex", "convex-floor")


def _dense_above_floor(cosine: np.ndarray, floor: float) -> np.ndarray:
    """(cos - floor) / (best - floor), at least 0; a chunk with no vector scores 0."""
    best = np.nanmax(cosine) if np.any(~np.isnan(cosine)) else 1.0
    span = max(best - floor, 1e-9)
    return np.where(np.isnan(cosine), 0.0, np.maximum((cosine - floor) / span, 0.0))


def convex_floor(pool: Pool, params: dict) -> np.ndarray:
    """The lab's chunk-level convex fusion with the cosine floor as a second parameter."""
    a = params["alpha"]
    return session_max(pool, a * _dense_above_floor(pool.cosine, params["floor"])
                       + (1 - a) * fusion_lab.tmm_lexical(pool.bm25))


def three_way(pool: Pool, params: dict) -> np.ndarray:
    """MiniLM's cosine (theoretical min-max), e5's (above floor 0.5) and BM25, weights a, b and
    1 - a - b: whether the two embedders' evidence adds up."""
    a, b = params["a"], params["b"]
    return session_max(pool, a * fusion_lab.tmm_dense(pool.cosine) + b * _dense_above_floor(pool.e5, 0.5)
                       + (1 - a - b) * fusion_lab.tmm_lexical(pool.bm25))


fusion_lab.FUSIONS["three-way"] = (
    three_way,
    [{"a": round(a, 2), "b": round(b, 2)} for a in np.arange(0, 1.0001, 0.05) for b in np.arange(0, 1.0001, 0.05)
     if a + b <= 1.0001],
)
fusion_lab.FUSIONS["convex-floor"] = (
    convex_floor,
    [{"alpha": round(a, 2), "floor": f} for f in FLOORS for a in np.arange(0, 1.0001, 0.05)],
)


def report(pools_dir: Path) -> dict:
    paths = sorted(str(p) for p in pools_dir.glob("*.jsonl.gz"))
    pools = fusion_lab.load(paths)
    return {"pools": [Path(p).name for p in paths], "targets": list(fusion_lab.TARGETS),
            "datasets": {d: len(p) for d, p in pools.items()},
            "fusions": {name: fusion_lab.cross_validate(pools, name) for name in COMPARED}}


def joined(minilm_dir: Path, e5_dir: Path) -> dict[str, list[Pool]]:
    """MiniLM's pools with each chunk's e5 cosine beside (``pool.e5``), matched on (session,
    first turn, words, BM25 score): the chunks are the same, listed in either order where those tie."""
    from diarist.bench.pools import read_pools

    out: dict[str, list[Pool]] = {}
    for path in sorted(minilm_dir.glob("*.jsonl.gz")):
        e5_rows = {row["id"]: row for row in read_pools(e5_dir / path.name)}
        for row in read_pools(path):
            cosines: dict[tuple, list] = {}
            for c in e5_rows[row["id"]]["chunks"]:
                cosines.setdefault((c[0], c[1], c[2], c[4]), []).append(c[3])
            pool = fusion_lab.to_pool(row)
            e5 = [cosines[(c[0], c[1], c[2], c[4])].pop(0) for c in row["chunks"]]
            pool.e5 = np.array([np.nan if v is None else v for v in e5], dtype=np.float64)
            out.setdefault(row["dataset"], []).append(pool)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--e5", default=str(RESULTS / "pools"), help="folder of e5's pools files")
    parser.add_argument("--minilm", default=str(RESULTS.parent / "fusion" / "pools"), help="folder of MiniLM's pools files")
    parser.add_argument("--out", default=str(RESULTS / "fusion"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sections = []
    for name, folder in (("minilm", args.minilm), ("e5-small", args.e5)):
        result = report(Path(folder))
        (out / f"fusion_cv_{name}.json").write_text(json.dumps(result, indent=1) + "\n")
        sections.append(f"### {name}\n\n" + fusion_lab.report_markdown(result))
        print(sections[-1], flush=True)
    pools = joined(Path(args.minilm), Path(args.e5))
    both = {"pools": "minilm + e5", "targets": list(fusion_lab.TARGETS),
            "datasets": {d: len(p) for d, p in pools.items()},
            "fusions": {"three-way": fusion_lab.cross_validate(pools, "three-way")}}
    (out / "fusion_cv_ensemble.json").write_text(json.dumps(both, indent=1) + "\n")
    sections.append("### MiniLM + e5 + BM25 (three-way convex)\n\n" + fusion_lab.report_markdown(both))
    print(sections[-1], flush=True)
    (out / "fusion_cv.md").write_text("\n".join(sections))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
