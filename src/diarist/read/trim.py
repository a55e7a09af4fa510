"""Trimming: each memory in the block shown by the lines that speak of the question.

A passage is a chunk of a conversation: up to a whole embedding window of turns, of which the
question is usually about one or two. Serving the whole window spends the budget on turns that
do not answer, crowds out other memories and dilutes the block. So each passage is cut to its
matching lines (a line is a turn, or a paragraph of a long one) with ``context`` lines either side,
the turns between them left out (``PASSAGE_GAP``), and the runs so kept become the memory's
passages, ranked by how much of the question they hold, for the budget's passes.

A line matches when it holds a *selective* question term: one that occurs in at most
``max_share`` of the lines of all the memories in the block. A term every line holds (the
speaker's name, "the user") says nothing about which turn answers. A memory with no matching
line (found by meaning alone) is shown by its best passage only, or left out: below the first
when ``keep_unmatched`` is off (nothing in it speaks of the question's words and a better memory
already does); the first when its cosine is also under ``unmatched_min_cosine`` (neither the
question's words nor its meaning: an empty block is the right answer). A memory below the first
shows at most ``rest_runs`` runs, so the budget goes to the best memory rather than to more.

Pure functions over text, so the lab replays them on recorded search results
(``benchmarks/context_cv.py``); the parameters are fitted there (``diarist.settings``: TRIM_*).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .. import settings
from ..types import Hit
from .explain import words_of_terms
from .group import PASSAGE_GAP


@dataclass(frozen=True)
class TrimParams:
    context: int = settings.TRIM_CONTEXT  # lines kept either side of a matching line
    max_share: float = settings.TRIM_MAX_SHARE  # a term in more of the block's lines does not select one
    keep_unmatched: bool = settings.TRIM_KEEP_UNMATCHED  # a memory below the first with no matching line
    rest_runs: int = settings.TRIM_REST_RUNS  # runs a memory below the first may show (0: all)
    # The first memory with no matching line stays only when its cosine reaches this (-1: always).
    unmatched_min_cosine: float = settings.TRIM_UNMATCHED_MIN_COSINE


@dataclass(frozen=True)
class Run:
    """Consecutive lines of one passage kept for the block."""

    text: str
    weight: int  # selective question terms its lines hold (its rank among the memory's runs)
    passage: int  # the passage it comes from (its original order)
    first_line: int


def lines_of(passage: str) -> list[str]:
    return [line for line in passage.split("\n") if line.strip()]


def held_by_line(passages: Sequence[str], terms: set[str]) -> list[list[tuple[str, set[str]]]]:
    """Per passage, its lines each with the question's terms it holds."""
    return [[(line, set(words_of_terms(line, terms))) for line in lines_of(p)] for p in passages]


def selective_terms(memories: Sequence[list[list[tuple[str, set[str]]]]], terms: set[str],
                    max_share: float) -> set[str]:
    """The question's terms held by at most ``max_share`` of all the lines of ``memories``
    (each memory its passages' lines, as ``held_by_line`` gives them). When every term held is
    more common than that (a small block), every term held selects."""
    held: dict[str, int] = dict.fromkeys(terms, 0)
    n_lines = 0
    for passages in memories:
        for lines in passages:
            for _, found in lines:
                n_lines += 1
                for term in found:
                    held[term] += 1
    rare = {t for t, n in held.items() if 0 < n <= max_share * n_lines}
    return rare or {t for t, n in held.items() if n}


def runs_of(passages: Sequence[list[tuple[str, set[str]]]], selective: set[str], context: int) -> list[Run]:
    """Each passage's matching lines with ``context`` lines either side, merged into runs."""
    runs: list[Run] = []
    for p, held in enumerate(passages):
        lines = [line for line, _ in held]
        weights = [len(selective & found) for _, found in held]
        keep = [False] * len(lines)
        for i, w in enumerate(weights):
            if w:
                for j in range(max(0, i - context), min(len(lines), i + context + 1)):
                    keep[j] = True
        i = 0
        while i < len(lines):
            if not keep[i]:
                i += 1
                continue
            j = i
            while j < len(lines) and keep[j]:
                j += 1
            terms = set().union(*(selective & found for _, found in held[i:j]))
            runs.append(Run("\n".join(lines[i:j]), len(terms), p, i))
            i = j
    return runs


def trim_hits(hits: Sequence[Hit], terms: Sequence[str],
              params: TrimParams = TrimParams()) -> list[tuple[Hit, bool] | None]:
    """Per memory: as the block may show it and whether it was trimmed, or None when it is left
    out (below the first, no matching line, ``keep_unmatched`` off). Without question terms
    nothing is trimmed."""
    wanted = set(terms)
    if not wanted:
        return [(hit, False) for hit in hits]
    passages = [hit.passages or [hit.text] for hit in hits]
    held = [held_by_line(texts, wanted) for texts in passages]
    selective = selective_terms(held, wanted, params.max_share)
    out: list[tuple[Hit, bool] | None] = []
    for place, (hit, texts, lines) in enumerate(zip(hits, passages, held)):
        runs = runs_of(lines, selective, params.context)
        if runs:
            ranked = sorted(range(len(runs)), key=lambda r: (-runs[r].weight, _passage_rank(hit, runs[r].passage),
                                                              runs[r].first_line))
            if place and params.rest_runs:  # below the first: its best runs only, in original order
                ranked = ranked[: params.rest_runs]
                runs = [runs[r] for r in sorted(ranked)]
                ranked = sorted(range(len(runs)), key=lambda r: (-runs[r].weight, runs[r].passage, runs[r].first_line))
            kept = [r.text for r in runs]
            if kept == texts:
                out.append((hit, False))
                continue
            out.append((replace(hit, text=PASSAGE_GAP.join(kept), passages=kept, passage_ranks=ranked), True))
        elif (place == 0 and _close_enough(hit, params.unmatched_min_cosine)) or (place and params.keep_unmatched):
            best = (hit.passage_ranks or [0])[0]
            if len(texts) == 1:
                out.append((hit, False))
            else:
                out.append((replace(hit, text=texts[best], passages=[texts[best]], passage_ranks=[0]), True))
        else:
            out.append(None)
    return out


def _close_enough(hit: Hit, min_cosine: float) -> bool:
    cosine = hit.scores.get("dense")
    return min_cosine <= -1 or (cosine is not None and cosine >= min_cosine)


def _passage_rank(hit: Hit, passage: int) -> int:
    ranks = hit.passage_ranks or []
    return ranks.index(passage) if passage in ranks else passage
