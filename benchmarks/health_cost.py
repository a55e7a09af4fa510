"""What one ``GET /health`` costs as an app grows, with the HNSW graph serving it (issue 31,
item 10): it must answer in milliseconds at any size, and ``diarist doctor``'s deep check
(the graph's recall against exact) must stay bounded.

For each size: an app of that many facts (hash embedder, 64-d, so building is cheap), its graph
built and persisted (``dense="hnsw"``), then ``/health`` called through the ASGI app ``--calls``
times (the first call not counted: it maps the graph) and ``health.check`` (doctor) once.

    PYTHONPATH=src python benchmarks/health_cost.py --sizes 10000 100000 --out benchmarks/results/health/cost_after.json

``--keep FOLDER`` keeps each size's store there (``m-<size>.sqlite`` and its graph) and reuses
it on the next run, so a 1M-chunk store is built once and measured before and after a change:

    PYTHONPATH=src nice -n 10 python benchmarks/health_cost.py --sizes 1000000 --keep /tmp/health1m
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from diarist import health
from diarist.memory import Memory
from diarist.server.app import create_app
from diarist.write.validate import FactInput

WORDS = "garden river lantern market orchard kite weather window harbor cedar".split()


def build(db: Path, n: int) -> None:
    with Memory(db, embedder="hash", dense="hnsw") as memory:
        batch = 5_000
        for start in range(0, n, batch):
            memory.add_facts([FactInput(f"fact {i} {WORDS[i % 10]} {WORDS[i * 7 % 10]} token{i}", f"f{i}")
                              for i in range(start, min(n, start + batch))], app="big")
        memory.search("garden river", app="big", k=5, rerank=False)  # builds and saves the graph


def measure(n: int, calls: int, keep: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        db = (keep or Path(folder)) / f"m-{n}.sqlite"
        start = time.perf_counter()
        if not db.exists():  # a kept store is built once, on its first run
            db.parent.mkdir(parents=True, exist_ok=True)
            build(db, n)
        built = time.perf_counter() - start
        with Memory(db, embedder="hash", dense="hnsw", create=False) as memory:
            client = TestClient(create_app(memory))
            statuses = [client.get("/health").status_code]
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                response = client.get("/health")
                times.append((time.perf_counter() - start) * 1000)
                statuses.append(response.status_code)
            start = time.perf_counter()
            report = health.check(memory)
            doctor_s = time.perf_counter() - start
    return {"chunks": n, "build_s": round(built, 1), "health_ms_p50": round(statistics.median(times), 1),
            "health_ms_max": round(max(times), 1), "health_statuses": sorted(set(statuses)), "doctor_s": round(doctor_s, 2), "doctor_ok": report.ok,
            "doctor_failing": [line for line in report.lines if line.startswith("FAIL")]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep", type=Path, help="keep each size's store in this folder and reuse it")
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        rows.append(measure(n, args.calls, args.keep))
        print(json.dumps(rows[-1]), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
