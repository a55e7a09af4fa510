"""The context benchmark: the block ``Memory.context()`` serves, scored one row per question.

Ranking metrics say where the evidence sits in a list; an agent never sees the list, it sees the
block. For every question this module builds one ``Memory`` over the question's haystack with the
library's defaults (floor, fusion, second stage, the config's index plan), asks
``Memory.context(question)`` at its default budget, with the question's date as "now", and
records what the block holds:

- evidence in the block: an evidence session (or note) gives a snippet; turn level, a snippet
  covers a labelled evidence turn (LongMemEval ``has_answer``, LoCoMo ``evidence``);
- tokens served (the whole block, frame included; 0 when empty), the snippets' tokens, and the
  share of the snippets' tokens that come from evidence sessions (the frame is the same for
  every block and belongs to no session);
- the distinct memories (sessions, notes) in the block;
- off-topic questions (``benchmarks/data/offtopic_questions.txt`` and the personal-sounding
  ones, asked of the same haystacks as ``benchmarks/floor.py`` asks them): whether the block
  is empty and how many tokens it carries;
- LongMemEval knowledge-update questions: whether the newest evidence session is in the block
  and shown as the latest of the evidence (item 6 of issue 26);
- the short-fact set (``benchmarks/data/short_fact_questions.json``): whether the fact is in
  the block, ranked first, and alone.

Each run also writes ``candidates.jsonl.gz``: the search results the block was built from (the
top ``CONTEXT_K`` hits, after the floor and the second stage), each with its channel scores, its
coverage of the question's terms and its cost in the block, so a cut can be replayed offline
(``benchmarks/context_cv.py``). ``summarise`` derives every summary cell from the rows;
``diarist bench verify`` calls it again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import lexical, settings
from ..context import ContextBlock, format_snippet
from ..importers.json_records import load_json_records
from ..importers.longmemeval import longmemeval_sessions
from ..memory import Memory
from ..read.cut import CutParams
from ..read.lines import NAMED as NAMED_LINES
from ..types import Hit, Message
from ..write.validate import FactInput, SessionInput
from .configs import BenchConfig
from .data import Haystack, Question
from .context_summary import BENCHMARK, DIGITS, KNOWLEDGE_UPDATE, compare_context, render_markdown, summarise  # noqa: F401  (tests read them here)
from .report import CANDIDATES, write_run  # noqa: F401  (CANDIDATES: tests read it here)
from .runner import APP, LOADERS, Prepared, Runner, _sha256, code_version

OFFTOPIC = Path("benchmarks/data/offtopic_questions.txt")
OFFTOPIC_PERSONAL = Path("benchmarks/data/offtopic_personal_questions.txt")
SHORT_FACTS = Path("benchmarks/data/short_fact_questions.json")


# -- the questions -------------------------------------------------------------------------------


@dataclass
class ContextHaystack(Haystack):
    """A haystack with notes beside its sessions (the short-fact set) and extra questions."""

    facts: list[FactInput] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)  # qid -> offtopic | offtopic_personal | shortfact


def question_lines(path: Path) -> list[str]:
    """The questions of a text file: one a line, ``#`` lines are comments."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _offtopic(qid: str, text: str, date: str | None) -> Question:
    return Question(qid=qid, qtype="offtopic", text=text, date=date, gold=[], gold_user=None, evidence_turns={})


def with_offtopic(dataset: str, haystacks: list[Haystack], offtopic: list[str],
                  personal: list[str]) -> list[ContextHaystack]:
    """Each haystack with the off-topic questions asked of it, as ``benchmarks/floor.py`` asks
    them: one of each list per LongMemEval haystack (round-robin), all of them per LoCoMo
    conversation. They take the date of the haystack's first question."""
    out = []
    for i, hay in enumerate(haystacks):
        date = hay.questions[0].date if hay.questions else None
        extra: list[tuple[str, str, str]] = []  # (qid, text, kind)
        if dataset == "longmemeval":
            if offtopic:
                extra.append((f"{hay.unit}:offtopic", offtopic[i % len(offtopic)], "offtopic"))
            if personal:
                extra.append((f"{hay.unit}:personal", personal[i % len(personal)], "offtopic_personal"))
        else:
            extra += [(f"{hay.unit}:offtopic{j}", t, "offtopic") for j, t in enumerate(offtopic)]
            extra += [(f"{hay.unit}:personal{j}", t, "offtopic_personal") for j, t in enumerate(personal)]
        questions = list(hay.questions) + [_offtopic(qid, text, date) for qid, text, _ in extra]
        out.append(ContextHaystack(hay.unit, hay.sessions, questions, kinds={qid: k for qid, _, k in extra}))
    return out


