"""Placing a context block in a chat: the question a chat asks, and where its block goes.

``question_of`` reads what to search for from an OpenAI-style message list (the last user turn,
and the turn before it for a follow-up); ``place_context`` puts the block in the last user turn,
just before the question: what is closest to the question steers hardest, the stable prefix of
the prompt stays cacheable, and no chat template sees a second system message.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from .errors import InvalidInput


def _last_user_index(messages: Sequence[Any]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user":
            return i
    raise InvalidInput("the message list has no user turn to put the memory block in")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def place_context(messages: Sequence[dict[str, Any]], block: str) -> list[dict[str, Any]]:
    """A copy of ``messages`` with ``block`` at the start of the last user turn, before the question.

    Plain string contents become ``block + "\\n\\n" + question``; a list of content parts gets a
    text part inserted first. An empty block returns an unchanged copy. The input is not modified.
    """
    out = [copy.deepcopy(m) for m in messages]
    if not block:
        return out
    i = _last_user_index(out)
    content = out[i].get("content")
    if isinstance(content, list):
        out[i]["content"] = [{"type": "text", "text": str(block)}, *content]
    elif isinstance(content, str):
        out[i]["content"] = f"{block}\n\n{content}"
    else:
        raise InvalidInput(f"the last user turn has content of type {type(content).__name__}, not text")
    return out


def check_chat(messages: Any) -> None:
    """An OpenAI-style chat: a list of objects with a string ``role`` and a ``content`` that is
    a string, a list of content parts (objects; a text part's ``text`` is a string) or None."""
    if not isinstance(messages, (list, tuple)):
        raise InvalidInput(f"messages must be a list of chat messages, got {type(messages).__name__}")
    for n, m in enumerate(messages):
        if not isinstance(m, dict):
            raise InvalidInput(f"message {n}: a chat message must be an object, got {type(m).__name__}")
        if not isinstance(m.get("role"), str):
            raise InvalidInput(f"message {n}: 'role' must be a string, got {type(m.get('role')).__name__}")
        content = m.get("content")
        if isinstance(content, list):
            for part in content:
                if not isinstance(part, dict):
                    raise InvalidInput(f"message {n}: a content part must be an object, got {type(part).__name__}")
                if part.get("type") == "text" and not isinstance(part.get("text", ""), str):
                    raise InvalidInput(f"message {n}: a text part's 'text' must be a string")
        elif content is not None and not isinstance(content, str):
            raise InvalidInput(f"message {n}: 'content' must be a string or a list of parts, got "
                               f"{type(content).__name__}")


def question_of(messages: Sequence[Any]) -> tuple[str, str | None]:
    """(the last user turn's text, the turn before it when that is a user or assistant turn):
    what to search for a chat, a follow-up included. The system prompt is never "previous"."""
    check_chat(messages)
    i = _last_user_index(messages)
    query = _text_of(messages[i].get("content"))
    before = messages[i - 1] if i > 0 else None
    previous = None
    if isinstance(before, dict) and before.get("role") in ("user", "assistant"):
        previous = _text_of(before.get("content")) or None
    return query, previous
