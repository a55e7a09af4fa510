"""Scale benchmark: one app of 100k or 1M chunks, every figure side by side in one run.

    python benchmarks/scale.py --size 100000 [--repeats 5] [--out benchmarks/results/scale/NAME/scale_100k.json]

The corpus is real LongMemEval_S text (haystack sessions packed into ~1,100-character chunks,
sessions repeated under new ids when the data runs out) with synthetic clustered vectors (a
Gaussian mixture around 2,000 real MiniLM vectors of lab texts from benchmarks/.cache, as in
perf.py; random centres without the cache; normalised, int8): dense search costs depend on the
matrix shape, not on what the vectors mean. Queries are real LongMemEval questions (their BM25
terms), each paired with a synthetic query vector near one centre. What it reports, with
medians over ``--repeats`` passes of every query, interleaved so load hits all alike:

* build: ``store.put_items`` of every chunk with its known vector, batches of 200 sessions
  (``--sessions-per-call``; 0: every session in one call, the bulk path), then ``--appends``
  sessions added one call each (the median per call: what an append costs at that size);
* numpy: the same int8 matrix dequantised once, ``M @ q`` plus an argpartition top-200 — the
  physical floor the exact dense path is compared with (``ratio`` = diarist / numpy);
* dense exact, dense hnsw (ANN + exact re-rank), BM25 alone, hybrid ``Memory.search`` (k=32,
  no second stage) with each dense index; BM25 alone and the hnsw hybrid again with BM25 scored
  by numpy instead of the C extension (``*_numpy``; the same where it is not built);
* recall@200 of the hnsw dense ranking against the exact one (ids);
* cold start in a new process: open the file, first query (hybrid), per dense index.

``--build-only`` stops after the build and the cold starts. ``--baseline SRC`` (a ``src``
folder of another diarist checkout) measures build and cold start side by side instead: each
repeat builds once with that tree and once with this one (in new processes, alternating, so
load hits both alike), then cold starts with both on the same file:

    python benchmarks/scale.py --size 100000 --baseline /tmp/old/src --repeats 3 \
        --out benchmarks/results/scale/NAME/scale_100k_bulk.json
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from diarist import lexical
from diarist.embed.base import Embedder, dequantize, normalise, quantize
from diarist.memory import Memory
from diarist.store.base import IndexedChunk, Item
from diarist.types import Chunk, Message

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LONGMEMEVAL = DATA / "longmemeval_s_dev.json.gz"
APP = "bench"
DIM = 384
CHUNK_CHARS = 1100
CENTRES = 2000
DEPTH = 200


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class LookupEmbedder(Embedder):
    """Whitespace tokens; embeds a text by looking it up (the benchmark's query vectors)."""

    model_id = "bench-synthetic-384"
    dim = DIM
    max_tokens = 256

    def __init__(self, vectors: dict[str, np.ndarray] | None = None):
        self.vectors = vectors or {}

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        out, start = [], None
        for i, ch in enumerate(text + " "):
            if ch.isspace():
                if start is not None:
                    out.append((start, i))
                    start = None
            elif start is None:
                start = i
        return out

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])

    def embed(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, DIM), np.float32)


def pack(turns: list[dict]) -> list[Chunk]:
    pieces: list[tuple[str, int, str]] = []
    for turn, m in enumerate(turns):
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
    for piece in pieces + [None]:  # type: ignore[list-item]
        if piece is None or (group and size + len(piece[0]) + 1 > CHUNK_CHARS):
            if group:
                text = "\n".join(p[0] for p in group)
                chunks.append(Chunk(text, len(chunks), tuple(dict.fromkeys(p[2] for p in group)),
                                    group[0][1], group[-1][1], "all", round(len(text) / 4.5)))
            group, size = [], 0
            if piece is None:
                break
        group.append(piece)
        size += len(piece[0]) + 1
    return chunks


CACHE = Path(__file__).resolve().parent / ".cache" / "embeddings.sqlite"


