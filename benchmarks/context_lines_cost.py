"""What lines by meaning costs a context block: ``Memory.context`` with the lines and pointers
(the default) against the block of passages whole (``trim="none"``), side by side in one run
(issue 26; not a test).

    python benchmarks/context_lines_cost.py --data ../shared/data/locomo_dev.json.gz --haystacks 2 \
        --out benchmarks/results/context/lines_cost.json

Each haystack's memory is built as the context benchmark builds it (``ContextRunner``: the
library's defaults, the lab's embedding cache for the stored chunks); every question is asked with
both settings in turn, the order alternating from question to question, so load on a shared machine
hits both alike. Each way of showing memories by their lines (``lines``, ``pointers``) is timed twice: as a running
agent or server has it (the memory keeps the vectors of lines it has embedded,
``read.lines.LineVectors``, so a line shown for an earlier question is not embedded again) and,
``*_cold``, with that cache emptied before every question (a one-shot CLI call). Reported: each setting's p50 and p90 in ms, their
ratios to the passages' time, and the lines embedded per block in each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from diarist import settings
from diarist.bench.configs import get_config
from diarist.bench.context_bench import ContextHaystack, ContextRunner
from diarist.bench.runner import APP, LOADERS
from diarist.read.lines import LineVectors

SETTINGS = {"passages": "none", "lines": "lines", "lines_cold": "lines", "pointers": "pointers", "pointers_cold": "pointers"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="locomo", choices=sorted(LOADERS))
    parser.add_argument("--data", required=True)
    parser.add_argument("--haystacks", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    runner = ContextRunner(get_config("default"), settings.EMBEDDER, "benchmarks/.cache/embeddings.sqlite", False)
    haystacks = [ContextHaystack(h.unit, h.sessions, h.questions) for h in LOADERS[args.dataset](args.data, args.haystacks, None)]
    prepared = runner.base._prepare(haystacks)
    runner.base._embed_missing(prepared)
    times: dict[str, list[float]] = {name: [] for name in SETTINGS}
    embedded: dict[str, list[int]] = {name: [] for name in SETTINGS if name != "passages"}
    for hay in haystacks:
        memory = runner.memory(hay, prepared[hay.unit])
        memory.context(hay.questions[0].text, app=APP, trim="lines")  # warm-up (the model, not the lines)
        kept = {name: LineVectors(memory.embedder.embed) for name in embedded}
        for n, q in enumerate(hay.questions):
            order = list(SETTINGS.items()) if n % 2 == 0 else list(SETTINGS.items())[::-1]
            for name, trim in order:
                if name.endswith("_cold"):
                    kept[name] = LineVectors(memory.embedder.embed)
                memory._line_vectors = kept.get(name, memory._line_vectors)
                before = memory._line_vectors.embedded
                t0 = time.perf_counter()
                memory.context(q.text, app=APP, now=q.date, trim=trim)
                times[name].append((time.perf_counter() - t0) * 1000)
                if name in embedded:
                    embedded[name].append(memory._line_vectors.embedded - before)
        memory.close()
    runner.close()

    def cells(values: list[float]) -> dict:
        ordered = sorted(values)
        return {"p50_ms": round(statistics.median(ordered), 2), "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 2)}

    result = {"command": f"python benchmarks/context_lines_cost.py --data {args.data} --haystacks {args.haystacks} --out {args.out}",
              "dataset": args.dataset, "questions": len(times["passages"]), **{name: cells(v) for name, v in times.items()},
              **{f"ratio_p50_{name}": round(statistics.median(times[name]) / statistics.median(times["passages"]), 2)
                 for name in embedded},
              "lines_embedded_per_block": {name: {"mean": round(statistics.mean(v), 1), "max": max(v)}
                                           for name, v in embedded.items()}}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
