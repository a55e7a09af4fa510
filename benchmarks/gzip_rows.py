"""Gzip the plain ``rows.jsonl`` of runs written before rows were compressed (a run from an older
tree, or a branch merged after the change) into ``rows.jsonl.gz``, as ``diarist bench`` now writes
them, and rename the file in the run's manifest.

    python benchmarks/gzip_rows.py benchmarks/results            # every such run under the folder
    git add -A benchmarks/results && diarist bench verify benchmarks/results

A run's rows are gzipped as they are, byte for byte (``diarist.bench.rows.gzip_bytes``: no name or
time in the header), so a run re-written by today's writer gives the same file. A folder whose
manifest does not name ``rows.jsonl`` is left as it is and said; nothing is written for a folder
that holds both files.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

from diarist.bench.rows import PLAIN_ROWS, ROWS, gzip_bytes


def gzip_run(folder: Path) -> str | None:
    """Gzip one run's rows and rename them in its manifest; the reason when it is left alone."""
    plain, manifest = folder / PLAIN_ROWS, folder / "manifest.json"
    if (folder / ROWS).exists():
        return f"{folder}: holds both {PLAIN_ROWS} and {ROWS}"
    entry = f'"{PLAIN_ROWS}",'
    text = manifest.read_text(encoding="utf-8") if manifest.exists() else ""
    if text.count(entry) != 1:
        return f"{folder}: its manifest does not name {PLAIN_ROWS} once in its files"
    data = plain.read_bytes()
    packed = gzip_bytes(data)
    assert gzip.decompress(packed) == data
    (folder / ROWS).write_bytes(packed)
    manifest.write_text(text.replace(entry, f'"{ROWS}",'), encoding="utf-8")
    plain.unlink()
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="folders searched for runs' rows.jsonl")
    args = parser.parse_args(argv)
    folders = sorted({p.parent for path in args.paths for p in path.rglob(PLAIN_ROWS)})
    left = [reason for reason in map(gzip_run, folders) if reason]
    for reason in left:
        print(f"left: {reason}", file=sys.stderr)
    print(f"{len(folders) - len(left)} of {len(folders)} runs' rows gzipped")
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main())
