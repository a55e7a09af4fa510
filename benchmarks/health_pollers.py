"""A keyed search's latency with and without 8 clients polling ``/health`` (issue 45), for one or
more source trees side by side (the build before a change and after it).

For each tree: ``diarist serve`` on a copy of the store (its own key), then ``--searches``
keyed searches one after another, alone and while 8 threads (in a process of their own) poll
``/health``, each every ``--interval`` seconds (0: back to back); the
two phases alternate ``--rounds`` times and each phase's median is reported, with the polls
answered.

    PYTHONPATH=src python benchmarks/health_pollers.py --db /tmp/inspector100k/inspector-100000.sqlite \\
        --app big --interval 0.25 0 --src /tmp/old45/src src
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

QUERIES = ["garden river lantern", "market orchard", "kite weather window", "harbor cedar token123",
           "river market token9876", "lantern kite"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(src: Path, *args: str, **kwargs) -> subprocess.CompletedProcess | subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(src), "DIARIST_DB": "", "ORT_DISABLE_TELEMETRY": "1"}
    command = [sys.executable, "-c", "from diarist.cli import main; main()", *args]
    if kwargs.pop("background", False):
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return subprocess.run(command, env=env, capture_output=True, text=True, check=True, **kwargs)


def _searches(url: str, key: str, app: str, n: int) -> list[float]:
    times = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
        for i in range(n):
            started = time.perf_counter()
            client.post(f"/v1/apps/{app}/search", json={"query": QUERIES[i % len(QUERIES)], "k": 10}).raise_for_status()
            times.append((time.perf_counter() - started) * 1000)
    return times


def measure(src: Path, db: Path, app: str, searches: int, rounds: int, interval: float) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "m.sqlite"
        shutil.copy(db, copy)
        key = _run(src, "keys", "create", "--app", app, "--db", str(copy)).stdout.split()[-1]
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        server = _run(src, "serve", "--db", str(copy), "--embedder", "hash", "--port", str(port), background=True)
        try:
            for _ in range(600):
                try:
                    if httpx.get(f"{url}/health", timeout=5).status_code in (200, 503):
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            _searches(url, key, app, 5)  # warm: the app's indexes loaded
            alone, polled, polls = [], [], 0
            for _ in range(rounds):
                alone += _searches(url, key, app, searches)
                # The pollers run in a process of their own: their threads do not take this
                # process's interpreter lock from the search being timed.
                pollers = subprocess.Popen([sys.executable, __file__, "--poll", url, str(interval)], stdout=subprocess.PIPE,
                                           text=True)
                assert pollers.stdout.readline().strip() == "polling"  # started, imports done, first polls answered
                polled += _searches(url, key, app, searches)
                pollers.terminate()
                polls += int(pollers.communicate(timeout=60)[0].strip() or 0) - 8
        finally:
            server.terminate()
            server.wait(timeout=60)
    return {"src": str(src), "poll_interval_s": interval, "search_ms_p50_alone": round(statistics.median(alone), 1),
            "search_ms_p50_with_8_health_pollers": round(statistics.median(polled), 1),
            "ratio": round(statistics.median(polled) / statistics.median(alone), 2), "health_polls_answered": polls}


def poll_forever(url: str, interval: float) -> None:
    """8 threads polling ``url``/health (each waiting ``interval`` seconds between its polls, 0: back
    to back) until SIGTERM; prints how many were answered."""
    import signal

    stop = threading.Event()
    counts = [0] * 8
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def poll(slot: int) -> None:
        with httpx.Client(base_url=url, timeout=120) as client:
            while not stop.is_set():
                client.get("/health")
                counts[slot] += 1
                stop.wait(interval)

    threads = [threading.Thread(target=poll, args=(n,), daemon=True) for n in range(8)]
    for t in threads:
        t.start()
    while sum(counts) < 8 and not stop.is_set():
        time.sleep(0.01)
    print("polling", flush=True)
    while not stop.wait(0.1):
        pass
    print(sum(counts), flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--poll"]:
        poll_forever(sys.argv[2], float(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--searches", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=float, nargs="+", default=[0.25],
                        help="each poller's wait between polls, seconds (0: back to back); one run per value")
    parser.add_argument("--src", type=Path, nargs="+", required=True, help="source trees (their src/ folders)")
    args = parser.parse_args()
    for interval in args.interval:
        for src in args.src:
            print(json.dumps(measure(src.resolve(), args.db, args.app, args.searches, args.rounds, interval)), flush=True)


if __name__ == "__main__":
    main()
