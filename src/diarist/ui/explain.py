"""What the Ask page shows for a question: the hits with why each came back, what was left out
and by which stage, and the exact context block an agent would get.

It reads the search and the block with ``explain`` (``results.trace``, ``block.dropped``,
``hit.why``), and what every ``Hit`` carries (its rank and score in each channel, its fused
score, the stage that ordered it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from .. import lexical
from ..memory import Memory
from ..types import Hit

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


def _channels(hit: Hit, why: dict[str, Any]) -> dict[str, dict[str, Any]]:
    given = why.get("channels")
    if isinstance(given, dict) and given:
        return {str(k): dict(v) if isinstance(v, dict) else {"rank": None, "score": None} for k, v in given.items()}
    ranks, scores = hit.ranks, hit.scores
    return {ch: {"rank": ranks.get(ch), "score": scores.get(ch)} for ch in sorted(set(ranks) | set(scores))}


def ask(memory: Memory, app: str, query: str, k: int) -> AskView:
    results = memory.search(query, app=app, k=k, explain=True)
    block = memory.context(query, app=app, explain=True)
    in_block = {s.hit.chunk_id for s in block.snippets}
    in_block_ids = {s.hit.id for s in block.snippets}
    stems = set(lexical.analyze(query))
    view = AskView(query=query, context=str(block), context_tokens=block.n_tokens,
                   notes=list(results.notes) + list(block.notes))
    for rank, hit in enumerate(results, start=1):
        why = hit.why or {}
        view.traced = view.traced or bool(why)
        raw_passages = why.get("passages") or hit.passages or [hit.text]
        matched = [str(t) for t in why.get("matched_terms") or []] or _matched(" ".join(raw_passages), stems)
        folded = {t.casefold() for t in matched}
        view.hits.append(HitView(
            rank=rank, id=hit.id, kind="fact" if hit.fact_id is not None else "session", title=hit.title,
            date=hit.date, fused=float(why.get("fused", hit.score)), channels=_channels(hit, why),
            matched_terms=matched, passages=[highlight(str(p), folded, stems) for p in raw_passages],
            second_stage=why.get("second_stage"), stage=hit.stage,
            in_context=(hit.chunk_id in in_block) or (hit.id in in_block_ids),
        ))
    # The block's read runs every stage (its cut and budget too): its record is the one to show.
    view.trace = [{"stage": r.stage, "kept": r.kept, "dropped": r.dropped, "note": r.note}
                  for r in block.trace or results.trace]
    dropped = block.dropped or results.dropped
    if dropped:
        view.left_out = [LeftOut(d.id, d.stage, d.reason, d.score) for d in dropped]
    else:  # nothing left out by a stage: the hits the block did not take
        view.left_out = [LeftOut(h.id or "", "context", "not in the context block (relevance cut, floor or token budget)",
                                 h.fused) for h in view.hits if not h.in_context]
    return view
