"""Writing a run, re-deriving it (``verify``) and comparing two runs (``compare``)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import context_summary, everyday_summary, xquad_summary
from .metrics import KS, render_markdown, summarise
from .rows import PLAIN_ROWS, ROWS, dump, has_rows, read_rows, rows_path, write_jsonl_gz
from .rows import sign_test  # noqa: F401  (re-exported: callers import it from here)

PLOT = "recall_by_type.png"
CANDIDATES = "candidates.jsonl.gz"  # a block's search hits, for replaying a cut offline (context, everyday)

Derive = Callable[[list[dict[str, Any]], str, str], dict[str, Any]]
Render = Callable[[dict[str, Any], dict[str, Any]], str]
# config.json's "benchmark" -> how its runs' summaries are derived from the rows and rendered; a run
# without one is a retrieval run (``diarist bench``), the only kind with a plot.
SUMMARIES: dict[str | None, tuple[Derive, Render]] = {
    None: (summarise, render_markdown),
    context_summary.BENCHMARK: (context_summary.summarise, context_summary.render_markdown),
    everyday_summary.BENCHMARK: (everyday_summary.summarise, everyday_summary.render_markdown),
    xquad_summary.BENCHMARK: (xquad_summary.summarise, xquad_summary.render_markdown),
}


def _summary_of(meta: dict[str, Any]) -> tuple[Derive, Render]:
    benchmark = meta.get("benchmark")
    if benchmark not in SUMMARIES:
        raise ValueError(f"config.json names benchmark {benchmark!r}; known: {sorted(b for b in SUMMARIES if b)}")
    return SUMMARIES[benchmark]


def write_run(out: Path, rows: list[dict[str, Any]], meta: dict[str, Any],
              candidates: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Every benchmark's run folder: ``rows.jsonl.gz`` (one row a question), ``config.json`` (``meta``),
    ``summary.json``/``.md`` derived from the rows as ``verify`` derives them (by
    ``meta["benchmark"]``), ``candidates.jsonl.gz`` when given, a retrieval run's plot, and
    ``manifest.json`` naming them. Returns the summary."""
    derive, render = _summary_of(meta)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl_gz(out / ROWS, rows)
    files = [ROWS, "config.json", "summary.json", "summary.md"]
    if candidates is not None:
        write_jsonl_gz(out / CANDIDATES, candidates)
        files.append(CANDIDATES)
    (out / "config.json").write_text(dump(meta), encoding="utf-8")
    summary = derive(rows, meta["dataset"], meta["config_name"])
    (out / "summary.json").write_text(dump(summary), encoding="utf-8")
    (out / "summary.md").write_text(render(summary, meta), encoding="utf-8")
    if meta.get("benchmark") is None:
        plot(summary, out / PLOT)
        files.append(PLOT)
    write_manifest(out, meta, files)
    return summary


RUN_FILES = [ROWS, "config.json", "summary.json", "summary.md", PLOT]
# A context-block run has no plot; it keeps the hits each block was built from, for replaying a cut.
CONTEXT_RUN_FILES = [ROWS, "config.json", "summary.json", "summary.md", CANDIDATES]


def write_manifest(out: Path, meta: dict[str, Any], files: list[str] = RUN_FILES) -> None:
    """``manifest.json``: what every result folder of the lab holds (benchmarks/README.md): the
    command that wrote it and the code it ran, here read from the run's config."""
    manifest = {"kind": "bench-run", "what": meta["description"], "command": meta["command"],
                "commit": str(meta["code_version"]).removeprefix("git:"), "files": files,
                "check": f"diarist bench verify {out}"}
    (out / "manifest.json").write_text(dump(manifest), encoding="utf-8")