def centres() -> np.ndarray:
    """Real MiniLM vectors of lab texts (the embedding cache) when present: their neighbours
    are related texts, as in a real memory; else random directions."""
    if CACHE.exists():
        import sqlite3

        with sqlite3.connect(CACHE) as conn:
            rows = conn.execute("SELECT vector FROM vectors ORDER BY key LIMIT ?", (CENTRES,)).fetchall()
        blobs = [r[0] for r in rows if len(r[0]) == DIM]
        if len(blobs) >= CENTRES // 2:
            return dequantize(np.frombuffer(b"".join(blobs), np.int8).reshape(len(blobs), DIM))
    return normalise(np.random.default_rng(7).normal(size=(CENTRES, DIM)).astype(np.float32))


def centres_path(path: Path) -> Path:
    return Path(f"{path}.centres.npy")


def centres_of(path: Path) -> np.ndarray:
    """The centres a database was built around (saved beside it), so that a later ``--reuse``
    draws its queries from the same mixture even after the embedding cache has grown (its
    first rows by key change): queries from other centres measured HNSW recall 0.92 at 1M
    where matching ones measured 0.995."""
    saved = centres_path(path)
    return np.load(saved) if saved.exists() else centres()


def build(path: Path, size: int, records: list[dict], per_call: int = 200, appends: int = 0) -> dict:
    for suffix in ("", "-wal", "-shm", ".centres.npy"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    import shutil

    shutil.rmtree(f"{path}.hnsw", ignore_errors=True)
    memory = Memory(path, embedder=LookupEmbedder(), reranker=None, floor=None)
    store = memory.store
    rng = np.random.default_rng(size)
    cents = centres()
    np.save(centres_path(path), cents)
    sigma = 1.33 / np.sqrt(DIM)
    seen: set[str] = set()
    sessions = []
    for record in records:
        for sid, date, turns in zip(record["haystack_session_ids"], record["haystack_dates"], record["haystack_sessions"]):
            if sid not in seen:
                seen.add(sid)
                turns = [t for t in turns if t["content"].strip()]
                chunks = pack(turns)
                if chunks:
                    terms = [lexical.analyze(c.text) for c in chunks]
                    sessions.append((sid, date, turns, chunks, terms))
    total, copy, batch, write_s, prep_s = 0, 0, [], 0.0, 0.0
    while total < size:
        for sid, date, turns, chunks, terms in sessions:
            if total >= size:
                break
            t0 = time.perf_counter()
            chunks = chunks[: size - total]
            vecs = cents[rng.integers(0, len(cents), len(chunks))] + rng.normal(0.0, sigma, (len(chunks), DIM)).astype(np.float32)
            vecs = quantize(normalise(vecs))
            ext = sid if copy == 0 else f"{sid}#{copy}"
            item = Item("session", ext, None, hashlib.sha256(ext.encode()).hexdigest(), {},
                        tuple(Message(t["role"], t["content"]) for t in turns))
            batch.append((item, [IndexedChunk(c, v, list(t)) for c, v, t in zip(chunks, vecs, terms)]))
            total += len(chunks)
            prep_s += time.perf_counter() - t0
            if (per_call and len(batch) >= per_call) or total >= size:
                t0 = time.perf_counter()
                store.put_items(APP, batch)
                write_s += time.perf_counter() - t0
                batch = []
                if total % 50_000 < 2000:
                    log(f"    {total} chunks, {write_s:.1f} s writing")
        copy += 1
    # Then sessions added one call each, as a running agent adds them: the cost of an append to
    # a store this size (a posting block rewritten per term the session holds).
    append_ms = []
    for i, (sid, date, turns, chunks, terms) in enumerate(sessions[:appends]):
        vecs = quantize(normalise(cents[rng.integers(0, len(cents), len(chunks))]
                                  + rng.normal(0.0, sigma, (len(chunks), DIM)).astype(np.float32)))
        ext = f"{sid}#append{i}"
        item = Item("session", ext, None, hashlib.sha256(ext.encode()).hexdigest(), {},
                    tuple(Message(t["role"], t["content"]) for t in turns))
        one = [(item, [IndexedChunk(c, v, list(t)) for c, v, t in zip(chunks, vecs, terms)])]
        t0 = time.perf_counter()
        store.put_items(APP, one)
        append_ms.append((time.perf_counter() - t0) * 1000)
    memory.close()
    out = {"chunks": total, "sessions_per_call": per_call, "store_write_s": write_s, "prepare_s": prep_s,
           "chunks_per_s": total / write_s, "file_bytes": path.stat().st_size}
    if append_ms:
        out |= {"appends": len(append_ms), "append_ms_median": statistics.median(append_ms),
                "append_ms_p90": float(np.percentile(append_ms, 90))}
    return out


def queries(records: list[dict], n: int, path: Path) -> tuple[list[str], np.ndarray]:
    texts = list(dict.fromkeys(r["question"] for r in records))[:n]
    rng = np.random.default_rng(1)
    cents = centres_of(path)
    vecs = cents[rng.integers(0, len(cents), len(texts))] + rng.normal(0, 0.9 / np.sqrt(DIM), (len(texts), DIM))
    return texts, normalise(vecs.astype(np.float32))


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


COLD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[5])
t0 = time.perf_counter()
from scale import LookupEmbedder
import numpy as np
from diarist import Memory
t1 = time.perf_counter()
q = sys.argv[2]
emb = LookupEmbedder({q: np.asarray(json.loads(sys.argv[3]), np.float32)})
memory = Memory(sys.argv[1], embedder=emb, reranker=None, floor=None, dense=sys.argv[4])
t2 = time.perf_counter()
hits = memory.search(q, app="bench", k=32, rerank=False)
t3 = time.perf_counter()
assert hits
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "first_query_s": t3 - t2}))
"""


def source_env(src: str | None) -> dict[str, str] | None:
    """The environment of a child process that imports diarist from ``src`` (None: this one)."""
    if src is None:
        return None
    return os.environ | {"PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}


def cold(path: Path, dense: str, q: str, v: np.ndarray, repeats: int, src: str | None = None) -> dict:
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", COLD, str(path), q, json.dumps(v.tolist()), dense,
                              str(Path(__file__).parent)], capture_output=True, text=True, check=True,
                             env=source_env(src))
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["open_plus_first_query_s"] = row["open_s"] + row["first_query_s"]
        runs.append(row)
        log(f"  cold {dense}: {row}")
    if not runs:
        return {}
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]} | {"runs": runs}


RESIDENT = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from scale import LookupEmbedder
import numpy as np
from diarist import Memory

def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

given = json.load(sys.stdin)
texts, vectors = given["texts"], np.asarray(given["vectors"], np.float32)
emb = LookupEmbedder(dict(zip(texts, vectors)))
before = rss_mb()
memory = Memory(sys.argv[1], embedder=emb, reranker=None, floor=None, dense=sys.argv[3])
for q in texts:
    memory.search(q, app="bench", k=32, rerank=False)
print(json.dumps({"rss_before_open_mb": before, "rss_after_queries_mb": rss_mb(), "queries": len(texts)}))
"""


