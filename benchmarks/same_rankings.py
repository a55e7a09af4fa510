"""Prove that a change did not move any ranking: re-run slices of the lab, compare with the rows
committed under benchmarks/results, field by field (timings and provenance aside).

    python benchmarks/same_rankings.py                      # LongMemEval every 10th question, LoCoMo conv 1
    python benchmarks/same_rankings.py --configs default,bm25-only --keep /tmp/slices
    python benchmarks/same_rankings.py --full --configs default,rrf,bm25-only   # whole dev sets

Each LongMemEval question and each LoCoMo conversation is its own haystack, so a slice's rows
must equal the committed full run's rows with the same ids. Exit status 1 on any difference.
The embedding cache (benchmarks/.cache) makes a second run cheap.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from diarist import lexical
from diarist.bench.configs import get_config
from diarist.bench.rows import read_rows
from diarist.bench.runner import run_benchmarks

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
COMPARED = ("id", "type", "unit", "question", "ranked", "gold", "gold_user", "metrics", "metrics_user", "turn",
            "unranked", "n_sessions")
SLICES = {  # dataset -> (data file, committed run folder, slice options)
    "longmemeval": ("longmemeval_s_dev.json.gz", "longmemeval", {"stride": 10}),
    "locomo": ("locomo_dev.json.gz", "locomo", {"limit": 1}),
}


def rows_by_id(run: Path) -> dict[str, dict]:
    return {r["id"]: {k: r.get(k) for k in COMPARED} for r in read_rows(run)}


def committed_analyzer(run: Path) -> int | None:
    """The lexical analyzer version a committed run was made with (None: before it was recorded)."""
    return json.loads((run / "config.json").read_text()).get("lexical_version")


def compare(committed: Path, fresh: Path) -> list[str]:
    """Ids whose rows differ, or that the slice has and the committed run lacks."""
    old, new = rows_by_id(committed), rows_by_id(fresh)
    return sorted(i for i in new if old.get(i) != new[i])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", default="default,fused-only,rrf,vectors-only,bm25-only,second-stage-names-time",
                        help="bench configs to re-run (each must have a committed full run of today's analyzer)")
    parser.add_argument("--keep", help="write the slices' runs here (default: a temporary folder)")
    parser.add_argument("--full", action="store_true", help="every question of both dev sets, not slices")
    args = parser.parse_args(argv)
    configs = [get_config(name) for name in args.configs.split(",")]
    stale = [f"{dataset}/{c.name}" for dataset, (_, committed, _) in SLICES.items() for c in configs
             if committed_analyzer(RESULTS / committed / c.name) != lexical.VERSION and c.channel != "dense"]
    if stale:
        print(f"committed runs of an earlier analyzer (lexical version {lexical.VERSION} now), so their BM25 "
              f"rankings differ by design: {', '.join(stale)}; run them again with `diarist bench` first")
        return 1
    out_root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="same-rankings-"))
    failed = False
    for dataset, (file, committed, options) in SLICES.items():
        outs = [out_root / dataset / c.name for c in configs]
        run_benchmarks(dataset, DATA / file, configs, outs, progress=False, **({} if args.full else options))
        for config, out in zip(configs, outs):
            differ = compare(RESULTS / committed / config.name, out)
            n = len(rows_by_id(out))
            print(f"{dataset:12s} {config.name:14s} {n:4d} rows, {len(differ)} differ from the committed run"
                  + (f": {', '.join(differ[:5])}" if differ else ""))
            failed |= bool(differ)
    print("rankings identical" if not failed else "RANKINGS MOVED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
