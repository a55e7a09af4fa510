"""Fit the marks by meaning (``diarist.read.block.same_subject_by_meaning``) by cross-validation
across the everyday set's dev half, LoCoMo dev and LongMemEval dev, on recorded blocks.

Record: each set's context run with the block's layout inputs saved (per block: each entry's id,
date, length, whether it is a note, and the sentences it would compare, as vectors with their
cosines to the question; and the pairs of entries the words rule pairs):

    python benchmarks/everyday_marks_cv.py record OUT.pkl -- bench everyday --half dev --out DIR
    python benchmarks/everyday_marks_cv.py record OUT.pkl -- bench locomo --context --data ... --out DIR
    python benchmarks/everyday_marks_cv.py record OUT.pkl -- bench longmemeval --context --data ... --out DIR

Replay: the marks at each point of a grid (SAME_SUBJECT_COSINE x SAME_SUBJECT_MIN_RELEVANCE x
SAME_SUBJECT_MAX_LINES),
scored on each block with the run's rows (gold memories):

- everyday: a fact that changed, newest first and every older one marked (its ``changed`` cell);
  a stated fact first in the block's own ranking; a note asked about first (notes on one subject
  are no fact that changed: a mark that puts a newer note first costs here);
- LoCoMo and LongMemEval: evidence first in the block's ranking; on LongMemEval's knowledge-update
  questions, the newest evidence memory in the block not marked earlier than another ("latest",
  a false mark's cost, as the context lab's cell).

The objective is the mean of those six shares. Folds: 5, by the fact asked about (everyday), the
conversation (LoCoMo) or the question (LongMemEval). Off-topic questions are not in it: a mark
changes no block's emptiness (the floor decides that, before any mark).

    python benchmarks/everyday_marks_cv.py replay --everyday E.pkl E_DIR --locomo L.pkl L_DIR \
        --longmemeval M.pkl M_DIR --out benchmarks/results/everyday-marks/marks_cv.json
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import zlib
from pathlib import Path

import numpy as np

COSINES = [0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 2.0]  # 2.0: no mark
RELEVANCE = [-1.0, 0.1, 0.2, 0.3]
MAX_LINES = [2, 3, 4, 6, 10_000]
FOLDS = 5


def record(out: str, argv: list[str]) -> None:
    """Run a ``diarist`` command with every block's layout inputs recorded into ``out``."""
    import diarist.read.block as block
    import diarist.read.budget as budget
    from diarist.cli import main
    from diarist.memory import Memory
    from diarist.read.trim import lines_of

    records: list[tuple[str | None, list]] = []
    asked: dict[str, str] = {}
    context, layout = Memory.context, budget.layout

    def recording_context(self, query, *args, **kwargs):
        asked["q"] = query
        return context(self, query, *args, **kwargs)

    def recording_layout(chosen, order, terms, trimmed, vectors=None, cosines=None, whole=None, unmarked=0):
        if vectors is not None and whole is not None:
            entries = []
            for (hit, _, _), text in zip(chosen, whole):
                # Every sentence subject_sentences would compare at any relevance floor, with its cosine.
                sentences = block.subject_sentences(text, cosines, -2.0)
                close = np.asarray(cosines(sentences), dtype=np.float32) if sentences else np.zeros(0, np.float32)
                vec = np.asarray(vectors(sentences), dtype=np.float16) if sentences else None
                entries.append((hit.id, hit.date, close, vec, len(lines_of(text)), block.is_note(hit)))
            words = block.word_pairs([block.analyze(text) for _, text, _ in chosen], terms)
            records.append((asked.get("q"), entries, words))
        return layout(chosen, order, terms, trimmed, vectors, cosines, whole, unmarked)

    Memory.context, budget.layout = recording_context, recording_layout
    try:
        main(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    with open(out, "wb") as f:
        pickle.dump(records, f)
    print(f"recorded {len(records)} blocks into {out}")


def marks(entries: list, words: set, min_cosine: float, min_relevance: float,
          max_lines: int) -> tuple[dict[int, int], set[int]]:
    """``diarist.read.block.same_subject`` on a recorded block: two short memories by meaning (on the
    saved vectors), a long one and another by words, a note never."""
    from diarist.read.block import newest_later

    dates = [e[1] for e in entries]
    days = [d[:10] if d else None for d in dates]
    short = [not note and 0 < n_lines <= max_lines for _, _, _, _, n_lines, note in entries]
    sentences = []
    for (_, _, close, vec, _, _), ok in zip(entries, short):
        keep = close >= min_relevance if vec is not None and ok else None
        sentences.append(vec[keep].astype(np.float32) if keep is not None and keep.any() else None)
    meaning = {(i, j) for i in range(len(entries)) for j in range(i + 1, len(entries))
               if sentences[i] is not None and sentences[j] is not None and days[i] and days[j] and days[i] != days[j]
               and float(np.max(sentences[i] @ sentences[j].T)) >= min_cosine}
    notes = [e[5] for e in entries]
    pairs = meaning | {(i, j) for i, j in words if not (notes[i] or notes[j]) and not (short[i] and short[j])}
    later = newest_later(pairs, dates)
    return later, {i for i, j in later.items() if (min(i, j), max(i, j)) in meaning}


def aligned(records: list, run: Path) -> list[tuple[dict, list]]:
    """The run's rows with a block, each with its recorded entries (in the run's order)."""
    from diarist.bench.rows import read_rows

    rows = read_rows(run)
    out, n = [], 0
    for row in rows:
        if row.get("empty") or not row.get("memories"):
            continue
        while n < len(records) and records[n][0] != row["question"]:
            n += 1  # a block asked by the run for another purpose
        if n == len(records):
            raise ValueError(f"{run}: no recorded block for {row['id']}")
        out.append((row, records[n][1:]))
        n += 1
    return out


def group_of(dataset: str, row: dict) -> str:
    if dataset == "everyday":
        return row["group"]
    return row["id"].split(":")[0] if dataset == "locomo" else row["id"]


def scores(dataset: str, row: dict, recorded: tuple, min_cosine: float, min_relevance: float,
           max_lines: int) -> dict[str, bool]:
    """The cells one block gives under one point of the grid."""
    from diarist.read.block import newer_first

    entries, words = recorded
    later, changed = marks(entries, words, min_cosine, min_relevance, max_lines)
    ids = [e[0] for e in entries]
    ranks = newer_first(len(entries), {i: j for i, j in later.items() if i in changed}, [e[1] for e in entries])
    ranked = [ids[i] for i in sorted(range(len(ids)), key=lambda i: ranks[i])]
    marked = {ids[i] for i in later}
    gold = set(row.get("gold") or [])
    out: dict[str, bool] = {}
    if dataset == "everyday":
        if row["kind"] == "changed":
            older_in = [o for o in row["older"] if o in ids]
            g = row["gold"][0]
            out["changed"] = (g in ranked and all(ranked.index(g) < ranked.index(o) for o in older_in)
                              and all(o in marked for o in older_in) and g not in marked)
        if row["kind"] in ("fact", "changed"):
            out["first"] = bool(ranked) and ranked[0] in gold
        elif row["kind"] != "offtopic":  # a note: notes on one subject are no changed fact
            out["note_first"] = bool(ranked) and ranked[0] in gold
        return out
    if row.get("kind") != "legitimate" or not gold:
        return out
    dates = {e[0]: e[1] or "" for e in entries}
    shown = [i for i in ids if i in gold]
    if shown:
        out["first"] = ranked[0] in gold
        if row.get("type") == "knowledge-update":  # as the context lab's "latest" cell
            newest = max(shown, key=lambda i: dates[i])
            out["latest"] = newest not in marked
    return out


def replay(sets: dict[str, list[tuple[dict, list]]]) -> dict:
    grid = [(c, r, n) for c in COSINES for r in RELEVANCE for n in MAX_LINES]
    cells: dict[tuple[float, float, int], list[tuple[str, int, str, bool]]] = {}
    for point in grid:
        rows = []
        for dataset, blocks in sets.items():
            for row, entries in blocks:
                fold = zlib.crc32(group_of(dataset, row).encode()) % FOLDS
                for cell, ok in scores(dataset, row, entries, *point).items():
                    rows.append((dataset, fold, cell, ok))
        cells[point] = rows

    def objective(rows, folds) -> tuple[float, dict[str, float]]:
        shares: dict[str, list[bool]] = {}
        for dataset, fold, cell, ok in rows:
            if fold in folds:
                shares.setdefault(f"{dataset} {cell}", []).append(ok)
        means = {k: float(np.mean(v)) for k, v in sorted(shares.items())}
        return float(np.mean(list(means.values()))), means

    every = set(range(FOLDS))
    table = [{"cosine": c, "min_relevance": r, "max_lines": n, "objective": round(objective(cells[(c, r, n)], every)[0], 4),
              **{k: round(v, 4) for k, v in objective(cells[(c, r, n)], every)[1].items()}} for c, r, n in grid]
    best = max(grid, key=lambda p: (round(objective(cells[p], every)[0], 6), -p[0], p[1], -p[2]))
    folds = []
    for held in range(FOLDS):
        train = every - {held}
        chosen = max(grid, key=lambda p: (round(objective(cells[p], train)[0], 6), -p[0], p[1], -p[2]))
        folds.append({"held_out_fold": held, "chosen": list(chosen),
                      "in_sample": round(objective(cells[chosen], train)[0], 4),
                      "out_of_sample": round(objective(cells[chosen], {held})[0], 4),
                      "out_of_sample_cells": {k: round(v, 4) for k, v in objective(cells[chosen], {held})[1].items()}})
    return {"grid": table, "chosen_in_sample": {"cosine": best[0], "min_relevance": best[1], "max_lines": best[2],
                                                  **objective(cells[best], every)[1]},
            "folds": folds,
            "out_of_sample_mean": round(float(np.mean([f["out_of_sample"] for f in folds])), 4),
            "in_sample_mean": round(float(np.mean([f["in_sample"] for f in folds])), 4)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "record":
        if len(argv) < 4 or argv[2] != "--":
            raise SystemExit("usage: everyday_marks_cv.py record OUT.pkl -- DIARIST ARGS...")
        record(argv[1], argv[3:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["replay"])
    for name in ("everyday", "locomo", "longmemeval"):
        parser.add_argument(f"--{name}", nargs=2, metavar=("RECORDS", "RUN_DIR"), required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    sets = {}
    for name in ("everyday", "locomo", "longmemeval"):
        path, run = getattr(args, name)
        with open(path, "rb") as f:
            sets[name] = aligned(pickle.load(f), Path(run))
    result = replay(sets)
    result["blocks"] = {name: len(blocks) for name, blocks in sets.items()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("chosen_in_sample", "in_sample_mean", "out_of_sample_mean")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
