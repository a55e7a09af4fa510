"""The fusion weight cross-validated again on mpnet's pools, beside MiniLM's, same functions.

Each model's pools are given per dataset; both models are scored on the questions both have
pools for (mpnet's LongMemEval pools cover every 5th haystack: the whole set is hours on 2 cores).
With LoCoMo's pools alone the lab's cross-dataset fit is absent.

    python benchmarks/mpnet_fusion.py --out benchmarks/results/embedders/fusion \
        --minilm benchmarks/results/fusion/pools/{locomo,longmemeval}.jsonl.gz \
        --mpnet benchmarks/results/embedders/mpnet/pools/{locomo,longmemeval-s5}.jsonl.gz
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from diarist.bench import fusion_lab

RESULTS = Path(__file__).resolve().parent / "results"
COMPARED = ("vectors-only", "bm25-only", "convex", "shipped-convex")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minilm", nargs="+", default=[str(RESULTS / "fusion" / "pools" / "locomo.jsonl.gz")])
    parser.add_argument("--mpnet", nargs="+", default=[str(RESULTS / "embedders" / "mpnet" / "pools" / "locomo.jsonl.gz")])
    parser.add_argument("--out", default=str(RESULTS / "embedders" / "fusion"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sections = []
    loaded = {name: fusion_lab.load(paths) for name, paths in (("minilm", args.minilm), ("mpnet", args.mpnet))}
    shared = {d: {p.qid for p in loaded["minilm"].get(d, [])} & {p.qid for p in loaded["mpnet"].get(d, [])}
              for d in set(loaded["minilm"]) | set(loaded["mpnet"])}
    for name, paths in (("minilm", args.minilm), ("mpnet", args.mpnet)):
        pools = {d: [p for p in ps if p.qid in shared[d]] for d, ps in loaded[name].items() if shared.get(d)}
        result = {"pools": [Path(path).name for path in paths], "targets": list(fusion_lab.TARGETS),
                  "datasets": {d: len(p) for d, p in pools.items()},
                  "fusions": {f: fusion_lab.cross_validate(pools, f) for f in COMPARED}}
        (out / f"fusion_cv_{name}.json").write_text(json.dumps(result, indent=1) + "\n")
        sections.append(f"### {name}\n\n" + fusion_lab.report_markdown(result))
        print(sections[-1], flush=True)
    (out / "fusion_cv.md").write_text("\n".join(sections))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