def load_short_facts(path: str | Path, sessions_from: str | Path) -> list[ContextHaystack]:
    """The short-fact set: each item its own memory (the fact and its unrelated conversations,
    read by id from the LongMemEval file ``sessions_from``)."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    wanted = {u["session_id"] for item in doc["items"] for u in item["unrelated"]}
    found: dict[str, SessionInput] = {}
    for record in load_json_records(str(sessions_from)):
        if wanted & set(record["haystack_session_ids"]):
            for s in longmemeval_sessions([record]):
                if s.session_id in wanted:
                    found.setdefault(s.session_id, s)
    missing = sorted(wanted - set(found))
    if missing:
        raise ValueError(f"{sessions_from}: no session {', '.join(missing[:5])} (the short-fact set needs them)")
    out = []
    for item in doc["items"]:
        fact, gold = item["fact"], item["gold"]
        sessions = [SessionInput(found[u["session_id"]].messages, u["session_id"], u["date"], {})
                    for u in item["unrelated"]]
        facts = []
        if fact["kind"] == "note":
            facts.append(FactInput(fact["text"], gold, fact["date"], {}))
        else:
            turns = [{"role": "user", "content": fact["text"]}] + (
                [{"role": "assistant", "content": fact["reply"]}] if fact.get("reply") else [])
            sessions.insert(0, SessionInput(turns, gold, fact["date"], {}))
        question = Question(qid=item["id"], qtype=f"shortfact-{fact['kind']}", text=item["question"],
                            date=item["asked"], gold=[gold], gold_user=None, evidence_turns={gold: set()})
        out.append(ContextHaystack(item["id"], sessions, [question], facts=facts, kinds={item["id"]: "shortfact"}))
    return out


# -- one question ---------------------------------------------------------------------------------


def kind_of(hay: ContextHaystack, q: Question) -> str:
    if q.qid in hay.kinds:
        return hay.kinds[q.qid]
    return "abstention" if q.abstention else "legitimate"


def covered_turns(hit: Hit, messages: list[Message] | None, trimmed: bool = False) -> list[int]:
    """The turns of its session a snippet shows. One passage shows the turns it spans (a
    user-view chunk only the user's); a memory shown by several passages (grouped), or trimmed to
    some of its lines (``trimmed``), shows a turn when the turn's text, its start or its end, is
    in one of them: the turns between two passages are left out of the block."""
    if hit.session_id is None or hit.first_turn is None or hit.last_turn is None:
        return []
    turns = range(hit.first_turn, hit.last_turn + 1)
    if messages is None:
        return list(turns)
    if trimmed or len(getattr(hit, "passages", None) or ()) > 1:
        shown = " ".join(hit.text.split())
        return [t for t in turns if t < len(messages) and _turn_in(messages[t].content, shown)]
    if hit.view == "user":
        return [t for t in turns if t < len(messages) and messages[t].role == "user"]
    return list(turns)


def _turn_in(content: str, shown: str, width: int = 60) -> bool:
    text = " ".join(content.split())
    return bool(text) and (text[:width] in shown or text[-width:] in shown)


def term_coverage(question_terms: set[str], text: str) -> float:
    """Share of the question's distinct index terms found in one hit's text."""
    if not question_terms:
        return 0.0
    return len(question_terms & set(lexical.analyze(text))) / len(question_terms)


def candidate(hit: Hit, question_terms: set[str], count_tokens: Callable[[str], int], gold: set[str],
              evidence: dict[str, set[int]], messages: list[Message] | None) -> dict[str, Any]:
    """One search hit as the cut sees it: scores, coverage, cost in the block, and its evidence."""
    turns = covered_turns(hit, messages)
    return {
        "id": hit.id, "session": hit.session_id, "fact": hit.fact_id, "date": hit.date,
        "fused": hit.score, "cosine": hit.scores.get("dense"), "bm25": hit.scores.get("lexical"),
        "coverage": round(term_coverage(question_terms, hit.text), DIGITS),
        "cost": count_tokens(format_snippet(999, hit)), "turns": [hit.first_turn, hit.last_turn],
        "gold": hit.id in gold, "evidence_turn": any(t in evidence.get(hit.id or "", ()) for t in turns),
    }


def block_cells(block: ContextBlock, q: Question, sessions: dict[str, list[Message]],
                dates: dict[str, str | None]) -> dict[str, Any]:
    """What the block holds, against the question's evidence."""
    gold = set(q.gold)
    snippets = block.snippets
    memories = list(dict.fromkeys(s.hit.id for s in snippets))
    snippet_tokens = sum(s.n_tokens for s in snippets)
    evidence_tokens = sum(s.n_tokens for s in snippets if s.hit.id in gold)
    has_turns = any(q.evidence_turns.get(s) for s in q.gold)
    shown = {(s.hit.id, t) for s in snippets
             for t in covered_turns(s.hit, sessions.get(s.hit.session_id or ""), getattr(s, "trimmed", False))}
    cells: dict[str, Any] = {
        "n_tokens": block.n_tokens,
        "empty": not snippets,
        "memories": memories,
        "n_memories": len(memories),
        "n_snippets": len(snippets),
        "snippet_tokens": snippet_tokens,
        "evidence_tokens": evidence_tokens,
        "evidence_in_block": bool(gold & set(memories)) if gold else None,
        "evidence_turn_in_block": (any((sid, t) in shown for sid, ts in q.evidence_turns.items() for t in ts)
                                   if has_turns else None),
    }
    if q.qtype == KNOWLEDGE_UPDATE and gold:
        # An entry the block marks as earlier than a later one on the same subject (issue 26 item 6).
        earlier = {s.hit.id for s in snippets if getattr(s, "earlier_than", None) is not None}
        cells["latest"] = newest_shown_latest(memories, q.gold, dates, earlier)
    return cells


def newest_shown_latest(memories: list[str], gold: list[str], dates: dict[str, str | None],
                        earlier: set[str] = frozenset()) -> dict[str, Any]:
    """Item 6: the newest evidence session (by its date) is in the block, not marked as
    earlier than another entry, and no evidence session is shown after it (the block prints
    oldest first)."""
    dated = [(dates.get(s) or "", s) for s in gold]
    newest = max(dated)[1]
    in_block = newest in memories
    later = memories[memories.index(newest) + 1:] if in_block else []
    return {"newest": newest, "in_block": in_block, "marked_earlier": newest in earlier,
            "shown_latest": in_block and newest not in earlier and not any(m in gold for m in later)}


# -- a run ----------------------------------------------------------------------------------------


class ContextRunner:
    """Builds each haystack's memory with the library's defaults and asks ``Memory.context``."""

    def __init__(self, config: BenchConfig, embedder: str, cache_path: str | Path | None, progress: bool = True,
                 threads: int | None = None, cut: CutParams | None = None, trim: str = "auto"):
        if config.doc != "chunks" or config.extract != "none" or config.channel != "fused" or config.followup != "none":
            raise ValueError(f"config {config.name!r} is a ranking ablation: the context block is measured over "
                             "chunked haystacks searched by both channels (default, view-all, ...)")
        self.config = config
        self.base = Runner(config, embedder, cache_path, progress, threads)  # chunking + embedding cache
        self.progress = progress
        self.cut = cut  # None: the library's default cut ("auto")
        self.trim = trim  # Memory.context's trim ("auto": the library's)

    def close(self) -> None:
        self.base.close()

    def memory(self, hay: ContextHaystack, items: list[Prepared]) -> Memory:
        c = self.config
        # The library's defaults for everything the block depends on; the floor is the shipped one
        # (the ranking lab turns it off), the chunking the config's plan (memoised by the lab).
        memory = Memory(":memory:", embedder=self.base.embedder, plan=c.view, embed_cache=self.base.cache,
                        chunker=self.base.raw, fusion=c.fusion, dense_weight=c.dense_weight, depth=c.depth,
                        k1=c.k1, b=c.b, reranker=c.reranker, rerank_depth=c.rerank_depth, floor=settings.FLOOR,
                        cut=self.cut if self.cut is not None else settings.CUT)
        memory.add_sessions([SessionInput([m.__dict__ for m in p.messages], p.session_id, p.date, {}) for p in items],
                            app=APP)
        if hay.facts:
            memory.add_facts(hay.facts, app=APP)
        return memory

    def ask(self, memory: Memory, q: Question) -> tuple[ContextBlock, list[Hit]]:
        """``Memory.context(question)`` with the question's date as "now"; also the search
        results the block was built from (captured, not searched again)."""
        captured: list[list[Hit]] = []
        search = memory.search

        def capturing_search(query: str, **options: Any):  # the block's own search, kept for the rows
            results = search(query, **options)
            captured.append(list(results))
            return results

        memory.search = capturing_search  # type: ignore[method-assign]
        try:
            block = memory.context(q.text, app=APP, now=q.date, trim=self.trim)
        finally:
            del memory.search
        return block, (captured[0] if captured else [])

    def run(self, haystacks: list[ContextHaystack], dataset: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        from tqdm import tqdm

        prepared = self.base.prepare(haystacks)
        rows, candidates = [], []
        total = sum(len(h.questions) for h in haystacks)
        with tqdm(total=total, desc=f"{dataset} context {self.config.name}"[:60], unit="q",
                  disable=not self.progress) as bar:
            for hay in haystacks:
                items = prepared[hay.unit]
                t0 = time.perf_counter()
                memory = self.memory(hay, items)
                index_ms = (time.perf_counter() - t0) * 1000
                sessions = {p.session_id: p.messages for p in items}
                dates = {p.session_id: p.date for p in items} | {f.fact_id: f.date for f in hay.facts}
                try:
                    for q in hay.questions:
                        t1 = time.perf_counter()
                        block, hits = self.ask(memory, q)
                        query_ms = (time.perf_counter() - t1) * 1000
                        rows.append(self.row(hay, q, block, hits, sessions, dates, index_ms, query_ms))
                        terms = set(lexical.analyze(q.text))
                        gold = set(q.gold)
                        count = memory.embedder.count_tokens
                        candidates.append({"id": q.qid, "kind": rows[-1]["kind"], "hits": [
                            candidate(h, terms, count, gold, q.evidence_turns, sessions.get(h.session_id or ""))
                            for h in hits]})
                        bar.update(1)
                finally:
                    memory.close()
        return rows, candidates

    def row(self, hay: ContextHaystack, q: Question, block: ContextBlock, hits: list[Hit],
            sessions: dict[str, list[Message]], dates: dict[str, str | None], index_ms: float,
            query_ms: float) -> dict[str, Any]:
        kind = kind_of(hay, q)
        row: dict[str, Any] = {
            "id": q.qid, "type": q.qtype, "unit": hay.unit, "kind": kind, "config": self.config.name,
            "question": q.text, "abstention": q.abstention, "gold": q.gold,
            **block_cells(block, q, sessions, dates),
            "notes": list(block.notes),
            "index_ms": round(index_ms, 2), "query_ms": round(query_ms, 2),
        }
        if kind == "shortfact":
            ids = row["memories"]
            row["shortfact"] = {"top_hit_is_fact": bool(hits) and hits[0].id in q.gold,
                                "block_first_is_fact": bool(ids) and ids[0] in q.gold,
                                "unrelated_in_block": sum(m not in q.gold for m in ids)}
        return row


# -- the summary (verify re-derives it) -------------------------------------------------------------


def run_context(dataset: str, data: str | Path, config: BenchConfig, out: str | Path, *, limit: int | None = None,
                stride: int | None = None, embedder: str = settings.EMBEDDER, cache_path: str | Path | None = None,
                threads: int | None = None, offtopic: Path | None = OFFTOPIC, personal: Path | None = OFFTOPIC_PERSONAL,
                sessions_from: str | Path | None = None, progress: bool = True,
                cut: CutParams | None = None, qtype: str | None = None, trim: str = "auto") -> dict[str, Any]:
    """One context run into ``out``: rows, candidates, summary, config.json (the manifest).
    ``cut``: the cut's parameters to measure (default: the library's); ``trim``: Memory.context's
    ("auto": the library's default; "lines": by meaning; "pointers": the best memories whole, the next by
    their closest line; "none": whole passages)."""
    started = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    version = code_version()
    t0 = time.perf_counter()
    if dataset == "shortfact":
        if sessions_from is None:
            raise ValueError("the short-fact set needs --sessions (the LongMemEval file its conversations come from)")
        haystacks = load_short_facts(data, sessions_from)
        if limit:
            haystacks = haystacks[:limit]
    else:
        loaded = LOADERS[dataset](str(data), None if qtype else limit, stride)
        if qtype:  # only questions of one type (haystacks left without any dropped), then the limit
            loaded = [Haystack(h.unit, h.sessions, [q for q in h.questions if q.qtype == qtype]) for h in loaded]
            loaded = [h for h in loaded if h.questions][:limit] if limit else [h for h in loaded if h.questions]
            if not loaded:
                raise ValueError(f"no question of type {qtype!r} in {data}")
        haystacks = with_offtopic(dataset, loaded,
                                  question_lines(offtopic) if offtopic else [],
                                  question_lines(personal) if personal else [])
    runner = ContextRunner(config, embedder, cache_path, progress, threads, cut, trim)
    probe = runner.memory(ContextHaystack("probe", [], []), [])  # the options every haystack's memory gets
    used_cut = None if probe.cut is None else asdict(probe.cut)
    grouped = probe.settings.group
    probe.close()
    try:
        rows, candidates = runner.run(haystacks, dataset)
    finally:
        runner.close()
    command = ["diarist bench", dataset, "--context", "--data", str(data), "--config", config.name, "--out", str(out)]
    command += ["--limit", str(limit)] if limit else []
    command += ["--stride", str(stride)] if stride else []
    command += ["--type", qtype] if qtype else []
    command += ["--sessions", str(sessions_from)] if sessions_from else []
    command += ["--no-offtopic"] if dataset != "shortfact" and offtopic is None and personal is None else []
    command += ["--cut", f"{cut.min_cosine:g},{cut.max_gap:g},{cut.min_coverage:g}"] if cut is not None else []
    command += ["--trim", trim] if trim != "auto" else []
    meta = {
        "benchmark": BENCHMARK, "dataset": dataset, "config_name": config.name, "description": config.description,
        "config": config.to_dict(), "budget_tokens": settings.CONTEXT_BUDGET_TOKENS, "context_k": settings.CONTEXT_K,
        "cut": used_cut, "trim": _trim_meta(trim), "group_by_memory": grouped, "floor": settings.FLOOR, "embedder": embedder,
        "model_id": runner.base.embedder.model_id, "data_file": str(data), "data_sha256": _sha256(data),
        "sessions_from": str(sessions_from) if sessions_from else None,
        "offtopic": [str(p) for p in (offtopic, personal) if p is not None] if dataset != "shortfact" else [],
        "limit": limit, "stride": stride, "type": qtype, "n_haystacks": len(haystacks), "code_version": version,
        "started_at": started, "wall_s": round(time.perf_counter() - t0, 1), "command": " ".join(command),
    }
    return write_run(Path(out), rows, meta, candidates)


def _trim_meta(trim: str) -> dict[str, Any] | None:
    """The trim a run measured, with its parameters (the manifest says what was served)."""
    if trim == "auto":
        trim = settings.CONTEXT_TRIM
    if trim in NAMED_LINES:
        return {"by": trim, **asdict(NAMED_LINES[trim])}
    return None


# -- paired comparison (diarist bench compare) ------------------------------------------------------
