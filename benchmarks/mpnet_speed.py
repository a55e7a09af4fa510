"""What mpnet costs against MiniLM, in one run: ingest tokens/s and the query's own p50 at 100k chunks.

Ingest: the same LoCoMo turns embedded by each model (no cache), tokens counted by each model's
tokenizer. Query: a question embedded alone, then the exact dense scan of 100k int8 vectors of
the model's dimension (random unit vectors: the scan's cost does not depend on their values).
The lexical channel and the rest of search are the same for both models and left out.

    python benchmarks/mpnet_speed.py --out benchmarks/results/embedders/speed.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np

from diarist.embed import get_embedder, quantize
from diarist.embed.base import dequantize, normalise

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_dev.json.gz"


def turns(n: int) -> list[str]:
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        conversation = json.load(f)[0]["conversation"]
    out = [t["text"] for key, value in conversation.items() if key.startswith("session_") and isinstance(value, list)
           for t in value]
    return out[:n]


def measure(spec: str, texts: list[str], questions: list[str], chunks: int) -> dict:
    embedder = get_embedder(spec)
    embedder.embed(texts[:8])  # warm the session
    tokens = sum(embedder.count_tokens(t) for t in texts)
    start = time.perf_counter()
    embedder.embed(texts)
    ingest_s = time.perf_counter() - start
    rng = np.random.default_rng(0)
    matrix = dequantize(quantize(normalise(rng.standard_normal((chunks, embedder.dim)).astype(np.float32))))
    times = []
    for q in questions:
        start = time.perf_counter()
        vector = embedder.embed([q])[0]
        scores = matrix @ vector
        np.argpartition(-scores, 200)[:200]
        times.append(time.perf_counter() - start)
    return {"model": embedder.model_id, "dim": embedder.dim, "texts": len(texts), "tokens": tokens,
            "ingest_tokens_per_s": round(tokens / ingest_s, 1),
            "query_p50_ms": round(1000 * float(np.median(times)), 2), "chunks": chunks}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "embedders" / "speed.json"))
    args = parser.parse_args(argv)
    texts = turns(args.texts)
    questions = ["When did Caroline go to the LGBTQ support group?", "What did Melanie paint last year?",
                 "Where did Caroline move from?", "What is Melanie's hobby?"] * 5
    result = [measure(spec, texts, questions, args.chunks) for spec in ("minilm", "mpnet")]
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(Path(args.out).read_text(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
