"""Following a subject forward: the newer of a changed fact brought in beside the older.

A person states a fact and later its change in other words: "The user works as a staff nurse on
the cardiology ward" and, a year on, "I left the ward and started as a clinical educator". A
question in the words of neither ("What's my job?") can find the older by meaning and miss the
newer, or hold both too far apart for the block's marks (``diarist.read.block.same_subject``) to
pair them. So after the cut, each short memory the block keeps (a saved fact, a short note, a short
exchange: ``block.SAME_SUBJECT_MAX_LINES`` lines or fewer) is compared, memory to memory and not to
the question, with the later short memories the search ranked: the newest later one with a
sentence at least ``FOLLOW_COSINE`` close in meaning to one of the older's is brought in just above
it (moved up, if the block holds it lower) and the pair is handed to the layout as a changed fact:
the newer ranked first, the older marked "earlier than [n] on the same subject". The newer
one is followed on in turn (Denver, then Boulder, then Fort Collins), ``FOLLOW_STEPS`` times at
most. Only the ``FOLLOW_FROM`` best memories the cut keeps are followed: a pointer kept low in the
block is no subject the question asked about.

A long conversation is never followed nor brought in (a record of its day, not a stated fact),
and neither is a note of a vault. The candidates are the memories the search ranked for the
question (its first ``k``): those need no read beyond what the search made. The threshold is
fitted by cross-validation on the everyday set's dev half (``benchmarks/everyday_follow_cv.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..types import Hit
from .block import SAME_SUBJECT_MAX_LINES, Key, LineVectorsOf, is_note, memory_key, sentences_of
from .trim import lines_of

#: Two short memories of different days state the same subject when a sentence of each is at
#: least this close in meaning (MiniLM's scale). None: no memory is followed.
FOLLOW_COSINE: float | None = 0.42
#: How many of the block's best memories (after the cut) are followed: the first only (the best three: fewer first on dev).
FOLLOW_FROM = 1
#: How many times a memory brought in is followed on in turn (1: not; 3 lost dev changed facts to a later chat near the newer, a daughter's school near a new flat).
FOLLOW_STEPS = 1

def is_short(hit: Hit) -> bool:
    """A stated fact: a dated memory of at most ``SAME_SUBJECT_MAX_LINES`` lines, not a note."""
    return bool(hit.date) and not is_note(hit) and 0 < len(lines_of(hit.text)) <= SAME_SUBJECT_MAX_LINES


def sentences_of_memory(hit: Hit) -> list[str]:
    lines = dict.fromkeys(line.strip() for line in lines_of(hit.text))
    return list(dict.fromkeys(s for line in lines for s in sentences_of(line)))


@dataclass(frozen=True)
class Followed:
    """What following forward decided: the memories in their new order (best first), and each
    older memory's key -> the key of the newer one brought in for it."""

    hits: list[Hit]
    pairs: dict[Key, Key]


def follow_forward(kept: Sequence[Hit], ranked: Sequence[Hit], vectors: LineVectorsOf,
                   min_cosine: float | None = None, depth: int | None = None,
                   steps: int | None = None) -> Followed:
    """``kept``: the memories the cut keeps, best first; ``ranked``: every memory the search ranked
    (the candidates). None: the module's settings."""
    min_cosine = FOLLOW_COSINE if min_cosine is None else min_cosine
    depth = FOLLOW_FROM if depth is None else depth
    steps = FOLLOW_STEPS if steps is None else steps
    hits = list(kept)
    starts = [hit for hit in hits[:depth] if is_short(hit)]
    if min_cosine is None or not starts:
        return Followed(hits, {})
    candidates = list({memory_key(hit): hit for hit in [*ranked, *hits] if is_short(hit)}.values())
    if len(candidates) < 2:
        return Followed(hits, {})
    sentences = {memory_key(hit): sentences_of_memory(hit) for hit in candidates}
    flat = [s for hit in candidates for s in sentences[memory_key(hit)]]
    matrix = np.asarray(vectors(flat), dtype=np.float64) if flat else np.zeros((0, 0))
    rows, start = {}, 0
    for hit in candidates:
        n = len(sentences[memory_key(hit)])
        rows[memory_key(hit)], start = matrix[start:start + n], start + n

    def newest_close(older: Hit) -> Hit | None:
        day, own = older.date[:10], rows[memory_key(older)]
        later = [c for c in candidates if c.date[:10] > day and len(own) and len(rows[memory_key(c)])
                 and float(np.max(own @ rows[memory_key(c)].T)) >= min_cosine]
        return max(later, key=lambda c: (c.date, c.session_id or "", c.fact_id or "")) if later else None

    pairs: dict[Key, Key] = {}
    for start_hit in starts:
        older = start_hit
        for _ in range(steps):
            newer = newest_close(older)
            if newer is None:
                break
            pairs[memory_key(older)] = memory_key(newer)
            hits = _place_above(hits, newer, older)
            older = newer
    return Followed(hits, pairs)


def _place_above(hits: list[Hit], newer: Hit, older: Hit) -> list[Hit]:
    """``hits`` with ``newer`` just above ``older`` (moved up if it was lower; left where it is if higher)."""
    keys = [memory_key(hit) for hit in hits]
    at = keys.index(memory_key(older))
    if memory_key(newer) in keys:
        place = keys.index(memory_key(newer))
        if place < at:
            return hits
        shown = hits[place]
        hits = hits[:place] + hits[place + 1:]
        return hits[:at] + [shown] + hits[at:]
    return hits[:at] + [newer] + hits[at:]
