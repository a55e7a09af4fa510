"""Search latency of the read path, side by side with other trees, as ratios to an exact numpy scan.

    python benchmarks/read_speed.py --size 10000 [--tree NAME=SRC ...] [--questions 200] [--repeats 3] \
        [--profile DIR] [--out FILE]
    python benchmarks/read_speed.py --size 10000 --check benchmarks/results/latency/baseline_10k.json

Each tree (this one, ``diarist`` as imported, plus any ``--tree NAME=SRC``: the ``src`` folder of
another checkout, whatever its package is called) builds its own database once under
``--workdir``, through ``Memory.add_sessions`` of real LongMemEval_S sessions (repeated under new
ids when the data runs out) until ``--size`` chunks, with vectors made from each text's hash
(a Gaussian mixture around fixed centres: the dense cost depends on the matrix's shape, not on
what it means), so every tree holds the same chunks and vectors. The build is timed (the
``build`` row, seconds) in a new process per tree.

Then, in this one process (the other trees' packages are copied under another name, so all of
them import side by side), every question is asked of every (tree, row) in turn, the order
rotating from question to question, so that load on a shared machine hits all alike; each row's
figure is the median over ``--repeats`` passes of that pass's median. The rows (no model: the
question's vector is looked up; no relevance floor):

* ``numpy``: the int8 matrix (of this tree's file: every tree's holds the same vectors)
  dequantised once, ``M @ q`` plus an argpartition top-200 (the reference every ratio is taken
  to, timed once a question in the same rotation);
* ``hybrid k=32`` / ``hybrid k=200``: ``Memory.search`` as shipped (the default second stage);
* ``hybrid, no second stage, k=200``: ``rerank=False``;
* ``vectors only, k=200``: ``lexical_fusion=False``;
* ``BM25 order, k=200``: the convex fusion with the dense weight at 0 (BM25's order; the dense
  channel still runs), no second stage.

``--profile DIR`` adds, after the timed passes, a pass per tree under cProfile (k=32 and k=200)
and a pass with a timer around each stage and channel of every tree with named read stages (all
such trees in the one pass, the order rotating); written to DIR and summarised in the output.

A second reference, the ``python probe`` (a fixed Python and SQLite workload with the read
path's shape, none of it ours), is timed in the same rotation.

``--check BASELINE`` is the guard (``tests/lab/test_speed_guard.py`` runs it at 10k): this tree's
rows against the committed ratios to both references, each row's fastest pass median to the
reference's fastest (load only adds time: the least disturbed pass is the steadiest figure on a
shared machine); a row whose ratios to both are more than ``--tolerance`` (1.15) times the
baseline's (another machine moves one of them, a regression both) is measured again
(``--retries`` times, fresh passes) and fails only if it stays over: exit status 1, measured as
the baseline was (its size, corpus, questions, passes). ``--write-baseline FILE`` records this
tree's ratios, the median of ``--baseline-runs`` runs, as the new baseline.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import gzip
import hashlib
import importlib
import io
import itertools
import json
import os
import platform
import pstats
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# One BLAS thread (unless set): on a shared 2-core machine a threaded float32 product of a small
# matrix waits on busy cores (17 ms for 2,000 x 384 at load 9, against 0.1 ms on one thread).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
LONGMEMEVAL = DATA / "longmemeval_s_dev.json.gz"
APP = "bench"
DIM = 384
CENTRES = 512
DEPTH = 200
THIS = "branch"
PROBE = "python probe"
ROWS = ("numpy", "hybrid k=32", "hybrid k=200", "hybrid, no second stage, k=200", "vectors only, k=200",
        "BM25 order, k=200")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- the embedder every tree uses: vectors from the text's hash, questions looked up ---------------------

_CENTRES = np.random.default_rng(46).normal(size=(CENTRES, DIM)).astype(np.float32)
_CENTRES /= np.linalg.norm(_CENTRES, axis=1, keepdims=True)


def text_vector(text: str, spread: float = 1.33) -> np.ndarray:
    """A unit vector near one of the centres, the same for the same text in every tree."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    rng = np.random.default_rng(seed)
    v = _CENTRES[rng.integers(CENTRES)] + rng.normal(0.0, spread / np.sqrt(DIM), DIM).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def embedder_for(package: str) -> Any:
    """An embedder of ``package``'s own base class: whitespace tokens, hashed vectors."""
    base = importlib.import_module(f"{package}.embed.base").Embedder

    class HashEmbedder(base):  # type: ignore[misc, valid-type]
        model_id = "bench-hash-384"
        dim = DIM
        max_tokens = 256

        def token_spans(self, text: str) -> list[tuple[int, int]]:
            return [m.span() for m in re.finditer(r"\S+", text)]

        def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
            return self.embed(texts)

        def embed(self, texts: Sequence[str], progress: Any = None, counts: Any = None) -> np.ndarray:
            if not texts:
                return np.zeros((0, DIM), np.float32)
            return np.stack([QUESTION_VECTORS[t] if t in QUESTION_VECTORS else text_vector(t) for t in texts])

    return HashEmbedder()


