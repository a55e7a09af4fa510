"""Where a search request's time goes on the server (issue 31, item 11), and onnxruntime's
idle-thread spinning on against off, side by side in one run.

The store: one app of ``--size`` chunks of real LongMemEval text (benchmarks/scale.py's build)
whose vectors are synthetic (a Gaussian mixture around real MiniLM vectors; embedding 100k
chunks with the real model would take hours on two cores), recorded as MiniLM's, so that the
server opens it with the real default embedder: every query is embedded by the real model. The
dense index is the server's default (``auto``: the exact int8 scan below 200,000 chunks; a graph
left beside the file would be used instead, and at 100k it measured slower: 44 against 24 ms).

Two servers run in this process (uvicorn, diarist's protocol, one worker each), one per
spinning setting, each with its own ``Memory`` on the same file. Each real LongMemEval question
is sent over HTTP with a key, to one server then the other (the order alternating), ``--repeats``
times. Timers wrap the route's parts (auth, the app list, ``Memory.search``, the whole ASGI
app) and the read path's stages (``diarist.read.search.stages``: the stages the trace records),
the question's parsing, the query's embedding and each channel's search. Medians per request:

* HTTP: uvicorn's parsing, the loopback and the client (the client's time minus the app's);
* route: request validation and the response's JSON (the app's time minus auth, the app list
  and the search);
* the read path's stages; ``read_channels`` holds the query's embedding and the dense search
  (the lexical one runs in its thread meanwhile: its own time is shown, and ``fuse`` waits for it).

Then ``--clients`` threads send questions at once to each server in turn (throughput, p50/p95).

    PYTHONPATH=src nice -n 10 python benchmarks/server_search_breakdown.py --size 100000 \\
        --keep /tmp/breakdown --out benchmarks/results/server/search_breakdown
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # noqa: E402  (benchmarks/scale.py: the corpus and its build)

from diarist.embed.onnx_minilm import MiniLMOnnxEmbedder  # noqa: E402
from diarist.keys import KeyStore  # noqa: E402
from diarist.memory import Memory  # noqa: E402
from diarist.read import search as read_path  # noqa: E402
from diarist.server.app import create_app  # noqa: E402
from diarist.server.protocol import RequestTimeoutProtocol  # noqa: E402

#: The request being measured (sequential phase only): part -> milliseconds, summed.
CURRENT: dict[str, float] = defaultdict(float)
MEASURING = threading.Event()


def timed(part: str, fn: Callable) -> Callable:
    """``fn`` with its time added to CURRENT[part] while MEASURING."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            if MEASURING.is_set():
                CURRENT[part] += (time.perf_counter() - start) * 1000
    return wrapper


def instrument_read_path() -> None:
    """Timers around the stages the trace records, and the question's parsing (module-wide)."""
    real_stages = read_path.stages
    read_path.stages = lambda *a, **kw: [timed(f"stage {s.__name__}", s) for s in real_stages(*a, **kw)]
    read_path.Question = timed("question parse", read_path.Question)
    KeyStore.check = timed("auth (key check)", KeyStore.check)


def instrument(memory: Memory) -> None:
    memory.embedder.embed_query = timed("embed query", memory.embedder.embed_query)
    memory.dense.search = timed("dense channel", memory.dense.search)
    memory.lexical.search = timed("lexical channel (its thread)", memory.lexical.search)
    memory.search = timed("Memory.search", memory.search)
    memory.apps = timed("app list", memory.apps)


def app_timer(app: Any) -> Any:
    """The ASGI app, its time from the request to the last body message handed to uvicorn
    (noted before it is handed on: the client may hold the response before a ``finally`` ran)."""
    async def timed_app(scope: dict, receive: Callable, send: Callable) -> None:
        start = time.perf_counter()

        async def timed_send(message: dict) -> None:
            last = message.get("type") == "http.response.body" and not message.get("more_body", False)
            if last and MEASURING.is_set():
                CURRENT["in app"] += (time.perf_counter() - start) * 1000
            await send(message)

        await app(scope, receive, timed_send if scope.get("type") == "http" else send)
    return timed_app


def serve(memory: Memory, port: int) -> uvicorn.Server:
    config = uvicorn.Config(app_timer(create_app(memory)), host="127.0.0.1", port=port, log_level="warning",
                            http=RequestTimeoutProtocol, timeout_keep_alive=5)
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server


