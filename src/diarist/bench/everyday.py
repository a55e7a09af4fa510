"""The everyday set (``diarist bench everyday``): a person's own memory, imported as a person
imports it, asked as a person asks.

The set lives in ``benchmarks/data/everyday`` (written for it; ``build.py`` writes the files from
``source/``): four people, each a haystack of a Claude.ai export (long unrelated conversations,
and short ones in which they stated a fact) plus the facts an agent saved for them; and an
Obsidian-style vault of notes. ``questions.jsonl`` holds one question a line: its haystack, its
kind (``fact``, ``changed``, ``title``, ``front``, ``impersonal``, ``keyword``, ``bullet``,
``offtopic``), its gold memories (session, note or fact ids), the older entries of a fact that
changed, and its half (``dev`` or ``heldout``, by a hash of the fact or note asked about).

Each haystack is read by the importers (``diarist.importers.read_all``, what ``diarist import``
does) into one ``Memory`` with the library's defaults; the vault is read from a copy whose files
all carry one modification time (``VAULT_MTIME``), so a note without a date in its front matter
is dated the same on every checkout. Every question is asked with ``Memory.context`` at its
default budget, with the set's "now"; and with ``Memory.search`` for the rank of its gold. One
row per question (everyday_summary.py derives every cell from the rows), and the search hits of
each in ``candidates.jsonl.gz`` (each hit's channel scores), to replay a cut offline.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import settings
from ..importers import read_all
from ..memory import Memory
from ..write.validate import FactInput, SessionInput
from .everyday_summary import BENCHMARK
from .report import write_run
from .runner import APP, code_version

DATA = Path("benchmarks/data/everyday")
QUESTIONS = "questions.jsonl"
VAULT = "vault"
NOTES_HAYSTACK = "notes"
HALVES = ("dev", "heldout", "all")
# Every vault file's modification time in a run (2026-01-15 12:00 UTC): what a note without a
# front matter date is dated by; fixed so a run does not depend on when the files were checked out.
VAULT_MTIME = datetime(2026, 1, 15, 12, tzinfo=timezone.utc).timestamp()
RANK_DEPTH = 10  # the gold's rank is looked for in this many search hits


@dataclass
class EverydayQuestion:
    qid: str
    haystack: str
    kind: str
    text: str
    gold: list[str]
    older: list[str]
    half: str
    asked: str
    group: str = ""  # the fact or note asked about (readable; gold ids are UUIDs)


def load_questions(data: Path, half: str = "all") -> list[EverydayQuestion]:
    """The set's questions of one half (``all``: both), in file order."""
    if half not in HALVES:
        raise ValueError(f"half must be one of {', '.join(HALVES)}, got {half!r}")
    path = data / QUESTIONS
    if not path.exists():
        raise ValueError(f"{data}: no {QUESTIONS} (is this the everyday set's folder?)")
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        r = json.loads(line)
        try:
            q = EverydayQuestion(r["id"], r["haystack"], r["kind"], r["question"], list(r["gold"]), list(r["older"]),
                                 r["half"], r["asked"], r.get("group", ""))
        except KeyError as exc:
            raise ValueError(f"{path} line {n}: no {exc} field") from None
        if half == "all" or q.half == half:
            out.append(q)
    return out


def haystack_sessions(data: Path, haystack: str, scratch: Path) -> tuple[list[SessionInput], list[FactInput]]:
    """A haystack's memories as the importers read them: a person's export and saved facts, or the vault
    (from a copy in ``scratch`` whose files carry ``VAULT_MTIME``)."""
    if haystack == NOTES_HAYSTACK:
        copy = scratch / VAULT
        shutil.copytree(data / VAULT, copy)
        for path in copy.rglob("*"):
            if path.is_file():
                os.utime(path, (VAULT_MTIME, VAULT_MTIME))
        imported = read_all(copy)
        if imported.skipped:
            raise ValueError(f"the vault's files were not all read: {imported.skipped[:3]}")
        return imported.sessions, []
    folder = data / "exports" / haystack
    sessions = read_all(folder / "conversations.json").sessions
    saved = json.loads((folder / "saved_facts.json").read_text(encoding="utf-8"))["facts"]
    return sessions, [FactInput(f["text"], f["id"], f["date"], {}) for f in saved]


