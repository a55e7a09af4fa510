"""What `diarist sync` costs next to `diarist ingest` on real notes: a first pass, and a re-sync
after editing 3 notes and deleting 1 of 500 (issue 28's "3 changed of 500").

Every command runs as a user runs it (one process each, the model loaded in each; wall seconds):

- first pass (``--first-notes`` notes, ``--repeats`` times, each in a fresh folder and database):
  `diarist ingest DIR`, `diarist sync DIR`, and the embedder alone on the same texts (one call in
  this process: the stored chunks' dense texts);
- re-sync (``--notes`` notes, synced once; that first sync is timed too): ``--repeats`` times, 3
  other notes get a sentence appended and 1 other is deleted, then `diarist sync DIR` (only the 3
  are read and embedded, the deleted note's memory deleted) and `diarist ingest DIR` into a copy
  of the database taken after the first sync (every note read and parsed, the changed ones
  embedded; ingest never deletes).

Tokens are what the embedder reads (the dense texts of the stored chunks, counted by its
tokenizer); tokens/s is those tokens over the wall seconds. Medians of the repeats; results.json
is rewritten after each step, so a cut run keeps what it measured.

    PYTHONPATH=src nice -n 10 python benchmarks/sync_speed.py --vault /work/realdata/obsidian-hub \\
        --notes 500 --first-notes 60 --repeats 3 --out benchmarks/results/sync/obsidian-hub-500
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
from contextlib import closing
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


def diarist(*args: str) -> tuple[float, str]:
    """Run the diarist command of this tree; (wall seconds, stdout)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "DIARIST_DB": ""}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "diarist.cli", *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"diarist {' '.join(args)} failed: {done.stderr[-2000:]}")
    return seconds, done.stdout


def dense_texts(db: Path, where: str = "", params: tuple = ()) -> list[str]:
    # Closed before any other process writes: a connection left open in this process loses its
    # POSIX locks when the file is opened and closed by other means (the copy below), and its
    # stale view of the write-ahead log then corrupts the file (the first run of this script).
    with closing(sqlite3.connect(db)) as conn:
        query = ("SELECT coalesce(c.embed_text, c.text) FROM chunks c JOIN sessions s ON s.id = c.session_id "
                 f"WHERE c.vector IS NOT NULL {where} ORDER BY c.id")
        return [row[0] for row in conn.execute(query, params)]


def copy_database(src: Path, dest: Path) -> None:
    """A consistent copy through SQLite's backup API (a file copy would miss the log's pages)."""
    with closing(sqlite3.connect(src)) as source, closing(sqlite3.connect(dest)) as target:
        source.backup(target)


def copy_notes(notes: list[Path], vault: Path, folder: Path) -> list[str]:
    for note in notes:
        target = folder / note.relative_to(vault)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(note, target)
    return sorted(n.relative_to(vault).as_posix() for n in notes)


def first_pass(notes: list[Path], vault: Path, work: Path, extra: list[str]) -> dict:
    folder = work / "notes"
    copy_notes(notes, vault, folder)
    ingest_s, _ = diarist("ingest", str(folder), "--db", str(work / "ingest.sqlite"), "--app", "bench", *extra)
    sync_s, out = diarist("sync", str(folder), "--db", str(work / "sync.sqlite"), "--app", "bench", "--json", *extra)
    assert len(json.loads(out)["added"]) == len(notes)
    return {"ingest_s": ingest_s, "sync_s": sync_s, "texts": dense_texts(work / "sync.sqlite")}


def embedder_alone(model, texts: list[str]) -> float:
    model.embed_passages(texts[:4])  # the session warmed, as a loaded process has it
    start = time.perf_counter()
    model.embed_passages(texts)
    return time.perf_counter() - start


def resyncs(notes: list[Path], vault: Path, work: Path, extra: list[str], repeats: int, model, save) -> dict:
    folder, sync_db, ingest_db = work / "notes", work / "sync.sqlite", work / "ingest.sqlite"
    relative = copy_notes(notes, vault, folder)
    first_s, out = diarist("sync", str(folder), "--db", str(sync_db), "--app", "bench", "--json", *extra)
    assert len(json.loads(out)["added"]) == len(notes)
    result = {"first_sync_s": round(first_s, 2), "first_sync_tokens": count(model, dense_texts(sync_db)), "runs": []}
    save(result)
    copy_database(sync_db, ingest_db)
    for r in range(repeats):
        changed, deleted = relative[10 + 4 * r : 13 + 4 * r], relative[13 + 4 * r]
        for name in changed:
            with open(folder / name, "a", encoding="utf-8") as f:
                f.write("\n" + EDITED + "\n")
        (folder / deleted).unlink()
        sync_s, out = diarist("sync", str(folder), "--db", str(sync_db), "--app", "bench", "--json")
        report = json.loads(out)
        assert sorted(report["changed"]) == changed and report["deleted"] == [deleted], report
        ingest_s, _ = diarist("ingest", str(folder), "--db", str(ingest_db), "--app", "bench")
        marks = ",".join("?" * len(changed))
        tokens = count(model, dense_texts(sync_db, f"AND s.external_id IN ({marks})", tuple(changed)))
        result["runs"].append({"resync_s": round(sync_s, 2), "reingest_s": round(ingest_s, 2), "changed_tokens": tokens,
                               "report": {k: report[k] for k in ("changed", "deleted", "unchanged", "sessions_replaced",
                                                                 "items_deleted", "chunks")}})
        save(result)
    return result


