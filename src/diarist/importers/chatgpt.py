"""ChatGPT's data export: ``conversations.json``, a list of conversations (one object also works).

Each conversation is ``{"id" / "conversation_id", "title", "create_time", "update_time",
"current_node", "mapping": {node id: {"message", "parent", "children"}}}``: a tree, because
every edit and every regenerated answer starts a branch. Only the branch the user last saw is
imported: from ``current_node`` up to the root through ``parent``, reversed (without a
``current_node``, from the root down through each node's last child, the latest branch).

What each conversation becomes: one session, id the conversation id, date its ``create_time``,
metadata ``{"source": "chatgpt", "title", "updated", "model"}`` (the title is metadata, not
indexed). Each message's ``create_time`` is its time. Along the branch:

- nodes without a message, messages with no text, and messages ChatGPT hides from the
  conversation (``metadata.is_visually_hidden_from_conversation``: the empty system prompt,
  custom instructions, memory context) are skipped, as are reasoning (``thoughts``,
  ``reasoning_recap``) and ``user_editable_context`` / ``model_editable_context`` contents;
- ``user`` and ``assistant`` text are kept verbatim (text parts joined by blank lines; an
  uploaded image is noted as ``[image]``; a voice message as its transcript); a visible
  ``system`` message is kept as system;
- an assistant message addressed to a tool (``recipient`` other than ``all``: code for
  ``python``, a search for ``web``, a ``bio`` memory update) becomes a ``tool`` message
  ``called tool RECIPIENT(...)`` shortened to 200 characters, except a canvas document
  (``canmore.create_textdoc``, JSON ``{"name", "content"}``): written with the user, it is kept
  whole as an assistant message ``[canvas NAME]`` followed by its text;
- a ``tool`` message (code output, browsing results) becomes ``NAME returned: OUTPUT``, the
  output shortened to 2,000 characters.

A conversation with nothing left is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..errors import InvalidInput
from ..write.validate import SessionInput
from .base import (
    JSON_SUFFIXES,
    Source,
    each_conversation,
    expect_object,
    iso_date,
    message,
    placeholder,
    record_shape,
    tool_call,
    tool_result,
)

CANVAS = "canmore.create_textdoc"  # the tool that creates a canvas document
SKIPPED_CONTENT = ("thoughts", "reasoning_recap", "user_editable_context", "model_editable_context", "system_error")


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return None
    kind = part.get("content_type")
    if kind == "image_asset_pointer":
        return placeholder("image")
    if kind == "audio_transcription" or (kind is None and isinstance(part.get("text"), str)):
        return part.get("text") if isinstance(part.get("text"), str) else None
    return None  # audio and video asset pointers: the transcription part carries the words


def content_text(content: Any) -> str:
    """The text of a message's ``content`` ('' when there is none to keep)."""
    if not isinstance(content, dict):
        return content if isinstance(content, str) else ""
    kind = content.get("content_type")
    if kind in SKIPPED_CONTENT:
        return ""
    if kind == "tether_browsing_display":
        text = content.get("result")
    elif kind == "tether_quote":
        text = "\n".join(t for t in (content.get("title"), content.get("text")) if isinstance(t, str) and t.strip())
    elif isinstance(content.get("parts"), list):
        text = "\n\n".join(t.strip() for t in map(_part_text, content["parts"]) if t and t.strip())
    else:
        text = content.get("text")  # code, execution_output and the like
    return text if isinstance(text, str) else ""


def current_branch(mapping: dict[str, Any], current: Any, where: str) -> list[dict[str, Any]]:
    """The nodes from the root to ``current`` (or down the latest branch without one)."""
    if current is not None and current not in mapping:
        raise InvalidInput(f"{where}: current_node {current!r} is not in its mapping")
    if current is None:
        roots = [k for k, n in mapping.items() if isinstance(n, dict) and n.get("parent") not in mapping]
        node_id, seen = (roots[0] if roots else None), set()
        while node_id in mapping and node_id not in seen:
            seen.add(node_id)
            children = [c for c in (mapping[node_id].get("children") or []) if c in mapping]
            current = node_id
            node_id = children[-1] if children else None
    branch, seen = [], set()
    node_id = current
    while node_id is not None and node_id in mapping:
        if node_id in seen:
            raise InvalidInput(f"{where}: its mapping loops at node {node_id!r}")
        seen.add(node_id)
        node = expect_object(mapping[node_id], f"{where} node {node_id!r}")
        branch.append(node)
        node_id = node.get("parent")
    branch.reverse()
    return branch


def canvas_document(text: str) -> str | None:
    """The text of a canvas document ``canmore.create_textdoc`` creates, headed by its name, or None
    when the call does not hold one."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("content"), str) or not doc["content"].strip():
        return None
    name = doc.get("name") if isinstance(doc.get("name"), str) and doc["name"].strip() else "document"
    return f"{placeholder(f'canvas {name}')}\n{doc['content']}"


def convert_node(node: dict[str, Any]) -> dict[str, Any] | None:
    """A node's message as a diarist message, or None when there is nothing to keep."""
    msg = node.get("message")
    if not isinstance(msg, dict):
        return None
    meta = msg.get("metadata") if isinstance(msg.get("metadata"), dict) else {}
    if meta.get("is_visually_hidden_from_conversation"):
        return None
    author = msg.get("author") if isinstance(msg.get("author"), dict) else {}
    role, name = author.get("role"), author.get("name")
    text = content_text(msg.get("content"))
    if not text.strip():
        return None
    time = msg.get("create_time")
    recipient = msg.get("recipient")
    if role == "assistant" and recipient == CANVAS and (document := canvas_document(text)) is not None:
        return message("assistant", document, time)
    if role == "assistant" and recipient not in (None, "all"):
        return message("tool", tool_call(recipient, text), time)
    if role == "tool":
        return message("tool", tool_result(name, text), time)
    return message(role, text, time)


def conversation_session(conversation: Any, where: str) -> SessionInput | None:
    conversation = expect_object(conversation, where)
    mapping = conversation.get("mapping")
    if not isinstance(mapping, dict):
        raise InvalidInput(f"{where}: 'mapping' must be an object, got {type(mapping).__name__}")
    messages = [m for node in current_branch(mapping, conversation.get("current_node"), where)
                if (m := convert_node(node)) is not None]
    if not messages:
        return None
    metadata: dict[str, Any] = {"source": "chatgpt"}
    if isinstance(conversation.get("title"), str):
        metadata["title"] = conversation["title"]
    if (updated := iso_date(conversation.get("update_time"))) is not None:
        metadata["updated"] = updated
    if isinstance(conversation.get("default_model_slug"), str):
        metadata["model"] = conversation["default_model_slug"]
    sid = conversation.get("conversation_id") or conversation.get("id")
    return SessionInput(messages, sid, conversation.get("create_time"), metadata)


class ChatGPTImporter:
    name = "chatgpt"
    title = "ChatGPT export conversations.json"
    suffixes = JSON_SUFFIXES
    unit = "session"

    def detect(self, source: Source, *, forced: bool = False) -> bool | str:
        if (why := record_shape(source)) is not None:
            return why
        if not isinstance(source.records[0].get("mapping"), dict):
            return "no 'mapping' in record 1"
        return True

    def read(self, source: Source, limit: int | None = None) -> Iterator[SessionInput]:
        return each_conversation(source, limit, "ChatGPT", conversation_session)


IMPORTER = ChatGPTImporter()
