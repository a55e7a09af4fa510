"""The fusion weight cross-validated again on mpnet's pools, beside MiniLM's, same functions.

With LoCoMo's pools alone (LongMemEval's mpnet pools were not written: hours on 2 cores), the
lab's cross-dataset fit is absent and the out-of-sample figure is its 5 folds by conversation.

    python benchmarks/mpnet_fusion.py --out benchmarks/results/embedders/fusion
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vestige.bench import fusion_lab

RESULTS = Path(__file__).resolve().parent / "results"
COMPARED = ("vectors-only", "bm25-only", "convex", "shipped-convex")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minilm", default=str(RESULTS / "fusion" / "pools" / "locomo.jsonl.gz"))
    parser.add_argument("--mpnet", default=str(RESULTS / "embedders" / "mpnet" / "pools" / "locomo.jsonl.gz"))
    parser.add_argument("--out", default=str(RESULTS / "embedders" / "fusion"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sections = []
    for name, path in (("minilm", args.minilm), ("mpnet", args.mpnet)):
        pools = fusion_lab.load([path])
        result = {"pools": [Path(path).name], "targets": list(fusion_lab.TARGETS),
                  "datasets": {d: len(p) for d, p in pools.items()},
                  "fusions": {f: fusion_lab.cross_validate(pools, f) for f in COMPARED}}
        (out / f"fusion_cv_{name}.json").write_text(json.dumps(result, indent=1) + "\n")
        sections.append(f"### {name}\n\n" + fusion_lab.report_markdown(result))
        print(sections[-1], flush=True)
    (out / "fusion_cv.md").write_text("\n".join(sections))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
