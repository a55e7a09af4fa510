"""The index plan: what each channel reads of a session, and at which grain, declared as data.

A plan is a list of chunk sets. Each set chunks some of the session's turns to the embedder's
window, and says which channels read its chunks: BM25 reads the whole chunk; the vector reads
the whole chunk, only the words of some roles, or nothing. The plan is recorded in the database
with the embedder (``Memory`` checks both on open), so two ingests can never mix plans in one
file silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import ConfigError
from .validate import shown


CONVERSATION = ("user", "assistant")  # the turns of a conversation; system and tool turns are not


@dataclass(frozen=True)
class ChunkSet:
    turns: tuple[str, ...] | None = None  # roles whose turns are chunked; None: the conversation's
    lexical: bool = True  # BM25 reads the chunks
    dense: bool = True  # the chunks get vectors
    vector_roles: tuple[str, ...] | None = None  # the vector reads only these roles' words
    # System prompts and tool traffic are kept verbatim but not indexed unless asked: a system
    # prompt repeated in every session is noise in every hit, and tool output is not memory.
    other_roles: bool = False  # with turns None: chunk system and tool turns as well
    # "window": turns packed up to the embedder's window; "turn": a chunk per turn (a turn
    # longer than the window is still split), a finer grain for the dense channel.
    grain: str = "window"

    @property
    def label(self) -> str:
        """The chunks' ``view``: "all" (every conversation turn) or the roles chunked ("user")."""
        return "all" if self.turns is None else ",".join(self.turns)

    def keeps(self, role: str) -> bool:
        """Whether turns of this role are chunked in this set."""
        if self.turns is not None:
            return role in self.turns
        return self.other_roles or role in CONVERSATION

    def to_dict(self) -> dict:
        return {"turns": list(self.turns) if self.turns is not None else None, "lexical": self.lexical,
                "dense": self.dense, "vector_roles": list(self.vector_roles) if self.vector_roles is not None else None,
                "other_roles": self.other_roles} | ({"grain": self.grain} if self.grain != "window" else {})

    @classmethod
    def from_dict(cls, data: dict) -> "ChunkSet":
        tup = lambda v: tuple(v) if v is not None else None  # noqa: E731
        return cls(tup(data.get("turns")), bool(data.get("lexical", True)), bool(data.get("dense", True)),
                   tup(data.get("vector_roles")), bool(data.get("other_roles", False)),
                   str(data.get("grain", "window")))


@dataclass(frozen=True)
class IndexPlan:
    name: str
    sets: tuple[ChunkSet, ...]
    description: str = ""

    def to_json(self) -> str:
        """The recorded form: the sets only (two plans that index alike compare equal)."""
        return json.dumps({"name": self.name, "sets": [s.to_dict() for s in self.sets]}, sort_keys=True)

    def same_index(self, other: "IndexPlan") -> bool:
        return self.sets == other.sets

    @classmethod
    def from_json(cls, text: str) -> "IndexPlan":
        try:
            data = json.loads(text)
            return cls(str(data["name"]), tuple(ChunkSet.from_dict(s) for s in data["sets"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"the recorded index plan is not readable ({exc}): {text[:200]!r}") from None


USER = ("user",)

PLANS: dict[str, IndexPlan] = {
    p.name: p
    for p in (
        IndexPlan("split", (ChunkSet(vector_roles=USER),),
                  "every user and assistant turn chunked once; BM25 reads each chunk, its vector only the "
                  "user's words in it; system and tool turns are kept, not indexed"),
        IndexPlan("split-all-roles", (ChunkSet(vector_roles=USER, other_roles=True),),
                  "split, with system and tool turns chunked too (BM25 reads them)"),
        IndexPlan("split-apart", (ChunkSet(dense=False), ChunkSet(turns=USER, lexical=False)),
                  "chunks of every turn in BM25 only; separate chunks of the user's turns in vectors only"),
        IndexPlan("all", (ChunkSet(),), "every turn, in both channels"),
        IndexPlan("user", (ChunkSet(turns=USER),), "user turns only, in both channels"),
        IndexPlan("both", (ChunkSet(), ChunkSet(turns=USER)),
                  "chunks of every turn and chunks of the user's turns, each in both channels"),
        IndexPlan("split+turns", (ChunkSet(vector_roles=USER), ChunkSet(turns=USER, grain="turn", lexical=False)),
                  "split, and a vector per user turn as well (the dense channel's finer grain)"),
        IndexPlan("all+turns", (ChunkSet(), ChunkSet(grain="turn", lexical=False)),
                  "every turn in both channels, and a vector per turn as well"),
        IndexPlan("turns", (ChunkSet(grain="turn"),), "a chunk per turn, in both channels"),
    )
}
DEFAULT_PLAN = "split"


def get_plan(plan: "str | IndexPlan") -> IndexPlan:
    if isinstance(plan, IndexPlan):
        return plan
    try:
        return PLANS[plan]
    except (KeyError, TypeError):
        raise ConfigError(f"unknown index plan {shown(plan)}; use one of {', '.join(PLANS)}") from None