def plot(summary: dict[str, Any], path: Path) -> None:
    """recall_any@k by question type (the set without abstention/adversarial questions)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    set_name = "no_abs" if "no_abs" in summary["by_type"] else "no_adv"
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    for label, cells in [("overall", summary["overall"][set_name]), *summary["by_type"][set_name].items()]:
        ks = [k for k in KS if cells.get(f"r_any@{k}") is not None]
        if not ks:
            continue
        ax.plot(ks, [cells[f"r_any@{k}"] for k in ks], marker="o",
                linewidth=2.5 if label == "overall" else 1.2,
                color="black" if label == "overall" else None, label=f"{label} (n={cells['n']})")
    ax.set_xticks(list(KS))
    ax.set_xlabel("k (sessions)")
    ax.set_ylabel("recall_any@k")
    ax.set_title(f"{summary['dataset']} · {summary['config']} · set {set_name}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


# -- verify ----------------------------------------------------------------------------------


def _diff(stored: Any, fresh: Any, where: str, out: list[str]) -> None:
    if isinstance(stored, dict) and isinstance(fresh, dict):
        for key in sorted(set(stored) | set(fresh)):
            if key not in stored:
                out.append(f"{where}.{key}: missing from the summary")
            elif key not in fresh:
                out.append(f"{where}.{key}: not derivable from the rows")
            else:
                _diff(stored[key], fresh[key], f"{where}.{key}", out)
    elif isinstance(stored, float) or isinstance(fresh, float):
        ok = isinstance(stored, (int, float)) and isinstance(fresh, (int, float)) and math.isclose(
            stored, fresh, rel_tol=0, abs_tol=1e-9)
        if not ok:
            out.append(f"{where}: summary says {stored!r}, rows give {fresh!r}")
    elif stored != fresh:
        out.append(f"{where}: summary says {stored!r}, rows give {fresh!r}")


def verify_run(run: Path) -> list[str]:
    """Every discrepancy between a run's summary files and what its rows give (empty: all good)."""
    rows_file = rows_path(run)
    problems = [f"{path}: missing" for path in (rows_file, *(run / name for name in ("config.json", "summary.json", "summary.md")))
                if not path.exists()]
    if problems:
        return problems
    meta = json.loads((run / "config.json").read_text(encoding="utf-8"))
    rows = read_rows(run)
    for i, row in enumerate(rows, start=1):
        if row.get("config") != meta["config_name"]:
            problems.append(f"{rows_file} row {i}: config {row.get('config')!r}, run is {meta['config_name']!r}")
    if meta.get("benchmark") not in SUMMARIES:
        return problems + [f"{run}/config.json: benchmark {meta['benchmark']!r}, which no summary knows"]
    derive, render = _summary_of(meta)
    fresh = derive(rows, meta["dataset"], meta["config_name"])
    stored = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    _diff(stored, fresh, f"{run}/summary.json", problems)
    md = (run / "summary.md").read_text(encoding="utf-8")
    expected = render(fresh, meta)
    if md != expected:
        old, new = md.splitlines(), expected.splitlines()
        for n, (a, b) in enumerate(zip(old, new), start=1):
            if a != b:
                problems.append(f"{run}/summary.md line {n}: {a!r}, rows give {b!r}")
                break
        else:
            problems.append(f"{run}/summary.md: {len(old)} lines, rows give {len(new)}")
    if meta.get("benchmark") is None and not (run / PLOT).exists():  # only a retrieval run has a plot
        problems.append(f"{run}/{PLOT}: missing")
    return problems


def find_runs(paths: list[Path]) -> list[Path]:
    """Run folders (holding rows.jsonl.gz, or an older run's rows.jsonl) at or under the given paths."""
    runs: list[Path] = []
    for p in paths:
        if has_rows(p):
            runs.append(p)
        elif p.is_dir():
            folders = {q.parent for name in (ROWS, PLAIN_ROWS) for q in p.rglob(name)}
            runs += sorted(f for f in folders if _bench_run(f))
    return runs


def _bench_run(folder: Path) -> bool:
    """Whether a folder holding rows is a bench run: not when its manifest says it holds
    another tool's rows (the floor calibration's, checked by its own script)."""
    manifest = folder / "manifest.json"
    return not manifest.exists() or json.loads(manifest.read_text(encoding="utf-8")).get("kind") == "bench-run"


# -- compare ----------------------------------------------------------------------------------


