"""Issue 43, a check: would the default model (all-MiniLM-L6-v2) gain from the memories' mean taken
off (read.center) on questions in another language than English, over memories in theirs? The same
numpy replay as ``xling_study.py`` (its fusion at MiniLM's share for such questions: lexical 0.45,
``lexical/weights.py``; no sentence blend, MiniLM's weight is 0), over captures of the product
(``xling_capture.py --embedder minilm --memory L --lang L``), the share chosen leaving one development
language out. English questions are not in it: MiniLM's English rankings were to stay as they are.

    python benchmarks/center_minilm_cv.py OUT.json MONO_de.npz MONO_es.npz MONO_ru.npz MONO_zh.npz MONO_ar.npz MONO_hi.npz
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import xling_study as study  # noqa: E402

CENTERS = (0.0, 0.25, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0)
MINILM_FOREIGN_DENSE_WEIGHT = 0.55  # 1 - LEXICAL_WEIGHT["all-MiniLM-L6-v2"]["*"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("captures", nargs="+", type=Path)
    args = parser.parse_args()
    study.DENSE_WEIGHT = MINILM_FOREIGN_DENSE_WEIGHT
    point = study.SHIPPED | {"w": 0.0, "agreement": 1.0, "gate": "always"}
    langs = {}
    for path in args.captures:
        langs |= study.load(path)[1]
    hits = {lang: np.stack([data.hits(point | {"center": c}) for c in CENTERS], axis=1)  # [question, share]
            for lang, data in langs.items()}
    r1 = {lang: h.mean(axis=0) for lang, h in hits.items()}
    product = {lang: float((data.top == data.gold_fact).mean()) for lang, data in langs.items()}
    folds = study.lolo(hits, list(CENTERS), 0)  # each fold: the share the other five choose
    for held, fold in folds.items():
        print(held, fold)
    result = {"grid": CENTERS, "product_r@1": product,
              "r@1": {lang: [round(float(v), 4) for v in values] for lang, values in r1.items()}, "folds": folds,
              "chosen_on_all": CENTERS[int(np.argmax(np.mean(list(r1.values()), axis=0)))]}
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print("chosen on all:", result["chosen_on_all"])


if __name__ == "__main__":
    main()
