"""Peers benchmark: diarist against what a user would pick instead, same corpus, vectors, questions.

    python benchmarks/peers.py --sizes 10000,100000 [--systems all] [--repeats 3] [--plot]
    python benchmarks/peers.py --plot-only          # redraw benchmarks/results/peers/s24/peers.png
    python benchmarks/peers.py --sizes 1000000 --systems numpy,diarist --keep-other-rows "WHY"
                                                    # re-run some systems, keep (and mark) the others

The corpus is benchmarks/scale.py's, built by its own helpers (imported, not copied): real
LongMemEval_S haystack text packed into ~1,100-character chunks, synthetic clustered 384-d
vectors (a Gaussian mixture around real MiniLM vectors, int8 in diarist), 200 real LongMemEval
questions each with a synthetic query vector. A "prepare" subprocess builds the diarist store with
``scale.build`` (diarist's build, timed there) and exports every chunk's id, text and its
dequantised float32 vector: every peer gets exactly those vectors and texts, and the exact numpy
top-200 of every question (the recall reference). Then every system runs in its own subprocess,
one after the other (clean RSS): build, one warm-up pass (dense recall@200 against exact), then
``--repeats`` passes of every question, each pass timing numpy's exact scan over all questions
and then the system over all questions, in the same process (``ratio`` = system p50 / numpy p50
of that process). Every system ranks 200 deep per channel and returns its top 10:

* ``numpy``: f32 ``M @ q`` + argpartition top-200 (the reference, ratio 1.00);
* ``bm25s_numpy``: bm25s (English stopwords) top-200 + numpy exact top-200, fused by RRF (k=60);
* ``sqlite_fts5_numpy``: SQLite FTS5 (unicode61, bm25, OR of the question's terms) + numpy, RRF;
* ``chromadb``: chromadb's persistent client (its HNSW, cosine, default ef), dense only;
* ``lancedb``: LanceDB hybrid query (flat vector scan + native FTS, RRF reranker);
* ``diarist``: ``diarist.Memory`` on the SQLite file, hybrid search as shipped (``dense="auto"``:
  the HNSW graph of the ``ann`` extra from 75k chunks, when usearch is installed; no second stage);
* ``diarist_vectors``: the same, vectors only (``lexical_fusion=False``);
* ``diarist_exact``: hybrid with ``dense="exact"`` (what the default install, without usearch, runs).

Peers are imported inside their own function: the script runs with only diarist installed
(``numpy``, ``sqlite_fts5_numpy``, ``diarist``, ``diarist_vectors``); a peer that is missing
or fails is recorded with its error and the run goes on. Nothing downloads a model: chromadb
gets the embeddings explicitly (``embedding_function=None``, telemetry off).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import scale  # benchmarks/scale.py: corpus, vectors, questions, the diarist build

RESULTS = HERE / "results" / "peers" / "s24"  # the committed run; a new one: --out-dir results/peers/NAME
DEPTH = scale.DEPTH  # 200: every channel ranks this deep
K = 10  # every system returns its top 10
RRF_K = 60
ALWAYS = ("numpy", "sqlite_fts5_numpy", "diarist", "diarist_vectors", "diarist_exact")
SYSTEMS = ("numpy", "bm25s_numpy", "sqlite_fts5_numpy", "chromadb", "lancedb", "diarist", "diarist_vectors",
           "diarist_exact")
log = scale.log


def label(size: int) -> str:
    return f"{size // 1_000_000}m" if size >= 1_000_000 and size % 1_000_000 == 0 else f"{size // 1000}k"


def proc_status() -> dict[str, float]:
    """VmRSS and VmHWM of this process, MB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


def disk_bytes(*paths: Path) -> int:
    total = 0
    for p in paths:
        if p.is_file():
            total += p.stat().st_size
        elif p.is_dir():
            for root, _, files in os.walk(p):
                total += sum((Path(root) / f).stat().st_size for f in files)
    return total


