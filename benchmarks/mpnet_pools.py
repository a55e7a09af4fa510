"""The fusion lab's candidate pools (``diarist bench pools``) with mpnet's vectors, and the fusion
weight cross-validated on them beside MiniLM's committed pools.

``diarist bench pools`` builds its runner for the shipped embedder; this writes the same rows
with ``--embedder`` instead (its own chunking: mpnet's tokenizer and 384-token window), from an
embedding cache of its own (the cache key holds the model id; a separate file only keeps the
shared cache's writers out of each other's way). Needs ``diarist models install mpnet``.

    python benchmarks/mpnet_pools.py --dataset locomo --out benchmarks/results/embedders/mpnet/pools/locomo.jsonl.gz
    diarist bench fusion --no-learned --out benchmarks/results/embedders/mpnet/fusion \\
        benchmarks/results/embedders/mpnet/pools/*.jsonl.gz
"""

from __future__ import annotations

import argparse
from pathlib import Path

from diarist.bench import pools, runner

DATA = {"locomo": Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_dev.json.gz",
        "longmemeval": Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval_s_dev.json.gz"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=sorted(DATA), default="locomo")
    parser.add_argument("--embedder", default="mpnet")
    parser.add_argument("--cache", default="/work/cache/mpnet.sqlite")
    parser.add_argument("--stride", type=int, default=None, help="every Nth haystack (as `diarist bench --stride`)")
    parser.add_argument("--out", required=True, help="pools file to write (.jsonl.gz)")
    args = parser.parse_args(argv)
    # The pools' runner is built for the shipped embedder: this spec instead.
    pools.Runner = lambda config, _spec, *rest: runner.Runner(config, args.embedder, *rest)
    n = pools.write_pools(args.dataset, DATA[args.dataset], args.out, stride=args.stride, cache_path=args.cache)
    print(f"wrote {n} rows to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