#: The questions' vectors, made once (a question's is looked up, as a cache of the model's would be).
QUESTION_VECTORS: dict[str, np.ndarray] = {}


def ask(texts: list[str]) -> None:
    QUESTION_VECTORS.update((t, text_vector(t, 0.9)) for t in texts)


def records() -> list[dict]:
    with gzip.open(LONGMEMEVAL) as f:
        return json.load(f)


def questions(corpus: str, n: int) -> list[str]:
    if corpus == "synthetic":
        return synthetic_questions(n)
    return list(dict.fromkeys(r["question"] for r in records()))[:n]


def sessions_until(corpus: str) -> Any:
    """The corpus's sessions, without end: LongMemEval_S's (each once, then again under new
    ids when the data runs out), or synthetic ones."""
    if corpus == "synthetic":
        yield from synthetic_sessions()
        return
    seen: dict[str, tuple[str, list[dict]]] = {}
    for r in records():
        for sid, date, turns in zip(r["haystack_session_ids"], r["haystack_dates"], r["haystack_sessions"]):
            turns = [{"role": t["role"], "content": t["content"]} for t in turns if t["content"].strip()]
            if sid not in seen and turns:
                seen[sid] = (date, turns)
    copy = 0
    while True:
        for sid, (date, turns) in seen.items():
            yield {"session_id": sid if copy == 0 else f"{sid}#{copy}", "messages": turns}
        copy += 1


# --- the synthetic corpus: no data set needed (the guard runs on a fresh clone) ----------------------------

