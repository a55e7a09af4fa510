"""``Memory.context`` latency at 100k chunks, a baseline tree's against this tree's, side by side
in one run (issue 41: the block's stages moved into the read path; not a test).

    python benchmarks/context_latency.py --baseline /tmp/main/src [--size 100000] [--repeats 5] \
        [--queries 60] [--out benchmarks/results/read/context_latency_100k.json]

As ``read_latency.py``: scale.py's database (real LongMemEval_S text, synthetic clustered vectors,
built once under --workdir), the baseline's package imported as ``diarist_base`` in this process,
every query timed with each variant in turn, the order rotating. Each variant is
``Memory.context(query)`` with the calibrated cut (``CutParams()``) and the trim by the question's
terms (``TrimParams()``: the lookup embedder can embed no line), so every block stage runs:

* ``baseline``: the other tree;
* ``context``: this tree;
* ``explain``: this tree with ``explain=True``.

Reported: each variant's p50 over all its timings, and the ratio to the baseline's p50.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from read_latency import baseline_memory  # noqa: E402
from scale import APP, LONGMEMEVAL, LookupEmbedder, build, finish, queries  # noqa: E402

from diarist.memory import Memory  # noqa: E402
from diarist.read.cut import CutParams  # noqa: E402
from diarist.read.trim import TrimParams  # noqa: E402

def scale_database(size: int, workdir: str, n_queries: int) -> tuple[Path, Path, list[str], dict]:
    """scale.py's database of ``size`` chunks (built once, as read_latency.py builds it), and the
    queries with their vectors."""
    path = Path(workdir) / f"scale-{size}.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(LONGMEMEVAL) as f:
        records = json.load(f)
    if not path.exists():
        build(path, size, records)
    texts, vectors = queries(records, n_queries, path)
    return path.parent, path, texts, dict(zip(texts, vectors))


def rotating_times(blocks: dict, texts: list[str], repeats: int) -> dict[str, list[float]]:
    """Each text through every variant, the order rotating from text to text and repeat to repeat."""
    names = list(blocks)
    times: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        for i, text in enumerate(texts):
            shift = (i + repeat) % len(names)
            for name in names[shift:] + names[:shift]:
                start = time.perf_counter()
                blocks[name](text)
                times[name].append((time.perf_counter() - start) * 1000)
        print(f"repeat {repeat}: " + ", ".join(f"{n} {statistics.median(t):.2f} ms" for n, t in times.items()),
              file=sys.stderr, flush=True)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="src folder of the diarist to compare with")
    for flag, default in (("--size", 100_000), ("--repeats", 5), ("--queries", 60)):
        parser.add_argument(flag, type=int, default=default)
    parser.add_argument("--workdir", default="/tmp/diarist-scale")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    work, path, texts, lookup = scale_database(args.size, args.workdir, args.queries)
    current = Memory(path, embedder=LookupEmbedder(lookup), floor=None, cut=CutParams())
    base = baseline_memory(args.baseline, work, path, lookup)
    base.cut = importlib.import_module("diarist_base.read.cut").CutParams()
    base_trim = importlib.import_module("diarist_base.read.trim").TrimParams()
    blocks = {
        "baseline": lambda q: base.context(q, app=APP, trim=base_trim),
        "context": lambda q: current.context(q, app=APP, trim=TrimParams()),
        "explain": lambda q: current.context(q, app=APP, trim=TrimParams(), explain=True),
    }
    for text in texts:  # warm-up: indexes loaded, caches filled
        for block in blocks.values():
            block(text)
    p50 = {name: statistics.median(t) for name, t in rotating_times(blocks, texts, args.repeats).items()}
    result = {"size": args.size, "queries": len(texts), "repeats": args.repeats, "cpus": os.cpu_count(),
              "load1": os.getloadavg()[0], "p50_ms": p50,
              "ratio_to_baseline": {name: p50[name] / p50["baseline"] for name in p50}}
    return finish(result, args.out)


if __name__ == "__main__":
    sys.exit(main())
