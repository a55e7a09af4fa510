"""Per-prompt latency of the agents' hook, side by side in one run, and how often it adds
nothing to off-topic coding prompts.

    nice -n 5 python benchmarks/hook_latency.py [--prompts 50] [--sizes 10000,100000] \
        [--main /work/main/src] [--workdir /tmp/diarist-hook-bench] [--out benchmarks/results/hooks/latency.json]
    python benchmarks/hook_latency.py --startup-only 30 --out benchmarks/results/hooks/startup.json
    nice -n 5 python benchmarks/hook_latency.py --breakdown [--prompts 50] --out benchmarks/results/hooks/breakdown.json

Latency: each variant is a new process timed from its start to its exit (its output read), for
each of ``--prompts`` LongMemEval questions, the variants' order rotating from prompt to prompt
so that load hits all alike; medians and p90 reported:

* ``hook resident Nk``: ``python -m diarist.agents.hook claude-code UserPromptSubmit`` (the
  installed command) with the resident process up, on a memory of N chunks; and on the largest
  with ``--trim none`` (no lines at all), and as the main tree (``--main``) answers it, with its
  own resident process, on a copy of the largest at its schema (no stored line vectors: the
  trim embeds the lines of each memory it shows that it has not seen before);
* ``hook cold``: the same hook with no resident process (no key for it): in-process, the model
  loaded for the one prompt, on the largest memory;
* ``diarist --version``, ``diarist --help`` and ``python -c pass`` (the floor);
* ``context CLI main`` / ``context CLI branch``: ``diarist context QUESTION`` of the main tree
  (``--main``, on its copy) and of this one, on the largest memory.

The memories are scale.py's (real LongMemEval_S text, synthetic clustered vectors around real
MiniLM vectors, no model run to build them), recorded as built with the default model, so that
every variant opens them as a user's memory and embeds each question with the real model. Their
lines' vectors are synthetic too (``add_line_vectors``: each its chunk's vector plus noise).

Off-topic: a memory of two LoCoMo conversations embedded with the real model (the embedding
cache makes that fast), asked through the hook with the resident process up: the 40 coding
prompts of benchmarks/data/hook_offtopic_coding.txt (written before any score was seen), counted
empty or not; and the conversations' own first 40 questions, as the check that it is not
empty for everything.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
SRC = ROOT / "src"
APP = "bench"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo_dev.json.gz"
OFFTOPIC = HERE / "data" / "hook_offtopic_coding.txt"
MINILM_ID = "all-MiniLM-L6-v2-onnx-int8"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def env_for(data_dir: Path, src: Path = SRC, **extra: str) -> dict[str, str]:
    return {**os.environ, "XDG_DATA_HOME": str(data_dir), "PYTHONPATH": str(src), "ORT_DISABLE_TELEMETRY": "1",
            "DIARIST_HOOK_RESIDENT": "0", **extra}


def build_scale(path: Path, size: int) -> None:
    """scale.py's memory of ``size`` chunks, recorded as built with the default model."""
    import scale

    class DefaultModelLookalike(scale.LookupEmbedder):
        model_id = MINILM_ID

    scale.LookupEmbedder = DefaultModelLookalike  # build() makes its embedder by this name
    records = json.loads(__import__("gzip").open(scale.LONGMEMEVAL, "rt").read())
    scale.build(path, size, records)


