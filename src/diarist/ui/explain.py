"""What the Ask page shows for a question: the hits with why each came back, what was left out
and by which stage, and the exact context block an agent would get.

It reads the search trace (``results.trace``, ``results.dropped``, ``hit.why``) where the memory
provides it, and otherwise what every ``Hit`` carries (its rank and score in each channel, its
fused score, the stage that ordered it), so it works with and without the trace.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from .. import lexical
from ..memory import Memory

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class HitView:
    rank: int
    id: str | None
    kind: str
    title: str | None
    date: str | None
    fused: float
    channels: dict[str, dict[str, Any]]
    matched_terms: list[str]
    passages: list[Markup]
    second_stage: dict[str, Any] | None
    stage: str
    in_context: bool


@dataclass
class LeftOut:
    id: str
    stage: str
    reason: str
    score: float | None = None


@dataclass
class AskView:
    query: str
    hits: list[HitView] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    context: str = ""
    context_tokens: int = 0
    traced: bool = False  # the memory gave a search trace (else: ranks and scores only)


def _accepts(method: Any, name: str) -> bool:
    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def highlight(text: str, terms: set[str], stems: set[str]) -> Markup:
    """The text escaped, with each word that is a matched term (or shares a query term's stem)
    wrapped in <mark>."""
    out, last = [], 0
    for match in _WORD.finditer(text):
        word = match.group(0)
        folded = word.casefold()
        stem = lexical.analyze(folded) if stems else []
        if folded in terms or (stem and stem[0] in stems):
            out.append(escape(text[last : match.start()]))
            out.append(Markup("<mark>") + escape(word) + Markup("</mark>"))
            last = match.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)


def _matched(text: str, stems: set[str]) -> list[str]:
    """Surface forms in the text whose stem is a query term's, in order of first appearance."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text):
        folded = match.group(0).casefold()
        terms = lexical.analyze(folded)
        if terms and terms[0] in stems:
            seen.setdefault(folded)
    return list(seen)


def _channels(hit: Any, why: dict[str, Any]) -> dict[str, dict[str, Any]]:
    given = why.get("channels")
    if isinstance(given, dict) and given:
        return {str(k): dict(v) if isinstance(v, dict) else {"rank": None, "score": None} for k, v in given.items()}
    ranks, scores = getattr(hit, "ranks", {}) or {}, getattr(hit, "scores", {}) or {}
    return {ch: {"rank": ranks.get(ch), "score": scores.get(ch)} for ch in sorted(set(ranks) | set(scores))}


def _context(memory: Memory, query: str, app: str) -> tuple[str, int, Any]:
    """The block text, its token count, and its result object (for a trace, when it has one)."""
    maker = getattr(memory, "context_result", None)
    if callable(maker):
        options = {"explain": True} if _accepts(maker, "explain") else {}
        result = maker(query, app=app, **options)
        text = getattr(result, "text", None)
        text = str(result) if text is None else str(text)
        return text, int(getattr(result, "n_tokens", 0) or 0), result
    block = memory.context(query, app=app, **({"explain": True} if _accepts(memory.context, "explain") else {}))
    return str(block), int(getattr(block, "n_tokens", 0) or 0), block


def ask(memory: Memory, app: str, query: str, k: int) -> AskView:
    explain = _accepts(memory.search, "explain")
    results = memory.search(query, app=app, k=k, **({"explain": True} if explain else {}))
    context, tokens, block = _context(memory, query, app)
    in_block = {getattr(s.hit, "chunk_id", None) for s in getattr(block, "snippets", []) or []}
    in_block_ids = {getattr(s.hit, "id", None) for s in getattr(block, "snippets", []) or []}
    stems = set(lexical.analyze(query))
    view = AskView(query=query, context=context, context_tokens=tokens,
                   notes=list(getattr(results, "notes", []) or []) + list(getattr(block, "notes", []) or []))
    for rank, hit in enumerate(results, start=1):
        why = getattr(hit, "why", None) or {}
        view.traced = view.traced or bool(why)
        raw_passages = why.get("passages") or getattr(hit, "passages", None) or [hit.text]
        matched = [str(t) for t in why.get("matched_terms") or []] or _matched(" ".join(raw_passages), stems)
        folded = {t.casefold() for t in matched}
        view.hits.append(HitView(
            rank=rank, id=hit.id, kind="fact" if hit.fact_id is not None else "session", title=hit.title,
            date=hit.date, fused=float(why.get("fused", hit.score)), channels=_channels(hit, why),
            matched_terms=matched, passages=[highlight(str(p), folded, stems) for p in raw_passages],
            second_stage=why.get("second_stage"), stage=getattr(hit, "stage", "fused"),
            in_context=(hit.chunk_id in in_block) or (hit.id in in_block_ids),
        ))
    # The block's read runs every stage (its cut and budget too): its record is the one to show.
    view.trace = [_record(r) for r in getattr(block, "trace", None) or getattr(results, "trace", None) or []]
    dropped = getattr(block, "dropped", None) or getattr(results, "dropped", None)
    if dropped:
        view.left_out = [LeftOut(str(getattr(d, "id", "")), str(getattr(d, "stage", "")), str(getattr(d, "reason", "")),
                                 getattr(d, "score", None)) for d in dropped]
    else:  # without the trace: the hits the block did not take
        view.left_out = [LeftOut(h.id or "", "context", "not in the context block (relevance cut, floor or token budget)",
                                 h.fused) for h in view.hits if not h.in_context]
    return view


def _record(record: Any) -> dict[str, Any]:
    if isinstance(record, dict):
        return {k: record.get(k) for k in ("stage", "kept", "dropped", "note")}
    return {k: getattr(record, k, None) for k in ("stage", "kept", "dropped", "note")}
