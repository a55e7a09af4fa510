"""Fit the context block's cut and trimming together by cross-validation on both dev sets (issue 26; not a test).

    python benchmarks/context_trim_cv.py capture locomo ../shared/data/locomo_dev.json.gz /tmp/locomo.pkl --stride 2
    python benchmarks/context_trim_cv.py capture longmemeval ../shared/data/longmemeval_s_dev.json.gz /tmp/lme.pkl --stride 3
    python benchmarks/context_trim_cv.py fit /tmp/locomo.pkl /tmp/lme.pkl --out benchmarks/results/context/trim_cv.json

``capture`` builds each haystack's memory as the context benchmark does (``diarist.bench.context_bench``:
the library's floor, fusion, second stage; the off-topic questions asked as ``benchmarks/floor.py``
asks them) and records, for every question, the search results the block is built from *before the
cut* (the ``CONTEXT_K`` best memories with their passages), the question's terms and its labels.

``fit`` replays the block exactly on them: ``diarist.read.cut.cut`` with the grid's cut parameters
(signals computed as ``diarist.read.search.cut_stage`` computes them), then
``diarist.context.build_context`` with the grid's trimming (``diarist.read.trim``), scored by the
benchmark's own ``block_cells``. A point is admissible when on each training dataset the block
holds an evidence session at least as often as the ranking's top 5 (the committed ``default``
ranking rows) less one point, or, where no point reaches that, at least as often as the shipped
block before trimming (the same cut, no trim); among admissible points the objective is
``benchmarks/context_cv.py``'s: the mean over datasets of the evidence token share plus one less the
off-topic questions' mean tokens over the budget; points that empty the Porto block (a first
memory with neither the question's words nor a cosine of 0.25 left out) are measured, not
chosen. In sample, cross-dataset and 5-fold
(``floor_cv.fold_of``) reports, from ``context_cv.report``.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import pickle
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

from context_cv import RANKING, _plain, report

from diarist import settings
from diarist.bench.configs import get_config
from diarist.bench.context_bench import (OFFTOPIC, OFFTOPIC_PERSONAL, ContextRunner, block_cells, kind_of,
                                         question_lines, with_offtopic)
from diarist.bench.rows import read_rows
from diarist.bench.runner import APP, LOADERS
from diarist.context import build_context
from diarist.lexical import analyze
from diarist.read.cut import CutParams, ItemSignals, cut
from diarist.read.trim import TrimParams

CUT_GRID = [CutParams(c, g, v) for c, g, v in itertools.product((0.2, 0.3), (0.07, 0.03), (0.34, 0.5, 2.0))]
TRIM_GRID = [None] + [TrimParams(c, 0.2, False, r, m) for c, r, m in itertools.product((0, 1), (1, 0), (-1.0, 0.25))]
OFF = ("offtopic", "offtopic_personal")


def capture(dataset: str, data: str, out: Path, limit: int | None, stride: int | None) -> None:
    loaded = LOADERS[dataset](data, limit, stride)
    haystacks = with_offtopic(dataset, loaded, question_lines(OFFTOPIC), question_lines(OFFTOPIC_PERSONAL))
    runner = ContextRunner(get_config("default"), settings.EMBEDDER, "benchmarks/.cache/embeddings.sqlite", False)
    prepared = runner.base.prepare(haystacks)
    records, sessions, dates = [], {}, {}
    for hay in haystacks:
        items = prepared[hay.unit]
        memory = runner.memory(hay, items)
        memory.cut = None  # every memory the search gives; the cut is replayed
        sessions.update({p.session_id: p.messages for p in items})
        dates.update({p.session_id: p.date for p in items})
        for q in hay.questions:
            results = memory.search(q.text, app=APP, k=settings.CONTEXT_K, now=q.date)
            records.append({"q": q, "kind": kind_of(hay, q), "unit": hay.unit, "hits": list(results),
                            "notes": list(results.notes),
                            "terms": list(results.question.own_terms) if results.question else []})
        memory.close()
        print(hay.unit, len(records), flush=True)
    runner.close()
    with open(out, "wb") as f:
        pickle.dump({"dataset": dataset, "records": records, "sessions": sessions, "dates": dates}, f)


class Replayed:
    """One captured question as context_cv.report reads it."""

    def __init__(self, dataset: str, record: dict, top5: float | None):
        q = record["q"]
        self.dataset, self.id, self.kind, self.unit = dataset, q.qid, record["kind"], record["unit"]
        self.row = {"id": q.qid, "kind": record["kind"], "question": q.text}
        self.top5 = top5
        self.has_gold = bool(q.gold)
        self.today: dict = {}


def cut_hits(record: dict, params: CutParams) -> list:
    wanted = set(record["terms"])
    hits = record["hits"]
    signals = [ItemSignals(h.scores.get("dense"), len(wanted.intersection(analyze(h.text))) / len(wanted)
                           if wanted else 0.0) for h in hits]
    return [h for h, why in zip(hits, cut(signals, params)) if why is None]


def grid_points() -> list[dict]:
    return [{"cut": asdict(c), "trim": None if t is None else asdict(t)} for c in CUT_GRID for t in TRIM_GRID]


def outcomes(path: Path) -> tuple[list[Replayed], list[list[dict]]]:
    """Every question of one capture under every grid point (kept next to the capture: a
    second fit reads it back)."""
    done = path.with_suffix(".outcomes.pkl")
    if done.exists():
        with open(done, "rb") as f:
            saved = pickle.load(f)
        if saved["grid"] == grid_points():
            return saved["questions"], saved["rows"]
    with open(path, "rb") as f:
        cap = pickle.load(f)
    from diarist.embed import get_embedder
    count = functools.lru_cache(maxsize=None)(get_embedder(settings.EMBEDDER).count_tokens)
    questions: list[Replayed] = []
    rows: list[list[dict]] = []
    d = cap["dataset"]
    top5 = {r["id"]: r["metrics"]["r_any@5"] for r in read_rows(RANKING / d / "default")}
    keep = [r for r in cap["records"] if r["kind"] in OFF or (r["q"].gold and (d == "locomo" or not r["q"].abstention))]
    for n, record in enumerate(keep):
        questions.append(Replayed(d, record, top5.get(record["q"].qid)))
        per_point, seen = [], {}
        for c in CUT_GRID:
            hits = cut_hits(record, c)
            for t in TRIM_GRID:
                key = (tuple(h.id for h in hits), t)  # cuts that keep the same memories build the same block
                if key not in seen:
                    block = build_context(hits, count, terms=record["terms"], notes=record["notes"], trim=t)
                    seen[key] = block_cells(block, record["q"], cap["sessions"], cap["dates"])
                per_point.append(seen[key])
        rows.append(per_point)
        if n % 50 == 0:
            print(d, n, len(keep), flush=True)
    with open(done, "wb") as f:
        pickle.dump({"grid": grid_points(), "questions": questions, "rows": rows}, f)
    return questions, rows


def matrices(questions: list[Replayed], rows: list[list[dict]], grid: list[dict]) -> dict[str, np.ndarray]:
    shape = (len(questions), len(grid))
    out = {k: np.zeros(shape) for k in ("evidence", "ev_tokens", "tokens", "served", "empty", "memories", "turn")}
    for i, per_point in enumerate(rows):
        for j, c in enumerate(per_point):
            out["evidence"][i, j] = bool(c["evidence_in_block"])
            out["turn"][i, j] = bool(c["evidence_turn_in_block"])
            out["ev_tokens"][i, j] = c["evidence_tokens"]
            out["tokens"][i, j] = c["snippet_tokens"]
            out["served"][i, j] = c["n_tokens"]
            out["empty"][i, j] = c["empty"]
            out["memories"][i, j] = c["n_memories"]
    shipped = grid.index({"cut": asdict(CutParams()), "trim": None})
    for i, q in enumerate(questions):
        q.today = {"evidence": out["evidence"][i, shipped], "turn": out["turn"][i, shipped]}
    return out


def replayed(paths: list[Path], replay=None) -> tuple[list[Replayed], list[list[dict]]]:
    """Every capture's questions and their rows under each grid point (``replay``: ``outcomes``
    of this script, or another script's), concatenated."""
    questions: list[Replayed] = []
    rows: list[list[dict]] = []
    for p in paths:
        qs, rs = (replay or outcomes)(p)
        questions += qs
        rows += rs
    return questions, rows