def resident(path: Path, dense: str, texts: list[str], vectors: np.ndarray) -> dict:
    """Resident memory of a new process that opened the file and answered the queries, against
    the raw int8 vectors plus the posting bytes it indexes (the issue's yardstick)."""
    out = subprocess.run([sys.executable, "-c", RESIDENT, str(path), str(Path(__file__).parent), dense],
                         input=json.dumps({"texts": texts, "vectors": vectors.tolist()}),
                         capture_output=True, text=True, check=True, env=source_env(os.environ.get("DIARIST_SRC")))
    row = json.loads(out.stdout.strip().splitlines()[-1])
    import sqlite3

    with sqlite3.connect(path) as conn:
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        postings = conn.execute("SELECT coalesce(sum(length(data)), 0) FROM lex_postings").fetchone()[0]
    raw = (chunks * DIM + postings) / 2**20
    row |= {"raw_int8_vectors_plus_postings_mb": raw,
            "ratio_of_growth_to_raw": (row["rss_after_queries_mb"] - row["rss_before_open_mb"]) / raw,
            "ratio_of_rss_to_raw": row["rss_after_queries_mb"] / raw}
    log(f"  resident {dense}: {row}")
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--workdir", default="/tmp/diarist-scale")
    parser.add_argument("--reuse", action="store_true", help="keep an existing database of that size")
    parser.add_argument("--cold-repeats", type=int, default=3)
    parser.add_argument("--appends", type=int, default=0,
                        help="after the build, add this many sessions one put_items call each (timed)")
    parser.add_argument("--sessions-per-call", type=int, default=200,
                        help="sessions per put_items call in the build (0: all in one call)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--cold-file", default=None, help="with --baseline: cold start on this database")
    parser.add_argument("--build-only", action="store_true", help="only the build and the cold starts")
    parser.add_argument("--resident", action="store_true",
                        help="only the resident memory of a process that answered the queries (HNSW)")
    parser.add_argument("--baseline", default=None, help="src folder of another diarist: build and cold start side by side")
    args = parser.parse_args(argv)
    if args.baseline:
        return compare(args)
    with gzip.open(LONGMEMEVAL) as f:
        records = json.load(f)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"scale-{args.size}.sqlite"
    result: dict = {"size": args.size, "cpus": os.cpu_count(), "load1_start": os.getloadavg()[0]}
    if not (args.reuse and path.exists()):
        log(f"building {path}")
        result["build"] = build(path, args.size, records, args.sessions_per_call, args.appends)
        log(f"  {result['build']}")
    texts, qvecs = queries(records, args.queries, path)
    if args.build_only:
        for dense in ("exact", "hnsw"):
            result[f"cold_{dense}"] = cold(path, dense, texts[1], qvecs[1], args.cold_repeats)
        return finish(result, args.out)
    if args.resident:
        result["resident_hnsw"] = resident(path, "hnsw", texts, qvecs)
        return finish(result, args.out)
    lookup = dict(zip(texts, qvecs))
    memories = {}
    for dense in ("exact", "hnsw"):
        t0 = time.perf_counter()
        memories[dense] = Memory(path, embedder=LookupEmbedder(lookup), reranker=None, floor=None, dense=dense)
        memories[dense].search(texts[0], app=APP, k=32, rerank=False)  # loads / builds the index
        result[f"first_search_{dense}_s"] = time.perf_counter() - t0
        log(f"  first search {dense}: {result[f'first_search_{dense}_s']:.2f} s")
    exact, hnsw = memories["exact"], memories["hnsw"]
    # The same search with BM25 scored by numpy instead of the C extension (when it is built).
    hnsw_numpy = Memory(path, embedder=LookupEmbedder(lookup), reranker=None, floor=None, dense="hnsw")
    hnsw_numpy.lexical.compiled = False
    hnsw_numpy.search(texts[0], app=APP, k=32, rerank=False)
    batch = exact.store.read_vectors(APP, 0)
    matrix = dequantize(batch.vectors)
    ids = batch.ids

    def numpy_top(v: np.ndarray) -> np.ndarray:
        scores = matrix @ v
        keep = np.argpartition(-scores, DEPTH - 1)[:DEPTH]
        return ids[keep[np.argsort(-scores[keep])]]

    terms = [lexical.analyze(t) for t in texts]
    methods: dict[str, Callable[[int], object]] = {
        "numpy_matmul": lambda i: matrix @ qvecs[i],
        "numpy_exact": lambda i: numpy_top(qvecs[i]),
        "dense_exact": lambda i: exact.dense.search(APP, qvecs[i][None], DEPTH),
        "dense_hnsw": lambda i: hnsw.dense.search(APP, qvecs[i][None], DEPTH),
        "bm25": lambda i: exact.lexical.search(APP, terms[i], DEPTH),
        "bm25_numpy": lambda i: hnsw_numpy.lexical.search(APP, terms[i], DEPTH),
        "hybrid_exact": lambda i: exact.search(texts[i], app=APP, k=32, rerank=False),
        "hybrid_hnsw": lambda i: hnsw.search(texts[i], app=APP, k=32, rerank=False),
        "hybrid_hnsw_numpy_bm25": lambda i: hnsw_numpy.search(texts[i], app=APP, k=32, rerank=False),
    }
    passes: dict[str, list[float]] = {m: [] for m in methods}
    for r in range(args.repeats):
        for name, fn in methods.items():
            lat = [timed(lambda: fn(i)) for i in range(len(texts))]
            passes[name].append(float(np.percentile(lat, 50)))
        log(f"  pass {r}: " + ", ".join(f"{m} {v[-1]:.2f}" for m, v in passes.items()))
    result["p50_ms"] = {m: statistics.median(v) for m, v in passes.items()}
    result["p50_ms_per_pass"] = passes
    base = result["p50_ms"]["numpy_exact"]
    result["ratio_to_numpy_exact"] = {m: v / base for m, v in result["p50_ms"].items()}
    recalls = []
    for i in range(len(texts)):
        want = {c for c, _ in exact.dense.search(APP, qvecs[i][None], DEPTH)}
        got = {c for c, _ in hnsw.dense.search(APP, qvecs[i][None], DEPTH)}
        recalls.append(len(want & got) / len(want))
    result["hnsw_recall_at_200"] = {"mean": float(np.mean(recalls)), "min": float(np.min(recalls))}
    same = sum(
        exact.dense.search(APP, qvecs[i][None], 10) == hnsw.dense.search(APP, qvecs[i][None], 10) for i in range(len(texts))
    )
    result["hnsw_top10_identical_share"] = same / len(texts)
    for m in memories.values():
        m.close()
    for dense in ("exact", "hnsw"):
        result[f"cold_{dense}"] = cold(path, dense, texts[1], qvecs[1], args.cold_repeats)
    return finish(result, args.out)


