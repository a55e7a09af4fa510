"""Churn against the health check (issue 31, item 7): two writer threads replace and delete
sessions of app "k" through the same ``Memory`` (as a server's workers do) while
``health.check`` runs ``--checks`` times; prints how many checks failed, and why, during the
churn and after it.

    PYTHONPATH=src python benchmarks/health_churn.py /tmp/churn.sqlite
    PYTHONPATH=src python benchmarks/health_churn.py 'postgresql:///db?host=/run/pg'
"""

from __future__ import annotations

import argparse
import collections
import threading

from diarist import health
from diarist.errors import NotFound
from diarist.memory import Memory

SESSIONS = 60


def _messages(n: int, words: str) -> list[dict]:
    return [{"role": "user", "content": f"session {n} about the garden and the river {words}"}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("location", help="a new SQLite file or a PostgreSQL URL")
    parser.add_argument("--checks", type=int, default=40)
    parser.add_argument("--route", action="store_true", help="check as GET /health does (deep=False), not as doctor")
    args = parser.parse_args()
    memory = Memory(args.location, embedder="hash")
    for i in range(SESSIONS):
        memory.add_session(_messages(i, "number"), app="k", session_id=f"s{i}")
    stop = threading.Event()

    def writer(seed: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            memory.add_session(_messages(n, f"w{seed}"), app="k", session_id=f"s{(2 * n + seed) % SESSIONS}")
            try:
                memory.delete(f"s{(2 * n + seed + 20) % SESSIONS}", app="k")
            except NotFound:
                pass

    threads = [threading.Thread(target=writer, args=(s,)) for s in (0, 1)]
    for t in threads:
        t.start()
    reasons: collections.Counter = collections.Counter()
    failing = 0
    try:
        for _ in range(args.checks):
            report = health.check(memory, ["k"], deep=not args.route)
            failing += not report.ok
            reasons.update(line[:120] for line in report.lines if line.startswith("FAIL"))
    finally:
        stop.set()
        for t in threads:
            t.join()
    after = sum(not health.check(memory, ["k"], deep=not args.route).ok for _ in range(5))
    memory.close()
    print(f"{failing}/{args.checks} checks failing during churn, {after}/5 after;", reasons.most_common(5))


if __name__ == "__main__":
    main()
