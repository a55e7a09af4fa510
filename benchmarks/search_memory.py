"""Searches under load, with the server's memory watched (issue 31, "held": searches under load
with flat memory). Builds a store of ``--sessions`` sessions (hash embedder unless ``--embedder``),
starts ``diarist serve`` on it, and has ``--clients`` threads send ``--searches`` searches in all
(varied questions, keep-alive connections); the server's resident memory (VmRSS) is sampled
every ``--every`` searches. Flat memory: after the warm-up (the first sample), the resident size
does not keep growing with the number of searches served.

    PYTHONPATH=src python benchmarks/search_memory.py --out benchmarks/results/server/search-memory/search_memory.json
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from diarist.memory import Memory

WORDS = ("garden river train ferry porto bike brakes tart servings recipe invoice meeting doctor "
         "holiday sister birthday guitar lesson python pathlib strings deadline budget vaccine").split()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def build(db: Path, sessions: int, embedder: str) -> str:
    rng = random.Random(7)
    with Memory(db, embedder=embedder) as memory:
        for n in range(sessions):
            turns = [{"role": "user" if t % 2 == 0 else "assistant",
                      "content": " ".join(rng.choice(WORDS) for _ in range(30))} for t in range(6)]
            memory.add_session(turns, app="load", session_id=f"s{n}")
    out = subprocess.run([sys.executable, "-m", "diarist.cli", "keys", "create", "--db", str(db), "--app", "load"],
                         capture_output=True, text=True, check=True)
    return out.stdout.split()[0]  # the key is the first word printed, once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--searches", type=int, default=30000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--embedder", default="hash")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "load.sqlite"
        key = build(db, args.sessions, args.embedder)
        port = _free_port()
        server = subprocess.Popen([sys.executable, "-m", "diarist.cli", "serve", "--db", str(db), "--port", str(port),
                                   "--log-level", "warning"], env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
        try:
            for _ in range(300):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
            figures = drive(port, key, server.pid, args)
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(json.dumps(figures, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


def drive(port: int, key: str, pid: int, args: argparse.Namespace) -> dict:
    lock = threading.Lock()
    served = {"n": 0, "errors": 0, "statuses": {}}
    samples: list[tuple[int, int]] = []
    per_client = args.searches // args.clients

    def client(seed: int) -> None:
        rng = random.Random(seed)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for _ in range(per_client):
            body = json.dumps({"query": " ".join(rng.sample(WORDS, 3)), "k": 5})
            try:
                conn.request("POST", "/v1/apps/load/search", body, {"Authorization": f"Bearer {key}",
                                                         "Content-Type": "application/json"})
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                status = 0
            with lock:
                served["n"] += 1
                served["statuses"][status] = served["statuses"].get(status, 0) + 1
                if status != 200:
                    served["errors"] += 1
                if served["n"] % args.every == 0:
                    samples.append((served["n"], _rss_kib(pid)))
        conn.close()

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    first, last = samples[0][1], samples[-1][1]
    # Growth over the second half against the first: a leak grows in both, a warm-up only in the first.
    half = len(samples) // 2
    return {
        "searches": served["n"], "errors": served["errors"], "statuses": served["statuses"],
        "clients": args.clients, "sessions": args.sessions, "embedder": args.embedder,
        "searches_per_s": round(served["n"] / seconds, 1),
        "rss_kib_samples": samples,
        "rss_first_sample_mib": round(first / 1024, 1), "rss_last_sample_mib": round(last / 1024, 1),
        "rss_max_mib": round(max(r for _, r in samples) / 1024, 1),
        "rss_growth_first_half_mib": round((samples[half][1] - first) / 1024, 1),
        "rss_growth_second_half_mib": round((last - samples[half][1]) / 1024, 1),
    }


if __name__ == "__main__":
    main()
