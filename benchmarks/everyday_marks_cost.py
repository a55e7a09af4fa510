"""What the marks by meaning cost ``Memory.context``: side by side in one run, on the everyday
set's memories (every question, both halves), each question asked with the marks by meaning and
with the marks by words (the block before them), the order alternating.

    python benchmarks/everyday_marks_cost.py [--repeats 3] [--cold-every 5] --out benchmarks/results/everyday-marks/marks_cost.json

Two conditions: ``warm``, the memory's line vectors kept between questions (an agent asks many
questions of the same memories); ``cold``, emptied before every call (every line and sentence
embedded anew; every 5th question). Reported: the p50 of each, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import diarist.memory as memory_module
from diarist import settings
from diarist.bench.configs import get_config
from diarist.bench.everyday import APP, DATA, build_memory, haystack_sessions, load_questions
from diarist.bench.runner import Runner
from diarist.read.budget import Draft


@dataclass
class WordMarksDraft(Draft):
    """The block as before the marks by meaning: no line vectors, so the marks read words."""

    def __post_init__(self) -> None:
        self.line_vectors = None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cold-every", type=int, default=5, help="time the cold condition on every Nth question")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    questions = load_questions(DATA, "all")
    base = Runner(get_config("default"), settings.EMBEDDER, progress=False)
    times: dict[str, dict[str, list[float]]] = {c: {"meaning": [], "words": []} for c in ("warm", "cold")}
    with tempfile.TemporaryDirectory() as scratch:
        for name in dict.fromkeys(q.haystack for q in questions):
            sessions, facts = haystack_sessions(DATA, name, Path(scratch) / name)
            memory = build_memory(sessions, facts, base.embedder, base.cache)
            try:
                asked = [q for q in questions if q.haystack == name]
                for q in asked:  # the question vectors cached, as a warm process has them
                    memory.context(q.text, app=APP, now=q.asked)
                # Warm first, every question (the vectors the warm-up embedded kept), then cold:
                # emptying the line vectors between warm questions would time the misses it makes.
                for condition in ("warm", "cold"):
                    for repeat, (n, q) in ((r, item) for r in range(args.repeats) for item in enumerate(asked)):
                        if condition == "cold" and n % args.cold_every:
                            continue
                        variants = ["meaning", "words"] if (n + repeat) % 2 == 0 else ["words", "meaning"]
                        for variant in variants:
                            if condition == "cold":
                                memory._line_vectors._vectors.clear()
                            memory_module.Draft = Draft if variant == "meaning" else WordMarksDraft
                            t0 = time.perf_counter()
                            memory.context(q.text, app=APP, now=q.asked)
                            times[condition][variant].append((time.perf_counter() - t0) * 1000)
            finally:
                memory_module.Draft = Draft
                memory.close()
    base.close()
    result = {"questions": len(questions), "repeats": args.repeats, "cold_every": args.cold_every}
    for condition, by_variant in times.items():
        p50 = {v: statistics.median(t) for v, t in by_variant.items()}
        result[condition] = {"p50_ms": {k: round(v, 2) for k, v in p50.items()},
                             "ratio": round(p50["meaning"] / p50["words"], 3), "n": len(by_variant["meaning"])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
