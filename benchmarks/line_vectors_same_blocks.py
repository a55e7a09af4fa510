"""Proof that storing the lines' vectors moves no block: the context lab's haystacks (a slice),
each built twice in one process, once with ``store_lines=False`` (the trim embeds the lines it
shows, as before line vectors were stored) and once with the default (it reads them); every
question asked of both (``ContextRunner.ask``, the lab's own call), the two blocks' texts compared.

    nice -n 5 python benchmarks/line_vectors_same_blocks.py [--limit 1] [--stride 25] [--out FILE]

LoCoMo's first ``--limit`` conversations and every ``--stride``-th LongMemEval question, with the
lab's off-topic questions. Exit status 1 when any block differs. The embedding cache
(benchmarks/.cache) serves the chunks' vectors and, after a first run, the lines'.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"
FILES = {"locomo": "locomo_dev.json.gz", "longmemeval": "longmemeval_s_dev.json.gz"}


def compare(dataset: str, limit: int | None, stride: int | None) -> dict:
    from diarist import settings
    from diarist.bench import context_bench
    from diarist.bench.configs import get_config
    from diarist.bench.context_bench import ContextRunner, question_lines, with_offtopic
    from diarist.bench.runner import LOADERS
    from diarist.memory import Memory

    loaded = LOADERS[dataset](str(DATA / FILES[dataset]), limit, stride)
    haystacks = with_offtopic(dataset, loaded, question_lines(HERE / "data" / "offtopic_questions.txt"),
                              question_lines(HERE / "data" / "offtopic_personal_questions.txt"))
    runner = ContextRunner(get_config("default"), settings.EMBEDDER, HERE / ".cache" / "embeddings.sqlite",
                           progress=False)
    prepared = runner.base._prepare(haystacks)
    runner.base._embed_missing(prepared)
    out = {"questions": 0, "blocks_differ": [], "empty_blocks": 0, "lines_embedded_at_query": {"before": 0, "stored": 0},
           "lines_read_from_store": 0, "query_ms": {"before": 0.0, "stored": 0.0}}
    try:
        for hay in haystacks:
            context_bench.Memory = functools.partial(Memory, store_lines=False)
            try:
                before = runner.memory(hay, prepared[hay.unit])
            finally:
                context_bench.Memory = Memory
            stored = runner.memory(hay, prepared[hay.unit])
            try:
                for q in hay.questions:
                    blocks = {}
                    for name, memory in (("before", before), ("stored", stored)):
                        t0 = time.perf_counter()
                        blocks[name] = str(runner.ask(memory, q)[0])
                        out["query_ms"][name] += (time.perf_counter() - t0) * 1000
                    out["questions"] += 1
                    out["empty_blocks"] += not blocks["stored"]
                    if blocks["before"] != blocks["stored"]:
                        out["blocks_differ"].append(q.qid)
                out["lines_embedded_at_query"]["before"] += before._line_vectors.embedded
                out["lines_embedded_at_query"]["stored"] += stored._line_vectors.embedded
                out["lines_read_from_store"] += stored._line_vectors.read
            finally:
                before.close()
                stored.close()
    finally:
        runner.close()
    out["query_ms"] = {k: round(v / max(out["questions"], 1), 1) for k, v in out["query_ms"].items()}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=1, help="LoCoMo conversations")
    parser.add_argument("--stride", type=int, default=25, help="every Nth LongMemEval question")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    result = {"locomo": compare("locomo", args.limit, None), "longmemeval": compare("longmemeval", None, args.stride)}
    for dataset, r in result.items():
        print(f"{dataset}: {r['questions']} questions ({r['empty_blocks']} empty blocks), {len(r['blocks_differ'])} blocks "
              f"differ; lines embedded at query time {r['lines_embedded_at_query']['before']} before, "
              f"{r['lines_embedded_at_query']['stored']} stored ({r['lines_read_from_store']} read); mean query ms "
              f"{r['query_ms']['before']} before, {r['query_ms']['stored']} stored")
    if args.out:
        Path(args.out).write_text(json.dumps({"limit": args.limit, "stride": args.stride, **result}, indent=2) + "\n")
    same = not any(r["blocks_differ"] for r in result.values())
    print("blocks identical" if same else "BLOCKS MOVED")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