def add_line_vectors(path: Path, batch: int = 2000) -> int:
    """The vectors of the lines of a scale.py memory's chunks, made as its chunk vectors are (no
    model run): each line its chunk's vector plus noise, unit length, float32, stored as ingest
    stores them (``Store.put_line_vectors``). The real model would take hours for 100k chunks
    on 2 cores; the hook's work with them (look up, one dot product each) is the same."""
    import numpy as np

    from diarist.embed.base import dequantize
    from diarist.read.lines import line_digest
    from diarist.read.trim import lines_of
    from diarist.store import open_store

    store = open_store(str(path), create=False)
    try:
        vectors = store.read_vectors(APP)
        row = {int(i): n for n, i in enumerate(vectors.ids)}
        rng = np.random.default_rng(len(row))
        sigma = 1.0 / np.sqrt(vectors.vectors.shape[1])
        after, done = 0, 0
        while page := store.chunks_without_lines(APP, after, batch):
            todo = []
            for chunk_id, text in page:
                lines = lines_of(text)
                centre = dequantize(vectors.vectors[row[chunk_id]][None, :])[0] if chunk_id in row else 0.0
                v = (centre + rng.normal(0.0, sigma, (len(lines), vectors.vectors.shape[1]))).astype(np.float32)
                v /= np.linalg.norm(v, axis=1, keepdims=True)
                todo.append((chunk_id, list(zip(map(line_digest, lines), v))))
            done += store.put_line_vectors(APP, todo)
            after = page[-1][0]
        return done
    finally:
        store.close()


def build_locomo(path: Path, conversations: int) -> list[str]:
    """A memory of LoCoMo conversations with the real model; their first questions."""
    from diarist.importers import read_all
    from diarist.memory import Memory

    with Memory(path, embed_cache=HERE / ".cache" / "embeddings.sqlite") as memory:
        imported = read_all(str(LOCOMO), "locomo", conversations)
        memory.add_sessions(imported.sessions, app=APP)
    data = json.loads(__import__("gzip").open(LOCOMO, "rt").read())
    return [q["question"] for record in data[:conversations] for q in record["qa"]]


def store_key(path: Path, data_dir: Path) -> None:
    """The key the installed hooks would hold for this memory's app (what `hooks install` does)."""
    from diarist.agents.paths import key_id, private_dir
    from diarist.keys import KeyStore
    from diarist.store import open_store

    keys_file = data_dir / "diarist" / "agents" / "keys.json"
    private_dir(keys_file.parent)
    stored = json.loads(keys_file.read_text()) if keys_file.exists() else {}
    key, _ = KeyStore(open_store(str(path), create=False)).create(APP, label="hook bench")
    stored[key_id(str(path), APP)] = key
    keys_file.write_text(json.dumps(stored))


def old_schema_copy(path: Path, copy: Path, data_dir: Path) -> None:
    """A copy of ``path`` as the main tree's schema has it (no ``line_vectors``: the migration
    that adds it undone), with its key, for the main tree's own resident process and hook."""
    import shutil
    import sqlite3

    from diarist.store.sqlite.migrations import MIGRATIONS

    shutil.copyfile(path, copy)
    store_key(copy, data_dir)  # opened by this tree: at its schema until rewound below
    (added,) = [n for n, step in enumerate(MIGRATIONS, 1) if isinstance(step, str) and " line_vectors (" in step]
    if added != len(MIGRATIONS):
        raise RuntimeError("the line vectors' migration is not the last one: rewind the ones after it too")
    with sqlite3.connect(copy) as conn:
        conn.execute("DROP TABLE line_vectors")
        conn.execute(f"PRAGMA user_version = {added - 1}")
    with sqlite3.connect(copy) as conn:
        conn.execute("VACUUM")


def start_resident(path: Path, data_dir: Path, src: Path = SRC) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-m", "diarist.server.resident", "--db", str(path),
                                "--idle-seconds", "0"], env=env_for(data_dir, src), stderr=subprocess.PIPE, text=True)
    line = process.stderr.readline()  # "serving ... on SOCKET" once warm
    if "serving" not in line:
        raise RuntimeError(f"the resident process for {path} did not start: {line}{process.stderr.read()}")
    log(f"  {line.strip()}")
    return process


