"""Context: the block of dated memories to put in a prompt, placed in a chat if one is given."""

from typing import Any

from fastapi import FastAPI

from ...chat import place_context, question_of
from ...errors import InvalidInput
from ...memory import Memory
from ..schemas import ERRORS, ContextIn, ContextOut
from .common import PREFIX


def add_routes(api: FastAPI, memory: Memory, App: Any) -> None:  # noqa: N803 - a type, used as one
    @api.post(f"{PREFIX}/context", response_model=ContextOut, responses=ERRORS, tags=["read"])
    def context(app: App, body: ContextIn) -> ContextOut:
        """The block to put in a prompt: dated snippets within the token budget, ending with the rule that they are past records. Empty when nothing is found. Give `messages` to get them back with the block placed in the last user turn, just before the question."""
        messages = [m.model_dump(exclude_none=False) for m in body.messages] if body.messages is not None else None
        query, previous = body.query, body.previous
        if query is None:
            if not messages:
                raise InvalidInput("give a `query`, or `messages` that end with a user turn")
            query, asked_before = question_of(messages)
            previous = asked_before if previous is None else previous
        if not query or not query.strip():
            raise InvalidInput("the query is empty")
        block = memory.context(query, app=app, budget_tokens=body.budget_tokens, k=body.k,
                               previous=previous or None, order=body.order, explain=body.explain,
                               trim=body.trim)
        out = block.to_dict()
        if messages is not None:
            out["messages"] = place_context(messages, block) if block else messages
        return ContextOut(**out)

