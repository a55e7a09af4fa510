"""Facts: store, update (keeping the previous version), read, list, history, delete."""

from typing import Any

from fastapi import FastAPI

from ...errors import InvalidInput
from ...memory import Memory
from ...write.validate import FactInput
from ..schemas import ERRORS, DeletedOut, FactIn, FactUpdateIn, HistoryOut, ItemOut, ListOut, StoredOut, VersionOut
from .common import PREFIX, ItemId, Limit, Offset, page, stored


def add_routes(api: FastAPI, memory: Memory, App: Any) -> None:  # noqa: N803 - a type, used as one
    @api.post(f"{PREFIX}/facts", status_code=201, response_model=StoredOut, responses=ERRORS, tags=["write"])
    def add_fact(app: App, body: FactIn) -> StoredOut:
        """Store a short standalone note (a fact about the user, a preference, a decision)."""
        if not body.text.strip():
            raise InvalidInput("a fact must be a non-empty string")
        report = memory.add_facts([FactInput(body.text, body.fact_id, body.date, body.metadata)], app=app)
        return stored(report)  # an identical fact posted again is "unchanged", as a session is

    @api.patch(f"{PREFIX}/facts/{{fact_id}}", response_model=StoredOut, responses=ERRORS, tags=["write"])
    def update_fact(app: App, fact_id: ItemId, body: FactUpdateIn) -> StoredOut:
        """Change a fact's text, date or metadata; the previous version is kept (`.../history`)."""
        return stored(memory.update(fact_id, app=app, kind="fact", text=body.text, date=body.date,
                                    metadata=body.metadata))

    @api.get(f"{PREFIX}/facts/{{fact_id}}/history", response_model=HistoryOut, responses=ERRORS, tags=["read"])
    def fact_history(app: App, fact_id: ItemId) -> HistoryOut:
        """The previous versions of a fact that updates kept, oldest first."""
        return HistoryOut(versions=[VersionOut(**v) for v in memory.history(fact_id, app=app, kind="fact")])

    @api.get(f"{PREFIX}/facts", response_model=ListOut, responses=ERRORS, tags=["read"])
    def list_facts(app: App, limit: Limit = 50, offset: Offset = 0) -> ListOut:
        """Fact ids and dates, in the order they were stored; page with `limit` and `offset`."""
        return page(memory.list(app=app, kind="fact", limit=limit + 1, offset=offset, newest_first=False), limit, offset)

    @api.get(f"{PREFIX}/facts/{{fact_id}}", response_model=ItemOut, responses=ERRORS, tags=["read"])
    def get_fact(app: App, fact_id: ItemId) -> ItemOut:
        """A stored fact."""
        return ItemOut(**memory.get(fact_id, app=app, kind="fact"))

    @api.delete(f"{PREFIX}/facts/{{fact_id}}", response_model=DeletedOut, responses=ERRORS, tags=["delete"])
    def delete_fact(app: App, fact_id: ItemId) -> DeletedOut:
        """Delete a fact with its chunk, vector and index postings."""
        memory.delete(fact_id, app=app, kind="fact")
        return DeletedOut(deleted=fact_id)
