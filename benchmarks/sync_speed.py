"""What `vestige sync` costs next to `vestige ingest` on the same folder of real notes: a first
sync, and a re-sync after editing 3 notes and deleting 1 (issue 28's "3 changed of 500").

Each repeat copies the notes into a fresh folder and times, as a user runs them (one process
each, the model loaded in each, wall seconds):

1. `vestige ingest DIR` into a new database, and `vestige sync DIR` into another: every note
   read, chunked, embedded and stored;
2. 3 notes edited (a sentence appended) and 1 deleted, then `vestige sync DIR` again (only the 3
   are read and embedded; the deleted note's memory is deleted) and `vestige ingest DIR` again
   on its database (every note read and parsed, the 3 changed embedded; the deleted one stays).

Tokens are what the embedder reads: the dense texts of the stored chunks, counted by the
embedder's tokenizer; tokens/s is those tokens over the wall seconds. The embedder alone on the
same texts (one call, in this process) is timed too, for the ratio. Medians of the repeats.

    PYTHONPATH=src nice -n 10 python benchmarks/sync_speed.py --vault /work/realdata/obsidian-hub \\
        --notes 500 --repeats 3 --out benchmarks/results/sync/obsidian-hub-500
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EDITED = " Edited during the benchmark: this paragraph was added to check that a re-sync reads only what changed."


def pick_notes(vault: Path, n: int, min_bytes: int, max_bytes: int) -> list[Path]:
    """The first ``n`` Markdown notes of the vault (sorted by path, hidden folders left out)
    whose size is within the bounds: real text, small enough for a busy machine."""
    found = []
    for dirpath, dirnames, filenames in os.walk(vault):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if name.endswith(".md") and not name.startswith(".") and min_bytes <= path.stat().st_size <= max_bytes:
                found.append(path)
    found.sort(key=lambda p: p.relative_to(vault).parts)
    if len(found) < n:
        raise SystemExit(f"{vault}: only {len(found)} notes of {min_bytes}-{max_bytes} bytes, {n} asked")
    return found[:n]


def vestige(*args: str) -> tuple[float, str]:
    """Run the vestige command of this tree; (wall seconds, stdout)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "VESTIGE_DB": ""}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vestige.cli", *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"vestige {' '.join(args)} failed: {done.stderr[-2000:]}")
    return seconds, done.stdout


def dense_texts(db: Path, where: str = "", params: tuple = ()) -> list[str]:
    with sqlite3.connect(db) as conn:
        query = ("SELECT coalesce(c.embed_text, c.text) FROM chunks c JOIN sessions s ON s.id = c.session_id "
                 f"WHERE c.vector IS NOT NULL {where} ORDER BY c.id")
        return [row[0] for row in conn.execute(query, params)]


def one_repeat(notes: list[Path], vault: Path, work: Path, embedder: str | None) -> dict:
    folder = work / "notes"
    for note in notes:
        target = folder / note.relative_to(vault)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(note, target)
    extra = ["--embedder", embedder] if embedder else []
    ingest_db, sync_db = work / "ingest.sqlite", work / "sync.sqlite"
    ingest_s, _ = vestige("ingest", str(folder), "--db", str(ingest_db), "--app", "bench", *extra)
    sync_s, out = vestige("sync", str(folder), "--db", str(sync_db), "--app", "bench", "--json", *extra)
    first = json.loads(out)
    assert len(first["added"]) == len(notes), first["failed"]
    relative = sorted(n.relative_to(vault).as_posix() for n in notes)
    changed, deleted = relative[10:13], relative[20]  # fixed choices: the same notes in every repeat
    for name in changed:
        with open(folder / name, "a", encoding="utf-8") as f:
            f.write("\n" + EDITED + "\n")
    (folder / deleted).unlink()
    resync_s, out = vestige("sync", str(folder), "--db", str(sync_db), "--app", "bench", "--json")
    again = json.loads(out)
    assert sorted(again["changed"]) == changed and again["deleted"] == [deleted], again
    reingest_s, _ = vestige("ingest", str(folder), "--db", str(ingest_db), "--app", "bench")
    marks = ",".join("?" * len(changed))
    return {"ingest_s": ingest_s, "sync_first_s": sync_s, "resync_s": resync_s, "reingest_s": reingest_s,
            "resync_report": {k: again[k] for k in ("changed", "deleted", "unchanged", "sessions_replaced",
                                                    "items_deleted", "chunks")},
            "texts": dense_texts(sync_db), "changed_texts": dense_texts(sync_db, f"AND s.external_id IN ({marks})",
                                                                        tuple(changed))}


def embedder_alone(spec: str | None, texts: list[str]) -> tuple[float, int, int]:
    """(seconds to embed the texts in one call, their tokens, the changed texts' tokens: 0 here)."""
    from vestige import settings
    from vestige.embed import get_embedder

    model = get_embedder(spec or settings.EMBEDDER)
    model.embed_passages(texts[:4])  # the session warmed, as a loaded process has it
    tokens = sum(model.count_tokens(t) for t in texts)
    start = time.perf_counter()
    model.embed_passages(texts)
    return time.perf_counter() - start, tokens, model.model_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, default=Path("/work/realdata/obsidian-hub"))
    parser.add_argument("--notes", type=int, default=500)
    parser.add_argument("--min-bytes", type=int, default=200)
    parser.add_argument("--max-bytes", type=int, default=3000, help="Largest note taken (bytes).")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--embedder", default=None, help="Default: vestige's default embedder.")
    parser.add_argument("--out", type=Path, required=True, help="Folder for results.json.")
    args = parser.parse_args(argv)
    notes = pick_notes(args.vault, args.notes, args.min_bytes, args.max_bytes)
    runs, alone = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(one_repeat(notes, args.vault, Path(tmp), args.embedder))
        seconds, tokens, model_id = embedder_alone(args.embedder, runs[-1]["texts"])
        alone.append(seconds)
    from vestige import settings
    from vestige.embed import get_embedder

    counter = get_embedder(args.embedder or settings.EMBEDDER)
    changed_tokens = sum(counter.count_tokens(t) for t in runs[0]["changed_texts"])
    median = {key: statistics.median(r[key] for r in runs) for key in ("ingest_s", "sync_first_s", "resync_s", "reingest_s")}
    median["embedder_alone_s"] = statistics.median(alone)
    result = {
        "vault": str(args.vault), "notes": len(notes), "bytes": sum(n.stat().st_size for n in notes),
        "note_bytes": [args.min_bytes, args.max_bytes], "embedder": model_id, "repeats": args.repeats,
        "cpus": os.cpu_count(), "load_average": list(os.getloadavg()), "niceness": os.nice(0),
        "chunks_embedded": len(runs[0]["texts"]), "tokens": tokens, "changed_tokens": changed_tokens,
        "median_seconds": {k: round(v, 2) for k, v in median.items()},
        "tokens_per_s": {
            "embedder_alone": round(tokens / median["embedder_alone_s"], 1),
            "ingest_first": round(tokens / median["ingest_s"], 1),
            "sync_first": round(tokens / median["sync_first_s"], 1),
            "resync_3_changed": round(changed_tokens / median["resync_s"], 1),
            "reingest_3_changed": round(changed_tokens / median["reingest_s"], 1),
        },
        "runs": [{k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items() if "texts" not in k}
                 for r in runs],
        "embedder_alone_s": [round(s, 2) for s in alone],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("notes", "tokens", "changed_tokens", "median_seconds", "tokens_per_s")},
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
