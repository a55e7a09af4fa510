"""What following the subject forward (``diarist.read.follow``) costs a context read, side by side:
every question of the everyday set asked with the step off and on in turn, the order alternating,
in one process over the same memories (the first ask of each question warms both alike).

    python benchmarks/everyday_follow_cost.py [--half all] [--repeats 3] --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from diarist import settings
from diarist.bench.configs import get_config
from diarist.bench.everyday import DATA, haystack_memories, load_questions
from diarist.bench.runner import APP, Runner
from diarist.read import follow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", default="all")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    questions = load_questions(DATA, args.half)
    base = Runner(get_config("default"), settings.EMBEDDER, None, progress=False)
    variants = {"off": None, "on": follow.FOLLOW_COSINE}
    times: dict[str, list[float]] = {name: [] for name in variants}
    first_ms: dict[str, list[float]] = {name: [] for name in variants}  # a memory's first questions: nothing cached yet
    try:
        for memory, asked in haystack_memories(DATA, questions, base.embedder, base.cache):
            for n, q in enumerate(asked):
                order = list(variants) if n % 2 == 0 else list(reversed(variants))
                for repeat in range(args.repeats + 1):
                    for name in order:
                        follow.FOLLOW_COSINE = variants[name]
                        t0 = time.perf_counter()
                        memory.context(q.text, app=APP, now=q.asked)
                        ms = (time.perf_counter() - t0) * 1000
                        (first_ms if repeat == 0 else times)[name].append(ms)
    finally:
        follow.FOLLOW_COSINE = variants["on"]
        base.close()
    p50 = {name: statistics.median(v) for name, v in times.items()}
    report = {"questions": len(questions), "repeats": args.repeats, "cpus": os.cpu_count(), "load1": os.getloadavg()[0],
              "p50_ms": p50, "ratio_on_to_off": p50["on"] / p50["off"],
              "first_ask_p50_ms": {name: statistics.median(v) for name, v in first_ms.items()}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
