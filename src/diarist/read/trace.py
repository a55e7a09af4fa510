"""What each stage of the read path decided: the record a search carries back.

Every stage appends one ``StageRecord`` (how many candidates it kept and dropped, and a short
note); with ``explain=True`` the stages also list what they left out (``Dropped``) and each hit
carries ``Hit.why`` (``Why.to_dict()``): its rank and raw score in each channel, the question's
terms found in it, its fused score, the second stage's move and its passages. The shape is the
one agreed in /work/notes/TRACE-INTERFACE.md (the web inspector and the lab read it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: The stages in the order they run (a search runs the first six, a context block all eight).
STAGES = ("channels", "floor", "fusion", "fetch", "second_stage", "group", "cut", "budget")


@dataclass(frozen=True)
class StageRecord:
    """One stage's decision: how many candidates it passed on and left out, and why, in words."""

    stage: str
    kept: int
    dropped: int
    note: str = ""

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
