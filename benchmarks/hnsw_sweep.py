"""The HNSW index's search settings at one size: candidates asked of the graph (``--oversamples``
times the depth, 1x and 2x by default) x ``expansion_search``, p50 latency of the dense search and recall@200 against the exact
scan, on a database built by ``benchmarks/scale.py`` (the same queries as that script).

    python benchmarks/scale.py --size 100000 --build-only          # once
    python benchmarks/hnsw_sweep.py --size 100000 --out benchmarks/results/hnsw/NAME/hnsw_sweep_100k.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import scale  # noqa: E402

from diarist.store.sqlite import SQLiteStore  # noqa: E402
from diarist.vectors import ExactDenseIndex  # noqa: E402
from diarist.vectors.hnsw import HnswDenseIndex  # noqa: E402

DEPTH = 200


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--workdir", default="/tmp/diarist-scale")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--expansions", default="512,1024,1536,2048")
    parser.add_argument("--oversamples", default="1,2", help="candidates asked per depth, re-ranked exactly")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    path = Path(args.workdir) / f"scale-{args.size}.sqlite"
    with gzip.open(scale.LONGMEMEVAL) as f:
        _, vectors = scale.queries(json.load(f), args.queries, path)
    store = SQLiteStore(path)
    exact = ExactDenseIndex(store)
    want = [{c for c, _ in exact.search(scale.APP, v[None], DEPTH)} for v in vectors]
    exact.forget(scale.APP)
    ann = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=0)
    ann.search(scale.APP, vectors[0][None], DEPTH)  # loads (or builds) the graph
    rows = []
    for oversample in (int(x) for x in args.oversamples.split(",")):
        for expansion in (int(x) for x in args.expansions.split(",")):
            ann.oversample = oversample
            ann.set_expansion_search(expansion)
            latency, recall = [], []
            for v, truth in zip(vectors, want):
                t0 = time.perf_counter()
                got = {c for c, _ in ann.search(scale.APP, v[None], DEPTH)}
                latency.append((time.perf_counter() - t0) * 1000)
                recall.append(len(got & truth) / DEPTH)
            row = {"oversample": oversample, "expansion_search": expansion, "p50_ms": float(np.median(latency)),
                   "recall_at_200_mean": float(np.mean(recall)), "recall_at_200_min": float(np.min(recall))}
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {"size": args.size, "queries": len(vectors), "depth": DEPTH, "load1": os.getloadavg()[0], "rows": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
