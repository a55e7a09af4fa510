"""Input checked once, as the items that will be stored.

``check_session``/``check_fact`` (``write.validate``) name a bad record; these turn what they
return into the ``Item`` a store writes, so that a caller who checked its input first (the
import funnel, ``importers.load``) hands the items to ``Memory.add_items`` and nothing is
validated twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dates import now_iso
from ..store.base import Item
from .validate import FactInput, SessionInput, check_fact, check_session


def session_item(session: SessionInput, where: str) -> Item:
    """The stored form of a session (dated now when it names no date), or InvalidInput naming ``where``."""
    session_id, date, messages, metadata, digest = check_session(session, where)
    return Item("session", session_id, date or now_iso(), digest, metadata, tuple(messages))


def fact_item(fact: FactInput, where: str) -> Item:
    """The stored form of a fact, or InvalidInput naming ``where``."""
    fact_id, date, text, metadata, digest = check_fact(fact, where)
    return Item("fact", fact_id, date, digest, metadata, text=text)


@dataclass
class IngestReport:
    """What storing items did: the ids added, replaced and unchanged, and the chunks indexed."""

    added: list[str]
    replaced: list[str]
    unchanged: list[str]
    chunks: int

    def merge(self, other: IngestReport) -> None:
        self.added += other.added
        self.replaced += other.replaced
        self.unchanged += other.unchanged
        self.chunks += other.chunks