def build(path: Path, size: int, records: list[dict]) -> dict:
    """The store (once): scale.py's build, its vectors recorded as MiniLM's."""
    if path.exists():
        return {"reused": str(path)}
    scale.LookupEmbedder.model_id = MiniLMOnnxEmbedder.model_id  # the vectors stand for MiniLM's
    start = time.perf_counter()
    out = scale.build(path, size, records)
    return out | {"build_s": round(time.perf_counter() - start, 1)}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def breakdown(samples: list[dict[str, float]]) -> dict[str, float]:
    """Median of each part over the requests, and the derived HTTP and route shares."""
    for s in samples:
        s["HTTP: uvicorn parse, loopback, client"] = s["client total"] - s["in app"]
        s["route: validation, response JSON"] = (s["in app"] - s.get("auth (key check)", 0) - s.get("app list", 0)
                                                 - s["Memory.search"])
        inner = s.get("question parse", 0) + sum(v for k, v in s.items() if k.startswith("stage "))
        s["Memory.search outside the stages"] = s["Memory.search"] - inner
    parts = sorted({k for s in samples for k in s})
    return {k: round(statistics.median(s.get(k, 0.0) for s in samples), 2) for k in parts}


def load(url: str, key: str, questions: list[str], clients: int, seconds: float) -> dict:
    """``clients`` threads sending questions for ``seconds``: throughput and latency."""
    latencies: list[float] = []
    stop = time.perf_counter() + seconds

    def client(offset: int) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
            i = offset
            while time.perf_counter() < stop:
                start = time.perf_counter()
                http.post(f"/v1/apps/{scale.APP}/search", json={"query": questions[i % len(questions)], "k": 10}).raise_for_status()
                latencies.append((time.perf_counter() - start) * 1000)
                i += clients

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    return {"requests": len(latencies), "per_s": round(len(latencies) / seconds, 1),
            "p50_ms": round(percentile(latencies, 0.5), 1), "p95_ms": round(percentile(latencies, 0.95), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, required=True, help="folder of the store (built once, then reused)")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--load-seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2, help="load rounds per setting, alternating")
    parser.add_argument("--out", type=Path, help="results folder (breakdown.json and manifest.json)")
    args = parser.parse_args()
    with gzip.open(scale.LONGMEMEVAL) as f:
        records = json.load(f)
    args.keep.mkdir(parents=True, exist_ok=True)
    path = args.keep / f"breakdown-{args.size}.sqlite"
    built = build(path, args.size, records)
    questions = list(dict.fromkeys(r["question"] for r in records))[: args.queries]
    if Path(f"{path}.hnsw").exists():
        print(f"note: {path}.hnsw exists: the graph serves these searches", file=sys.stderr)
    instrument_read_path()
    servers, keys, memories = {}, {}, {}
    for port, (name, spinning) in enumerate((("spinning on", True), ("spinning off", False)), 8731):
        memory = Memory(path, embedder=MiniLMOnnxEmbedder(spinning=spinning))
        keys[name] = memory.keys.create(scale.APP)[0]
        instrument(memory)
        memories[name], servers[name] = memory, (serve(memory, port), f"http://127.0.0.1:{port}")
    clients = {name: httpx.Client(base_url=url, headers={"Authorization": f"Bearer {keys[name]}"}, timeout=60)
               for name, (_, url) in servers.items()}
    for http in clients.values():  # warm up: the graph mapped, the model's first run
        for q in questions[:5]:
            http.post(f"/v1/apps/{scale.APP}/search", json={"query": q, "k": 10}).raise_for_status()
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
    names = list(servers)
    for repeat in range(args.repeats):
        for i, q in enumerate(questions):
            for name in (names if (i + repeat) % 2 == 0 else names[::-1]):
                CURRENT.clear()
                MEASURING.set()
                start = time.perf_counter()
                clients[name].post(f"/v1/apps/{scale.APP}/search", json={"query": q, "k": 10}).raise_for_status()
                total = (time.perf_counter() - start) * 1000
                MEASURING.clear()
                samples[name].append(dict(CURRENT, **{"client total": total}))
    sequential = {name: {"median_ms": breakdown(s), "p95_client_ms": round(percentile([x["client total"] for x in s], 0.95), 1)}
                  for name, s in samples.items()}
    under_load: dict[str, list[dict]] = {name: [] for name in servers}
    for _ in range(args.rounds):
        for name, (_, url) in servers.items():
            under_load[name].append(load(url, keys[name], questions, args.clients, args.load_seconds))
    result = {"chunks": args.size, "store": built, "questions": len(questions), "repeats": args.repeats,
              "dense": type(memories[names[0]].dense).__name__, "reranker": memories[names[0]].reranker.name
              if memories[names[0]].reranker else None, "sequential": sequential,
              "under_load": {"clients": args.clients, "seconds": args.load_seconds, "rounds": under_load}}
    print(json.dumps(result, indent=2))
    for server, _ in servers.values():
        server.should_exit = True
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "breakdown.json").write_text(json.dumps(result, indent=2) + "\n")
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        manifest = {"kind": "server-search-breakdown", "what": "where a search request's time goes on the server "
                    f"at {args.size:,} chunks, per stage, and onnxruntime spinning on against off (issue 31 item 11)",
                    "commit": commit or "unknown", "command": [" ".join(["python", *sys.argv])], "files": ["breakdown.json"]}
        (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
