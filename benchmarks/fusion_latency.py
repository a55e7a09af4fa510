"""Query latency of the convex fusion against RRF, side by side on one store (not a test).

    python benchmarks/fusion_latency.py [--size 100000] [--out benchmarks/results/fusion/latency_100k.json]

The corpus is benchmarks/perf.py's (real LongMemEval text, structured synthetic vectors, written
through the store contract; reused from --workdir when present). Queries are real LongMemEval
and LoCoMo questions embedded once by the real model. Each pass asks every query of both
fusions, alternating which goes first, through ``Memory.search`` (k = 32): the shipped default
(second stage on) and the fused order alone. Reported: p50/p95 per fusion (medians over the
passes) and the ratio convex / RRF measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
import perf  # noqa: E402  (the corpus builder and query embedder of the perf benchmark)

from diarist.memory import Memory  # noqa: E402


def passes(memory: Memory, variants: dict[str, Memory], queries: list[str], repeats: int) -> dict[str, list[list[float]]]:
    out: dict[str, list[list[float]]] = {name: [] for name in variants}
    names = list(variants)
    for r in range(repeats):
        lat: dict[str, list[float]] = {name: [] for name in names}
        for i, q in enumerate(queries):
            order = names if (i + r) % 2 == 0 else names[::-1]
            for name in order:
                t0 = time.perf_counter()
                variants[name].search(q, app=perf.APP, k=32)
                lat[name].append((time.perf_counter() - t0) * 1000)
        for name in names:
            out[name].append(lat[name])
        perf.log(f"  pass {r + 1}: " + ", ".join(f"{n} p50 {perf.pct(lat[n], 50):.1f} ms" for n in names))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="corpus size in chunks")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "diarist-perf"))
    parser.add_argument("--out", default="benchmarks/results/fusion/latency_100k.json")
    args = parser.parse_args(argv)
    real, _, queries, path, corpus = perf.latency_setup(args.size, args.workdir, args.queries)
    _, qvecs = perf.bench_query_embedding(real, queries)
    fake = perf.PrecomputedEmbedder(real, qvecs)
    memory = Memory(path, embedder=fake)
    variants = {
        "convex": memory, "rrf": memory.derive(fusion="rrf"),
        "convex, no second stage": memory.derive(reranker=None), "rrf, no second stage": memory.derive(fusion="rrf", reranker=None),
    }
    for q in queries[:5]:  # warm-up: the dense matrix and the length cache
        for v in variants.values():
            v.search(q, app=perf.APP, k=32)
    lat = passes(memory, variants, queries, args.repeats)
    memory.close()
    result: dict = {"command": " ".join(["python", *sys.argv]), "machine": perf.machine(), "corpus": corpus,
                    "queries": len(queries), "repeats": args.repeats, "load_avg": os.getloadavg()}
    for name, runs in lat.items():
        result[name] = {"p50_ms": statistics.median(perf.pct(p, 50) for p in runs),
                        "p95_ms": statistics.median(perf.pct(p, 95) for p in runs)}
    for stage in ("", ", no second stage"):
        c, r = result[f"convex{stage}"], result[f"rrf{stage}"]
        result[f"ratio convex / rrf{stage}"] = {"p50": round(c["p50_ms"] / r["p50_ms"], 3),
                                                 "p95": round(c["p95_ms"] / r["p95_ms"], 3)}
    perf.write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
