"""Fit ``lexical.weights.LEXICAL_WEIGHT`` (the lexical channel's share of the convex fusion, per
question language) by leave-one-language-out cross-validation on XQuAD's development languages,
same-language (questions and the 240 paragraphs in the language).

Every question is searched as ``Memory.search`` does (the whole read path: both channels, the
convex fusion, the second stage), once per lexical share of the grid (``dense_weight = 1 - share``;
the per-language table is emptied while fitting, so the grid value is what runs); each question is
embedded once. For each held-out language the share that maximises mean R@1 over the other five is
chosen and scored on the held-out one (out of sample), next to that language's own best (in sample)
and the default share (0.25). ``--aside DIR --apply SHARE``: after fitting, score the kept-aside
languages (files in DIR) at the default and at SHARE only.

    python benchmarks/xquad_weight_cv.py OUT.json [--embedder minilm] [--every 1] [--lang de,es,...]
    python benchmarks/xquad_weight_cv.py OUT.json --lang el,ro,th,tr,vi --data DIR --grid 0.25,0.45
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import diarist.lexical.weights as weights
from diarist import settings
from diarist.bench.configs import get_config
from diarist.bench.runner import APP, DEFAULT_CACHE, Runner
from diarist.bench.xquad import DATA, RANK_DEPTH, embed_questions_once, hits_at_one, leave_one_language_out, load_language, paragraph_memory

DEFAULT = round(1.0 - settings.FUSION_DENSE_WEIGHT, 4)
GRID = (0.15, 0.2, DEFAULT, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7)
LANGUAGES = ("de", "es", "ru", "zh", "ar", "hi")


def cross_validate(r1: dict[str, np.ndarray], grid: tuple[float, ...]) -> dict[str, dict]:
    """Per held-out language: the share the others choose, its R@1 there, the language's best, the default's."""
    return leave_one_language_out(r1, grid, DEFAULT, "default")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--every", type=int, default=1, help="ask every Nth question of each language")
    parser.add_argument("--lang", default=",".join(LANGUAGES))
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--grid", default=",".join(map(str, GRID)), help="lexical shares, comma-separated")
    args = parser.parse_args()
    langs = [s for s in args.lang.split(",") if s]
    grid = tuple(float(g) for g in args.grid.split(","))
    weights.LEXICAL_WEIGHT = {}  # the grid value is what runs
    base = Runner(get_config("default"), args.embedder, DEFAULT_CACHE, progress=False)
    embedder = base.embedder
    asked: dict[str, np.ndarray] = {}
    embed_questions_once(embedder)
    t0 = time.perf_counter()
    try:
        for lang in langs:
            paragraphs, questions = load_language(args.data, lang)
            memory = paragraph_memory(paragraphs, embedder, base.cache)
            try:
                asked[lang] = hits_at_one(memory, questions[:: args.every], [{"dense_weight": round(1.0 - s, 10)} for s in grid])
            finally:
                memory.close()
            print(lang, dict(zip(grid, asked[lang].mean(axis=0).round(3).tolist())), flush=True)
    finally:
        base.close()
    result = {
        "embedder": args.embedder, "model_id": embedder.model_id, "mode": "same language", "every": args.every,
        "grid": list(grid), "default": DEFAULT, "n": {lang: int(len(h)) for lang, h in asked.items()},
        "r@1": {lang: dict(zip(map(str, grid), h.mean(axis=0).round(4).tolist())) for lang, h in asked.items()},
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    if len(asked) > 1 and DEFAULT in grid:
        result["folds"] = cross_validate(asked, grid)
        result["chosen_on_all"] = grid[int(np.argmax(np.mean([h.mean(axis=0) for h in asked.values()], axis=0)))]
        print(json.dumps(result["folds"], indent=1), "chosen on all:", result["chosen_on_all"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
