"""What the sentence vectors cost (``diarist.read.sentences``): ingest time with and without them,
and the everyday questions' context time with the stage on and off, side by side in one process
(alternating, medians: the machine is shared). No embedding cache: the writer embeds every
sentence, as a user's memory does.

    python benchmarks/sentences_cost.py OUT.json [--repeats 3] [--weight 0.5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from diarist.bench.everyday import APP, DATA, haystack_sessions, load_questions
from diarist.embed import get_embedder
from diarist.memory import Memory
from diarist.store.sql.store import SQLStore


def ingest_s(sessions, facts, embedder, keep: bool) -> tuple[float, Memory]:
    memory = Memory(":memory:", embedder=embedder)
    if not keep:
        memory.store.keeps_sentences = False  # this instance only: the writer stores none
    t0 = time.perf_counter()
    memory.add_sessions(sessions, app=APP)
    if facts:
        memory.add_facts(facts, app=APP)
    return time.perf_counter() - t0, memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--weight", type=float, default=0.5, help="the stage's weight when on")
    args = parser.parse_args()
    embedder = get_embedder("minilm")
    questions = load_questions(DATA, "dev")
    haystack = questions[0].haystack
    asked = [q for q in questions if q.haystack == haystack]
    times: dict[str, list[float]] = {"ingest_with": [], "ingest_without": []}
    query: dict[str, list[float]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as scratch:
        sessions, facts = haystack_sessions(DATA, haystack, Path(scratch) / haystack)
        for _ in range(args.repeats):
            for keep in (True, False):
                seconds, memory = ingest_s(sessions, facts, embedder, keep)
                times["ingest_with" if keep else "ingest_without"].append(seconds)
                if keep:
                    base = memory.settings
                    for q in asked:
                        for name, weight in (("on", args.weight), ("off", 0.0)):
                            memory.settings = replace(base, sentence_weight=weight)
                            t0 = time.perf_counter()
                            memory.context(q.text, app=APP, now=q.asked)
                            query[name].append((time.perf_counter() - t0) * 1000)
                    memory.settings = base
                memory.close()
    assert SQLStore.keeps_sentences  # the class kept its own
    n_items = len(sessions) + len(facts)
    report = {"weight_on": args.weight, "haystack": haystack, "items": n_items, "repeats": args.repeats,
              "ingest_s_median": {k: round(statistics.median(v), 3) for k, v in times.items()},
              "ingest_ratio": round(statistics.median(times["ingest_with"]) / statistics.median(times["ingest_without"]), 3),
              "context_ms_p50": {k: round(statistics.median(v), 2) for k, v in query.items()},
              "questions": len(asked)}
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