def fit(paths: list[Path], out_path: Path) -> None:
    questions, rows = replayed(paths)
    grid = grid_points()
    out = matrices(questions, rows, grid)
    # The Porto case ("Where do I live?" next to "The user moved to Porto in June 2025.")
    # must keep its fact: it holds no word of the question and its cosine is under 0.25, so a
    # first memory with neither is not emptied out of the block (points measured, not chosen).
    allowed = [j for j, g in enumerate(grid) if g["trim"] is None or g["trim"]["unmatched_min_cosine"] <= -1]
    measured = {"points": len(grid), "chosen_among": len(allowed),
                "left_out": "trim.unmatched_min_cosine > -1 (empties the Porto block)"}
    grid = [grid[j] for j in allowed]
    out = {k: v[:, allowed] for k, v in out.items()}
    shipped = grid.index({"cut": asdict(CutParams()), "trim": None})
    before = {}
    for d in sorted({q.dataset for q in questions}):
        legit = [i for i, q in enumerate(questions) if q.dataset == d and q.kind not in OFF]
        off = [i for i, q in enumerate(questions) if q.dataset == d and q.kind in OFF]
        personal = [i for i in off if questions[i].kind == "offtopic_personal"]
        before[d] = _plain({"n": len(legit), "evidence_in_block": out["evidence"][legit, shipped].mean(),
                            "evidence_turn_in_block": out["turn"][legit, shipped].mean(),
                            "evidence_token_share": out["ev_tokens"][legit, shipped].sum() / out["tokens"][legit, shipped].sum(),
                            "offtopic_tokens_median": float(np.median(out["served"][off, shipped])),
                            "personal_tokens_median": float(np.median(out["served"][personal, shipped]))})
    result = {"command": " ".join(["python", *sys.argv]), "captures": [str(p) for p in paths],
              "grid": {"cut": [asdict(c) for c in CUT_GRID], "trim": [None if t is None else asdict(t) for t in TRIM_GRID]},
              **report(questions, grid, out, before)}
    result.pop("grid", None)
    result["grid_size"] = measured
    out_path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(json.dumps({k: result[k] for k in ("today", "in_sample", "cross_dataset")}, indent=1, default=str))
    print(json.dumps(result["five_fold"], indent=1, default=str))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("capture")
    c.add_argument("dataset", choices=sorted(LOADERS))
    c.add_argument("data")
    c.add_argument("out", type=Path)
    c.add_argument("--limit", type=int)
    c.add_argument("--stride", type=int)
    f = sub.add_parser("fit")
    f.add_argument("captures", type=Path, nargs="+")
    f.add_argument("--out", type=Path, default=Path("benchmarks/results/context/trim_cv.json"))
    args = parser.parse_args(argv)
    if args.command == "capture":
        capture(args.dataset, args.data, args.out, args.limit, args.stride)
    else:
        fit(args.captures, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