def paired(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]], metric: str, set_name: str,
           dataset: str) -> dict[str, Any]:
    from .metrics import _members

    def values(rows: list[dict[str, Any]]) -> dict[str, float]:
        members, key = _members(rows, dataset)[set_name]
        return {r["id"]: r[key][metric] for r in members if r[key][metric] is not None}

    a, b = values(rows_a), values(rows_b)
    common = sorted(set(a) & set(b))
    gained = [q for q in common if b[q] > a[q]]
    lost = [q for q in common if b[q] < a[q]]
    mean = lambda v: sum(v) / len(v) if v else float("nan")  # noqa: E731
    return {
        "metric": metric,
        "n": len(common),
        "a": mean([a[q] for q in common]),
        "b": mean([b[q] for q in common]),
        "gained": gained,
        "lost": lost,
        "p": sign_test(len(gained), len(lost)),
    }


LIST_MAX = 30
COMPARE_METRICS = ("r_any@1", "r_any@3", "r_any@5", "r_any@10", "r_all@5", "r_all@10", "ndcg@10", "mrr")


def compare_runs(a: Path, b: Path, set_name: str | None = None, metrics: tuple[str, ...] = COMPARE_METRICS,
                 detail: str = "r_any@5") -> str:
    """A markdown report of B against A, paired on the questions both answered."""
    meta_a = json.loads((a / "config.json").read_text(encoding="utf-8"))
    if meta_a.get("benchmark") == "context":  # two context-block runs (diarist.bench.context_bench)
        return context_summary.compare_context(a, b, set_name)
    if meta_a.get("benchmark") == "everyday":  # two runs of the everyday set (diarist.bench.everyday)
        return everyday_summary.compare_everyday(a, b, set_name)
    if meta_a.get("benchmark") == "xquad":  # two XQuAD runs (diarist.bench.xquad)
        return xquad_summary.compare_xquad(a, b, set_name)
    meta_b = json.loads((b / "config.json").read_text(encoding="utf-8"))
    dataset = meta_a["dataset"]
    if meta_b["dataset"] != dataset:
        raise ValueError(f"{a} is {dataset}, {b} is {meta_b['dataset']}: nothing to pair")
    set_name = set_name or ("no_abs" if dataset == "longmemeval" else "no_adv")
    rows_a, rows_b = read_rows(a), read_rows(b)
    lines = [
        f"## {meta_b['config_name']} vs {meta_a['config_name']} ({dataset}, set `{set_name}`)",
        "",
        f"A = `{a}`, B = `{b}`. Paired on the questions both runs scored; gained = better in B, "
        "lost = worse in B; p = exact two-sided sign test on the questions that differ "
        "(for 0/1 metrics this is the exact McNemar test).",
        "",
        "| metric | n | A | B | B - A | gained | lost | p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    results = {}
    for metric in metrics:
        r = paired(rows_a, rows_b, metric, set_name, dataset)
        results[metric] = r
        lines.append(f"| {metric} | {r['n']} | {r['a']:.4f} | {r['b']:.4f} | {r['b'] - r['a']:+.4f} | "
                     f"+{len(r['gained'])} | -{len(r['lost'])} | {r['p']:.3g} |")
    d = results.get(detail) or paired(rows_a, rows_b, detail, set_name, dataset)
    types = {r["id"]: r["type"] for r in rows_b}
    lines += ["", f"{detail}: gained {len(d['gained'])}, lost {len(d['lost'])}.", "",
              "| type | gained | lost |", "|---|---|---|"]
    for qtype in sorted({types.get(q, "?") for q in d["gained"] + d["lost"]}):
        g = sum(types.get(q, "?") == qtype for q in d["gained"])
        lo = sum(types.get(q, "?") == qtype for q in d["lost"])
        lines.append(f"| {qtype} | +{g} | -{lo} |")
    lines.append("")
    for label, ids in (("gained", d["gained"]), ("lost", d["lost"])):
        if ids:
            shown = ", ".join(f"{q} ({types.get(q, '?')})" for q in ids[:LIST_MAX])
            more = f", and {len(ids) - LIST_MAX} more" if len(ids) > LIST_MAX else ""
            lines.append(f"- {label}: {shown}{more}")
    return "\n".join(lines) + "\n"
