"""Engine performance benchmark: embedder, ingest, search latency, cold start.

    python benchmarks/perf.py [--sizes 10000 100000] [--out benchmarks/results/scale/NAME/perf_ingest.json]

What it measures, on this machine, with the default embedder (all-MiniLM-L6-v2 int8 ONNX):

1. Embedder throughput (tokens/s, chunks/s) on real LoCoMo text, at the lengths the chunker
   produces (packed chunks near the 254-token window) and at single-turn length.
2. Ingest through ``Memory.add_sessions`` on the LoCoMo conversations, side by side in one run:
   the embedding alone (``embedder.embed`` on exactly the texts ingest embeds), then the same
   ingest with the model replaced by a lookup of those precomputed vectors (chunking still uses
   the real tokenizer), then the same ingest through a filled ``EmbeddingCache``, then one full
   ingest with the real model. Overhead share = ingest-without-model / (that + embedding).
3. Search latency p50/p95 at each size (10k and 100k chunks by default) through
   ``Memory.search``: dense + BM25 + fusion + fetching the hits. The corpus is real LongMemEval_S
   text (distinct haystack sessions, packed into ~window-sized chunks by characters) written
   through ``store.put_items``; its vectors are synthetic but structured: a Gaussian mixture
   around real MiniLM embeddings of LoCoMo chunks, normalised, int8. Queries are real
   LongMemEval and LoCoMo questions, embedded once by the real model; that embedding cost is
   reported on its own, and search latency excludes it.
4. Cold start in a fresh process: import, open (model load included), first and second query.

Timings are wall clock (time.perf_counter). Databases are written under --workdir (/tmp).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from diarist import lexical
from diarist.write.chunk import chunk_session
from diarist.embed import get_embedder
from diarist.embed.base import Embedder, normalise, quantize
from diarist.embed.cache import EmbeddingCache
from diarist.read.fusion import convex
from diarist.importers.locomo import locomo_sessions
from diarist.memory import Memory
from diarist.store.base import IndexedChunk, Item
from diarist.store.sqlite import SQLiteStore
from diarist.types import Chunk, Message

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LOCOMO = DATA / "locomo_dev.json.gz"
LONGMEMEVAL = DATA / "longmemeval_s_dev.json.gz"
APP = "bench"
CORPUS_VERSION = "perf-corpus-1"  # bump when the synthetic corpus recipe changes
CHUNK_CHARS = 1100  # ~254 MiniLM tokens at the ~4.5 chars/token measured on LongMemEval


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def load1() -> float:
    return os.getloadavg()[0]


def machine() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from importlib.metadata import version as package_version  # importing onnxruntime starts its telemetry
    import tokenizers

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "onnxruntime": package_version("onnxruntime"),
        "tokenizers": tokenizers.__version__,
        "sqlite": __import__("sqlite3").sqlite_version,
        "platform": platform.platform(),
        "commit": commit,
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
    }


class PrecomputedEmbedder(Embedder):
    """The real embedder's tokenizer, with the model replaced by a lookup of known vectors.

    Chunking (which counts tokens with the real tokenizer) costs what it always costs; only the
    model's forward passes are gone. Same model_id, so it opens databases the real one built.
    """

    def __init__(self, real: Embedder, vectors: dict[str, np.ndarray]):
        self.real = real
        self.vectors = vectors
        self.model_id = real.model_id
        self.dim = real.dim
        self.max_tokens = real.max_tokens
        self.special_tokens = real.special_tokens
        self.batch_size = real.batch_size

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return self.real.token_spans(text)

    def count_tokens(self, text: str) -> int:
        return self.real.count_tokens(text)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:  # pragma: no cover - unused
        return np.stack([self.vectors[t] for t in texts])

    def embed(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self.vectors[t] for t in texts])


# -- data -----------------------------------------------------------------------------------


def locomo_records() -> list[dict]:
    with gzip.open(LOCOMO) as f:
        return json.load(f)


def longmemeval_records() -> list[dict]:
    with gzip.open(LONGMEMEVAL) as f:
        return json.load(f)


def to_messages(raw: list[dict]) -> list[Message]:
    return [Message(m["role"], m["content"]) for m in raw if m["content"].strip()]


# -- 1. embedder ------------------------------------------------------------------------------


def bench_embedder(embedder: Embedder, chunk_texts: list[str], turn_texts: list[str], repeats: int) -> dict:
    out = {}
    for name, texts in (("chunk", chunk_texts), ("turn", turn_texts)):
        tokens = sum(embedder.count_tokens(t) + embedder.special_tokens for t in texts)
        embedder.embed(texts[:8])  # warm-up
        times = []
        for r in range(repeats):
            start = time.perf_counter()
            embedder.embed(texts)
            times.append(time.perf_counter() - start)
            log(f"  embed {name}: {len(texts)} texts, {tokens} tokens, {times[-1]:.2f}s (load {load1():.1f})")
        t = statistics.median(times)
        out[name] = {
            "texts": len(texts),
            "tokens": tokens,
            "mean_tokens": tokens / len(texts),
            "seconds": times,
            "tokens_per_s": tokens / t,
            "texts_per_s": len(texts) / t,
        }
    return out


# -- 2. ingest --------------------------------------------------------------------------------


def bench_ingest(real: Embedder, sessions, workdir: Path, repeats: int, full: bool) -> tuple[dict, list[str], np.ndarray]:
    probe = Memory(":memory:", embedder=real)
    chunks = [c for s in sessions for c in probe.chunk(to_messages_input(s.messages))]
    texts = [c.dense_text for c in chunks if c.dense]  # what ingest embeds (view split: user words)
    n_messages = sum(len(s.messages) for s in sessions)
    tokens = sum(real.count_tokens(t) for t in texts)
    log(f"  ingest corpus: {len(sessions)} sessions, {n_messages} messages, {len(chunks)} chunks, {tokens} tokens")

    start = time.perf_counter()
    vectors = real.embed(texts)
    t_embed = time.perf_counter() - start
    log(f"  embedding alone: {t_embed:.2f}s")
    lookup = dict(zip(texts, vectors))
    fake = PrecomputedEmbedder(real, lookup)

    def ingest(embedder: Embedder, cache: EmbeddingCache | None = None) -> float:
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            memory = Memory(Path(tmp) / "ingest.sqlite", embedder=embedder, embed_cache=cache)
            start = time.perf_counter()
            report = memory.add_sessions(sessions, app=APP)
            elapsed = time.perf_counter() - start
            assert len(report.added) == len(sessions) and report.chunks == len(chunks)
            start = time.perf_counter()
            again = memory.add_sessions(sessions, app=APP)
            ingest.reingest = time.perf_counter() - start
            assert len(again.unchanged) == len(sessions)
            memory.store.close()
        return elapsed

    t_rest, t_reingest = [], []
    for _ in range(repeats):
        t_rest.append(ingest(fake))
        t_reingest.append(ingest.reingest)
        log(f"  ingest with precomputed vectors: {t_rest[-1]:.2f}s (load {load1():.1f})")

    cache_path = workdir / "ingest-cache.sqlite"
    cache_path.unlink(missing_ok=True)
    cache = EmbeddingCache(cache_path)
    cache.embed_int8(fake, texts)  # fill it with the real vectors
    t_cache = []
    for _ in range(repeats):
        t_cache.append(ingest(real, cache))
        log(f"  ingest through a filled EmbeddingCache: {t_cache[-1]:.2f}s")
    cache.close()
    cache_path.unlink(missing_ok=True)

    t_full = None
    if full:
        t_full = ingest(real)
        log(f"  full ingest with the real model: {t_full:.2f}s")

    rest = statistics.median(t_rest)
    result = {
        "sessions": len(sessions),
        "messages": n_messages,
        "chunks": len(chunks),
        "dense_chunks": len(texts),
        "dense_tokens": tokens,
        "embed_seconds": t_embed,
        "ingest_without_model_seconds": t_rest,
        "ingest_via_filled_cache_seconds": t_cache,
        "reingest_unchanged_seconds": t_reingest,
        "full_ingest_seconds": t_full,
        "overhead_share": rest / (rest + t_embed),
        "overhead_share_via_cache": statistics.median(t_cache) / (statistics.median(t_cache) + t_embed),
        "sessions_per_s_with_embedding": len(sessions) / (rest + t_embed),
        "chunks_per_s_with_embedding": len(chunks) / (rest + t_embed),
        "sessions_per_s_without_embedding": len(sessions) / rest,
        "chunks_per_s_without_embedding": len(chunks) / rest,
    }
    if t_full:
        result["overhead_share_full_minus_embed"] = max(t_full - t_embed, 0.0) / t_full
    return result, texts, vectors


def to_messages_input(raw) -> list[Message]:
    return [Message(m["role"], m["content"]) for m in raw]


# -- 3. search --------------------------------------------------------------------------------


def pack_session(raw: list[dict]) -> list[Chunk]:
    """Turns packed into chunks of at most CHUNK_CHARS characters (long turns cut at spaces)."""
    pieces: list[tuple[str, int, str]] = []
    for turn, m in enumerate(raw):
        text = m["content"].strip()
        while len(text) > CHUNK_CHARS:
            cut = text.rfind(" ", 0, CHUNK_CHARS)
            cut = cut if cut > CHUNK_CHARS // 2 else CHUNK_CHARS
            pieces.append((text[:cut], turn, m["role"]))
            text = text[cut:].strip()
        if text:
            pieces.append((text, turn, m["role"]))
    chunks: list[Chunk] = []
    group: list[tuple[str, int, str]] = []
    size = 0

    def flush() -> None:
        if group:
            text = "\n".join(p[0] for p in group)
            chunks.append(
                Chunk(
                    text=text,
                    position=len(chunks),
                    roles=tuple(dict.fromkeys(p[2] for p in group)),
                    first_turn=group[0][1],
                    last_turn=group[-1][1],
                    view="all",
                    n_tokens=round(len(text) / 4.5),
                )
            )

    for piece in pieces:
        if group and size + len(piece[0]) + 1 > CHUNK_CHARS:
            flush()
            group, size = [], 0
        group.append(piece)
        size += len(piece[0]) + 1
    flush()
    return chunks


def write_result(out: str | Path, result: dict) -> None:
    """Write a benchmark's result as JSON, then print it without the machine and corpus blocks."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("machine", "corpus")}, indent=1))


