"""Fit following a subject forward (``diarist.read.follow``: FOLLOW_COSINE, FOLLOW_FROM) by
cross-validation on the everyday set's dev half.

Every dev question about a stated fact (kinds ``fact`` and ``changed``) is asked with
``Memory.context`` at each grid point (the product path, the module's settings swapped in); 5
folds by the fact asked about (every phrasing of a fact in one fold). Objective on the training
folds: the mean of the facts in the block, the facts first, and the changed facts passed (newer
first, older marked); ties go to the rule that does less (off, then the higher threshold, then
the fewer memories followed). The held-out half is never read here.

    python benchmarks/everyday_follow_cv.py --out benchmarks/results/everyday-follow/follow_cv.json
"""

from __future__ import annotations

import argparse
import json
import zlib
from pathlib import Path

from diarist import settings
from diarist.bench.configs import get_config
from diarist.bench.everyday import DATA, haystack_memories, load_questions, run_haystack
from diarist.bench.everyday_summary import FACT_KINDS
from diarist.bench.runner import Runner
from diarist.read import follow

COSINES = (None, 0.38, 0.40, 0.42, 0.44, 0.46, 0.50)
FROM = (1, 3)
FOLDS = 5


def point_name(cosine: float | None, depth: int) -> str:
    return "off" if cosine is None else f"{cosine:.2f}/{depth}"


def record(half: str = "dev") -> dict[str, list[dict]]:
    """Rows per grid point (fact and changed questions of ``half``)."""
    questions = [q for q in load_questions(DATA, half) if q.kind in FACT_KINDS]
    base = Runner(get_config("default"), settings.EMBEDDER, None, progress=False)
    points = [(None, 1)] + [(c, d) for c in COSINES if c is not None for d in FROM]
    rows: dict[str, list[dict]] = {point_name(*p): [] for p in points}
    saved = follow.FOLLOW_COSINE, follow.FOLLOW_FROM
    try:
        for memory, asked in haystack_memories(DATA, questions, base.embedder, base.cache):
            for cosine, depth in points:
                follow.FOLLOW_COSINE, follow.FOLLOW_FROM = cosine, depth
                rows[point_name(cosine, depth)] += run_haystack(memory, asked, "default")[0]
    finally:
        follow.FOLLOW_COSINE, follow.FOLLOW_FROM = saved
        base.close()
    return rows


def cells(rows: list[dict]) -> dict[str, float]:
    changed = [r for r in rows if r["kind"] == "changed"]
    share = lambda values: sum(values) / len(values) if values else 0.0  # noqa: E731
    out = {"in_block": share([bool(r["in_block"]) for r in rows]), "first": share([bool(r["first"]) for r in rows]),
           "changed": share([bool(r["changed"]["passed"]) for r in changed]) if changed else None}
    present = [v for v in out.values() if v is not None]
    out["objective"] = sum(present) / len(present)
    return {k: (round(v, 4) if v is not None else None) for k, v in out.items()}


def preference(name: str) -> tuple:
    """Ties: off first, then the higher threshold, then fewer memories followed."""
    if name == "off":
        return (0, 0.0, 0)
    cosine, depth = name.split("/")
    return (1, -float(cosine), int(depth))


def fold_of(group: str) -> int:
    return zlib.crc32(group.encode()) % FOLDS


def choose(rows: dict[str, list[dict]], keep) -> str:
    scored = {name: cells([r for r in got if keep(r)])["objective"] for name, got in rows.items()}
    best = max(scored.values())
    return min((name for name, v in scored.items() if v == best), key=preference)


def fit(rows: dict[str, list[dict]]) -> dict:
    folds = []
    for k in range(FOLDS):
        chosen = choose(rows, lambda r, k=k: fold_of(r["group"]) != k)
        train = cells([r for r in rows[chosen] if fold_of(r["group"]) != k])
        test = lambda name, k=k: cells([r for r in rows[name] if fold_of(r["group"]) == k])  # noqa: E731
        folds.append({"fold": k, "chosen": chosen, "in_sample": train, "out_of_sample": test(chosen),
                      "out_of_sample_off": test("off"),
                      "groups": sorted({r["group"] for r in rows["off"] if fold_of(r["group"]) == k})})
    chosen = choose(rows, lambda r: True)
    return {"grid": {name: cells(got) for name, got in rows.items()}, "folds": folds, "chosen_on_all": chosen,
            "pooled_out_of_sample": cells([r for f in folds for r in rows[f["chosen"]] if fold_of(r["group"]) == f["fold"]]),
            "pooled_off": cells(rows["off"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    report = fit(record("dev"))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for f in report["folds"]:
        print(f"fold {f['fold']}: {f['chosen']:>9}  in {f['in_sample']['objective']}  "
              f"out {f['out_of_sample']['objective']} (off {f['out_of_sample_off']['objective']})  {f['groups']}")
    print("all:", report["chosen_on_all"], report["grid"][report["chosen_on_all"]], "off:", report["pooled_off"])
    print("pooled out of sample:", report["pooled_out_of_sample"])


if __name__ == "__main__":
    main()
