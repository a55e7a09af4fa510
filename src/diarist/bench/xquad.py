"""XQuAD in the lab (``diarist bench xquad``): does a question find its paragraph, in its language
and across languages?

The set (``benchmarks/data/xquad``, google-deepmind/xquad, CC BY-SA 4.0): 240 Wikipedia paragraphs
and 1,190 questions, the same in every language. Each paragraph is stored as a fact (id
``ARTICLE-PARAGRAPH``, by position, the same in every language) in a ``Memory`` with the library's
defaults; each question is searched (``Memory.search``, k = 10) and scored by the rank of its own
paragraph: R@1 and R@5.

Two modes per language: ``mono`` (question and memory in the language) and ``cross`` (question in the
language, memory in English). One row per question and mode; the summary, its markdown and the
paired comparison are pure functions of the rows, in xquad_summary.py (``diarist bench verify`` /
``compare`` read them without the lab).
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

import numpy as np

from .. import settings
from .report import write_run
from .xquad_summary import BENCHMARK, PIVOT

DATA = Path("benchmarks/data/xquad")
DEV_LANGUAGES = ("en", "de", "es", "ru", "zh", "ar", "hi")
RANK_DEPTH = 10
FACT_DATE = "2020-01-01"  # every paragraph is dated the same: no recency between them


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
    """One run into ``out`` (``report.write_run``): rows, summary.json/.md, config.json, manifest.json."""
    from tqdm import tqdm

    from .configs import get_config
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
    return write_run(out, rows, meta)


# -- fitting a value per language, leave one language out (benchmarks/xquad_*_cv.py) ------------


def leave_one_language_out(r1: dict[str, np.ndarray], grid: tuple[float, ...], reference: float,
                           name: str) -> dict[str, dict]:
    """``r1``: per language, [question, grid value] -> 1 when the question's paragraph came first.
    Per held-out language: the value that maximises mean R@1 over the other languages (ties: the
    first in the grid), its R@1 on the held-out one (out of sample), the held-out language's own
    best (in sample), and its R@1 at ``reference`` (reported as ``r@1_NAME``)."""
    means = {lang: hits.mean(axis=0) for lang, hits in r1.items()}
    folds = {}
    for held in r1:
        others = np.mean([means[lang] for lang in r1 if lang != held], axis=0)
        chosen = int(np.argmax(others))
        best = int(np.argmax(means[held]))
        folds[held] = {"chosen": grid[chosen], "r@1_out_of_sample": round(float(means[held][chosen]), 4),
                       "best_in_sample": grid[best], "r@1_in_sample": round(float(means[held][best]), 4),
                       f"r@1_{name}": round(float(means[held][grid.index(reference)]), 4)}
    return folds


def hits_at_one(memory: Any, questions: list[tuple[str, str, str]], variants: list[dict[str, Any]]) -> np.ndarray:
    """[question, variant] -> 1 when the question's paragraph comes first, searched with the
    memory's settings changed by each variant (``SearchSettings`` fields)."""
    from dataclasses import replace

    from .runner import APP

    base = memory.settings
    out = np.zeros((len(questions), len(variants)), dtype=np.int8)
    try:
        for g, changes in enumerate(variants):
            memory.settings = replace(base, **changes)
            for q, (_, question, gold) in enumerate(questions):
                hits = memory.search(question, app=APP, k=RANK_DEPTH)
                out[q, g] = bool(hits) and hits[0].id == gold
    finally:
        memory.settings = base
    return out


def embed_questions_once(embedder: Any) -> None:
    """Make ``embedder.embed_query`` remember what it embedded: a grid asks each question many times."""
    embed_query, seen = embedder.embed_query, {}

    def remembered(texts):
        missing = [t for t in texts if t not in seen]
        if missing:
            seen.update(zip(missing, embed_query(missing)))
        return np.stack([seen[t] for t in texts])

    embedder.embed_query = remembered