def count(model, texts: list[str]) -> int:
    return sum(model.count_tokens(t) for t in texts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, default=Path("/work/realdata/obsidian-hub"))
    parser.add_argument("--notes", type=int, default=500, help="Notes of the re-sync folder.")
    parser.add_argument("--first-notes", type=int, default=60, help="Notes of each first-pass repeat.")
    parser.add_argument("--min-bytes", type=int, default=200)
    parser.add_argument("--max-bytes", type=int, default=3000, help="Largest note taken (bytes).")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--first-repeats", type=int, default=None,
                        help="Repeats of the first pass (default --repeats; 0: re-sync only).")
    parser.add_argument("--embedder", default=None, help="Default: diarist's default embedder.")
    parser.add_argument("--out", type=Path, required=True, help="Folder for results.json.")
    args = parser.parse_args(argv)
    from diarist import settings
    from diarist.embed import get_embedder

    model = get_embedder(args.embedder or settings.EMBEDDER)
    extra = ["--embedder", args.embedder] if args.embedder else []
    notes = pick_notes(args.vault, args.notes, args.min_bytes, args.max_bytes)
    first_notes = notes[: args.first_notes]
    result: dict = {
        "vault": str(args.vault), "note_bytes": [args.min_bytes, args.max_bytes], "embedder": model.model_id,
        "repeats": args.repeats, "cpus": os.cpu_count(), "niceness": os.nice(0), "first_pass": {"notes": len(first_notes),
        "bytes": sum(n.stat().st_size for n in first_notes), "runs": []},
    }
    args.out.mkdir(parents=True, exist_ok=True)

    def save(resync: dict | None = None) -> None:
        if resync is not None:
            result["resync"] = {"notes": len(notes), "bytes": sum(n.stat().st_size for n in notes), **resync}
        result["load_average"] = list(os.getloadavg())
        summarise(result)
        (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")

    for _ in range(args.repeats if args.first_repeats is None else args.first_repeats):
        with tempfile.TemporaryDirectory() as tmp:
            run = first_pass(first_notes, args.vault, Path(tmp), extra)
        tokens = count(model, run["texts"])
        alone_s = embedder_alone(model, run["texts"])
        result["first_pass"]["runs"].append({"tokens": tokens, "chunks": len(run["texts"]), "ingest_s": round(run["ingest_s"], 2),
                                             "sync_s": round(run["sync_s"], 2), "embedder_alone_s": round(alone_s, 4)})
        save()
    with tempfile.TemporaryDirectory() as tmp:
        resyncs(notes, args.vault, Path(tmp), extra, args.repeats, model, save)
    print(json.dumps(result["tokens_per_s"], indent=1))
    return 0


def summarise(result: dict) -> None:
    """Medians and tokens/s of what was measured so far."""
    per_s: dict = {}
    runs = result["first_pass"]["runs"]
    if runs:
        tokens = runs[0]["tokens"]
        for key, name in (("embedder_alone_s", "embedder_alone"), ("ingest_s", "ingest_first"), ("sync_s", "sync_first")):
            per_s[name] = round(tokens / max(statistics.median(r[key] for r in runs), 1e-6), 1)
    resync = result.get("resync")
    if resync:
        per_s["sync_first_resync_folder"] = round(resync["first_sync_tokens"] / resync["first_sync_s"], 1)
        if resync["runs"]:
            median = {k: statistics.median(r[k] for r in resync["runs"]) for k in ("resync_s", "reingest_s", "changed_tokens")}
            resync["median"] = median
            per_s["resync_3_of_500"] = round(median["changed_tokens"] / median["resync_s"], 1)
            per_s["reingest_3_of_500"] = round(median["changed_tokens"] / median["reingest_s"], 1)
    result["tokens_per_s"] = per_s


if __name__ == "__main__":
    raise SystemExit(main())
