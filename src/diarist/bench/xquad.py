"""XQuAD in the lab (``diarist bench xquad``): does a question find its paragraph, in its language
and across languages?

The set (``benchmarks/data/xquad``, google-deepmind/xquad, CC BY-SA 4.0): 240 Wikipedia paragraphs
and 1,190 questions, the same in every language. Each paragraph is stored as a fact (id
``ARTICLE-PARAGRAPH``, by position, the same in every language) in a ``Memory`` with the library's
defaults; each question is searched (``Memory.search``, k = 10) and scored by the rank of its own
paragraph: R@1 and R@5.

Two modes per language: ``mono`` (question and memory in the language) and ``cross`` (question in the
language, memory in English). One row per question and mode; the summary, its markdown and the
paired comparison below are pure functions of the rows (``diarist bench verify`` / ``compare``).
``TARGETS`` are issue 43's: monolingual R@1 >= 0.90 in each language (English >= 0.95), cross-lingual
R@1 >= 0.75 (a target for a multilingual model; the default is English-only).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import settings
from .everyday_summary import dump
from .metrics import _fmt, _mean
from .rows import read_rows, sign_test

BENCHMARK = "xquad"
DATA = Path("benchmarks/data/xquad")
DEV_LANGUAGES = ("en", "de", "es", "ru", "zh", "ar", "hi")
PIVOT = "en"  # the memory's language in the cross-lingual mode
MODES = ("mono", "cross")
RANK_DEPTH = 10
FACT_DATE = "2020-01-01"  # every paragraph is dated the same: no recency between them
# (mode, language or "*" for the others, at least): issue 43's R@1 targets.
TARGETS = (("mono", "en", 0.95), ("mono", "*", 0.90), ("cross", "*", 0.75))


# -- the data ---------------------------------------------------------------------------------


def data_file(data: Path, lang: str) -> Path:
    return data / f"xquad.{lang}.json.gz"


def load_language(data: Path, lang: str) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """(paragraph id -> text, [(question id, question, its paragraph id)] in file order)."""
    path = data_file(data, lang)
    if not path.exists():
        have = sorted(p.name.split(".")[1] for p in data.glob("xquad.*.json.gz"))
        raise ValueError(f"no XQuAD file for language {lang!r} in {data} (have: {', '.join(have) or 'none'})")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        articles = json.load(f)["data"]
    paragraphs: dict[str, str] = {}
    questions: list[tuple[str, str, str]] = []
    for a, article in enumerate(articles):
        for p, paragraph in enumerate(article["paragraphs"]):
            pid = f"{a}-{p}"
            paragraphs[pid] = paragraph["context"]
            questions += [(qa["id"], qa["question"], pid) for qa in paragraph["qas"]]
    return paragraphs, questions


def parse_languages(spec: str) -> list[str]:
    langs = list(dict.fromkeys(s.strip() for s in spec.split(",") if s.strip()))
    if not langs:
        raise ValueError("--lang names no language")
    return langs


# -- the run ----------------------------------------------------------------------------------


def paragraph_memory(paragraphs: dict[str, str], embedder: Any, cache: Any) -> Any:
    """A memory with the library's defaults holding every paragraph as one fact."""
    from ..memory import Memory
    from ..write.validate import FactInput
    from .runner import APP

    memory = Memory(":memory:", embedder=embedder, embed_cache=cache)
    try:
        memory.add_facts([FactInput(text, pid, FACT_DATE, {}) for pid, text in paragraphs.items()], app=APP)
    except BaseException:
        memory.close()
        raise
    return memory


def question_row(lang: str, mode: str, qid: str, gold: str, ranked: list[str], query_ms: float,
                 config: str) -> dict[str, Any]:
    """One question's row: its paragraph's rank in the top 10 and the top hit (its text is in the data, by id;
    the full ranking is left out: a run's rows stay small)."""
    rank = ranked.index(gold) + 1 if gold in ranked else None
    return {"id": f"{lang}/{mode}/{qid}", "lang": lang, "mode": mode, "config": config, "gold": gold, "top": ranked[0] if ranked else None, "rank": rank, "r@1": rank == 1, "r@5": rank is not None and rank <= 5,
            "query_ms": round(query_ms, 2)}


