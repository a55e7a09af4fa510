"""An older export read after a newer one: the stored, newer version of a conversation stays.

People keep old exports around and ingest or sync them in any order. A conversation already
stored whose stored version was updated later than the one just read (``metadata.updated``,
else its latest message time: ``overlap.updated_at``) is not replaced; it is named in
``Imported.kept_newer`` (``ID: why``) and counted as kept. A session read with no time, or
stored with none, is stored as before (the one read wins): there is nothing to compare.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from .overlap import updated_at

if TYPE_CHECKING:
    from ..store.base import Item, Store
    from . import Imported


def _stored_updated_at(item: Item) -> float | None:
    messages = [{"time": m.time} for m in item.messages]
    return updated_at(SimpleNamespace(metadata=item.metadata, messages=messages))


def keep_stored_newer(imported: Imported, store: Store, app: str) -> None:
    """Leave out of ``imported`` every session whose stored version in ``app`` is newer."""
    timed: dict[str, float] = {}
    for session in imported.sessions:
        sid: Any = session.session_id
        if isinstance(sid, str) and (moment := updated_at(session)) is not None:
            timed[sid] = moment
    if not timed:
        return
    stored = store.content_hashes(app, "session", list(timed))
    older: set[int] = set()
    for index, session in enumerate(imported.sessions):
        sid = session.session_id
        if sid not in stored:
            continue
        item = store.get_item(app, "session", sid)
        kept = None if item is None else _stored_updated_at(item)
        if kept is not None and timed[sid] < kept:
            older.add(index)
            where = imported.where[index] if index < len(imported.where) else sid
            imported.kept_newer.append(f"{sid}: the version in {where} is older than the one stored; stored one kept")
    if older:
        imported.drop(older)