def latency_setup(size: int, workdir: str | Path, n_queries: int) -> tuple[Embedder, list[str], list[str], Path, dict]:
    """What the latency benchmarks share: the real model, real LoCoMo chunk texts, the clustered
    corpus of ``size`` chunks in ``workdir`` (built once), and ``n_queries`` real questions of
    both sets in a fixed shuffle: (model, chunk texts, queries, corpus path, corpus info)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    real = get_embedder("minilm")
    locomo = locomo_records()
    sessions = [s for r in locomo[:3] for s in locomo_sessions(r)]
    probe = Memory(":memory:", embedder=real)
    texts = [c.text for s in sessions for c in probe.chunk(to_messages_input(s.messages))]
    vectors = real.embed(texts[:512])
    rng = np.random.default_rng(0)
    centroids = vectors[rng.permutation(len(vectors))[:256]].astype(np.float32)
    lme = longmemeval_records()
    questions = [r["question"] for r in lme] + [q["question"] for r in locomo for q in r["qa"] if "question" in q]
    queries = list(dict.fromkeys(questions[i] for i in rng.permutation(len(questions))))[:n_queries]
    path = workdir / f"search-{size}.sqlite"
    return real, texts, queries, path, build_corpus(path, size, lme, centroids, real.model_id, real.dim)


def build_corpus(path: Path, n_chunks: int, lme: list[dict], centroids: np.ndarray, model_id: str, dim: int) -> dict:
    """A database of about n_chunks chunks of real LongMemEval text with clustered vectors."""
    tag = f"{CORPUS_VERSION}:{n_chunks}:{model_id}"
    if path.exists():
        store = SQLiteStore(path)
        ok = store.get_meta("perf_corpus") == tag
        info = json.loads(store.get_meta("perf_info") or "{}")
        store.close()
        if ok:
            log(f"  reusing {path}")
            return info
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    rng = np.random.default_rng(n_chunks)
    seen: set[str] = set()
    sessions = []
    for record in lme:
        for sid, date, turns in zip(record["haystack_session_ids"], record["haystack_dates"], record["haystack_sessions"]):
            if sid not in seen:
                seen.add(sid)
                sessions.append((sid, date, [t for t in turns if t["content"].strip()]))
    store = SQLiteStore(path)
    store.claim_meta({"embedder": model_id, "dim": str(dim)})
    total, batch, n_sessions, copy = 0, [], 0, 0
    # Noise scale: cosine to the cluster centre ~0.6 (sigma per coordinate ~ 1.33 / sqrt(dim)).
    sigma = 1.33 / np.sqrt(dim)
    start = time.perf_counter()
    write_s = 0.0
    while total < n_chunks:
        for sid, date, turns in sessions:
            if total >= n_chunks:
                break
            chunks = pack_session(turns)
            if not chunks:
                continue
            labels = rng.integers(0, len(centroids), len(chunks))
            vecs = centroids[labels] + rng.normal(0.0, sigma, (len(chunks), dim)).astype(np.float32)
            vecs = quantize(normalise(vecs))
            indexed = [IndexedChunk(c, v, lexical.analyze(c.text)) for c, v in zip(chunks, vecs)]
            ext = sid if copy == 0 else f"{sid}#{copy}"
            record = Item(
                "session", ext, date, hashlib.sha256(ext.encode()).hexdigest(), {},
                tuple(Message(t["role"], t["content"]) for t in turns),
            )
            batch.append((record, indexed))
            total += len(chunks)
            n_sessions += 1
            if len(batch) >= 200:
                t0 = time.perf_counter()
                store.put_items(APP, batch)
                write_s += time.perf_counter() - t0
                batch = []
                log(f"    {total} chunks")
        copy += 1  # only if the data runs out: sessions again under new ids
    if batch:
        t0 = time.perf_counter()
        store.put_items(APP, batch)
        write_s += time.perf_counter() - t0
    info = {
        "chunks": total,
        "sessions": n_sessions,
        "build_seconds": time.perf_counter() - start,
        "store_write_seconds": write_s,
        "store_chunks_per_s": total / write_s,
    }
    store.claim_meta({"perf_corpus": tag, "perf_info": json.dumps(info)})  # a new file: first writer
    store.close()
    info["file_bytes"] = path.stat().st_size
    log(f"  built {path}: {info}")
    return info


def bench_search(path: Path, fake: Embedder, queries: list[str], repeats: int) -> dict:
    memory = Memory(path, embedder=fake)
    store = memory.store
    for q in queries[:5]:  # warm-up: loads the dense matrix and the length cache
        memory.search(q, app=APP, k=32)
    passes = []
    for _ in range(repeats):
        lat = []
        for q in queries:
            t0 = time.perf_counter()
            hits = memory.search(q, app=APP, k=32)
            lat.append((time.perf_counter() - t0) * 1000)
            assert len(hits) == 32, len(hits)
        passes.append(lat)
        log(f"  search pass: p50 {pct(lat, 50):.1f} ms, p95 {pct(lat, 95):.1f} ms (load {load1():.1f})")
    # Stage breakdown (same queries, one pass): each store call on its own.
    depth = memory.settings.depth
    stages = {"dense": [], "lexical": [], "fusion": [], "fetch": []}
    for q in queries:
        qv = fake.embed([q])
        t0 = time.perf_counter()
        dense = memory.dense.search(APP, qv, depth)
        t1 = time.perf_counter()
        lex = memory.lexical.search(APP, lexical.analyze(q), depth, memory.settings.k1, memory.settings.b)
        t2 = time.perf_counter()
        fused = convex(dense, lex, memory.settings.dense_weight, depth)[:32]  # the shipped fusion
        t3 = time.perf_counter()
        store.fetch_chunks(APP, [c for c, _, _ in fused])
        t4 = time.perf_counter()
        for key, a, b in (("dense", t0, t1), ("lexical", t1, t2), ("fusion", t2, t3), ("fetch", t3, t4)):
            stages[key].append((b - a) * 1000)
    memory.store.close()
    p50s = [pct(p, 50) for p in passes]
    p95s = [pct(p, 95) for p in passes]
    return {
        "queries": len(queries),
        "repeats": repeats,
        "p50_ms": statistics.median(p50s),
        "p95_ms": statistics.median(p95s),
        "p50_ms_per_pass": p50s,
        "p95_ms_per_pass": p95s,
        "stages_p50_ms": {k: pct(v, 50) for k, v in stages.items()},
        "stages_p95_ms": {k: pct(v, 95) for k, v in stages.items()},
    }


def bench_query_embedding(real: Embedder, queries: list[str]) -> tuple[dict, dict[str, np.ndarray]]:
    real.embed(queries[:3])
    lat, vectors = [], {}
    for q in queries:
        t0 = time.perf_counter()
        vectors[q] = real.embed([q])[0]
        lat.append((time.perf_counter() - t0) * 1000)
    return {"queries": len(queries), "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95)}, vectors


# -- 4. cold start ----------------------------------------------------------------------------

COLD = r"""
import json, sys, time
t0 = time.perf_counter()
from diarist import Memory
t1 = time.perf_counter()
memory = Memory(sys.argv[1])
t2 = time.perf_counter()
hits = memory.search(sys.argv[2], app=sys.argv[3], k=32)
t3 = time.perf_counter()
memory.search(sys.argv[4], app=sys.argv[3], k=32)
t4 = time.perf_counter()
assert hits
print(json.dumps({"import": t1 - t0, "open": t2 - t1, "first_query": t3 - t2, "second_query": t4 - t3}))
"""


def bench_cold(path: Path, queries: list[str], repeats: int) -> dict:
    runs = []
    for r in range(repeats):
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", COLD, str(path), queries[r % len(queries)], APP, queries[-1 - r % len(queries)]],
            capture_output=True, text=True, check=True,
        )
        wall = time.perf_counter() - t0
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["process_wall"] = wall
        row["open_plus_first_query"] = row["open"] + row["first_query"]
        runs.append(row)
        log(f"  cold start: {row}")
    return {"runs": runs, **{f"{k}_s": statistics.median(r[k] for r in runs) for k in runs[0]}}


# -- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="corpus sizes in chunks")
    parser.add_argument("--out", default="perf_results.json", help="where to write the JSON results (a lab result: benchmarks/results/<topic>/<name>/, with a manifest)")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "diarist-perf"), help="databases go here")
    parser.add_argument("--repeats", type=int, default=3, help="repeats per measurement (medians are reported)")
    parser.add_argument("--queries", type=int, default=200, help="search queries per pass")
    parser.add_argument("--conversations", type=int, default=3, help="LoCoMo conversations to ingest")
    parser.add_argument("--no-full-ingest", action="store_true", help="skip the one full ingest with the real model")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)

    results: dict = {"machine": machine(), "load_avg_start": os.getloadavg(), "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])}
    started = time.perf_counter()

    t0 = time.perf_counter()
    real = get_embedder("minilm")
    results["model_load_s"] = time.perf_counter() - t0
    log(f"model loaded in {results['model_load_s']:.2f}s")

    locomo = locomo_records()
    sessions = [s for r in locomo[: args.conversations] for s in locomo_sessions(r)]
    probe = Memory(":memory:", embedder=real)
    chunk_texts = [c.text for s in sessions[:40] for c in probe.chunk(to_messages_input(s.messages))][:64]
    turn_texts = [m["content"] for s in sessions[:40] for m in s.messages][:256]

    log("1. embedder throughput")
    results["embedder"] = bench_embedder(real, chunk_texts, turn_texts, args.repeats)

    log("2. ingest")
    results["ingest"], _, vectors = bench_ingest(real, sessions, workdir, args.repeats, not args.no_full_ingest)

    log("3. search")
    rng = np.random.default_rng(0)
    centroids = vectors[rng.permutation(len(vectors))[:256]].astype(np.float32)
    lme = longmemeval_records()
    questions = [r["question"] for r in lme] + [q["question"] for r in locomo for q in r["qa"] if "question" in q]
    order = rng.permutation(len(questions))
    queries = list(dict.fromkeys(questions[i] for i in order))[: args.queries]
    results["query_embedding"], qvecs = bench_query_embedding(real, queries)
    log(f"  query embedding: {results['query_embedding']}")
    fake = PrecomputedEmbedder(real, qvecs)
    results["search"] = {}
    results["cold_start"] = {}
    for n in args.sizes:
        path = workdir / f"search-{n}.sqlite"
        log(f" size {n}")
        corpus = build_corpus(path, n, lme, centroids, real.model_id, real.dim)
        results["search"][str(n)] = {"corpus": corpus, **bench_search(path, fake, queries, args.repeats)}
        log("4. cold start")
        results["cold_start"][str(n)] = bench_cold(path, queries, args.repeats)

    results["load_avg_end"] = os.getloadavg()
    results["total_seconds"] = time.perf_counter() - started
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(summary(results))
    return 0


def summary(r: dict) -> str:
    e, i = r["embedder"], r["ingest"]
    lines = [
        "| measure | value |",
        "|---|---|",
        f"| model load | {r['model_load_s'] * 1000:.0f} ms |",
        f"| embed, packed chunks (mean {e['chunk']['mean_tokens']:.0f} tokens) | {e['chunk']['tokens_per_s']:,.0f} tokens/s, {e['chunk']['texts_per_s']:.1f} chunks/s |",
        f"| embed, single turns (mean {e['turn']['mean_tokens']:.0f} tokens) | {e['turn']['tokens_per_s']:,.0f} tokens/s, {e['turn']['texts_per_s']:.1f} turns/s |",
        f"| ingest corpus | {i['sessions']} LoCoMo sessions, {i['messages']} messages, {i['chunks']} chunks, {i['dense_tokens']:,} tokens |",
        f"| embedding alone | {i['embed_seconds']:.2f} s |",
        f"| ingest without the model (median) | {statistics.median(i['ingest_without_model_seconds']):.3f} s |",
        f"| ingest through a filled cache (median) | {statistics.median(i['ingest_via_filled_cache_seconds']):.3f} s |",
        f"| re-ingest, unchanged (median) | {statistics.median(i['reingest_unchanged_seconds']) * 1000:.0f} ms |",
    ]
    if i.get("full_ingest_seconds"):
        lines.append(f"| full ingest, real model | {i['full_ingest_seconds']:.2f} s |")
    lines += [
        f"| ingest with embedding | {i['sessions_per_s_with_embedding']:.1f} sessions/s, {i['chunks_per_s_with_embedding']:.1f} chunks/s |",
        f"| ingest without embedding | {i['sessions_per_s_without_embedding']:.0f} sessions/s, {i['chunks_per_s_without_embedding']:.0f} chunks/s |",
        f"| share of ingest outside embedding (target < 10%) | {i['overhead_share'] * 100:.1f}% (via cache: {i['overhead_share_via_cache'] * 100:.1f}%) |",
        f"| query embedding p50 / p95 | {r['query_embedding']['p50_ms']:.1f} / {r['query_embedding']['p95_ms']:.1f} ms |",
    ]
    for n, s in r["search"].items():
        st = s["stages_p50_ms"]
        lines.append(
            f"| search {int(n):,} chunks p50 / p95 (target p50 < 30 ms) | {s['p50_ms']:.1f} / {s['p95_ms']:.1f} ms "
            f"(dense {st['dense']:.1f}, BM25 {st['lexical']:.1f}, fusion {st['fusion']:.1f}, fetch {st['fetch']:.1f}) |"
        )
    for n, c in r["cold_start"].items():
        lines.append(
            f"| cold start {int(n):,} chunks: open + first query (target < 1 s) | {c['open_plus_first_query_s'] * 1000:.0f} ms "
            f"(open {c['open_s'] * 1000:.0f}, first query {c['first_query_s'] * 1000:.0f}; import {c['import_s'] * 1000:.0f}, "
            f"process {c['process_wall_s'] * 1000:.0f}) |"
        )
    lines.append(f"\nload average at start {r['load_avg_start'][0]:.1f}, at end {r['load_avg_end'][0]:.1f}; {r['machine']['cores']} cores")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
