"""What each stage of the read path decided: the record a search carries back.

Every stage appends one ``StageRecord`` (how many candidates it kept and dropped, and a short
note); with ``explain=True`` the stages also list what they left out (``Dropped``) and each hit
carries ``Hit.why`` (``Why.to_dict()``): its rank and raw score in each channel, the question's
terms found in it, its fused score, the second stage's move and its passages. The shape is the
one agreed in /work/notes/TRACE-INTERFACE.md (the web inspector and the lab read it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

#: The read path's stages, in the order they run: the one list of their names, used by the
#: registry (``diarist.read.search.STAGES``), the trace and the inspector. A search runs the first
#: seven (those its options call for), a context block all ten. "sentences" records only where it
#: rescored a short memory by its sentences (``diarist.read.sentences``).
STAGE_NAMES = ("channels", "sentences", "floor", "fusion", "fetch", "second-stage", "group", "cut", "trim", "budget")
#: Kept for readers of the old name.
STAGES = STAGE_NAMES


@dataclass(frozen=True)
class StageRecord:
    """One stage's decision: how many candidates it passed on and left out, and why, in words;
    ``ms``: how long the stage ran (None where it was not timed)."""

    stage: str
    kept: int
    dropped: int
    note: str = ""
    ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Dropped:
    """A candidate a stage left out. ``id``: the item's id (session or fact) when it is known,
    else ``chunk N``; ``score``: the score the stage judged it by, if any."""

    id: str
    stage: str
    reason: str
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Trace:
    """The records of one search, filled in by the stages as they run."""

    explain: bool = False
    records: list[StageRecord] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)

    def record(self, stage: str, kept: int, dropped: int, note: str = "") -> None:
        self.records.append(StageRecord(stage, kept, dropped, note))

    @contextmanager
    def timed(self) -> Iterator[None]:
        """Time what runs inside: the records appended meanwhile (a stage's) get its time."""
        first, start = len(self.records), time.perf_counter()
        try:
            yield
        finally:
            self.stamp(first, start)

    def stamp(self, first: int, start: float) -> None:
        """The records from ``first`` on, not yet timed, get the time since ``start``
        (``time.perf_counter()``): what ``timed`` does, without a context manager a stage
        (the read path runs six a question)."""
        ms = round((time.perf_counter() - start) * 1000, 3)
        records = self.records
        for place in range(first, len(records)):
            r = records[place]
            if r.ms is None:
                records[place] = StageRecord(r.stage, r.kept, r.dropped, r.note, ms)

    def drop(self, id: str, stage: str, reason: str, score: float | None = None) -> None:
        """Note one candidate left out (kept only when explaining: the list costs nothing otherwise)."""
        if self.explain:
            self.dropped.append(Dropped(id, stage, reason, score))


def channel_why(rank: int | None, score: float | None) -> dict[str, Any]:
    return {"rank": rank, "score": score}


def why(
    ranks: dict[str, int | None],
    scores: dict[str, float | None],
    matched_terms: list[str],
    fused: float,
    second_stage: dict[str, Any] | None,
    passages: list[str],
) -> dict[str, Any]:
    """``Hit.why``: why a hit was recalled, in the agreed shape."""
    return {
        "channels": {name: channel_why(ranks.get(name), scores.get(name)) for name in ("dense", "lexical")},
        "matched_terms": matched_terms,
        "fused": fused,
        "second_stage": second_stage,
        "passages": passages,
    }