SYLLABLES = [c + v for c in "bdfghklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


def _vocabulary(size: int = 20_000) -> list[str]:
    rng = np.random.default_rng(7)
    words = dict.fromkeys("".join(rng.choice(SYLLABLES, rng.integers(1, 4))) for _ in range(3 * size))
    return list(words)[:size]


_WORDS = _vocabulary()
#: Zipf-Mandelbrot over the vocabulary, as words fall in real text once stopwords are out (a
#: flattened head, a long tail).
_WEIGHTS = 1.0 / (np.arange(1, len(_WORDS) + 1) + 30.0) ** 1.1
_WEIGHTS /= _WEIGHTS.sum()


def _sentence(rng: np.random.Generator, n: int) -> str:
    return " ".join(_WORDS[i] for i in rng.choice(len(_WORDS), n, p=_WEIGHTS))


def synthetic_sessions() -> Any:
    """Sessions of 6-14 turns of 40-220 Zipf-distributed words, seeded: the same in every tree."""
    rng = np.random.default_rng(46)
    for number in itertools.count():
        turns = [{"role": ("user", "assistant")[t % 2], "content": _sentence(rng, int(rng.integers(40, 220)))}
                 for t in range(int(rng.integers(6, 15)))]
        yield {"session_id": f"s{number}", "messages": turns}


def synthetic_questions(n: int) -> list[str]:
    rng = np.random.default_rng(47)
    return list(dict.fromkeys(_sentence(rng, int(rng.integers(6, 14))) + "?" for _ in range(2 * n)))[:n]


def build_child(package: str, path: Path, size: int, corpus: str) -> None:
    """Runs in a new process whose path imports ``package`` from the tree being built."""
    memory_cls = importlib.import_module(f"{package}.memory").Memory
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    memory = memory_cls(path, embedder=embedder_for(package), floor=None)
    source, total, seconds = sessions_until(corpus), 0, 0.0
    while total < size:
        batch = [next(source) for _ in range(100)]
        start = time.perf_counter()
        report = memory.add_sessions(batch, app=APP)
        seconds += time.perf_counter() - start
        total += report.chunks
    memory.close()
    print(json.dumps({"chunks": total, "build_s": seconds}))


def build(label: str, src: str | None, package: str, work: Path, size: int, corpus: str,
          again: bool = False) -> dict:
    """The tree's database of ``size`` chunks (built once, in a new process; reused after,
    unless ``again``)."""
    path = work / f"{label}-{corpus}-{size}.sqlite"
    made = Path(f"{path}.build.json")
    if path.exists() and made.exists() and not again:
        return json.loads(made.read_text()) | {"path": str(path), "reused": True}
    log(f"building {path} with {label}")
    env = os.environ | {"PYTHONPATH": os.pathsep.join(p for p in [src, os.environ.get("PYTHONPATH")] if p)}
    out = subprocess.run([sys.executable, __file__, "--build-child", package, str(path), str(size), corpus],
                         capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"building with {label} failed:\n{out.stderr[-3000:]}")
    made.write_text(out.stdout)
    return json.loads(out.stdout) | {"path": str(path), "reused": False}


# --- the trees, side by side in this process -------------------------------------------------------------


def package_of(src: str) -> str:
    found = [p.name for p in Path(src).iterdir() if (p / "__init__.py").exists() and (p / "memory.py").exists()]
    if len(found) != 1:
        raise SystemExit(f"{src}: expected one package with a memory.py, found {found}")
    return found[0]


def import_as(src: str, label: str, work: Path) -> str:
    """The tree's package copied under a name of its own (its absolute imports renamed too)."""
    package = package_of(src)
    alias = "tree_" + re.sub(r"\W", "_", label)
    copy = work / "packages" / alias
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(Path(src) / package, copy / alias, ignore=shutil.ignore_patterns("__pycache__"))
    for py in (copy / alias).rglob("*.py"):
        text = py.read_text()
        renamed = re.sub(rf"\b(from|import) {package}\b", rf"\1 {alias}", text)
        if renamed != text:
            py.write_text(renamed)
    sys.path.insert(0, str(copy))
    importlib.import_module(alias)
    return alias


def numpy_scan(path: str) -> Callable[[np.ndarray], np.ndarray]:
    """The exact reference: the int8 matrix dequantised once, ``M @ q``, the top 200 by argpartition."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id, vector FROM chunks WHERE vector IS NOT NULL ORDER BY id").fetchall()
    ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), np.int8).reshape(len(rows), DIM).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)

    def top(q: np.ndarray) -> np.ndarray:
        scores = matrix @ q
        keep = np.argpartition(-scores, DEPTH - 1)[:DEPTH]
        return ids[keep[np.argsort(-scores[keep])]]

    return top


def python_probe(path: str) -> Callable[[str], Any]:
    """The second reference: a fixed Python and SQLite workload with the read path's shape (rows
    fetched by id, text split into words, dicts built, a sort), none of it diarist's code. The
    numpy scan follows memory bandwidth and BLAS, this follows the interpreter and SQLite; a
    machine that is slower at one than the other moves a row's ratio to one reference and not
    to the other, while a regression in our code moves both."""
    conn = sqlite3.connect(path, check_same_thread=False)
    top_id = conn.execute("SELECT max(id) FROM chunks").fetchone()[0]
    words = re.compile(r"\w+")

    def probe(text: str) -> list[tuple[float, int]]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
        ids = [1 + (seed * (i + 1) * 2654435761) % top_id for i in range(24)]
        rows = conn.execute(f"SELECT id, text FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall()
        hits = []
        for chunk_id, body in rows:
            counts: dict[str, int] = {}
            for word in words.findall(body.lower()):
                counts[word] = counts.get(word, 0) + 1
            hits.append({"id": chunk_id, "score": len(counts) / (1 + sum(counts.values())), "terms": counts})
        hits.sort(key=lambda hit: (-hit["score"], hit["id"]))
        return [(hit["score"], hit["id"]) for hit in hits]

    return probe


def searches(package: str, path: str, qvec: dict[str, np.ndarray]) -> tuple[Any, dict[str, Callable[[str], Any]]]:
    memory = importlib.import_module(f"{package}.memory").Memory(path, embedder=embedder_for(package), floor=None)
    vectors_only = memory.derive(lexical_fusion=False)
    bm25_order = memory.derive(dense_weight=0.0)
    return memory, {
        "hybrid k=32": lambda q: memory.search(q, app=APP, k=32),
        "hybrid k=200": lambda q: memory.search(q, app=APP, k=200),
        "hybrid, no second stage, k=200": lambda q: memory.search(q, app=APP, k=200, rerank=False),
        "vectors only, k=200": lambda q: vectors_only.search(q, app=APP, k=200, rerank=False),
        "BM25 order, k=200": lambda q: bm25_order.search(q, app=APP, k=200, rerank=False),
    }


def timed_passes(calls: dict[tuple[str, str], Callable[[str], Any]], texts: list[str], repeats: int) -> dict:
    """Each (tree, row)'s median per pass, every question asked of all in a rotating order."""
    keys = list(calls)
    for text in texts[:20]:  # warm-up: matrices loaded, caches filled
        for key in keys:
            calls[key](text)
    per_pass: dict[tuple[str, str], list[float]] = {key: [] for key in keys}
    for r in range(repeats):
        times: dict[tuple[str, str], list[float]] = {key: [] for key in keys}
        for i, text in enumerate(texts):
            turn = (i * 7 + r) % len(keys)
            for key in keys[turn:] + keys[:turn]:
                start = time.perf_counter()
                calls[key](text)
                times[key].append((time.perf_counter() - start) * 1000)
        for key in keys:
            per_pass[key].append(statistics.median(times[key]))
        log(f"pass {r} (load {os.getloadavg()[0]:.1f}): "
            + ", ".join(f"{t}/{row} {per_pass[(t, row)][-1]:.2f}" for t, row in keys))
    return per_pass