def ask_all(memory: Any, lang: str, mode: str, questions: list[tuple[str, str, str]], config: str,
            tick: Callable[[], None] = lambda: None) -> list[dict[str, Any]]:
    from .runner import APP

    rows = []
    for qid, question, gold in questions:
        t0 = time.perf_counter()
        hits = memory.search(question, app=APP, k=RANK_DEPTH)
        query_ms = (time.perf_counter() - t0) * 1000
        ranked = list(dict.fromkeys(h.id for h in hits))[:RANK_DEPTH]
        rows.append(question_row(lang, mode, qid, gold, ranked, query_ms, config))
        tick()
    return rows


def run_xquad(data: str | Path, out: str | Path, *, langs: list[str], cross: bool = False, every: int = 1,
              embedder: str = settings.EMBEDDER, cache_path: str | Path | None = None, threads: int | None = None,
              progress: bool = True) -> dict[str, Any]:
    """One run into ``out``: rows.jsonl, summary.json/.md, config.json, manifest.json."""
    from tqdm import tqdm

    from .configs import get_config
    from .report import write_manifest
    from .runner import Runner, code_version

    if every < 1:
        raise ValueError(f"--every must be at least 1, got {every}")
    data, out = Path(data), Path(out)
    started = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    t0 = time.perf_counter()
    loaded = {lang: load_language(data, lang) for lang in dict.fromkeys([*langs, *([PIVOT] if cross else [])])}
    asked = {lang: loaded[lang][1][::every] for lang in langs}
    plan = [(lang, "mono") for lang in langs] + [(lang, "cross") for lang in langs if cross and lang != PIVOT]
    config = get_config("default")
    base = Runner(config, embedder, cache_path, progress=False, threads=threads)
    rows: list[dict[str, Any]] = []
    memories: dict[str, Any] = {}
    try:
        with tqdm(total=sum(len(asked[lang]) for lang, _ in plan), desc="xquad", unit="q", disable=not progress) as bar:
            for lang, mode in plan:
                memory_lang = lang if mode == "mono" else PIVOT
                if memory_lang not in memories:
                    memories[memory_lang] = paragraph_memory(loaded[memory_lang][0], base.embedder, base.cache)
                rows += ask_all(memories[memory_lang], lang, mode, asked[lang], config.name, lambda: bar.update(1))
                if memory_lang != PIVOT or not any(m == "cross" for _, m in plan):
                    memories.pop(memory_lang).close()
    finally:
        for memory in memories.values():
            memory.close()
        base.close()
    command = ["diarist bench xquad", "--data", str(data), "--lang", ",".join(langs), "--out", str(out)]
    command += ["--cross"] if cross else []
    command += ["--every", str(every)] if every != 1 else []
    command += ["--embedder", embedder] if embedder != settings.EMBEDDER else []
    command += ["--threads", str(threads)] if threads else []
    meta = {
        "benchmark": BENCHMARK, "dataset": "xquad", "config_name": config.name,
        "description": f"XQuAD ({','.join(langs)}{', cross-lingual over English' if cross else ''}"
                       f"{f', one question in {every}' if every > 1 else ''}): each question's own paragraph "
                       "among the 240, by Memory.search with the library's defaults",
        "langs": langs, "cross": cross, "every": every, "embedder": embedder, "model_id": base.embedder.model_id,
        "data_dir": str(data),
        "data_sha256": {lang: hashlib.sha256(data_file(data, lang).read_bytes()).hexdigest() for lang in loaded},
        "code_version": code_version(), "started_at": started, "wall_s": round(time.perf_counter() - t0, 1),
        "command": " ".join(command),
    }
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "rows.jsonl", "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    (out / "config.json").write_text(dump(meta), encoding="utf-8")
    summary = summarise(rows, meta["dataset"], meta["config_name"])
    (out / "summary.json").write_text(dump(summary), encoding="utf-8")
    (out / "summary.md").write_text(render_markdown(summary, meta), encoding="utf-8")
    write_manifest(out, meta, ["rows.jsonl", "config.json", "summary.json", "summary.md"])
    return summary


# -- summary, report, comparison (pure: verify and compare read them without the lab) ------------


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
