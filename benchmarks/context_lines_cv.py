"""Fit the lines-by-meaning trim (``diarist.read.lines``) by cross-validation on both dev sets (issue 26; not a test).

    python benchmarks/context_trim_cv.py capture locomo ../shared/data/locomo_dev.json.gz /tmp/locomo.pkl --stride 2
    python benchmarks/context_trim_cv.py capture longmemeval ../shared/data/longmemeval_s_dev.json.gz /tmp/lme.pkl --stride 3
    python benchmarks/context_lines_cv.py /tmp/locomo.pkl /tmp/lme.pkl --turn --out benchmarks/results/context/lines_cv.json

The captures are ``context_trim_cv.py``'s: per question, the memories the block is built from before
the cut. This replays the block exactly: the shipped cut (``diarist.read.cut``, as the library
computes its signals), then ``diarist.context.build_context`` with each grid point's
``LinesParams``, the lines' cosines to the question from the shipped embedder (the vectors are kept
in ``<capture>.lines.pkl``: a second fit embeds nothing), scored by the benchmark's own
``block_cells``. Admissibility and objective are ``benchmarks/context_cv.py``'s (evidence in the
block at least the ranking's top 5 less one point on each training set, else at least the shipped
block's; objective: the evidence share of tokens plus one less the off-topic tokens over the
budget). With ``--turn`` (the fit the library ships) the evidence *turn* in the block counts in the
objective too: a trim that keeps the session but not the turn that answers has not kept the
evidence; without it the turn is reported beside (``lines_cv_share.json``). In sample,
cross-dataset and 5-fold (``context_cv.report``).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import pickle
import sys
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from context_cv import report
from context_trim_cv import OFF, RANKING, Replayed, cut_hits, matrices, replayed

from diarist import settings
from diarist.bench.context_bench import block_cells
from diarist.bench.rows import read_rows
from diarist.context import build_context
from diarist.embed import get_embedder
from diarist.read.cut import CutParams
from diarist.read.lines import LinesParams

# Lines: the best memory whole (or by its lines), the memories below it by their closest lines.
LINES = [LinesParams(first_whole_cosine=w, first_lines=3, rest_lines=r, max_rest=m, min_line_cosine=c, context=0, after=a)
         for w, r, m, c, a in itertools.product((-1.0, 0.3, 0.35, 0.4, 0.45, 0.5), (1, 2), (2, 3, 4, 6, 0), (-1.0, 0.3), (0, 1))]
# Passages and pointers: the best 2-4 memories by their passages, as the shipped block shows them,
# the memories below them by their closest line (a pointer to what the budget would leave out).
POINTERS = [LinesParams(first_whole_cosine=w, first_lines=3, rest_lines=1, max_rest=m, min_line_cosine=c, context=0,
                        after=a, whole=n)
            for n, w, m, c, a in itertools.product((2, 3, 4), (-1.0, 0.3), (3, 4, 5, 6, 8), (-1.0, 0.3), (0, 1))]
# The same, gated: when the best memory's closest line is under the gate, every memory by its closest lines.
GATED = [replace(p, gate=g) for p in POINTERS for g in (0.3, 0.35, 0.4, 0.45)]
GRID = LINES + POINTERS + GATED


def grid_points() -> list[dict]:
    cut = asdict(CutParams())
    return [{"cut": cut, "trim": None}] + [{"cut": cut, "trim": asdict(p)} for p in GRID]


class LineVectors:
    """Unit vectors of lines (and questions) by the shipped embedder, kept in a file beside the capture."""

    def __init__(self, path: Path):
        self.path = path
        self.vectors: dict[str, np.ndarray] = pickle.loads(path.read_bytes()) if path.exists() else {}
        self.embedder = get_embedder(settings.EMBEDDER)

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        for start in range(0, len(missing), 256):
            part = missing[start:start + 256]
            v = np.asarray(self.embedder.embed(part), dtype=np.float32)
            self.vectors.update(zip(part, v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)))
        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)

    def save(self) -> None:
        self.path.write_bytes(pickle.dumps(self.vectors))


def _key(point: dict) -> str:
    return json.dumps(point, sort_keys=True)


def outcomes(path: Path) -> tuple[list[Replayed], list[list[dict]]]:
    """Every question of one capture under every grid point. The cells are kept per point next to
    the capture (``<capture>.lines-outcomes.pkl``): a grid that grows computes its new points only."""
    done = path.with_suffix(".lines-outcomes.pkl")
    saved = pickle.loads(done.read_bytes()) if done.exists() else {"questions": None, "points": {}}
    grid = grid_points()
    todo = [g for g in grid if _key(g) not in saved["points"]]
    if todo:
        questions, computed = _replay(path, [g["trim"] for g in todo])
        saved["questions"] = questions
        saved["points"].update({_key(g): column for g, column in zip(todo, computed)})
        done.write_bytes(pickle.dumps(saved))
    columns = [saved["points"][_key(g)] for g in grid]
    return saved["questions"], [list(row) for row in zip(*columns)]


def _replay(path: Path, trims: list[dict | None]) -> tuple[list[Replayed], list[list[dict]]]:
    """The benchmark's cells of every question of a capture under each trim (one column a trim)."""
    cap = pickle.loads(path.read_bytes())
    vectors = LineVectors(path.with_suffix(".lines.pkl"))
    count = functools.lru_cache(maxsize=None)(vectors.embedder.count_tokens)
    d = cap["dataset"]
    top5 = {r["id"]: r["metrics"]["r_any@5"] for r in read_rows(RANKING / d / "default")}
    keep = [r for r in cap["records"] if r["kind"] in OFF or (r["q"].gold and (d == "locomo" or not r["q"].abstention))]
    params = [None if t is None else LinesParams(**t) for t in trims]
    questions, columns = [], [[] for _ in trims]
    for n, record in enumerate(keep):
        questions.append(Replayed(d, record, top5.get(record["q"].qid)))
        hits = cut_hits(record, CutParams())
        question = vectors([record["q"].text])[0]
        cosines = lambda lines: vectors(list(lines)) @ question if lines else np.zeros(0)  # noqa: E731
        for column, trim in zip(columns, params):
            block = build_context(hits, count, terms=record["terms"], notes=record["notes"], trim=trim,
                                  line_cosines=cosines)
            column.append(block_cells(block, record["q"], cap["sessions"], cap["dates"]))
        if n % 100 == 0:
            print(d, n, len(keep), flush=True)
            vectors.save()
    vectors.save()
    return questions, columns


