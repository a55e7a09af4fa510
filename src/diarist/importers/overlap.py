"""Overlapping exports: the same session met twice in one run is kept once, its latest version.

People export again every few months, and each export holds every conversation so far, so a
folder of exports holds most conversations several times. The version kept is the one updated
last: the session's ``metadata.updated`` (ChatGPT's ``update_time``, Claude.ai's
``updated_at``), else its last message's time; where neither tells them apart, the one read
last (file order: a later export sorts after an earlier one when named by date). Each other
version is named in ``Imported.superseded``; none is an error. A session id repeated inside one
file is still an error (that file is broken), so ids stay unique per file.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Protocol

from ..errors import InvalidInput


class Imported(Protocol):
    """What dedupe reads and rewrites of ``diarist.importers.Imported`` (named here, not
    imported: importers/__init__ imports this module)."""

    sessions: list[Any]
    where: list[str]
    files_of: list[str]
    superseded: list[str]

    def drop(self, indexes: set[int]) -> None: ...


def _moment(value: Any) -> float | None:
    """A date as seconds since 1970 (UTC when it names no zone), or None."""
    from ..dates import normalise_date

    try:
        text = normalise_date(value)
        moment = datetime.fromisoformat(text) if text else None
    except (InvalidInput, ValueError, TypeError):
        return None
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def updated_at(session: Any) -> float | None:
    """When a session was last changed: its ``metadata.updated``, else its latest message time."""
    meta = session.metadata if isinstance(session.metadata, dict) else {}
    if (moment := _moment(meta.get("updated"))) is not None:
        return moment
    times = [m for msg in session.messages if isinstance(msg, dict) and (m := _moment(msg.get("time"))) is not None] \
        if isinstance(session.messages, list) else []
    return max(times, default=None)


def _key(session: Any) -> Any:
    sid = session.session_id
    return sid if isinstance(sid, (str, int)) and not isinstance(sid, bool) else None


def dedupe(imported: Imported) -> None:
    """Keep one version of each session id met in more than one file (see the module)."""
    first_file: dict[Any, str] = {}
    keep: dict[Any, int] = {}  # id -> index of the version kept
    for index, session in enumerate(imported.sessions):
        key = _key(session)
        if key is None:
            continue
        file = imported.files_of[index] if index < len(imported.files_of) else ""
        if key not in keep:
            keep[key], first_file[key] = index, file
            continue
        if file == first_file[key]:
            continue  # twice in one file: validation names it as an error
        kept = imported.sessions[keep[key]]
        new, old = updated_at(session), updated_at(kept)
        newer = old is None or (new is not None and new >= old)
        if new is None and old is not None:
            newer = False
        loser, winner = (keep[key], index) if newer else (index, keep[key])
        keep[key] = winner
        imported.superseded.append(
            f"{key}: the version in {_where(imported, loser)} left for the later one in {_where(imported, winner)}")
    dropped = {i for i, session in enumerate(imported.sessions)
               if (key := _key(session)) is not None and keep[key] != i and imported.files_of[i] != imported.files_of[keep[key]]}
    if dropped:
        imported.drop(dropped)


def _where(imported: Imported, index: int) -> str:
    return imported.where[index] if index < len(imported.where) else f"session {index + 1}"