# --- profiles ----------------------------------------------------------------------------------------------


def cprofile(fn: Callable[[str], Any], texts: list[str], out: Path) -> list[dict]:
    profile = cProfile.Profile()
    profile.enable()
    for text in texts:
        fn(text)
    profile.disable()
    buffer = io.StringIO()
    stats = pstats.Stats(profile, stream=buffer).sort_stats("tottime")
    stats.print_stats(40)
    out.write_text(buffer.getvalue())
    top = []
    for (file, line, name), (_, calls, tottime, cumtime, _) in sorted(
            stats.stats.items(), key=lambda kv: -kv[1][2])[:25]:  # type: ignore[attr-defined]
        top.append({"function": f"{Path(file).name}:{line}({name})", "calls_per_question": calls / len(texts),
                    "tottime_ms_per_question": 1000 * tottime / len(texts),
                    "cumtime_ms_per_question": 1000 * cumtime / len(texts)})
    return top


def stage_profiles(packages: dict[str, str], memories: dict[str, Any], texts: list[str], k: int,
                   rerank: bool = True) -> dict[str, dict[str, float]]:
    """Per tree with named read stages: the median ms a question in each stage, in each channel
    and outside the stages (validation, the question's parse, the results). Every tree is timed
    in the same pass, the order rotating from question to question as in the timed passes, so
    that the machine's load falls on all alike."""
    spent: dict[str, dict[str, float]] = {}
    undo: list[Callable[[], None]] = []

    def timer(label: str, name: str, fn: Callable) -> Callable:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label][name] = spent[label].get(name, 0.0) + (time.perf_counter() - start) * 1000
        return wrapped

    for label, package in packages.items():
        try:
            registry = getattr(importlib.import_module(f"{package}.read.search"), "STAGES", None)
        except ImportError:
            registry = None
        if registry is None:
            continue
        spent[label] = {}
        originals = {name: registry[name] for name in registry.names()}
        for name, stage in originals.items():
            registry.register(name, timer(label, f"stage {name}", stage), replace=True)
        undo.append(lambda registry=registry, originals=originals: [
            registry.register(name, stage, replace=True) for name, stage in originals.items()])
        memory = memories[label]
        for obj, attr, name in ((memory.dense, "search", "  dense channel (in channels)"),
                                (memory.lexical, "search", "  lexical channel (its thread, or inside fusion)"),
                                (memory.embedder, "embed_query", "  query vector lookup (in channels)")):
            setattr(obj, attr, timer(label, name, getattr(obj, attr)))
            undo.append(lambda obj=obj, attr=attr: obj.__dict__.pop(attr, None))
    labels = list(spent)
    rows: dict[str, dict[str, list[float]]] = {label: defaultdict(list) for label in labels}
    try:
        for i, text in enumerate(texts):
            turn = i % max(len(labels), 1)
            for label in labels[turn:] + labels[:turn]:
                spent[label].clear()
                start = time.perf_counter()
                memories[label].search(text, app=APP, k=k, rerank=rerank)
                total = (time.perf_counter() - start) * 1000
                staged = sum(v for name, v in spent[label].items() if name.startswith("stage "))
                for name, v in list(spent[label].items()) + [("outside the stages", total - staged), ("total", total)]:
                    rows[label][name].append(v)
    finally:
        for restore in undo:
            restore()
    return {label: {name: statistics.median(v) for name, v in sorted(rows[label].items())} for label in labels}