def rank_order(snippets: list[Any]) -> list[str]:
    """The block's memories best first, as the block ranks them (``Snippet.rank``: by fused score,
    save that a newer entry on the same subject comes before the older; the block prints them by
    date); a snippet without a rank by its fused score."""
    ranked = sorted(snippets, key=lambda s: (getattr(s, "rank", None) is None, getattr(s, "rank", 0) or 0,
                                             -s.hit.score))
    return list(dict.fromkeys(s.hit.id for s in ranked))


def changed_cells(q: EverydayQuestion, memories: list[str], ranked: list[str], marked: set[str]) -> dict[str, Any]:
    """A fact that changed: the newest first among the block's entries of it, not marked earlier,
    and every older one the block shows marked earlier than a later entry."""
    gold = q.gold[0]
    older_in = [o for o in q.older if o in memories]
    newer_first = gold in ranked and all(ranked.index(gold) < ranked.index(o) for o in older_in)
    older_marked = all(o in marked for o in older_in)
    return {"older_in_block": older_in, "newer_first": newer_first, "older_marked": older_marked,
            "newer_marked": gold in marked, "passed": newer_first and older_marked and gold not in marked}


def question_row(q: EverydayQuestion, block: Any, hits: list[Any], query_ms: float, config: str) -> dict[str, Any]:
    snippets = list(block.snippets)
    memories = list(dict.fromkeys(s.hit.id for s in snippets))  # as printed (oldest first)
    ranked = rank_order(snippets)
    marked = {s.hit.id for s in snippets if getattr(s, "earlier_than", None) is not None}
    # Each marked entry -> the entry it is marked earlier than (the numbers are 1-based, as printed).
    earlier_than = {s.hit.id: snippets[s.earlier_than - 1].hit.id for s in snippets
                    if getattr(s, "earlier_than", None) is not None}
    hit_ids = list(dict.fromkeys(h.id for h in hits))[:RANK_DEPTH]
    gold = set(q.gold)
    rank = next((i + 1 for i, h in enumerate(hit_ids) if h in gold), None)
    row: dict[str, Any] = {
        "id": q.qid, "haystack": q.haystack, "kind": q.kind, "group": q.group, "half": q.half, "config": config,
        "question": q.text, "gold": q.gold, "older": q.older,
        "empty": not snippets, "n_tokens": block.n_tokens, "memories": memories, "n_memories": len(memories),
        "ranked": ranked, "marked_earlier": sorted(marked), "earlier_than": earlier_than,
        "in_block": bool(gold & set(memories)) if gold else None,
        "first": bool(ranked) and ranked[0] in gold if gold else None,
        "top_hit": rank == 1 if gold else None, "rank": rank,
        "query_ms": round(query_ms, 2),
    }
    if q.kind == "changed":
        row["changed"] = changed_cells(q, memories, ranked, marked)
    return row


def candidate(hit: Any, gold: set[str]) -> dict[str, Any]:
    """One search hit: its scores in each channel, fused, and whether it answers the question."""
    return {"id": hit.id, "date": hit.date, "title": hit.title, "fused": hit.score, "cosine": hit.scores.get("dense"),
            "bm25": hit.scores.get("lexical"), "gold": hit.id in gold}


