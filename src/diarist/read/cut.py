"""The cut: which of the ranked memories the context block may hold, read from what each
channel's score means rather than from how fused scores bunch.

Convex-fused scores are normalised per question: a memory with a cosine near 0 and no word of
the question still fuses to about 0.66 of the best, so a share-of-best cut keeps it. Each
memory is judged instead on absolute signals:

- meaning: its cosine with the question reaches ``min_cosine`` (a calibrated floor, as the
  relevance floor's) and lies within ``max_gap`` of the best memory's cosine;
- words: it holds at least ``min_coverage`` of the question's distinct index terms (BM25's
  evidence, read as coverage: how much of the question the memory speaks of).

A memory carried by either stays; the best-ranked memory always stays (whether the question is
answered at all is the relevance floor's decision, made before). A pure function over per-item
signals, so the lab can fit its parameters on recorded signals (``diarist.settings``: CUT_*).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import settings
from ..lexical import analyze
from ..types import Hit
from .trace import Trace


@dataclass(frozen=True)
class CutParams:
    min_cosine: float = settings.CUT_MIN_COSINE
    max_gap: float = settings.CUT_MAX_GAP
    min_coverage: float = settings.CUT_MIN_COVERAGE


@dataclass(frozen=True)
class ItemSignals:
    """What the cut reads of one ranked memory."""

    cosine: float | None  # its best passage's cosine with the question (None: no vector ranked it)
    coverage: float  # share of the question's distinct index terms its passages hold, 0 to 1


def cut(items: Sequence[ItemSignals], params: CutParams = CutParams()) -> list[str | None]:
    """Per memory, in rank order: None to keep it, else why it is left out."""
    cosines = [item.cosine for item in items if item.cosine is not None]
    best = max(cosines, default=None)
    out: list[str | None] = []
    for place, item in enumerate(items):
        if place == 0:
            out.append(None)
            continue
        out.append(_verdict(item, best, params))
    return out


def _verdict(item: ItemSignals, best: float | None, params: CutParams) -> str | None:
    if item.coverage >= params.min_coverage and item.coverage > 0:
        return None
    if item.cosine is None or best is None:
        meaning = "no vector ranked it"
    elif item.cosine < params.min_cosine:
        meaning = f"cosine {item.cosine:.3f} under {params.min_cosine:g}"
    elif best - item.cosine > params.max_gap:
        meaning = f"cosine {item.cosine:.3f} more than {params.max_gap:g} under the best ({best:.3f})"
    else:
        return None
    return f"{meaning}, and it holds {item.coverage:.0%} of the question's terms (under {params.min_coverage:.0%})"


def cut_memories(hits: Sequence[Hit], terms: Sequence[str], params: CutParams, trace: Trace,
                 keep: set[int] = frozenset()) -> tuple[list[Hit], list[Hit]]:
    """The cut over ranked memories (``terms``: the question's own index terms): those it keeps,
    in order, and those of them kept only for being at a place of ``keep`` (the memories best by
    meaning, ``diarist.read.budget``: the block shows them as pointers); records "cut" and what it
    left out."""
    wanted = set(terms)
    signals = [ItemSignals(hit.scores.get("dense"),
                           len(wanted.intersection(analyze(hit.text))) / len(wanted) if wanted else 0.0)
               for hit in hits]
    verdicts = cut(signals, params)
    rescued = [hits[place] for place in sorted(keep) if verdicts[place] is not None]
    for place in keep:
        verdicts[place] = None
    for hit, why in zip(hits, verdicts):
        if why is not None:
            trace.drop(hit.id or f"chunk {hit.chunk_id}", "cut", why, hit.score)
    kept = [hit for hit, why in zip(hits, verdicts) if why is None]
    trace.record("cut", len(kept), len(hits) - len(kept),
                 f"cosine under {params.min_cosine:g} or over {params.max_gap:g} below the best, "
                 f"and under {params.min_coverage:.0%} of the question's terms: left out"
                 + (f"; {len(rescued)} kept as {'a pointer' if len(rescued) == 1 else 'pointers'}, by meaning" if rescued else ""))
    return kept, rescued
