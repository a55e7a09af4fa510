"""The one way what was imported reaches memory: ``diarist ingest``, the inspector's upload,
``diarist sync`` and ``diarist demo`` all store through here.

1. ``check_imported``, before anything is stored (before a database is even opened): every
   session and fact is validated once, as the item it will be stored as (a bad record is named
   by its file and place), and ids are unique across the input.
2. ``settle``, against what is stored: a conversation met twice is kept once, its latest version
   (``overlap.dedupe``), and a stored conversation newer than the one read stays
   (``newer.keep_stored_newer``), each named in ``Imported.superseded``/``kept_newer``.
3. ``store_checked``: the sessions in batches of ``settings.INGEST_BATCH`` (each its own
   transaction, so a long import shows progress and a crash loses one batch at most), then the
   facts, through ``Memory.add_items`` (nothing validated twice).

``store_imported`` is 2 and 3 at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .. import settings
from ..write.items import IngestReport, fact_item, session_item
from ..write.validate import check_unique
from . import Imported
from .newer import keep_stored_newer
from .overlap import dedupe

if TYPE_CHECKING:
    from ..store.base import Item, Store


class Memory(Protocol):
    """What the funnel uses of ``diarist.memory.Memory``."""

    def settle_imported(self, imported: Imported, app: str) -> None: ...

    def add_items(self, items: Sequence[Item], *, app: str) -> IngestReport: ...


@dataclass
class ImportReport:
    """What an import stored: the sessions' report, merged over the batches, and the facts' (None without facts)."""

    sessions: IngestReport
    facts: IngestReport | None


def check_imported(imported: Imported, name: str) -> None:
    """Validate every session and fact of ``imported`` (read from ``name``) once, keeping the
    items they will be stored as; InvalidInput names the first bad record, or an id met twice."""
    imported.items = [session_item(s, where) for s, where in zip(imported.sessions, imported.where, strict=True)]
    check_unique((item.external_id for item in imported.items), f"{name}: session id")
    imported.fact_items = [fact_item(f, f"{name} fact {n}") for n, f in enumerate(imported.facts, 1)]
    check_unique((item.external_id for item in imported.fact_items), f"{name}: fact id")


def settle(imported: Imported, store: Store, app: str) -> None:
    """Leave out of ``imported`` every session met twice but its latest version, and every one
    whose stored version in ``app`` is newer (named in ``superseded`` and ``kept_newer``)."""
    dedupe(imported)  # one conversation in two exports (several files, or a sync's several reads)
    keep_stored_newer(imported, store, app)  # an older export read after a newer one


def store_checked(memory: Memory, imported: Imported, *, app: str, batch: int = settings.INGEST_BATCH,
                  progress: Callable[[int], Any] | None = None) -> ImportReport:
    """Store the checked sessions ``batch`` at a time (``progress`` gets each batch's size), then the facts."""
    if len(imported.items) != len(imported.sessions) or len(imported.fact_items) != len(imported.facts):
        raise ValueError("check_imported first: nothing is stored unchecked")
    report = IngestReport([], [], [], 0)
    for offset in range(0, len(imported.items), batch):
        part = imported.items[offset : offset + batch]
        report.merge(memory.add_items(part, app=app))
        if progress is not None:
            progress(len(part))
    facts = memory.add_items(imported.fact_items, app=app) if imported.fact_items else None
    return ImportReport(report, facts)


def store_imported(memory: Memory, imported: Imported, *, app: str,
                   batch: int = settings.INGEST_BATCH) -> ImportReport:
    """``settle`` then ``store_checked``: what was read and checked, into ``app``."""
    memory.settle_imported(imported, app)
    return store_checked(memory, imported, app=app, batch=batch)
