"""XQuAD's summary, report and paired comparison (``diarist bench xquad``, diarist.bench.xquad): pure
functions over its rows, apart from the runner, so that ``diarist bench verify`` and ``compare`` read
them without the lab.

``TARGETS`` are issue 43's R@1 thresholds: monolingual >= 0.90 in each language (English >= 0.95),
cross-lingual (question in the language, memory in English) >= 0.75, a target for a multilingual
model (the default is English-only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .metrics import _fmt, _mean
from .rows import ROWS, read_rows, sign_test

BENCHMARK = "xquad"
PIVOT = "en"  # the memory's language in the cross-lingual mode
MODES = ("mono", "cross")
# (mode, language or "*" for the others, at least): issue 43's R@1 targets.
TARGETS = (("mono", "en", 0.95), ("mono", "*", 0.90), ("cross", "*", 0.75))
#: What a run's folder holds (no plot, no candidates: a row keeps its paragraph's rank and the top hit).
RUN_FILES = [ROWS, "config.json", "summary.json", "summary.md"]




def _target(mode: str, lang: str) -> float | None:
    for t_mode, t_lang, at_least in TARGETS:
        if t_mode == mode and t_lang in (lang, "*"):
            return at_least
    return None


def summarise(rows: list[dict[str, Any]], dataset: str, config: str) -> dict[str, Any]:
    """Per (mode, language): n, R@1, R@5, MRR@10, query p50 ms; and each cell against its target."""
    cells: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        for lang in dict.fromkeys(r["lang"] for r in rows if r["mode"] == mode):
            group = [r for r in rows if r["mode"] == mode and r["lang"] == lang]
            ms = sorted(r["query_ms"] for r in group)
            cells[f"{mode}/{lang}"] = {
                "mode": mode, "lang": lang, "n": len(group),
                "r@1": _mean([float(r["r@1"]) for r in group]), "r@5": _mean([float(r["r@5"]) for r in group]),
                "mrr@10": _mean([1.0 / r["rank"] if r["rank"] else 0.0 for r in group]),
                "query_p50_ms": round(ms[len(ms) // 2], 2) if ms else None,
            }
    targets = []
    for name, cell in cells.items():
        at_least = _target(cell["mode"], cell["lang"])
        if at_least is not None:
            targets.append({"cell": name, "metric": "r@1", "value": cell["r@1"], "target": at_least,
                            "met": cell["r@1"] is not None and cell["r@1"] >= at_least})
    return {"dataset": dataset, "config": config, "n": len(rows), "cells": cells, "targets": targets}


def render_markdown(summary: dict[str, Any], meta: dict[str, Any]) -> str:
    lines = [f"# XQuAD · {meta['model_id']}", "", meta["description"] + ".", "",
             f"Command: `{meta['command']}`", "",
             "| questions / memory | n | R@1 | R@5 | MRR@10 | query p50 ms | target R@1 |",
             "|---|---|---|---|---|---|---|"]
    met = {t["cell"]: t for t in summary["targets"]}
    for name, c in summary["cells"].items():
        memory = c["lang"] if c["mode"] == "mono" else PIVOT
        t = met.get(name)
        target = f"≥ {t['target']} {'met' if t['met'] else 'NOT MET'}" if t else "-"
        lines.append(f"| {c['lang']} / {memory} | {c['n']} | {_fmt(c['r@1'])} | {_fmt(c['r@5'])} | "
                     f"{_fmt(c['mrr@10'])} | {_fmt(c['query_p50_ms'])} | {target} |")
    return "\n".join(lines) + "\n"


def compare_xquad(a: Path, b: Path, set_name: str | None = None) -> str:
    """Run B against run A, paired on the questions both asked (``set_name``: ``MODE/LANG``, a mode,
    or all): per cell, the questions whose R@1 and R@5 B gains or loses, with the exact sign test."""
    rows_a, rows_b = {r["id"]: r for r in read_rows(a)}, {r["id"]: r for r in read_rows(b)}
    common = [q for q in rows_a if q in rows_b]
    if set_name:
        common = [q for q in common if set_name in (rows_a[q]["mode"], f"{rows_a[q]['mode']}/{rows_a[q]['lang']}")]
        if not common:
            raise ValueError(f"no question of {set_name!r} in both runs")
    lines = [f"## xquad: {b} vs {a} (set `{set_name or 'all'}`, {len(common)} questions)", "",
             "| cell | metric | n | A | B | gained | lost | p |", "|---|---|---|---|---|---|---|---|"]
    for cell in dict.fromkeys(f"{rows_a[q]['mode']}/{rows_a[q]['lang']}" for q in common):
        ids = [q for q in common if f"{rows_a[q]['mode']}/{rows_a[q]['lang']}" == cell]
        for metric in ("r@1", "r@5"):
            gained = [q for q in ids if rows_b[q][metric] and not rows_a[q][metric]]
            lost = [q for q in ids if rows_a[q][metric] and not rows_b[q][metric]]
            share = lambda rows: _fmt(_mean([float(rows[q][metric]) for q in ids]))  # noqa: E731
            lines.append(f"| {cell} | {metric} | {len(ids)} | {share(rows_a)} | {share(rows_b)} | +{len(gained)} | "
                         f"-{len(lost)} | {sign_test(len(gained), len(lost)):.3g} |")
    return "\n".join(lines) + "\n"
