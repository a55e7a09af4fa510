"""What the inspector's costliest pages take at 100k chunks (issue 45): the curate page (the
newest 4,000 chunks compared, at the default thresholds and at ``related=0.05``, where nearly every
pair passes), and an app page filtered by dates at the largest offset (past the last item).

An app of ``--size`` facts (hash embedder: building is cheap; its 64-d vectors of near-identical
texts make nearly every pair similar, the curate page's worst case), dated a minute apart. Each
page is requested through the ASGI app ``--calls`` times; time is the median, memory the peak
that Python's allocator saw (``tracemalloc``, numpy's arrays included) above what was held
before one more request.

    PYTHONPATH=src python benchmarks/inspector_cost.py --size 100000 --keep /tmp/inspector100k
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tracemalloc
from datetime import datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient

from diarist.memory import Memory
from diarist.ui import local_app
from diarist.write.validate import FactInput

WORDS = "garden river lantern market orchard kite weather window harbor cedar".split()


def build(db: Path, n: int) -> None:
    start = datetime(2020, 1, 1)
    with Memory(db, embedder="hash") as memory:
        for first in range(0, n, 5_000):
            memory.add_facts([FactInput(f"fact {i} {WORDS[i % 10]} {WORDS[i * 7 % 10]} token{i}", f"f{i}",
                                        (start + timedelta(minutes=i)).isoformat())
                              for i in range(first, min(n, first + 5_000))], app="big")


def measure(client: TestClient, url: str, calls: int) -> dict:
    """Median time of ``calls`` requests, then one more under tracemalloc for the peak (tracing
    slows Python down: it is not timed)."""
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        answer = client.get(url)
        times.append(time.perf_counter() - started)
        assert answer.status_code == 200, (url, answer.status_code, answer.text[:300])
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    client.get(url)
    peak = (tracemalloc.get_traced_memory()[1] - base) / 2**20
    tracemalloc.stop()
    return {"url": url, "seconds_p50": round(statistics.median(times), 3), "seconds_max": round(max(times), 3),
            "peak_mb_added": round(peak, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--keep", type=Path, required=True, help="folder of the store (built once, reused)")
    args = parser.parse_args()
    db = args.keep / f"inspector-{args.size}.sqlite"
    if not db.exists():
        args.keep.mkdir(parents=True, exist_ok=True)
        build(db, args.size)
    with Memory(db, embedder="hash", create=False) as memory:
        client = TestClient(local_app(memory), base_url="http://127.0.0.1")
        client.get("/ui/apps/big")  # counts cached, pages warm
        pages = ["/ui/apps/big/curate", "/ui/apps/big/curate?related=0.05&duplicate=0.97",
                 f"/ui/apps/big?kind=fact&since=2020-01-01&until=2030-01-01&offset={args.size + 1000}",
                 "/ui/apps/big?kind=fact&since=2020-01-01&until=2020-01-02&offset=0"]
        for url in pages:
            print(json.dumps({"chunks": args.size, **measure(client, url, args.calls)}), flush=True)


if __name__ == "__main__":
    main()
