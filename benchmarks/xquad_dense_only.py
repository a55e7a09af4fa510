"""Diagnostic: cross-lingual R@1 of the dense channel alone (cosine over the 240 English paragraphs),
next to what the fused default gives in the committed runs: does the English lexical channel pull a
German or Spanish question (shared names and cognates) toward the wrong paragraph?

Run from the repository root: python benchmarks/xquad_dense_only.py OUT.json EMBEDDER LANG...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from diarist.bench.xquad import DATA, PIVOT, load_language
from diarist.embed import get_embedder


def main(out: Path, spec: str, langs: list[str]) -> None:
    embedder = get_embedder(spec)
    paragraphs = load_language(DATA, PIVOT)[0]
    ids = list(paragraphs)
    matrix = embedder.embed_passages(list(paragraphs.values()))
    result = {"embedder": spec, "model_id": embedder.model_id, "memory": PIVOT, "r@1": {}, "r@5": {}, "n": {}}
    for lang in langs:
        questions = load_language(DATA, lang)[1]
        scores = embedder.embed_query([q for _, q, _ in questions]) @ matrix.T
        order = np.argsort(-scores, axis=1)[:, :5]
        gold = np.array([ids.index(pid) for _, _, pid in questions])
        result["n"][lang] = len(questions)
        result["r@1"][lang] = round(float(np.mean(order[:, 0] == gold)), 4)
        result["r@5"][lang] = round(float(np.mean((order == gold[:, None]).any(axis=1))), 4)
        print(lang, result["r@1"][lang], result["r@5"][lang], flush=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3:])
