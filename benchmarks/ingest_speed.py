"""Where `diarist ingest` spends its time, and how it compares with the embedder alone (issue 28 item 5).

For each source tree named with --tree (NAME=PATH to a checkout; the default is this tree, "after"),
each repeat runs two fresh processes on the same notes, in alternating order:

- ingest: `diarist ingest FOLDER --db TMP --embedder minilm` in-process (the CLI's own code path),
  with timers around its stages: parse (the importers' read_all), validate, chunk, embed
  (``Embedder.embed_passages``), BM25 terms (``lexical.analyze``), write (``Store.put_items``: rows,
  vectors and postings in one transaction) and the rest; the embedder's model load is timed apart
  and left out of the total (the embedder alone pays it too). The texts handed to
  ``embed_passages`` are recorded, call by call.
- embedder alone: a fresh embedder embeds those same texts through ``embed_passages``, in the
  same calls (so the same batches).

The figure of merit is ingest seconds / embedder-alone seconds (median of the repeats): 1.0 means
ingest costs what embedding the text costs, nothing more. Tokens are the embedder's tokens of the
texts embedded. Run it under `nice` on a machine as idle as you have; it prints a table and
writes results.json next to a manifest.json.

On a busy machine wall seconds swing by a third between identical runs; --threads 1 makes the
CPU seconds steady, and --no-model (the model's output replaced by zeros) times only the work
around the model, the part ingest can add. The runs in benchmarks/results/ingest/:

    git archive 563f944 src | tar -x -C /tmp/before   # the code before issue 28 item 5
    PYTHONPATH=src nice -n 10 python benchmarks/ingest_speed.py --vault /work/realdata/obsidian-help-sub \
        --tree before=/tmp/before --tree after=. --repeats 3 --threads 1 --out benchmarks/results/ingest/obsidian-help-sub-1-thread
    ... --vault /work/realdata/obsidian-help-en --threads 1 --no-model --out .../obsidian-help-no-model

(obsidian-help-en: the en/ folder of github.com/obsidianmd/obsidian-help at fa179e9, 173 notes;
obsidian-help-sub: its "Obsidian Sync" and "Linking notes and files" folders, 18 notes.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
STAGES = ("parse", "validate", "chunk", "embed", "bm25_terms", "write")


# -- the two workers (each runs in a fresh process, PYTHONPATH=<tree>/src) --------------------------

def _timed(table: dict[str, float], stage: str, fn):
    """fn, adding its wall seconds to table[stage] (and its CPU seconds, all threads, to table[stage + "_cpu"])."""
    def wrapper(*args, **kwargs):
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            table[stage] = table.get(stage, 0.0) + time.perf_counter() - start
            table[stage + "_cpu"] = table.get(stage + "_cpu", 0.0) + time.process_time() - cpu
    return wrapper


def pin_threads(threads: int) -> None:
    """Every MiniLM embedder of this process runs ONNX on ``threads`` threads (0: its default)."""
    from diarist.embed import onnx_minilm

    init = onnx_minilm.MiniLMOnnxEmbedder.__init__
    if threads:
        onnx_minilm.MiniLMOnnxEmbedder.__init__ = lambda self, *a, **k: init(self, *a, **{**k, "threads": threads})


class _NoModel:
    """Stands for the ONNX session: returns zeros at once, so only the work around the model is timed."""

    def __init__(self, session):
        self._inputs = session.get_inputs()

    def get_inputs(self):
        return self._inputs

    def run(self, _names, feed):
        import numpy as np

        ids = feed["input_ids"]
        return [np.zeros((*ids.shape, 384), np.float32)]


def stub_model() -> None:
    """Every MiniLM embedder of this process skips the model (--no-model: the cost beyond it)."""
    from diarist.embed import onnx_minilm

    init = onnx_minilm.MiniLMOnnxEmbedder.__init__

    def without_model(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self._session = _NoModel(self._session)
    onnx_minilm.MiniLMOnnxEmbedder.__init__ = without_model


def ingest_worker(vault: str, texts_out: str, batch: int) -> dict:
    """`diarist ingest` on the vault with a timer on each stage; records the texts embedded."""
    import diarist.importers as importers
    import diarist.lexical as lexical
    import diarist.memory as memory
    import diarist.write.items as items
    import diarist.write.validate as validate
    from diarist.cli.commands import main
    from diarist.embed import onnx_minilm
    from diarist.embed.base import Embedder
    from diarist.store.sqlite.store import SQLiteStore

    table: dict[str, float] = {}
    calls: list[list[str]] = []
    embed_passages = Embedder.embed_passages

    def recording(self, texts, progress=None, **counts):
        calls.append(list(texts))
        return embed_passages(self, texts, progress, **counts)

    importers.read_all = _timed(table, "parse", importers.read_all)
    validate.check_session = _timed(table, "validate", validate.check_session)
    memory.check_session = validate.check_session
    items.check_session = validate.check_session  # the import funnel checks each session here, once
    memory.Memory.chunk = _timed(table, "chunk", memory.Memory.chunk)
    Embedder.embed_passages = _timed(table, "embed", recording)
    lexical.analyze = _timed(table, "bm25_terms", lexical.analyze)
    SQLiteStore.put_items = _timed(table, "write", SQLiteStore.put_items)
    onnx_minilm.MiniLMOnnxEmbedder.__init__ = _timed(table, "model_load", onnx_minilm.MiniLMOnnxEmbedder.__init__)
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["ingest", vault, "--db", os.path.join(tmp, "m.sqlite"), "--embedder", "minilm",
                "--batch", str(batch), "--json"]
        start, cpu = time.perf_counter(), time.process_time()
        try:
            main.main(argv, standalone_mode=False)
        finally:
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    Path(texts_out).write_text(json.dumps(calls), encoding="utf-8")
    total = wall - table.get("model_load", 0.0)
    stages = {s: table.get(s, 0.0) for s in STAGES}  # wall seconds, nested stages apart
    stages["other"] = total - sum(stages.values())
    return {"seconds": total, "cpu_seconds": cpu - table.get("model_load_cpu", 0.0), "stages": stages,
            "model_load": table.get("model_load", 0.0),
            "embed_calls": len(calls), "texts": sum(map(len, calls))}


def embed_worker(texts_in: str) -> dict:
    """The embedder alone: the same texts through ``embed_passages``, in the same calls."""
    from diarist.embed import get_embedder

    calls = json.loads(Path(texts_in).read_text(encoding="utf-8"))
    embedder = get_embedder("minilm")
    start, cpu = time.perf_counter(), time.process_time()
    for texts in calls:
        embedder.embed_passages(texts)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    tokens = sum(embedder.count_tokens(t) for texts in calls for t in texts)
    return {"seconds": seconds, "cpu_seconds": cpu, "tokens": tokens, "texts": sum(map(len, calls)), "chars": sum(len(t) for c in calls for t in c)}


# -- the driver ---------------------------------------------------------------------------------------

def run_worker(tree: Path, args: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    done = subprocess.run([sys.executable, str(HERE), "--worker", *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"worker {args[0]} on {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def vault_facts(vault: Path) -> dict:
    sizes = sorted(p.stat().st_size for p in vault.rglob("*.md") if not any(part.startswith(".") for part in p.parts))
    return {"notes": len(sizes), "bytes": sum(sizes), "median_note_bytes": statistics.median(sizes) if sizes else 0}


def commit_of(tree: Path) -> str:
    try:
        head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--", "src"], capture_output=True, text=True)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def summarise(runs: list[dict]) -> dict:
    ingest = [r["ingest"]["seconds"] for r in runs]
    alone = [r["embed"]["seconds"] for r in runs]
    tokens = runs[0]["embed"]["tokens"]
    stages = {s: statistics.median(r["ingest"]["stages"][s] for r in runs) for s in (*STAGES, "other")}
    return {
        "ingest_seconds": statistics.median(ingest), "embedder_alone_seconds": statistics.median(alone),
        "ratio": statistics.median(i / a for i, a in zip(ingest, alone)),
        "cpu_ratio": statistics.median(r["ingest"]["cpu_seconds"] / r["embed"]["cpu_seconds"] for r in runs),
        "ingest_cpu_seconds": statistics.median(r["ingest"]["cpu_seconds"] for r in runs),
        "embedder_alone_cpu_seconds": statistics.median(r["embed"]["cpu_seconds"] for r in runs),
        "tokens": tokens, "ingest_tokens_per_s": tokens / statistics.median(ingest),
        "embedder_tokens_per_s": tokens / statistics.median(alone),
        "stages": stages, "model_load_seconds": statistics.median(r["ingest"]["model_load"] for r in runs),
        "texts": runs[0]["embed"]["texts"], "embed_calls": runs[0]["ingest"]["embed_calls"],
    }


def table(results: dict) -> str:
    lines = []
    for name, s in results.items():
        total = s["ingest_seconds"]
        lines.append(f"\n{name}: ingest {total:.1f} s, embedder alone {s['embedder_alone_seconds']:.1f} s, "
                     f"ratio {s['ratio']:.3f} (CPU seconds {s['ingest_cpu_seconds']:.1f} / "
                     f"{s['embedder_alone_cpu_seconds']:.1f}, ratio {s['cpu_ratio']:.3f}); {s['tokens']} tokens: ingest {s['ingest_tokens_per_s']:.0f} tok/s, "
                     f"embedder {s['embedder_tokens_per_s']:.0f} tok/s (model load {s['model_load_seconds']:.2f} s apart)")
        lines.append(f"  {'stage':<11} {'seconds':>8} {'share':>7}")
        for stage, sec in s["stages"].items():
            lines.append(f"  {stage:<11} {sec:8.2f} {sec / total:7.1%}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--vault", type=Path, help="a folder of notes (Markdown)")
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH of a source tree (repeatable; default after=.)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64, help="diarist ingest --batch")
    parser.add_argument("--threads", type=int, default=0, help="ONNX threads in both workers (0: onnxruntime's "
                        "default, every core); 1 makes CPU seconds a steady measure on a busy machine")
    parser.add_argument("--no-model", action="store_true", help="skip the model itself (its output zeros) in both "
                        "workers: what remains is the work around it, which is what ingest adds")
    parser.add_argument("--out", type=Path, help="folder for results.json and manifest.json")
    args = parser.parse_args()
    if args.worker:
        kind, threads, *rest = args.worker
        pin_threads(abs(int(threads)))
        if threads.startswith("-"):  # --no-model
            stub_model()
        out = ingest_worker(rest[0], rest[1], int(rest[2])) if kind == "ingest" else embed_worker(rest[0])
        print(json.dumps(out))
        return
    if args.vault is None or not args.vault.is_dir():
        parser.error("--vault must be a folder")
    trees = dict(t.split("=", 1) for t in args.tree) if args.tree else {"after": "."}
    trees = {name: Path(path).resolve() for name, path in trees.items()}
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    threads = f"-{args.threads}" if args.no_model else str(args.threads)  # the workers' flag: "-N" skips the model
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for name, tree in trees.items():
                texts = os.path.join(tmp, f"{name}.json")
                if not os.path.exists(texts):  # the first ingest records the texts the embedder alone reads
                    run = {"ingest": run_worker(tree, ["ingest", threads, str(args.vault), texts, str(args.batch)])}
                    run["embed"] = run_worker(tree, ["embed", threads, texts])
                elif repeat % 2:
                    run = {"embed": run_worker(tree, ["embed", threads, texts])}
                    run["ingest"] = run_worker(tree, ["ingest", threads, str(args.vault), texts, str(args.batch)])
                else:
                    run = {"ingest": run_worker(tree, ["ingest", threads, str(args.vault), texts, str(args.batch)])}
                    run["embed"] = run_worker(tree, ["embed", threads, texts])
                runs[name].append(run)
                print(f"repeat {repeat + 1} {name}: ingest {run['ingest']['seconds']:.1f} s "
                      f"({run['ingest']['cpu_seconds']:.1f} CPU s), embedder alone {run['embed']['seconds']:.1f} s "
                      f"({run['embed']['cpu_seconds']:.1f} CPU s)", file=sys.stderr, flush=True)
    results = {name: summarise(r) for name, r in runs.items()}
    print(table(results))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        payload = {"vault": vault_facts(args.vault), "vault_path": str(args.vault), "repeats": args.repeats,
                   "batch": args.batch, "threads": args.threads, "no_model": args.no_model, "load_average": os.getloadavg(), "cpus": os.cpu_count(),
                   "trees": {name: {"path": str(tree), "commit": commit_of(tree)} for name, tree in trees.items()},
                   "results": results, "runs": runs}
        (args.out / "results.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        command = "PYTHONPATH=src nice -n 10 python benchmarks/ingest_speed.py " + " ".join(sys.argv[1:])
        manifest = {"kind": "ingest-speed", "what": "diarist ingest's time per stage and its ratio to the embedder "
                    "alone on the same texts in the same calls (median of repeats), each source tree side by side",
                    "commit": commit_of(ROOT), "command": command, "files": ["results.json"]}
        (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