def fit(paths: list[Path], out_path: Path, turn: bool = False, keep_turn: bool = False) -> None:
    questions, rows = replayed(paths, outcomes)
    grid = grid_points()
    out = matrices(questions, rows, grid)
    before = {}
    for d in sorted({q.dataset for q in questions}):
        legit = [i for i, q in enumerate(questions) if q.dataset == d and q.kind not in OFF]
        off = [i for i, q in enumerate(questions) if q.dataset == d and q.kind in OFF]
        personal = [i for i in off if questions[i].kind == "offtopic_personal"]
        before[d] = {"n": len(legit), "evidence_in_block": round(float(out["evidence"][legit, 0].mean()), 4),
                     "evidence_turn_in_block": round(float(out["turn"][legit, 0].mean()), 4),
                     "evidence_token_share": round(float(out["ev_tokens"][legit, 0].sum() / out["tokens"][legit, 0].sum()), 4),
                     "offtopic_tokens_median": float(np.median(out["served"][off, 0])),
                     "personal_tokens_median": float(np.median(out["served"][personal, 0]))}
    result = {"command": " ".join(["python", *sys.argv]), "captures": [str(p) for p in paths],
              "grid_size": len(grid), **report(questions, grid, out, before, turn, keep_turn)}
    result["grid"] = {"cut": asdict(CutParams()), "lines": [asdict(p) for p in LINES],
                      "pointers": [asdict(p) for p in POINTERS], "gated": [asdict(p) for p in GATED]}
    out_path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(json.dumps({k: result[k] for k in ("today", "in_sample", "cross_dataset")}, indent=1, default=str))
    print(json.dumps(result["five_fold"], indent=1, default=str))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("captures", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/context/lines_cv.json"))
    parser.add_argument("--turn", action="store_true",
                        help="count the evidence turn in the block in the objective, beside the share")
    parser.add_argument("--keep-turn", action="store_true",
                        help="admit only points that show the evidence turn as often as the shipped block, less a point")
    args = parser.parse_args(argv)
    fit(args.captures, args.out, args.turn, args.keep_turn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
