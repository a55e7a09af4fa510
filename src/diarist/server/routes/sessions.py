"""Sessions: store one or a batch, append messages, read, list, history, delete."""

from typing import Any

from fastapi import FastAPI

from ...memory import Memory
from ...write.validate import SessionInput
from ..schemas import (ERRORS, BatchOut, DeletedOut, HistoryOut, ItemOut, ListOut, MessagesIn, SessionIn,
                       SessionsIn, StoredOut, VersionOut)
from .common import PREFIX, ItemId, Limit, Offset, page, stored


def as_input(s: SessionIn) -> SessionInput:
    return SessionInput([m.model_dump() for m in s.messages], s.session_id, s.date, s.metadata)


def add_routes(api: FastAPI, memory: Memory, App: Any) -> None:  # noqa: N803 - a type, used as one
    @api.post(f"{PREFIX}/sessions", status_code=201, response_model=StoredOut, responses=ERRORS, tags=["write"])
    def add_session(app: App, body: SessionIn) -> StoredOut:
        """Store one conversation session. Re-sending the same id with the same content changes nothing; new content replaces it."""
        return stored(memory.add_sessions([as_input(body)], app=app))

    @api.post(f"{PREFIX}/sessions/batch", status_code=201, response_model=BatchOut, responses=ERRORS, tags=["write"])
    def add_sessions(app: App, body: SessionsIn) -> BatchOut:
        """Store up to 100 sessions in one transaction: all of them, or none if any is invalid."""
        report = memory.add_sessions([as_input(s) for s in body.sessions], app=app)
        return BatchOut(added=report.added, replaced=report.replaced, unchanged=report.unchanged, chunks=report.chunks)

    @api.post(f"{PREFIX}/sessions/{{session_id}}/messages", status_code=201, response_model=StoredOut,
              responses=ERRORS, tags=["write"])
    def add_messages(app: App, session_id: ItemId, body: MessagesIn) -> StoredOut:
        """Append messages to a session (created if new); the session is re-indexed whole."""
        # Atomic across workers and processes: Memory.append_messages is a compare-and-swap.
        return stored(memory.append_messages(session_id, [m.model_dump() for m in body.messages], app=app,
                                             date=body.date))

    @api.get(f"{PREFIX}/sessions/{{session_id}}/history", response_model=HistoryOut, responses=ERRORS, tags=["read"])
    def session_history(app: App, session_id: ItemId) -> HistoryOut:
        """The previous versions of a session that updates kept, oldest first."""
        return HistoryOut(versions=[VersionOut(**v) for v in memory.history(session_id, app=app, kind="session")])

    @api.get(f"{PREFIX}/sessions", response_model=ListOut, responses=ERRORS, tags=["read"])
    def list_sessions(app: App, limit: Limit = 50, offset: Offset = 0) -> ListOut:
        """Session ids and dates, in the order they were stored; page with `limit` and `offset`."""
        return page(memory.list(app=app, kind="session", limit=limit + 1, offset=offset, newest_first=False), limit, offset)

    @api.get(f"{PREFIX}/sessions/{{session_id}}", response_model=ItemOut, responses=ERRORS, tags=["read"])
    def get_session(app: App, session_id: ItemId) -> ItemOut:
        """A stored session with all its messages."""
        return ItemOut(**memory.get(session_id, app=app, kind="session"))

    @api.delete(f"{PREFIX}/sessions/{{session_id}}", response_model=DeletedOut, responses=ERRORS, tags=["delete"])
    def delete_session(app: App, session_id: ItemId) -> DeletedOut:
        """Delete a session with its messages, chunks, vectors and index postings."""
        memory.delete(session_id, app=app, kind="session")
        return DeletedOut(deleted=session_id)
