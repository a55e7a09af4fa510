"""The inspector's latency at 100k chunks: the first page and the Ask page, over real HTTP.

    python benchmarks/ui_latency.py [--size 100000] [--repeats 10] [--workdir /tmp/diarist-ui-bench]
        [--out benchmarks/results/ui/latency_100k.json]

The store is scale.py's (real LongMemEval_S text packed into ~1,100-character chunks, synthetic
clustered vectors, one app), built once into the work folder and reused while it has the size
asked for. The pages are served by ``diarist ui``'s app (uvicorn on loopback, in this process)
and fetched with httpx, as a browser would fetch their HTML. Timed, each a median (and the
slowest) over ``--repeats`` passes, interleaved so load hits all alike, after one untimed pass:

* ``apps``: /ui/, the apps with their counts (what `diarist ui` opens on);
* ``memories``: /ui/apps/bench, the first page of the app's memories (50, each read whole);
* ``ask``: /ui/apps/bench/ask?q=..., a different LongMemEval question each pass: the hits with
  their why and the context block (two searches, with the default second stage).

Targets (issue 27; measured, not asserted): first page < 300 ms, Ask page < 500 ms.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import APP, LONGMEMEVAL, LookupEmbedder, build, log, queries  # noqa: E402

from diarist.memory import Memory  # noqa: E402
from diarist.ui import local_app  # noqa: E402

TARGETS_MS = {"apps": 300, "memories": 300, "ask": 500}


def serve(memory: Memory) -> tuple[str, uvicorn.Server, threading.Thread]:
    server = uvicorn.Server(uvicorn.Config(local_app(memory), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}", server, thread


def fetch_ms(client: httpx.Client, url: str) -> float:
    t0 = time.perf_counter()
    answer = client.get(url)
    elapsed = (time.perf_counter() - t0) * 1000
    answer.raise_for_status()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="chunks in the app")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--workdir", default="/tmp/diarist-ui-bench")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    with gzip.open(LONGMEMEVAL) as f:
        records = json.load(f)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"ui-{args.size}.sqlite"
    result: dict = {"size": args.size, "cpus": os.cpu_count(), "load1_start": os.getloadavg()[0]}
    if path.exists():
        with Memory(path, embedder=LookupEmbedder(), create=False) as memory:
            if memory.app_stats(APP)["chunks"] != args.size:
                path.unlink()
    if not path.exists():
        log(f"building {path} (once)")
        result["build"] = build(path, args.size, records)
    texts, vectors = queries(records, args.repeats + 1, path)
    memory = Memory(path, embedder=LookupEmbedder(dict(zip(texts, vectors))))
    result["chunks"] = memory.app_stats(APP)["chunks"]
    url, server, thread = serve(memory)
    pages = {"apps": lambda n: "/ui/", "memories": lambda n: f"/ui/apps/{APP}",
             "ask": lambda n: f"/ui/apps/{APP}/ask?" + httpx.QueryParams({"q": texts[n]}).__str__()}
    times: dict[str, list[float]] = {name: [] for name in pages}
    with httpx.Client(base_url=url, timeout=60) as client:
        result["first_ms"] = {name: fetch_ms(client, page(0)) for name, page in pages.items()}  # untimed warm-up pass
        for n in range(1, args.repeats + 1):
            for name, page in pages.items():
                times[name].append(fetch_ms(client, page(n)))
    server.should_exit = True
    thread.join(timeout=30)
    memory.close()
    for name, values in times.items():
        result[name] = {"median_ms": round(statistics.median(values), 1), "max_ms": round(max(values), 1),
                        "target_ms": TARGETS_MS[name], "met": statistics.median(values) < TARGETS_MS[name]}
    result["load1_end"] = os.getloadavg()[0]
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
