"""onnxruntime idle-thread spinning on vs off for the MiniLM embedder: one query's latency
(p50/p95, what a search pays) and batch throughput (what ingest pays), interleaved in one run
so that both see the same machine load.

    PYTHONPATH=src python benchmarks/ort_spinning.py [--queries 300] [--batches 20]

Writes benchmarks/results/embed/ort_spinning.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from diarist.embed.onnx_minilm import MiniLMOnnxEmbedder

QUERY = "What did the user say about adopting a second cat last spring?"
PASSAGE = ("The user mentioned that they moved to Lisbon in March and started learning Portuguese, "
           "and that their sister visits every summer with her two children. ") * 2


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    embedders = {"spinning on": MiniLMOnnxEmbedder(spinning=True), "spinning off": MiniLMOnnxEmbedder(spinning=False)}
    latency: dict[str, list[float]] = {name: [] for name in embedders}
    batch_seconds: dict[str, list[float]] = {name: [] for name in embedders}
    for embedder in embedders.values():  # warm up
        embedder.embed_batch([QUERY])
        embedder.embed_batch([PASSAGE] * args.batch_size)
    for i in range(args.queries):
        for name, embedder in embedders.items():
            start = time.perf_counter()
            embedder.embed_batch([f"{QUERY} {i}"])
            latency[name].append((time.perf_counter() - start) * 1000)
            time.sleep(0.002)  # a gap between requests, as under a server: where idle threads spin
    for _ in range(args.batches):
        for name, embedder in embedders.items():
            start = time.perf_counter()
            embedder.embed_batch([PASSAGE] * args.batch_size)
            batch_seconds[name].append(time.perf_counter() - start)
    rows = {name: {
        "query_p50_ms": round(statistics.median(latency[name]), 2),
        "query_p95_ms": round(percentile(latency[name], 0.95), 2),
        "passages_per_s": round(args.batch_size * len(batch_seconds[name]) / sum(batch_seconds[name]), 1),
    } for name in embedders}
    for name, row in rows.items():
        print(f"{name:13s} query p50 {row['query_p50_ms']:6.2f} ms  p95 {row['query_p95_ms']:6.2f} ms  "
              f"ingest {row['passages_per_s']:7.1f} passages/s")
    out = Path(__file__).parent / "results" / "embed" / "ort_spinning.json"
    out.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
