"""Stamp committed runs of one lexical analyzer version with the next, where the next provably
ranks them the same (issue 43: version 4 changed only the terms of Arabic and Russian text, version 5 only those of
Arabic, Persian and Urdu text and Arabic questions).

    python benchmarks/restamp_lexical.py --from 3 --because "..." RUN_FOLDER...
    python benchmarks/restamp_lexical.py --from 3 --because "..." --rows FILE.jsonl.gz...

A run's ``config.json`` keeps every other field; ``lexical_version`` becomes this diarist's and
``lexical_restamped`` says from what and why. ``--rows``: rows that record the version one by one
(the floor calibration's), rewritten by the floor's own writer. ``same_rankings.py`` and
``floor.py`` read the version: a run left at the old one is compared as an earlier analyzer's.
Which runs qualify is shown by ``lexical_v4_unmoved.py`` and ``lexical_v5_unmoved.py`` and by
re-running the affected haystacks.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from diarist import lexical
from diarist.bench.rows import dump, read_jsonl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from floor import _write_rows  # noqa: E402  (the floor calibration's writer)


def restamp_run(folder: Path, old: int, because: str) -> str | None:
    """Stamp one run; the reason when it is left alone."""
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    if config.get("lexical_version") != old:
        return f"{folder}: records lexical version {config.get('lexical_version')}, not {old}"
    config["lexical_version"] = lexical.VERSION
    earlier = config.get("lexical_restamped")  # kept: each stamp's evidence stays readable
    config["lexical_restamped"] = f"from {old}: {because}" + (f" (before that, {earlier})" if earlier else "")
    path.write_text(dump(config), encoding="utf-8")
    return None


def restamp_rows(path: Path, old: int) -> str | None:
    rows = read_jsonl(path)
    if {r.get("lexical_version") for r in rows} != {old}:
        return f"{path}: not every row records lexical version {old}"
    _write_rows(path, [{**r, "lexical_version": lexical.VERSION} for r in rows])
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--from", dest="old", type=int, required=True)
    parser.add_argument("--because", required=True, help="the evidence that the runs rank the same")
    parser.add_argument("--rows", nargs="*", type=Path, default=[])
    args = parser.parse_args(argv)
    problems = [p for p in ([restamp_run(f, args.old, args.because) for f in args.folders]
                            + [restamp_rows(r, args.old) for r in args.rows]) if p]
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