def payload(prompt: str) -> str:
    return json.dumps({"session_id": "bench", "transcript_path": "/tmp/bench.jsonl", "cwd": "/tmp",
                       "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt})


def hook_command(path: Path, trim: str = "auto") -> list[str]:
    return [sys.executable, "-m", "diarist.agents.hook", "claude-code", "UserPromptSubmit", "--db", str(path),
            "--app", APP, "--trim", trim]


def timed(command: list[str], env: dict[str, str], stdin: str = "") -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, env=env, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{command[:4]} failed: {done.stderr[-2000:]}")
    return elapsed * 1000, done.stdout


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"n": len(values), "p50_ms": round(statistics.median(values), 1),
            "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 1)}


def startup(runs: int, out: str | None, main_src: str) -> int:
    """Start-up alone: ``python -c pass`` (the floor), ``import diarist``, ``diarist --version`` and
    ``--help`` of this tree and of ``main_src``'s, ``runs`` times each in turn; and ``import
    diarist``'s own import time."""
    env = env_for(Path("/tmp"))
    diarist = str(Path(sys.executable).parent / "diarist")
    variants = {"python -c pass": [sys.executable, "-c", "pass"],
                "python -c 'import diarist'": [sys.executable, "-c", "import diarist"],
                "diarist --version": [diarist, "--version"], "diarist --help": [diarist, "--help"],
                "diarist --version (main)": [diarist, "--version"], "diarist --help (main)": [diarist, "--help"]}
    envs = {name: env_for(Path("/tmp"), Path(main_src)) if "(main)" in name else env for name in variants}
    times: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for i in range(runs):
        for name in names[i % len(names):] + names[: i % len(names)]:
            times[name].append(timed(variants[name], envs[name])[0])
    trace = subprocess.run([sys.executable, "-X", "importtime", "-c", "import diarist"], env=env,
                           capture_output=True, text=True).stderr.strip().splitlines()
    own_us = int(trace[-1].split("|")[1])
    result = {"runs": runs, "latency": {name: summary(t) for name, t in times.items()},
              "import_diarist_cumulative_us": own_us,
              "heavy_modules_after_import": subprocess.run(
                  [sys.executable, "-c", "import sys, diarist; print(sorted(m for m in ('numpy', 'onnxruntime') "
                   "if m in sys.modules))"], env=env, capture_output=True, text=True).stdout.strip()}
    lines = ["| command | p50 ms | p90 ms | n |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {v['p50_ms']} | {v['p90_ms']} | {v['n']} |" for name, v in result["latency"].items()]
    lines.append(f"\n`python -X importtime -c 'import diarist'`: diarist {own_us} us cumulative; heavy modules "
                 f"loaded: {result['heavy_modules_after_import']}")
    print("\n".join(lines))
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, indent=2) + "\n")
        Path(out).with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0