def finish(result: dict, out: str | None) -> int:
    result["load1_end"] = os.getloadavg()[0]
    text = json.dumps(result, indent=2)
    print(text)
    if out:
        Path(out).write_text(text + "\n")
    return 0


def compare(args: argparse.Namespace) -> int:
    """Build and cold start with the baseline tree and with this one, alternating."""
    variants = {"baseline": args.baseline, "current": None}
    work = Path(args.workdir)
    result: dict = {"size": args.size, "cpus": os.cpu_count(), "load1_start": os.getloadavg()[0],
                    "baseline_src": args.baseline, "builds": {v: [] for v in variants}}
    for r in range(args.repeats):
        for name, src in variants.items():
            out = work / name
            out.mkdir(parents=True, exist_ok=True)
            proc = subprocess.run(
                [sys.executable, __file__, "--size", str(args.size), "--workdir", str(out), "--build-only",
                 "--cold-repeats", "0", "--queries", "2", "--sessions-per-call", str(args.sessions_per_call),
                 "--appends", str(args.appends)],
                capture_output=True, text=True, check=True, env=source_env(src))
            build = json.loads(proc.stdout)["build"]
            result["builds"][name].append(build)
            log(f"  repeat {r} {name}: {build['store_write_s']:.2f} s writing"
                + (f", append {build['append_ms_median']:.1f} ms" if "append_ms_median" in build else ""))
    if args.repeats:  # --repeats 0: cold starts only, on --cold-file
        result["store_write_s_median"] = {
            name: statistics.median(b["store_write_s"] for b in runs) for name, runs in result["builds"].items()}
        if args.appends:
            result["append_ms_median"] = {
                name: statistics.median(b["append_ms_median"] for b in runs) for name, runs in result["builds"].items()}
    path = Path(args.cold_file) if args.cold_file else work / "current" / f"scale-{args.size}.sqlite"
    with gzip.open(LONGMEMEVAL) as f:
        texts, qvecs = queries(json.load(f), 2, path)
    result["cold_file"] = str(path)
    for dense in ("exact", "hnsw"):
        for name, src in variants.items():
            result[f"cold_{dense}_{name}"] = cold(path, dense, texts[1], qvecs[1], args.cold_repeats, src)
    return finish(result, args.out)


if __name__ == "__main__":
    sys.exit(main())
