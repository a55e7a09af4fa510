"""Search: the k most relevant memories of an app."""

from typing import Any

from fastapi import FastAPI

from ...errors import InvalidInput
from ...memory import Memory
from ..schemas import ERRORS, SearchIn, SearchOut
from .common import PREFIX


def add_routes(api: FastAPI, memory: Memory, App: Any) -> None:  # noqa: N803 - a type, used as one
    @api.post(f"{PREFIX}/search", response_model=SearchOut, responses=ERRORS, tags=["read"])
    def search(app: App, body: SearchIn) -> SearchOut:
        """The k most relevant memories (each session, note or fact once, with its best passages), best first; each shows its rank in the dense and lexical channels. With `explain`, each says why it was recalled and `dropped` lists what each stage left out."""
        if not body.query.strip():
            raise InvalidInput("the query is empty")
        if app not in memory.apps():
            return SearchOut(hits=[], notes=[f"app {app!r} holds no memory yet"])
        results = memory.search(body.query, app=app, k=body.k, previous=body.previous or None, where=body.where,
                                explain=body.explain)
        return SearchOut(**results.to_dict())