# --- the run -------------------------------------------------------------------------------------------------


def measure(args: argparse.Namespace, trees: dict[str, str | None]) -> dict:
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    texts = questions(args.corpus, args.questions)
    ask(texts)
    qvec = QUESTION_VECTORS
    builds, packages, build_s = {}, {}, {}
    for label, src in trees.items():
        package = "diarist" if src is None else package_of(src)
        builds[label] = build(label, src, package, work, args.size, args.corpus)
        build_s[label] = [builds[label]["build_s"]]
        packages[label] = "diarist" if src is None else import_as(src, label, work)
    # The build row side by side: every tree builds again, in turn, --build-repeats times.
    for _ in range(args.build_repeats):
        for label, src in trees.items():
            package = "diarist" if src is None else package_of(src)
            builds[label] = build(label, src, package, work, args.size, args.corpus, again=True)
            build_s[label].append(builds[label]["build_s"])
    if args.build_repeats:
        build_s = {label: times[1:] for label, times in build_s.items()}
    # One reference for every tree: their files hold the same chunks and vectors (the same text,
    # chunked alike, vectors from its hash), so one scan (of this tree's file) is timed once a
    # question, in the rotation with every other call.
    scan = numpy_scan(builds[THIS]["path"])
    probe = python_probe(builds[THIS]["path"])
    memories, calls = {}, {("numpy", "numpy"): lambda q: scan(qvec[q]), (PROBE, PROBE): probe}
    for label in trees:
        memories[label], rows = searches(packages[label], builds[label]["path"], qvec)
        for row, fn in rows.items():
            calls[(label, row)] = fn
    # The setup's objects (the data set, the trees' modules) frozen out of the collector: the
    # passes then pay for the garbage the searches make, not for scanning the benchmark's heap.
    gc.collect()
    gc.freeze()
    load_start = os.getloadavg()
    per_pass = timed_passes(calls, texts, args.repeats)
    for label in trees:
        per_pass[(label, "numpy")] = per_pass[("numpy", "numpy")]
        per_pass[(label, PROBE)] = per_pass[(PROBE, PROBE)]
    p50 = {label: {row: statistics.median(per_pass[(label, row)]) for row in ROWS} for label in trees}
    result: dict[str, Any] = {
        "size": args.size, "corpus": args.corpus, "questions": len(texts), "repeats": args.repeats, "trees": {l: s or "this tree" for l, s in trees.items()},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "processor": platform.processor(),
                    "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")},
        "load_avg_start": load_start, "load_avg_end": os.getloadavg(),
        "chunks": {l: b["chunks"] for l, b in builds.items()},
        "build_s": {l: statistics.median(times) for l, times in build_s.items()},
        "build_s_runs": build_s, "build_side_by_side": bool(args.build_repeats),
        "p50_ms": p50,
        "ratio_to_numpy": {l: {row: p50[l][row] / p50[l]["numpy"] for row in ROWS} for l in trees},
        "p50_ms_per_pass": {l: {row: per_pass[(l, row)] for row in ROWS + (PROBE,)} for l in trees},
        # The guard's figure: each row's least disturbed pass (load only ever adds time), to the
        # numpy scan's least disturbed pass.
        "ratio_best_pass": {l: {row: min(per_pass[(l, row)]) / min(per_pass[(l, "numpy")]) for row in ROWS}
                            for l in trees},
        "probe_p50_ms": statistics.median(per_pass[(PROBE, PROBE)]),
        "ratio_to_probe_best_pass": {l: {row: min(per_pass[(l, row)]) / min(per_pass[(l, PROBE)]) for row in ROWS}
                                     for l in trees},
    }
    if args.profile:
        folder = Path(args.profile)
        folder.mkdir(parents=True, exist_ok=True)
        result["stages_ms"], result["cprofile_top"] = {}, {}
        for k in (32, 200):
            for label in trees:
                fn = calls[(label, f"hybrid k={k}")]
                result["cprofile_top"][f"{label} k={k}"] = cprofile(fn, texts, folder / f"cprofile_{label}_k{k}.txt")
            for label, stages in stage_profiles(packages, memories, texts, k).items():
                result["stages_ms"][f"{label} k={k}"] = stages
        result["stages_load_avg_end"] = os.getloadavg()
    for memory in memories.values():
        memory.close()
    return result


