"""What storing the lines' vectors at ingest costs (``Memory(store_lines=True)``, the default)
against not storing them (``store_lines=False``, the trim embeds the lines it shows at query
time): ingest seconds, chunks/s and tokens/s, lines embedded, and the database's size.

    nice -n 5 python benchmarks/line_vectors_cost.py [--conversations 1] [--repeats 3] [--out FILE]

Real text (LoCoMo's first conversations), the default model, no embedding cache (a cache would
hide the embedding the lines cost); each repeat ingests the same sessions into a fresh database
once each way, in alternating order, so that load hits both alike. Medians of the repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCOMO = HERE.parent.parent / "shared" / "data" / "locomo_dev.json.gz"


def ingest(sessions: list, store_lines: bool, folder: Path, embedder) -> dict:
    from diarist.memory import Memory

    path = folder / f"m-{store_lines}-{time.monotonic_ns()}.sqlite"
    start = time.perf_counter()
    with Memory(path, embedder=embedder, store_lines=store_lines) as memory:
        report = memory.add_sessions(sessions, app="bench")
        tokens = sum(row[0] for row in memory.store._db.read("SELECT n_tokens FROM chunks"))
        lines = memory.store._db.read("SELECT count(*) FROM line_vectors")[0][0]
    seconds = time.perf_counter() - start
    size = sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith(path.name))
    for p in folder.iterdir():
        if p.name.startswith(path.name):
            p.unlink()
    return {"seconds": seconds, "chunks": report.chunks, "tokens": tokens, "lines": lines, "bytes": size}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    from diarist import settings
    from diarist.embed import get_embedder
    from diarist.importers import read_all

    sessions = read_all(str(LOCOMO), "locomo", args.conversations).sessions
    embedder = get_embedder(settings.EMBEDDER)
    embedder.embed_passages(["warm the model up"])
    runs: dict[str, list[dict]] = {"store_lines=False": [], "store_lines=True": []}
    with tempfile.TemporaryDirectory(prefix="line-cost-") as tmp:
        for repeat in range(args.repeats):
            for store_lines in ([False, True] if repeat % 2 == 0 else [True, False]):
                runs[f"store_lines={store_lines}"].append(ingest(sessions, store_lines, Path(tmp), embedder))
                print(repeat, store_lines, runs[f"store_lines={store_lines}"][-1], file=sys.stderr, flush=True)
    rows = {}
    for name, done in runs.items():
        seconds = statistics.median(r["seconds"] for r in done)
        rows[name] = {"seconds_p50": round(seconds, 2), "chunks": done[0]["chunks"], "tokens": done[0]["tokens"],
                      "chunks_per_s": round(done[0]["chunks"] / seconds, 1),
                      "tokens_per_s": round(done[0]["tokens"] / seconds), "lines_stored": done[0]["lines"],
                      "db_bytes": done[0]["bytes"]}
    result = {"sessions": len(sessions), "repeats": args.repeats, "machine": {"cpus": os.cpu_count(),
              "load_at_end": os.getloadavg()}, "runs": rows}
    lines = ["| ingest | seconds p50 | chunks/s | tokens/s | lines stored | database bytes |", "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {name} | {r['seconds_p50']} | {r['chunks_per_s']} | {r['tokens_per_s']} | {r['lines_stored']} | "
              f"{r['db_bytes']:,} |" for name, r in rows.items()]
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
        Path(args.out).with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
