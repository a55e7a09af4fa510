"""Query latency of the read path at 100k chunks, today's against this tree's, side by side.

    python benchmarks/read_latency.py --baseline /tmp/old/src [--size 100000] [--repeats 5] \
        [--queries 60] [--out benchmarks/results/read/latency_100k.json]

The database is scale.py's (real LongMemEval_S text, synthetic clustered vectors, built once
under --workdir and reused). The baseline tree's package is copied under another name
(``diarist_base``: its imports are relative) so that both run in this one process on the same
file, and every query is timed with every variant in turn, the order rotating from query to
query, so that load on a shared machine hits all alike. Each times ``Memory.search`` (k=32,
the default second stage, the default dense index, no floor: the lookup embedder has none)
after one warm-up pass. Variants:

* ``baseline``: the other tree's ``Memory.search`` (chunk hits);
* ``chunks``: this tree, ``group=False`` (chunk hits, the same work as before the stages);
* ``default``: this tree's default (memories, not chunks);
* ``explain``: this tree's default with ``explain=True``.

Reported: each variant's p50 over all its timings, and the ratio to the baseline's p50.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale import APP, LONGMEMEVAL, LookupEmbedder, build, finish, queries  # noqa: E402

from diarist.memory import Memory  # noqa: E402

VARIANTS = ("baseline", "chunks", "default", "explain")


def baseline_memory(src: str, workdir: Path, path: Path, lookup: dict) -> object:
    """A Memory of the baseline tree, imported as ``diarist_base``, with the lookup embedder."""
    copy = workdir / "baseline_pkg"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(Path(src) / "diarist", copy / "diarist_base", ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(copy))
    base_embedder = importlib.import_module("diarist_base.embed.base").Embedder
    methods = {k: v for k, v in vars(LookupEmbedder).items() if not k.startswith("__") or k == "__init__"}
    embedder = type("BaseLookupEmbedder", (base_embedder,), methods)(lookup)
    return importlib.import_module("diarist_base.memory").Memory(path, embedder=embedder, floor=None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="src folder of the diarist to compare with")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--workdir", default="/tmp/diarist-scale")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"scale-{args.size}.sqlite"
    with gzip.open(LONGMEMEVAL) as f:
        records = json.load(f)
    if not path.exists():
        print(f"building {path}", file=sys.stderr, flush=True)
        build(path, args.size, records)
    texts, vectors = queries(records, args.queries, path)
    lookup = dict(zip(texts, vectors))
    current = Memory(path, embedder=LookupEmbedder(lookup), floor=None)
    chunks = current.derive(group=False)
    searches = {
        "baseline": (lambda q, m=baseline_memory(args.baseline, work, path, lookup): m.search(q, app=APP, k=32)),
        "chunks": lambda q: chunks.search(q, app=APP, k=32),
        "default": lambda q: current.search(q, app=APP, k=32),
        "explain": lambda q: current.search(q, app=APP, k=32, explain=True),
    }
    for text in texts:  # warm-up: indexes loaded, caches filled
        for search in searches.values():
            search(text)
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for repeat in range(args.repeats):
        for i, text in enumerate(texts):
            turn = (i + repeat) % len(VARIANTS)
            for variant in VARIANTS[turn:] + VARIANTS[:turn]:
                start = time.perf_counter()
                searches[variant](text)
                times[variant].append((time.perf_counter() - start) * 1000)
        print(f"repeat {repeat}: " + ", ".join(f"{v} {statistics.median(times[v]):.2f} ms" for v in VARIANTS),
              file=sys.stderr, flush=True)
    p50 = {v: statistics.median(t) for v, t in times.items()}
    result = {"size": args.size, "queries": len(texts), "repeats": args.repeats, "k": 32, "cpus": os.cpu_count(),
              "load1": os.getloadavg()[0], "p50_ms": p50,
              "ratio_to_baseline": {v: p50[v] / p50["baseline"] for v in VARIANTS}}
    return finish(result, args.out)


if __name__ == "__main__":
    sys.exit(main())
