"""An app as a whole: its counts, and deleting everything it holds."""

from typing import Annotated, Any

from fastapi import FastAPI, Query

from ...errors import InvalidInput, UnknownApp
from ...memory import Memory
from ..schemas import ERRORS, DeletedOut, StatsOut
from .common import PREFIX


def add_routes(api: FastAPI, memory: Memory, App: Any) -> None:  # noqa: N803 - a type, used as one
    @api.get(f"{PREFIX}/stats", response_model=StatsOut, responses=ERRORS, tags=["read"])
    def stats(app: App) -> StatsOut:
        """Counts of sessions, messages, facts and chunks, and the state of the lexical index."""
        try:
            counts = memory.app_stats(app)
        except UnknownApp:
            counts = {"sessions": 0, "messages": 0, "facts": 0, "chunks": 0, "lexical_index": "empty"}
        return StatsOut(app=app, embedder=memory.embedder.model_id, **counts)

    @api.delete(PREFIX, response_model=DeletedOut, responses=ERRORS, tags=["delete"])
    def delete_app(app: App, confirm: Annotated[str, Query(description="Must repeat the app's name.")]) -> DeletedOut:
        """Delete everything the app holds (its keys stay valid). `confirm` must repeat the app's name."""
        if confirm != app:
            raise InvalidInput(f"to delete app {app!r}, pass confirm={app!r}")
        memory.delete_app(app)
        return DeletedOut(deleted=app)