def table(result: dict) -> str:
    trees = list(result["p50_ms"])
    lines = [f"| {result['size']:,} chunks, p50 ms (ratio to numpy) | " + " | ".join(trees) + " |",
             "|---|" + "---|" * len(trees)]
    for row in ROWS:
        cells = [f"{result['p50_ms'][t][row]:.2f}" + ("" if row == "numpy" else f" ({result['ratio_to_numpy'][t][row]:.2f}x)")
                 for t in trees]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    if "probe_p50_ms" in result:
        lines.append(f"| {PROBE} (second reference) | " + " | ".join(f"{result['probe_p50_ms']:.2f}" for _ in trees) + " |")
    built = "median of builds in turn" if result["build_side_by_side"] else "one build each, not side by side"
    lines.append(f"| build through add_sessions (s; {built}) | "
                 + " | ".join(f"{result['build_s'][t]:.1f}" for t in trees) + " |")
    return "\n".join(lines)


def check(args: argparse.Namespace) -> int:
    """This tree's ratios against the committed baseline's; a row over is measured again.

    A row is over when its ratio to the numpy scan and its ratio to the Python probe are both
    more than ``--tolerance`` times the baseline's (a baseline without probe ratios: the numpy one
    alone). A machine unlike the baseline's (faster BLAS, slower interpreter) moves one ratio;
    our code getting slower moves both."""
    baseline = json.loads(Path(args.check).read_text())
    want = baseline["ratio_best_pass"]
    want_probe = baseline.get("ratio_to_probe_best_pass")
    # Measured as the baseline was: its size, corpus, questions and passes.
    args.size, args.corpus = baseline["size"], baseline["corpus"]
    args.questions, args.repeats = baseline["questions"], baseline["repeats"]
    over: dict[str, float] = {}
    for attempt in range(1 + args.retries):
        result = measure(args, {THIS: None})
        got = result["ratio_best_pass"][THIS]
        got_probe = result["ratio_to_probe_best_pass"][THIS]
        rows = [row for row in want if row != "numpy" and (attempt == 0 or row in over)]

        def excess(row: str) -> float:
            by_numpy = got[row] / want[row]
            return by_numpy if want_probe is None else min(by_numpy, got_probe[row] / want_probe[row])

        over = {row: excess(row) for row in rows if excess(row) > args.tolerance}
        log(table(result))
        best = min(result["p50_ms_per_pass"][THIS]["numpy"]), min(result["p50_ms_per_pass"][THIS][PROBE])
        for row in rows:
            log(f"{row}: {min(result['p50_ms_per_pass'][THIS][row]):.2f} ms; {got[row]:.2f}x numpy ({best[0]:.3f} ms), "
                f"baseline {want[row]:.2f}x ({got[row] / want[row]:.2f} of it)"
                + ("" if want_probe is None else f"; {got_probe[row]:.2f}x the probe ({best[1]:.3f} ms), baseline "
                   f"{want_probe[row]:.2f}x ({got_probe[row] / want_probe[row]:.2f} of it)")
                + ("  OVER" if row in over else ""))
        if not over:
            print(f"speed guard: every row within {args.tolerance}x its baseline ratio "
                  f"(size {args.size}, load {os.getloadavg()[0]:.1f})")
            return 0
        log(f"over the baseline: {', '.join(over)}; measuring again ({attempt + 1}/{args.retries})"
            if attempt < args.retries else "")
    print("speed guard FAILED: " + "; ".join(f"{row} at {r:.2f}x its baseline ratio" for row, r in over.items()))
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--size", type=int, default=10_000, help="chunks in each tree's database")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3, help="timed passes over every question")
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=SRC",
                        help="another checkout's src folder to run side by side (repeatable)")
    parser.add_argument("--workdir", default="/tmp/diarist-read-speed", help="where the databases are built and kept")
    parser.add_argument("--build-repeats", type=int, default=0,
                        help="build every tree again this many times, in turn, for the build row (median)")
    parser.add_argument("--profile", metavar="DIR", help="also write cProfile and per-stage timings here")
    parser.add_argument("--out", help="write the result (JSON) here; the table goes next to it as .md")
    parser.add_argument("--check", metavar="BASELINE", help="the guard: fail when a row's ratio is over the baseline's")
    parser.add_argument("--tolerance", type=float, default=1.15)
    parser.add_argument("--retries", type=int, default=2, help="--check: measure a row that is over again this often")
    parser.add_argument("--write-baseline", metavar="FILE", help="record this tree's ratios as the guard's baseline")
    parser.add_argument("--baseline-runs", type=int, default=3, help="--write-baseline: the median of this many runs")
    parser.add_argument("--corpus", choices=("longmemeval", "synthetic"), default="longmemeval",
                        help="real LongMemEval_S text (../shared/data) or seeded Zipf text (needs no data)")
    parser.add_argument("--build-child", nargs=4, metavar=("PACKAGE", "PATH", "SIZE", "CORPUS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build_child:
        package, path, size, corpus = args.build_child
        build_child(package, Path(path), int(size), corpus)
        return 0
    if args.check:
        return check(args)
    trees: dict[str, str | None] = {}
    for given in args.tree:
        name, _, src = given.partition("=")
        if not src or not Path(src).is_dir():
            parser.error(f"--tree takes NAME=SRC with SRC a folder, got {given!r}")
        trees[name] = src
    trees[THIS] = None
    if args.write_baseline:
        return write_baseline(args)
    result = measure(args, trees)
    text = json.dumps(result, indent=1)
    print(table(result))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
        Path(args.out).with_suffix(".md").write_text(table(result) + "\n")
    return 0


def write_baseline(args: argparse.Namespace) -> int:
    """This tree's ratios to numpy, each the median of ``--baseline-runs`` whole measurements
    (one run's ratios drift by up to ~10% with the machine's load)."""
    runs = [measure(args, {THIS: None}) for _ in range(args.baseline_runs)]
    for run in runs:
        log(table(run))
    ratios = {row: statistics.median(run["ratio_best_pass"][THIS][row] for run in runs) for row in ROWS}
    probe_ratios = {row: statistics.median(run["ratio_to_probe_best_pass"][THIS][row] for run in runs) for row in ROWS}
    Path(args.write_baseline).write_text(json.dumps(
        {"size": args.size, "corpus": args.corpus, "questions": args.questions, "repeats": args.repeats,
         "machine": runs[0]["machine"], "load_avg": [run["load_avg_start"] for run in runs],
         "ratio_best_pass": ratios, "ratio_to_probe_best_pass": probe_ratios,
         "runs": [{"ratio_best_pass": run["ratio_best_pass"][THIS], "p50_ms_per_pass": run["p50_ms_per_pass"][THIS],
                   "ratio_to_probe_best_pass": run["ratio_to_probe_best_pass"][THIS],
                   "probe_p50_ms_per_pass": run["p50_ms_per_pass"][THIS][PROBE]}
                  for run in runs]}, indent=1) + "\n")
    print(f"baseline written to {args.write_baseline}: " + ", ".join(f"{row} {r:.2f}x" for row, r in ratios.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
