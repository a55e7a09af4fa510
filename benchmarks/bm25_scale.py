"""BM25 alone on a scale database: p50 per pass and the postings each question scores.

Run once per tree, each on a file that tree built (``benchmarks/scale.py --size N --build-only``),
to compare analyzers or scoring code side by side:

    PYTHONPATH=/tmp/old/src python benchmarks/bm25_scale.py /tmp/s1m-old/scale-1000000.sqlite --label old
    python benchmarks/bm25_scale.py /tmp/s1m/scale-1000000.sqlite --label new
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # noqa: E402

from diarist import lexical  # noqa: E402
from diarist.memory import Memory  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", type=Path)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--label", default="")
    args = parser.parse_args(argv)
    with gzip.open(scale.LONGMEMEVAL) as f:
        records = json.load(f)
    texts, vectors = scale.queries(records, args.queries, args.database)
    memory = Memory(args.database, embedder=scale.LookupEmbedder(dict(zip(texts, vectors))), reranker=None,
                    floor=None, dense="exact")
    terms = [lexical.analyze(t) for t in texts]
    channel = memory.lexical
    channel.search(scale.APP, terms[0], scale.DEPTH)  # lengths loaded
    postings = []
    for question in terms:
        read = memory.store.read_postings(scale.APP, sorted(set(question)))
        postings.append(sum(len(data) // 4 for rows in read.blocks.values() for _, data in rows))
    passes = []
    for _ in range(args.passes):
        latencies = []
        for question in terms:
            start = time.perf_counter()
            channel.search(scale.APP, question, scale.DEPTH)
            latencies.append(time.perf_counter() - start)
        passes.append(float(np.percentile(latencies, 50)) * 1000)
    print(json.dumps({"label": args.label, "lexical_version": lexical.VERSION, "p50_ms_per_pass": passes,
                      "p50_ms": statistics.median(passes), "postings_median": float(np.median(postings)),
                      "postings_mean": float(np.mean(postings))}))
    memory.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
