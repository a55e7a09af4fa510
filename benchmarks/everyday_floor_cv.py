"""Fit the relevance floor's personal cosine (``Floor.personal``: a question in the first or second
person, or naming what the memory holds, is answered down to it) by cross-validation across the
everyday set's dev half, LoCoMo dev and LongMemEval dev, with the off-topic questions in the objective.

Rows: LoCoMo's and LongMemEval's are the committed calibration rows
(``benchmarks/results/floor/calibration/rows.jsonl.gz`` and ``rows_personal.jsonl.gz``: each question's
best cosine, lexical coverage and person). The everyday set's are written here, from its memories
as ``diarist bench everyday`` builds them (``features``), with one more signal: whether a memory
among either channel's best few holds every word of the question or is named by it (the floor
then answers whatever the cosine: ``held_whole``).

    python benchmarks/everyday_floor_cv.py features --out benchmarks/results/everyday-floor/everyday_rows.jsonl
    python benchmarks/everyday_floor_cv.py fit --everyday benchmarks/results/everyday-floor/everyday_rows.jsonl \
        --out benchmarks/results/everyday-floor/floor_cv.json

Fit: the personal cosine on a grid, the other floors as shipped. Objective: the most off-topic
questions answered with nothing (the mean of the three sets' shares, personal-sounding off-topic
questions included), under the constraint that no answerable training question is answered with
nothing (LoCoMo's and LongMemEval's legitimate and abstention questions, every everyday question
but the off-topic ones); ties to the lowest floor. Folds: 5, by the fact or note asked about
(everyday), the conversation (LoCoMo), the question (LongMemEval), off-topic questions by their
text. The everyday held-out half is scored at each fold's choice and at the in-sample choice,
never fitted on.
"""

from __future__ import annotations

import argparse
import json
import zlib
from pathlib import Path

import numpy as np

from diarist.bench.rows import read_jsonl

CALIBRATION = Path(__file__).parent / "results" / "floor" / "calibration"
GRID = [round(x, 3) for x in np.arange(0.08, 0.2001, 0.005)]
FOLDS = 5


def features(out: Path) -> None:
    """The everyday set's rows: each question's best cosine, coverage, person and held_whole."""
    import tempfile

    from diarist import settings
    from diarist.bench.configs import get_config
    from diarist.bench.everyday import APP, DATA, build_memory, haystack_sessions, load_questions
    from diarist.bench.runner import Runner
    from diarist.read.floor import Floor, coverage, is_personal
    from diarist.read.question import Question

    questions = load_questions(DATA, "all")
    base = Runner(get_config("default"), settings.EMBEDDER, progress=False)
    never = Floor(cosine=2.0, personal=2.0, weak_cosine=2.0, coverage=2.0)  # answers only a memory held whole
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in dict.fromkeys(q.haystack for q in questions):
            sessions, facts = haystack_sessions(DATA, name, Path(scratch) / name)
            memory = build_memory(sessions, facts, base.embedder, base.cache)
            strict, open_ = memory.derive(floor=never), memory.derive(floor=None)
            try:
                for q in [q for q in questions if q.haystack == name]:
                    # The best cosine of any chunk: each memory's hit carries its best chunk's.
                    cosines = [h.scores.get("dense") for h in open_.search(q.text, app=APP, now=q.asked, k=50)]
                    best = max((c for c in cosines if c is not None), default=None)
                    question = Question(q.text)
                    held = lambda terms: memory.lexical.held(APP, terms)  # noqa: E731
                    rows.append({"dataset": "everyday", "id": q.qid, "group": q.group, "half": q.half,
                                 "kind": "offtopic" if q.kind == "offtopic" else "legitimate", "everyday_kind": q.kind,
                                 "question": q.text, "best_cosine": best, "coverage": coverage(question, held),
                                 "personal": is_personal(question, held),
                                 "held_whole": bool(list(strict.search(q.text, app=APP, now=q.asked, k=1)))})
            finally:
                memory.close()
    base.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} rows to {out}")


def empty(row: dict, personal: float, cosine: float = 0.18, weak: float = 0.25, cover: float = 0.80) -> bool:
    """Whether the evidence floor (``diarist.read.floor.verdict``) answers nothing for the row."""
    best = row["best_cosine"]
    if best is None:
        return True
    if best >= max(cosine, weak):
        return False
    if row.get("held_whole"):
        return False
    if best < personal:
        return True
    if row["personal"]:
        return False
    if best < cosine:
        return True
    return row["coverage"] is not None and row["coverage"] < cover


def fold_of(row: dict) -> int:
    if row["kind"].startswith("offtopic"):
        key = row["question"]
    elif row["dataset"] == "everyday":
        key = row["group"]
    else:
        key = row["id"].split(":")[0]
    return zlib.crc32(f"{row['dataset']}|{key}".encode()) % FOLDS


def load(everyday: Path) -> list[dict]:
    rows = []
    for name in ("rows.jsonl.gz", "rows_personal.jsonl.gz"):
        rows += read_jsonl(CALIBRATION / name)
    rows = [r for r in rows if r["kind"] in ("legitimate", "abstention", "offtopic", "offtopic_personal")]
    rows += read_jsonl(everyday)
    return rows


def score(rows: list[dict], personal: float) -> dict:
    shares, lost = {}, 0
    for dataset in ("everyday", "locomo", "longmemeval"):
        off = [r for r in rows if r["dataset"] == dataset and r["kind"].startswith("offtopic")]
        if off:
            shares[dataset] = float(np.mean([empty(r, personal) for r in off]))
    lost = sum(empty(r, personal) for r in rows if not r["kind"].startswith("offtopic"))
    return {"offtopic_empty": {k: round(v, 4) for k, v in shares.items()},
            "objective": round(float(np.mean(list(shares.values()))), 4) if shares else 0.0, "answerable_lost": lost}


def fit(rows: list[dict]) -> float:
    feasible = [p for p in GRID if score(rows, p)["answerable_lost"] == 0]
    return max(feasible, key=lambda p: (score(rows, p)["objective"], -p))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["features", "fit"])
    parser.add_argument("--everyday", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "features":
        features(args.out)
        return 0
    rows = load(args.everyday)
    dev = [r for r in rows if r.get("half", "dev") == "dev"]
    heldout = [r for r in rows if r.get("half") == "heldout"]
    chosen = fit(dev)
    folds = []
    for held in range(FOLDS):
        train = [r for r in dev if fold_of(r) != held]
        test = [r for r in dev if fold_of(r) == held]
        p = fit(train)
        folds.append({"fold": held, "chosen": p, "in_sample": score(train, p), "out_of_sample": score(test, p),
                      "everyday_heldout": score(heldout, p)})
    result = {
        "grid": GRID, "shipped_before": 0.10, "chosen": chosen,
        "in_sample": score(dev, chosen), "before_in_sample": score(dev, 0.10),
        "everyday_heldout": score(heldout, chosen), "before_everyday_heldout": score(heldout, 0.10),
        "folds": folds,
        "out_of_sample_lost": sum(f["out_of_sample"]["answerable_lost"] for f in folds),
        "curve": [{"personal": p, **score(dev, p)} for p in GRID],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("chosen", "in_sample", "before_in_sample", "everyday_heldout",
                                             "before_everyday_heldout", "out_of_sample_lost")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
