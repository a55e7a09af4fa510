"""What lines by meaning costs a context block: ``Memory.context`` with the lines trim against the
shipped block, side by side in one run (issue 26; not a test).

    python benchmarks/context_lines_cost.py --data ../shared/data/locomo_dev.json.gz --haystacks 2 \
        --out benchmarks/results/context/lines_cost.json

Each haystack's memory is built as the context benchmark builds it (``ContextRunner``: the
library's defaults, the lab's embedding cache for the stored chunks); every question is asked with
both settings in turn, the order alternating from question to question, so load on a shared machine
hits both alike. The lines are embedded at query time (nothing cached), as a user's would be.
Reported: each setting's p50 and p90 in ms, their ratio, and the texts embedded per lines block (its lines and the question).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from vestige import settings
from vestige.bench.configs import get_config
from vestige.bench.context_bench import ContextHaystack, ContextRunner
from vestige.bench.runner import APP, LOADERS

SETTINGS = {"shipped": "auto", "lines": "lines"}


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
    lines: list[int] = []
    embed = runner.base.embedder.embed
    for hay in haystacks:
        memory = runner.memory(hay, prepared[hay.unit])
        memory.context(hay.questions[0].text, app=APP, trim="lines")  # warm-up
        for n, q in enumerate(hay.questions):
            order = list(SETTINGS.items()) if n % 2 == 0 else list(SETTINGS.items())[::-1]
            for name, trim in order:
                counted: list[int] = []

                def counting(texts, _embed=embed, _counted=counted):
                    _counted.append(len(texts))
                    return _embed(texts)

                memory.embedder.embed = counting  # type: ignore[method-assign]
                t0 = time.perf_counter()
                memory.context(q.text, app=APP, now=q.date, trim=trim)
                times[name].append((time.perf_counter() - t0) * 1000)
                del memory.embedder.embed
                if name == "lines":
                    lines.append(sum(counted))
        memory.close()
    runner.close()

    def cells(values: list[float]) -> dict:
        ordered = sorted(values)
        return {"p50_ms": round(statistics.median(ordered), 2), "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 2)}

    result = {"command": f"python benchmarks/context_lines_cost.py --data {args.data} --haystacks {args.haystacks} --out {args.out}",
              "dataset": args.dataset, "questions": len(lines), **{name: cells(v) for name, v in times.items()},
              "ratio_p50": round(statistics.median(times["lines"]) / statistics.median(times["shipped"]), 2),
              "texts_embedded_per_block": {"mean": round(statistics.mean(lines), 1), "max": max(lines)}}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