def breakdown(work: Path, size: int, prompts: list[str], out: str | None) -> int:
    """Where a hook's time goes, per prompt, side by side: the hook (process start to output);
    the same hook on a database that does not exist (Python's start, the hook's imports, its
    argument and payload reading: everything but the request); ``python -c pass``; the request
    alone from a warm process (``client.context``: socket, HTTP, the resident's work); and the
    resident's work alone, in this process (``Memory.context`` on the same memory, and its parts:
    the question's embedding, the search)."""
    import time

    from diarist.agents import client
    from diarist.memory import Memory

    data_dir, path = work / "data", work / f"memory_{size}.sqlite"
    os.environ["XDG_DATA_HOME"] = str(data_dir)  # where client.context finds the key and the socket
    store_key(path, data_dir)
    resident = start_resident(path, data_dir)
    names = ("hook", "hook, no database (the floor of the hook's process)", "python -c pass",
             "request from a warm process", "Memory.context in-process", "of which: question embedding",
             "of which: search")
    times: dict[str, list[float]] = {name: [] for name in names}
    try:
        memory = Memory(path, create=False)
        memory.context("warm up", app=APP)
        for prompt in prompts:
            times[names[0]].append(timed(hook_command(path), env_for(data_dir), payload(prompt))[0])
            times[names[1]].append(timed(hook_command(work / "absent.sqlite"), env_for(data_dir), payload(prompt))[0])
            times[names[2]].append(timed([sys.executable, "-c", "pass"], env_for(data_dir))[0])
            for name, call in ((names[3], lambda: client.context(str(path), APP, prompt, budget_tokens=1000, timeout=60)),
                               (names[4], lambda: memory.context(prompt, app=APP, budget_tokens=1000)),
                               (names[5], lambda: memory.embedder.embed_query([prompt])),
                               (names[6], lambda: memory.search(prompt, app=APP, k=10))):
                start = time.perf_counter()
                call()
                times[name].append((time.perf_counter() - start) * 1000)
        memory.close()
    finally:
        resident.send_signal(signal.SIGINT)
        resident.wait(timeout=60)
    result = {"size": size, "prompts": len(prompts), "machine": {"cpus": os.cpu_count(), "load_at_end": os.getloadavg()},
              "latency": {name: summary(t) for name, t in times.items()}}
    lines = [f"| {size // 1000}k chunks | p50 ms | p90 ms | n |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {v['p50_ms']} | {v['p90_ms']} | {v['n']} |" for name, v in result["latency"].items()]
    print("\n".join(lines))
    if out:
        Path(out).write_text(json.dumps(result, indent=2) + "\n")
        Path(out).with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=50)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--main", default="/work/main/src", help="src folder of the tree whose context CLI is compared")
    parser.add_argument("--workdir", default="/tmp/diarist-hook-bench")
    parser.add_argument("--out", default=None)
    parser.add_argument("--startup-only", type=int, metavar="RUNS", default=0,
                        help="measure start-up alone (RUNS runs of each command) and stop")
    parser.add_argument("--breakdown", action="store_true",
                        help="where the hook's time goes on the largest memory (built before), and stop")
    args = parser.parse_args(argv)
    if args.startup_only:
        return startup(args.startup_only, args.out, args.main)
    if args.breakdown:
        import scale

        records = json.loads(__import__("gzip").open(scale.LONGMEMEVAL, "rt").read())
        prompts = list(dict.fromkeys(r["question"] for r in records))[: args.prompts]
        return breakdown(Path(args.workdir), max(int(s) for s in args.sizes.split(",")), prompts, args.out)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    data_dir, cold_dir = work / "data", work / "cold-data"  # cold: no key, so no resident process
    cold_dir.mkdir(exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    memories = {size: work / f"memory_{size}.sqlite" for size in sizes}
    for size, path in memories.items():
        if not path.exists():
            log(f"building {size} chunks at {path}")
            build_scale(path, size)
        log(f"line vectors for {path}: {add_line_vectors(path)} chunks given theirs")
    locomo = work / "locomo.sqlite"
    if not locomo.exists():
        log("building the LoCoMo memory (real model, embedding cache)")
    questions = build_locomo(locomo, 2) if not locomo.exists() else None
    if questions is None:
        data = json.loads(__import__("gzip").open(LOCOMO, "rt").read())
        questions = [q["question"] for record in data[:2] for q in record["qa"]]
    import shutil

    shutil.rmtree(data_dir / "diarist", ignore_errors=True)
    from diarist.memory import Memory

    with Memory(locomo) as memory:  # a LoCoMo memory built before line vectors: the real model's, once
        log(f"line vectors for {locomo}: {memory.index_lines(APP)} chunks given theirs")
    for path in [*memories.values(), locomo]:
        store_key(path, data_dir)
    largest = memories[max(sizes)]
    before = work / f"{largest.stem}.main.sqlite"  # the main tree's resident process reads this copy
    old_schema_copy(largest, before, data_dir)
    log("starting the resident processes")
    residents = [start_resident(path, data_dir) for path in [*memories.values(), locomo]]
    residents.append(start_resident(before, data_dir, Path(args.main)))
    try:
        import scale

        records = json.loads(__import__("gzip").open(scale.LONGMEMEVAL, "rt").read())
        prompts = list(dict.fromkeys(r["question"] for r in records))[: args.prompts]
        diarist = str(Path(sys.executable).parent / "diarist")
        variants = {f"hook resident {size // 1000}k": (hook_command(path), env_for(data_dir), True)
                    for size, path in memories.items()}
        variants |= {
            f"hook resident {max(sizes) // 1000}k, --trim none": (hook_command(largest, "none"), env_for(data_dir),
                                                                 True),
            f"hook resident {max(sizes) // 1000}k, main": (hook_command(before), env_for(data_dir, Path(args.main)),
                                                           True),
            "hook cold (no resident process)": (hook_command(largest), env_for(cold_dir, DIARIST_HOOK_DEADLINE="600"),
                                                True),
            "diarist --version": ([diarist, "--version"], env_for(data_dir), False),
            "diarist --help": ([diarist, "--help"], env_for(data_dir), False),
            "python -c pass": ([sys.executable, "-c", "pass"], env_for(data_dir), False),
            "context CLI main": ([sys.executable, "-m", "diarist.cli", "context", "{}", "--db", str(before), "--app", APP],
                                 env_for(data_dir, Path(args.main)), False),
            "context CLI branch": ([sys.executable, "-m", "diarist.cli", "context", "{}", "--db", str(largest),
                                    "--app", APP], env_for(data_dir), False),
        }
        names = list(variants)
        times: dict[str, list[float]] = {name: [] for name in names}
        nonempty: dict[str, int] = {name: 0 for name in names}
        for i, prompt in enumerate(prompts):
            order = names[i % len(names):] + names[: i % len(names)]
            for name in order:
                command, env, is_hook = variants[name]
                command = [prompt if part == "{}" else part for part in command]
                ms, out = timed(command, env, payload(prompt) if is_hook else "")
                times[name].append(ms)
                nonempty[name] += bool(out.strip()) and "nothing relevant" not in out
            if (i + 1) % 10 == 0:
                log(f"  {i + 1}/{len(prompts)} prompts: " + ", ".join(
                    f"{n} {statistics.median(t):.0f}" for n, t in times.items()))
        latency = {name: {**summary(times[name]), "answers_not_empty": nonempty[name]} for name in names}
        offtopic = [line.strip() for line in OFFTOPIC.read_text().splitlines() if line.strip() and not line.startswith("#")]
        outputs = {kind: [timed(hook_command(locomo), env_for(data_dir), payload(p))[1] for p in items]
                   for kind, items in (("offtopic", offtopic), ("locomo questions", questions[:40]))}
        empty = {kind: sum(not o.strip() for o in outs) for kind, outs in outputs.items()}
    finally:
        for process in residents:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
    result = {
        "machine": {"cpus": os.cpu_count(), "load_at_end": os.getloadavg()},
        "prompts": len(prompts), "sizes": sizes, "main": args.main,
        "latency": latency,
        "offtopic": {"prompts": len(offtopic), "empty": empty["offtopic"],
                     "empty_share": round(empty["offtopic"] / len(offtopic), 3),
                     "locomo_questions": len(outputs["locomo questions"]),
                     "locomo_questions_empty": empty["locomo questions"]},
    }
    lines = ["| variant | p50 ms | p90 ms | n | answers not empty |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {name} | {v['p50_ms']} | {v['p90_ms']} | {v['n']} | {v['answers_not_empty']} |"
              for name, v in latency.items()]
    lines.append(f"\noff-topic coding prompts with nothing added: {empty['offtopic']}/{len(offtopic)}; "
                 f"LoCoMo questions with nothing added: {empty['locomo questions']}/{len(outputs['locomo questions'])}")
    print("\n".join(lines))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
        Path(args.out).with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
