"""What the MaxSim second stage costs, both ways, against today's default, in one run (not a test).

    nice -n 10 python benchmarks/maxsim_cost.py [--size 100000] [--out benchmarks/results/maxsim/cost_100k.json]

1. Ingest: the default model over real LoCoMo chunk texts (what the lab's MaxSim reads: the
   chunk's text) as today (``embed``: pooled vectors), against the one pass that also keeps
   every token's vector, normalised and rounded to int8 (what storing them at ingest needs);
   tokens/s of each (medians of alternating passes), and the bytes per chunk the token vectors
   take as int8 (384 B a token) and as binary (one sign bit a dimension: 48 B a token).
2. Query p50 at ``--size`` chunks: benchmarks/perf.py's corpus (real LongMemEval text,
   structured vectors), the real model embedding each question, through ``Memory.search``
   (k = 32): today's default; the default + MaxSim with the candidates' token vectors computed
   at query time; and with them read from a ``TokenVectorCache`` filled beforehand (the stand-in
   for vectors stored at ingest). Passes alternate which variant goes first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import perf  # noqa: E402  (the corpus builder of the perf benchmark)

from diarist.memory import Memory  # noqa: E402
from diarist.rerank.maxsim import DEFAULT_DEPTH, MaxSimParams, MaxSimReranker, unit_int8  # noqa: E402


def pooled_and_tokens(embedder, texts: list[str]) -> tuple[np.ndarray, list[bytes]]:
    """One model pass per batch: the pooled vectors and each text's int8 token vectors as bytes."""
    vectors, blobs = [], []
    for b in range(0, len(texts), embedder.batch_size):
        encodings, ids, mask = embedder.encode_padded(texts[b : b + embedder.batch_size])
        hidden = embedder.hidden_states(ids, mask)
        vectors.append((hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True))
        for row, enc in enumerate(encodings):
            keep = [i for i, s in enumerate(enc.special_tokens_mask) if not s]
            blobs.append(unit_int8(hidden[row, keep]).tobytes())
    return np.concatenate(vectors), blobs


def bench_ingest(real, texts: list[str], repeats: int) -> dict:
    tokens = sum(real.count_tokens(t) + real.special_tokens for t in texts)
    times: dict[str, list[float]] = {"today (pooled vectors)": [], "pooled + int8 token vectors": []}
    blobs: list[bytes] = []
    for r in range(repeats):
        names = list(times) if r % 2 == 0 else list(times)[::-1]
        for name in names:
            t0 = time.perf_counter()
            if name.startswith("today"):
                real.embed(texts)
            else:
                _, blobs = pooled_and_tokens(real, texts)
            times[name].append(time.perf_counter() - t0)
        perf.log(f"  ingest pass {r + 1}: " + ", ".join(f"{n} {times[n][-1]:.1f} s" for n in times))
    content = [len(b) // real.dim for b in blobs]
    return {
        "texts": len(texts), "tokens": tokens,
        **{name: {"seconds": t, "tokens_per_s": round(tokens / statistics.median(t))} for name, t in times.items()},
        "token_vectors_per_chunk": {"mean_tokens": round(float(np.mean(content)), 1),
                                    "int8_bytes": round(float(np.mean(content)) * real.dim),
                                    "binary_bytes": round(float(np.mean(content)) * real.dim / 8)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="corpus size in chunks")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH, help="candidates MaxSim re-reads")
    parser.add_argument("--ingest-texts", type=int, default=300, help="chunk texts of the ingest pass (0: skip it)")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "diarist-perf"))
    parser.add_argument("--out", default="benchmarks/results/maxsim/cost_100k.json")
    args = parser.parse_args(argv)
    real, texts, queries, path, corpus = perf.latency_setup(args.size, args.workdir, args.queries)
    result: dict = {"command": " ".join(["python", *sys.argv]), "machine": perf.machine(), "depth": args.depth}
    if args.ingest_texts:
        perf.log("ingest")
        result["ingest"] = bench_ingest(real, texts[: args.ingest_texts], args.repeats)

    perf.log("query latency")
    result["corpus"] = corpus
    cache = Path(args.workdir) / f"maxsim-tokens-{args.size}.sqlite"
    memory = Memory(path, embedder=real)
    params = MaxSimParams(depth=args.depth)
    variants = {
        "today's default": memory,
        "default + MaxSim, computed at query time": memory.derive(reranker=MaxSimReranker(params, embedder=real)),
        "default + MaxSim, stored token vectors": memory.derive(
            reranker=MaxSimReranker(MaxSimParams(depth=args.depth, cache=str(cache)), embedder=real)),
    }
    names = list(variants)
    for q in queries:  # warm-up; fills the stored variant's token vectors for every candidate
        for name in names[::2]:  # (the query-time variant computes what the stored one fills: skipped)
            variants[name].search(q, app=perf.APP, k=32)
    lat: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(args.repeats):
        for i, q in enumerate(queries):
            for name in names if (i + r) % 2 == 0 else names[::-1]:
                t0 = time.perf_counter()
                variants[name].search(q, app=perf.APP, k=32)
                lat[name].append((time.perf_counter() - t0) * 1000)
        perf.log(f"  pass {r + 1}: " + ", ".join(f"{n} p50 {perf.pct(lat[n], 50):.0f} ms" for n in names))
    memory.close()
    result |= {"queries": len(queries), "repeats": args.repeats, "load_avg": os.getloadavg()}
    base = perf.pct(lat[names[0]], 50)
    for name in names:
        p50 = perf.pct(lat[name], 50)
        result[name] = {"p50_ms": round(p50, 1), "p95_ms": round(perf.pct(lat[name], 95), 1),
                        "ratio_p50": round(p50 / base, 2)}
    perf.write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