def rrf(*rankings) -> list[int]:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, cid in enumerate(ranking, 1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores, key=lambda c: (-scores[c], c))[:K]


# -- prepare: the diarist build and the shared corpus ------------------------------------------


def prepare(size: int, work: Path, n_queries: int, n_records: int | None) -> None:
    from diarist import lexical
    from diarist.embed.base import dequantize
    from diarist.memory import Memory

    with gzip.open(scale.LONGMEMEVAL) as f:
        records = json.load(f)
    vdir = work / "diarist"
    shutil.rmtree(vdir, ignore_errors=True)
    vdir.mkdir(parents=True)
    path = vdir / "store.sqlite"
    log(f"[prepare {size}] diarist build (scale.build) into {path}")
    t0 = time.perf_counter()
    info = scale.build(path, size, records[:n_records] if n_records else records)
    info["scale_build_wall_s"] = time.perf_counter() - t0
    texts_q, qvecs = scale.queries(records, n_queries, path)  # around the centres the build used
    del records
    memory = Memory(path, embedder=scale.LookupEmbedder(dict(zip(texts_q, qvecs))), reranker=None, floor=None)
    t0 = time.perf_counter()
    memory.search(texts_q[0], app=scale.APP, k=K, rerank=False)
    if hasattr(memory.dense, "wait"):
        memory.dense.wait()  # dense="auto": a large app's HNSW graph, built once in a thread
    info["first_search_and_graph_s"] = time.perf_counter() - t0
    info["dense_index"] = type(memory.dense).__name__
    info["graph"] = memory.dense.state(scale.APP) if hasattr(memory.dense, "state") else None
    batch = memory.store.read_vectors(scale.APP, 0)
    ids = np.asarray(batch.ids, np.int64)
    matrix = dequantize(batch.vectors)
    texts: list[str] = []
    for start in range(0, len(ids), 5000):
        rows = memory.store.fetch_chunks(scale.APP, ids[start : start + 5000].tolist())
        texts.extend(rows[int(c)].text for c in ids[start : start + 5000])
    memory.close()
    t0 = time.perf_counter()
    for t in texts:
        lexical.analyze(t)
    info["analyze_s"] = time.perf_counter() - t0  # the term analysis inside scale.build's loop
    ref = np.stack([numpy_top(matrix, ids, q) for q in qvecs])
    np.savez(work / "corpus.npz", ids=ids, matrix=matrix, qvecs=qvecs, ref=ref)
    (work / "texts.json").write_text(json.dumps({"texts": texts, "questions": texts_q}))
    (work / "diarist_build.json").write_text(json.dumps(info, default=str))
    log(f"[prepare {size}] {len(ids)} chunks, {len(texts_q)} questions; {info}")


def numpy_top(matrix: np.ndarray, ids: np.ndarray, q: np.ndarray, depth: int = DEPTH) -> np.ndarray:
    scores = matrix @ q
    keep = np.argpartition(-scores, depth - 1)[:depth]
    return ids[keep[np.argsort(-scores[keep], kind="stable")]]


class Corpus:
    def __init__(self, work: Path):
        data = np.load(work / "corpus.npz")
        self.ids, self.matrix, self.qvecs, self.ref = data["ids"], data["matrix"], data["qvecs"], data["ref"]
        t = json.loads((work / "texts.json").read_text())
        self.texts, self.questions = t["texts"], t["questions"]
        self.work = work


# -- the systems: each returns (build, query(i) -> top-K ids, dense(i) -> top-200 ids | None,
#    disk() -> bytes | None, info) after importing its library ------------------------------


def sys_numpy(c: Corpus, tmp: Path):
    state = {}

    def build():
        state["m"] = np.ascontiguousarray(c.matrix.copy())

    def query(i):
        return numpy_top(state["m"], c.ids, c.qvecs[i])[:K].tolist()

    return build, query, None, lambda: None, {"version": np.__version__, "measures": "dense exact f32 brute force (in memory)"}