def run_haystack(memory: Memory, questions: list[EverydayQuestion], config: str, trim: str = "auto",
                 tick: Callable[[], None] = lambda: None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(one row per question, the search hits of each)."""
    rows, candidates = [], []
    for q in questions:
        t0 = time.perf_counter()
        block = memory.context(q.text, app=APP, now=q.asked, trim=trim)
        query_ms = (time.perf_counter() - t0) * 1000
        hits = list(memory.search(q.text, app=APP, now=q.asked, k=RANK_DEPTH))
        rows.append(question_row(q, block, hits, query_ms, config))
        candidates.append({"id": q.qid, "kind": q.kind, "hits": [candidate(h, set(q.gold)) for h in hits]})
        tick()
    return rows, candidates


def build_memory(sessions: list[SessionInput], facts: list[FactInput], embedder: Any, cache: Any) -> Memory:
    """A memory with the library's defaults (plan, fusion, floor, cut, second stage) over one haystack."""
    memory = Memory(":memory:", embedder=embedder, embed_cache=cache)
    try:
        memory.add_sessions(sessions, app=APP)
        if facts:
            memory.add_facts(facts, app=APP)
    except BaseException:
        memory.close()
        raise
    return memory


def haystack_memories(data: Path, questions: list[EverydayQuestion], embedder: Any,
                      cache: Any) -> Iterator[tuple[Memory, list[EverydayQuestion]]]:
    """Each haystack the questions ask, as a memory built as ``run_everyday`` builds it, with its
    questions in file order; each memory is closed when the next is asked for (studies replay the
    set through this)."""
    with tempfile.TemporaryDirectory(prefix="diarist-everyday-") as scratch:
        for name in dict.fromkeys(q.haystack for q in questions):
            sessions, facts = haystack_sessions(data, name, Path(scratch) / name)
            memory = build_memory(sessions, facts, embedder, cache)
            try:
                yield memory, [q for q in questions if q.haystack == name]
            finally:
                memory.close()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_everyday(data: str | Path, out: str | Path, *, half: str = "all", embedder: str = settings.EMBEDDER,
                 cache_path: str | Path | None = None, threads: int | None = None, trim: str = "auto",
                 haystack: str | None = None, progress: bool = True) -> dict[str, Any]:
    """One run into ``out`` (``report.write_run``): rows, candidates, summary.json/.md, config.json, manifest.json."""
    from tqdm import tqdm

    from .configs import get_config
    from .runner import Runner

    data, out = Path(data), Path(out)
    started = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    t0 = time.perf_counter()
    questions = load_questions(data, half)
    if haystack:
        questions = [q for q in questions if q.haystack == haystack]
        if not questions:
            raise ValueError(f"no question of haystack {haystack!r} in half {half}")
    config = get_config("default")
    base = Runner(config, embedder, cache_path, progress=False, threads=threads)  # the embedder and cache, as the lab builds them
    rows: list[dict[str, Any]] = []
    candidates: list[dict[str, Any]] = []
    try:
        with tqdm(total=len(questions), desc=f"everyday {half}", unit="q", disable=not progress) as bar, \
                tempfile.TemporaryDirectory(prefix="diarist-everyday-") as scratch:
            for name in dict.fromkeys(q.haystack for q in questions):
                sessions, facts = haystack_sessions(data, name, Path(scratch) / name)
                memory = build_memory(sessions, facts, base.embedder, base.cache)
                try:
                    got, hits = run_haystack(memory, [q for q in questions if q.haystack == name], config.name,
                                             trim, lambda: bar.update(1))
                    rows += got
                    candidates += hits
                finally:
                    memory.close()
    finally:
        base.close()
    command = ["diarist bench everyday", "--data", str(data), "--half", half, "--out", str(out)]
    command += ["--haystack", haystack] if haystack else []
    command += ["--trim", trim] if trim != "auto" else []
    command += ["--embedder", embedder] if embedder != settings.EMBEDDER else []
    meta = {
        "benchmark": BENCHMARK, "dataset": "everyday", "config_name": config.name,
        "description": f"the everyday set ({half} half): what Memory() does by default, asked by context()",
        "half": half, "haystack": haystack, "trim": trim, "embedder": embedder, "model_id": base.embedder.model_id,
        "budget_tokens": settings.CONTEXT_BUDGET_TOKENS, "context_k": settings.CONTEXT_K,
        "vault_mtime": datetime.fromtimestamp(VAULT_MTIME, timezone.utc).isoformat(),
        "data_dir": str(data), "data_sha256": _sha256(data / QUESTIONS), "code_version": code_version(),
        "started_at": started, "wall_s": round(time.perf_counter() - t0, 1), "command": " ".join(command),
    }
    return write_run(out, rows, meta, candidates)
