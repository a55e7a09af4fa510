"""Typed records passed between pipeline stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .note_view import note_title

Role = Literal["user", "assistant", "system", "tool"]
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")


@dataclass(frozen=True)
class Message:
    role: str
    content: str
    time: str | None = None


@dataclass(frozen=True)
class Chunk:
    """A window-sized piece of a session (or a whole fact), the unit that is indexed."""

    text: str
    position: int  # order of the chunk within its session
    roles: tuple[str, ...]  # roles of the turns the chunk covers
    first_turn: int  # index of the first message covered
    last_turn: int  # index of the last message covered (inclusive)
    view: str = "all"  # "all" (every turn) or "user" (user turns only)
    n_tokens: int = 0  # length in the embedder's tokens
    dense: bool = True  # gets a vector (the dense channel reads it)
    lexical: bool = True  # gets postings (the lexical channel reads it)
    embed_text: str | None = None  # what the vector reads, when not the whole text (view split)

    @property
    def dense_text(self) -> str:
        """The text the chunk's vector is computed from."""
        return self.embed_text if self.embed_text is not None else self.text


@dataclass
class Hit:
    """One search result, able to explain how it got its place."""

    chunk_id: int
    text: str
    score: float  # fused score (convex: in [0, 1]; RRF: by rank), or the cosine when fusion is off
    session_id: str | None
    fact_id: str | None
    date: str | None
    roles: tuple[str, ...]
    view: str
    ranks: dict[str, int | None] = field(default_factory=dict)  # channel -> 1-based rank
    scores: dict[str, float | None] = field(default_factory=dict)  # channel -> raw score
    stage: str = "fused"  # which stage ordered this hit: "fused", "dense", "lexical"
    app: str | None = None
    first_turn: int | None = None  # the turns of its session the chunk covers
    last_turn: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)  # its session's or fact's
    # Grouped by memory (diarist.read.group): the item's best passages, in original order.
    passages: list[str] = field(default_factory=list)
    # The passages' places best first (passage_ranks[0]: the index of the best passage).
    passage_ranks: list[int] = field(default_factory=list)
    # With explain=True: why it was recalled (diarist.read.trace.why); None otherwise.
    why: dict[str, Any] | None = None

    @property
    def id(self) -> str | None:
        """The item's one id: the fact's, else the session's (what get, update, delete take)."""
        return self.fact_id if self.fact_id is not None else self.session_id

    @property
    def title(self) -> str | None:
        """The item's own title, when its metadata has one (importers keep it there). A note is
        titled by its front matter's title, else by its file name, not by a section heading."""
        if self.metadata.get("source") == "markdown":
            return note_title(self.metadata)  # one rule for the hit, show and the inspector
        value = self.metadata.get("title")
        return value if isinstance(value, str) else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "chunk_id": self.chunk_id,
            "session_id": self.session_id,
            "fact_id": self.fact_id,
            "date": self.date,
            "text": self.text,
            "score": self.score,
            "ranks": dict(self.ranks),
            "scores": dict(self.scores),
            "roles": list(self.roles),
            "view": self.view,
            "stage": self.stage,
            "app": self.app,
            "first_turn": self.first_turn,
            "last_turn": self.last_turn,
            "title": self.title,
            "metadata": dict(self.metadata),
            "passages": list(self.passages),
            "why": self.why,
        }