def _dense_exact(state, c: Corpus):
    def dense(i):
        return numpy_top(state["m"], c.ids, c.qvecs[i]).tolist()
    return dense


def sys_bm25s_numpy(c: Corpus, tmp: Path):
    import bm25s

    state = {}

    def build():
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(c.texts, stopwords="en", show_progress=False), show_progress=False)
        state["r"], state["m"] = retriever, np.ascontiguousarray(c.matrix.copy())

    dense = _dense_exact(state, c)

    def query(i):
        tokens = bm25s.tokenize([c.questions[i]], stopwords="en", show_progress=False)
        lex: list[int] = []
        if tokens.ids and tokens.ids[0]:
            docs, _ = state["r"].retrieve(tokens, k=min(DEPTH, len(c.ids)), show_progress=False)
            lex = c.ids[docs[0]].tolist()
        return rrf(dense(i), lex)

    return build, query, dense, lambda: None, {
        "version": bm25s.__version__, "measures": "bm25s (in memory) + numpy dense exact, RRF k=60"}


def sys_sqlite_fts5_numpy(c: Corpus, tmp: Path):
    import sqlite3

    from diarist import lexical

    path = tmp / "fts.sqlite"
    state = {}

    def build():
        conn = sqlite3.connect(path, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE VIRTUAL TABLE chunks USING fts5(text, tokenize='unicode61')")
        with conn:
            conn.executemany("INSERT INTO chunks(rowid, text) VALUES (?, ?)", zip(c.ids.tolist(), c.texts))
        conn.execute("INSERT INTO chunks(chunks) VALUES ('optimize')")
        conn.commit()
        state["conn"], state["m"] = conn, np.ascontiguousarray(c.matrix.copy())

    dense = _dense_exact(state, c)
    # The question's terms as diarist analyses them (lower-cased words, English stopwords out),
    # OR-ed: BM25 semantics (any term), not FTS5's default AND.
    terms = [lexical.analyze(q) for q in c.questions]

    def query(i):
        lex: list[int] = []
        if terms[i]:
            match = " OR ".join('"' + t.replace('"', '""') + '"' for t in dict.fromkeys(terms[i]))
            lex = [r[0] for r in state["conn"].execute(
                "SELECT rowid FROM chunks WHERE chunks MATCH ? ORDER BY rank LIMIT ?", (match, DEPTH))]
        return rrf(dense(i), lex)

    return build, query, dense, lambda: disk_bytes(path, Path(f"{path}-wal")), {
        "version": f"SQLite {sqlite3.sqlite_version}",
        "measures": "SQLite FTS5 bm25 (file) + numpy dense exact (in memory), RRF k=60"}


def sys_chromadb(c: Corpus, tmp: Path):
    import chromadb
    from chromadb.config import Settings

    path = tmp / "chroma"
    state = {}

    def build():
        client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
        col = client.create_collection("bench", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
        step = min(client.get_max_batch_size(), 5000)
        for s in range(0, len(c.ids), step):
            col.add(ids=[str(x) for x in c.ids[s : s + step]], embeddings=c.matrix[s : s + step],
                    documents=c.texts[s : s + step])
        state["client"], state["col"] = client, col

    def dense(i):
        r = state["col"].query(query_embeddings=c.qvecs[i : i + 1], n_results=min(DEPTH, len(c.ids)), include=["distances"])
        return [int(x) for x in r["ids"][0]]

    def query(i):
        return dense(i)[:K]

    return build, query, dense, lambda: disk_bytes(path), {
        "version": chromadb.__version__,
        "measures": "dense only: chromadb HNSW (cosine, ef_search 100, M 16), persistent client; n_results 200"}


def sys_lancedb(c: Corpus, tmp: Path):
    import lancedb
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    path = tmp / "lance"
    state = {}
    indexed = len(c.ids) >= 1_000_000  # LanceDB's advice: brute force is fine up to ~100k rows

    def build():
        db = lancedb.connect(str(path))
        n = len(c.ids)
        table = pa.table({
            "id": pa.array(c.ids), "text": pa.array(c.texts),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(c.matrix.reshape(-1)), c.matrix.shape[1]),
        })
        tbl = db.create_table("chunks", table)
        del table
        tbl.create_fts_index("text")
        if indexed:
            tbl.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ")
        state["tbl"], state["n"] = tbl, n
        state["rrf"] = RRFReranker(K=RRF_K)

    def dense(i):
        r = (state["tbl"].search(c.qvecs[i]).distance_type("cosine").limit(DEPTH).select(["id"]).to_arrow())
        return r["id"].to_pylist()

    def query(i):
        r = (state["tbl"].search(query_type="hybrid").vector(c.qvecs[i]).text(c.questions[i])
             .distance_type("cosine").limit(DEPTH).rerank(state["rrf"]).select(["id"]).to_arrow())
        return r["id"].to_pylist()[:K]

    return build, query, dense, lambda: disk_bytes(path), {
        "version": lancedb.__version__, "pylance": _version("pylance"),
        "measures": "hybrid: LanceDB vector search ("
        + ("IVF_HNSW_SQ index" if indexed else "flat, no vector index") + ") + native FTS, RRFReranker, limit 200"}


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _sys_diarist(c: Corpus, tmp: Path, lexical: bool, dense_mode: str = "auto"):
    from diarist.memory import Memory

    path = c.work / "diarist" / "store.sqlite"
    lookup = dict(zip(c.questions, c.qvecs))
    state = {}

    def build():  # built by the prepare stage (scale.build, timed there): this opens the file
        state["m"] = Memory(path, embedder=scale.LookupEmbedder(lookup), reranker=None, floor=None,
                            lexical_fusion=lexical, dense=dense_mode)

    def dense(i):
        return [cid for cid, _ in state["m"].dense.search(scale.APP, c.qvecs[i][None], DEPTH)]

    def query(i):
        return [h.chunk_id for h in state["m"].search(c.questions[i], app=scale.APP, k=K, rerank=False)]

    def disk():
        return disk_bytes(path, Path(f"{path}-wal"), Path(f"{path}.hnsw"))

    info = {"version": _version("diarist"), "usearch": _version("usearch"),
            "measures": ("hybrid: diarist.Memory.search" if lexical else "vectors only: diarist.Memory.search "
                         "(lexical_fusion=False)") + f", SQLite file, dense={dense_mode!r}, k=10, rerank=False"}
    return build, query, dense, disk, info


def sys_diarist(c, tmp):
    return _sys_diarist(c, tmp, True)


def sys_diarist_vectors(c, tmp):
    return _sys_diarist(c, tmp, False)


def sys_diarist_exact(c, tmp):  # what the default install (no ``ann`` extra: no usearch) runs
    return _sys_diarist(c, tmp, True, "exact")


# -- one system, one process ----------------------------------------------------------------


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def worker(system: str, work: Path, repeats: int) -> dict:
    c = Corpus(work)
    tmp = work / f"sys-{system}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    build, query, dense, disk, info = globals()[f"sys_{system}"](c, tmp)  # imports its library
    out: dict = {"system": system, **info}
    rss0 = proc_status()
    t0 = time.perf_counter()
    build()
    out["build_s"] = time.perf_counter() - t0
    if system.startswith("diarist"):
        vb = json.loads((work / "diarist_build.json").read_text())
        # put_items with the vectors given + the term analysis + the HNSW graph (at >= 75k chunks)
        out["build_s"] = vb["store_write_s"] + vb["analyze_s"] + vb["first_search_and_graph_s"]
        out["build_detail"] = {"store_write_s": vb["store_write_s"], "analyze_s": vb["analyze_s"],
                               "first_search_and_graph_s": vb["first_search_and_graph_s"],
                               "open_s": time.perf_counter() - t0, "dense_index": vb["dense_index"],
                               "graph": vb["graph"]}
    rss_built = proc_status()
    n = len(c.questions)
    for i in range(n):  # warm-up pass
        query(i)
    if dense is not None:
        recalls = [len(set(dense(i)) & set(c.ref[i].tolist())) / len(c.ref[i]) for i in range(n)]
        out["dense_recall_at_200"] = {"mean": float(np.mean(recalls)), "min": float(np.min(recalls))}
    passes: dict[str, list[tuple[float, float]]] = {"numpy": [], "system": []}
    for r in range(repeats):
        lat = [timed(lambda i=i: numpy_top(c.matrix, c.ids, c.qvecs[i])[:K]) for i in range(n)]
        passes["numpy"].append((float(np.percentile(lat, 50)), float(np.percentile(lat, 95))))
        lat = [timed(lambda i=i: query(i)) for i in range(n)]
        passes["system"].append((float(np.percentile(lat, 50)), float(np.percentile(lat, 95))))
        log(f"  [{system}] pass {r}: numpy p50 {passes['numpy'][-1][0]:.2f} ms, system p50 {passes['system'][-1][0]:.2f} ms")
    out["p50_ms"] = statistics.median(p[0] for p in passes["system"])
    out["p95_ms"] = statistics.median(p[1] for p in passes["system"])
    out["numpy_p50_ms"] = statistics.median(p[0] for p in passes["numpy"])
    out["ratio_p50_to_numpy"] = out["p50_ms"] / out["numpy_p50_ms"]
    out["passes_ms"] = passes
    end = proc_status()
    out["rss_mb"] = end["VmRSS"] - rss0["VmRSS"]  # what the built (opened) index holds, after queries
    out["rss_after_build_mb"] = rss_built["VmRSS"] - rss0["VmRSS"]
    out["peak_rss_over_baseline_mb"] = end["VmHWM"] - rss0["VmRSS"]
    out["baseline_rss_mb"] = rss0["VmRSS"]  # python + the library + the corpus (vectors, texts) held
    size = disk()
    out["disk_mb"] = None if size is None else size / 2**20
    out["load1_end"] = os.getloadavg()[0]
    return out


# -- the driver ---------------------------------------------------------------------------------


def run_size(size: int, args, systems: list[str]) -> dict:
    work = Path(args.workdir) / label(size)
    work.mkdir(parents=True, exist_ok=True)
    result: dict = {"size": size, "depth": DEPTH, "k": K, "queries": args.queries, "repeats": args.repeats,
                    "cpus": os.cpu_count(), "python": platform.python_version(), "load1_start": os.getloadavg()[0],
                    "systems": {}}
    me = [sys.executable, str(Path(__file__).resolve())]
    env = dict(os.environ)
    if args.blas_threads:
        # One BLAS thread per process by default: on 2 shared, oversubscribed cores a threaded
        # gemv waits for its second thread to be scheduled (a flat ~8 ms per call, seen at 2k).
        env["OPENBLAS_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(args.blas_threads)
    result["blas_threads"] = args.blas_threads or "library default"
    if not (args.reuse and (work / "corpus.npz").exists()):
        cmd = me + ["--stage", "prepare", "--sizes", str(size), "--workdir", str(work), "--queries", str(args.queries)]
        if args.records:
            cmd += ["--records", str(args.records)]
        subprocess.run(cmd, check=True, env=env)
    result["diarist_build"] = json.loads((work / "diarist_build.json").read_text())
    for system in systems:
        if system in args.skip_at.get(size, {}):
            result["systems"][system] = {"system": system, "error": args.skip_at[size][system]}
            log(f"[{size}] {system}: skipped ({args.skip_at[size][system]})")
            continue
        log(f"[{size}] {system}")
        cmd = me + ["--stage", "worker", "--system", system, "--workdir", str(work), "--repeats", str(args.repeats)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.worker_timeout, env=env,
                                  check=False)
        except subprocess.TimeoutExpired:
            row = {"system": system, "error": f"did not finish within {args.worker_timeout} s"}
        else:
            sys.stderr.write(proc.stderr[-4000:] if proc.returncode else "")
            lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
            if proc.returncode == 0 and lines:
                row = json.loads(lines[-1])
            else:
                tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
                row = {"system": system, "error": f"exit {proc.returncode}: {tail}"}
        result["systems"][system] = row
        shutil.rmtree(work / f"sys-{system}", ignore_errors=True)
        log(f"[{size}] {system}: " + (row.get("error") or
            f"build {row['build_s']:.1f} s, p50 {row['p50_ms']:.2f} ms ({row['ratio_p50_to_numpy']:.2f}x), "
            f"rss {row['rss_mb']:.0f} MB, disk {row['disk_mb'] or 0:.0f} MB"))
    result["load1_end"] = os.getloadavg()[0]
    return result


def plot(out_dir: Path, dest: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = []
    for f in out_dir.glob("peers_*.json"):
        try:
            runs.append(json.loads(f.read_text()))
        except (OSError, ValueError):
            continue
    runs.sort(key=lambda r: r["size"])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for system in SYSTEMS:
        pts = [(r["size"], r["systems"][system]["p50_ms"]) for r in runs
               if "p50_ms" in r["systems"].get(system, {})]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=system)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks (one collection)")
    ax.set_ylabel("query p50 (ms, log)")
    ax.set_title("diarist and peers: query latency p50 vs corpus size (2 shared cores)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(dest, dpi=110)
    log(f"wrote {dest}")


def keep_other_rows(earlier: dict, now: dict, why: str) -> dict:
    """``now`` with the rows of the systems it did not run taken from ``earlier`` (the same
    size), listed as such: each row's ratio is against numpy in its own process, so rows of two
    runs stay comparable on that column, not on milliseconds."""
    if earlier.get("size") != now["size"]:
        raise SystemExit(f"--keep-other-rows: the earlier result is of {earlier.get('size')} chunks, not {now['size']}")
    kept = [name for name in earlier["systems"] if name not in now["systems"]]
    order = dict.fromkeys([*SYSTEMS, *earlier["systems"], *now["systems"]])
    merged = dict(now)
    merged["systems"] = {name: now["systems"][name] if name in now["systems"] else earlier["systems"][name]
                         for name in order if name in now["systems"] or name in earlier["systems"]}
    if kept:
        # Rows kept a second time keep the provenance they were first kept with.
        older = earlier.get("rows_from_an_earlier_run")
        if older and set(kept) <= set(older["systems"]):
            source = older
        else:
            source = {"why": why, "load1_start": earlier["load1_start"], "load1_end": earlier["load1_end"]}
        merged["rows_from_an_earlier_run"] = {"systems": kept, "why": source["why"],
                                              "load1_start": source["load1_start"], "load1_end": source["load1_end"]}
    return merged


def table(out_dir: Path) -> str:
    """The markdown tables of BENCHMARKS.md ("Peers"), one per result file."""
    lines = []
    for f in sorted(out_dir.glob("peers_*.json"), key=lambda f: json.loads(f.read_text())["size"]):
        r = json.loads(f.read_text())
        earlier = r.get("rows_from_an_earlier_run", {})
        lines += [f"**{r['size']:,} chunks** (`{f.name}`; load average {r['load1_start']:.1f} -> {r['load1_end']:.1f})", "",
                  ("| system | what it runs | build (s) | p50 (ms) | p95 (ms) | p50 / numpy p50, same process "
                   "| dense recall@200 (mean / min) | RSS (MB) | disk (MB) |"),
                  "|---|---|---|---|---|---|---|---|---|"]
        for name in SYSTEMS:
            row = r["systems"].get(name)
            if row is None:
                continue
            if name in earlier.get("systems", ()):
                name += " *"
            if "error" in row:
                lines.append(f"| {name} | not run: {row['error']} | | | | | | | |")
                continue
            rec = row.get("dense_recall_at_200")
            rec = f"{rec['mean']:.3f} / {rec['min']:.3f}" if rec else "exact (reference)"
            disk = "in memory" if row["disk_mb"] is None else f"{row['disk_mb']:.0f}"
            lines.append(f"| {name} | {row['measures']} | {row['build_s']:.1f} | {row['p50_ms']:.2f} | {row['p95_ms']:.2f} "
                         f"| {row['ratio_p50_to_numpy']:.2f}x | {rec} | {row['rss_mb']:.0f} | {disk} |")
        if earlier:
            lines += ["", f"\\* from an earlier run (load average {earlier['load1_start']:.1f} -> "
                          f"{earlier['load1_end']:.1f}): {earlier['why']}"]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts")
    parser.add_argument("--systems", default="all", help=f"comma-separated, or 'all': {', '.join(SYSTEMS)}")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes over every question")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--records", type=int, default=None,
                        help="build from only the first N LongMemEval records (smoke tests)")
    parser.add_argument("--workdir", default="/tmp/diarist-peers")
    parser.add_argument("--out-dir", default=str(RESULTS))
    parser.add_argument("--reuse", action="store_true", help="reuse a prepared corpus and diarist store")
    parser.add_argument("--worker-timeout", type=int, default=3600, help="seconds per system")
    parser.add_argument("--skip", action="append", default=[], metavar="SIZE:SYSTEM:WHY",
                        help="record SYSTEM at SIZE as not run, with the reason")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="OPENBLAS_NUM_THREADS for every subprocess (0: the library default)")
    parser.add_argument("--plot", action="store_true", help="draw peers.png from out-dir after the runs")
    parser.add_argument("--keep-other-rows", default=None, metavar="WHY",
                        help="keep the rows of systems not run now from out-dir's earlier result of that size, "
                             "marked as from an earlier run, for the reason given")
    parser.add_argument("--plot-only", action="store_true", help="only draw peers.png from out-dir")
    parser.add_argument("--table", action="store_true", help="print the markdown tables of out-dir's results")
    parser.add_argument("--stage", choices=("driver", "prepare", "worker"), default="driver", help=argparse.SUPPRESS)
    parser.add_argument("--system", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    out_dir = Path(args.out_dir)
    if args.stage == "prepare":
        prepare(int(args.sizes), Path(args.workdir), args.queries, args.records)
        return 0
    if args.stage == "worker":
        print(json.dumps(worker(args.system, Path(args.workdir), args.repeats)), flush=True)
        return 0
    if args.table:
        print(table(out_dir))
        return 0
    if not args.plot_only:
        systems = list(SYSTEMS) if args.systems == "all" else [s.strip() for s in args.systems.split(",")]
        unknown = set(systems) - set(SYSTEMS)
        if unknown:
            parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
        args.skip_at = {}
        for spec in args.skip:
            size, system, why = spec.split(":", 2)
            args.skip_at.setdefault(int(size), {})[system] = why
        out_dir.mkdir(parents=True, exist_ok=True)
        for size in (int(s) for s in args.sizes.split(",") if s.strip()):
            result = run_size(size, args, systems)
            dest = out_dir / f"peers_{label(size)}.json"
            if args.keep_other_rows and dest.exists():
                result = keep_other_rows(json.loads(dest.read_text()), result, args.keep_other_rows)
            dest.write_text(json.dumps(result, indent=2) + "\n")
            log(f"wrote {dest}")
    if args.plot or args.plot_only:
        plot(out_dir, out_dir / "peers.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
