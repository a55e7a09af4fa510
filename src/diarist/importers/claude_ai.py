"""Claude.ai's data export: ``conversations.json``, a list of conversations (one object also works).

Each conversation is ``{"uuid", "name", "summary", "created_at", "updated_at", "chat_messages":
[{"uuid", "sender": "human" | "assistant", "text", "content": [blocks], "created_at",
"attachments", "files"}]}``. The export holds the branch shown in the app, in order.

What each conversation becomes: one session, id its ``uuid``, date its ``created_at``, metadata
``{"source": "claude.ai", "title" (its name), "updated", "summary"}`` (not indexed). Each
message's ``created_at`` is its time; ``human`` is the user. A message is read from its
``content`` blocks when it has them, else from ``text``:

- ``text`` blocks are kept verbatim (consecutive ones joined by blank lines);
- ``tool_use`` becomes a ``tool`` message ``called tool NAME(INPUT)`` (200 characters),
  ``tool_result`` a ``tool`` message ``NAME returned: OUTPUT`` (2,000 characters);
- ``thinking`` (extended thinking) is skipped; an image block is noted as ``[image]``; a
  ``voice_note`` block (dictation) is kept as its ``transcript`` (or ``text``);
- when no block is of a kind read here (text, tool_use, tool_result, thinking, image,
  voice_note, token_budget), the message's ``text`` is read instead: blocks of a newer kind never
  drop a message's words;
- attachments and files are named at the end of the message (``[attached file notes.pdf]``);
  their extracted text is not imported.

Messages with no text are skipped, and a conversation with none left is skipped.
"""

from __future__ import annotations

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

SENDERS = {"human": "user", "assistant": "assistant"}
KNOWN_BLOCKS = ("text", "tool_use", "tool_result", "thinking", "image", "voice_note", "token_budget")


def block_text(content: Any) -> str:
    """Text blocks (or a plain string) of a tool result's content, joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b if isinstance(b, str) else b.get("text") for b in content if isinstance(b, (str, dict))]
        return "\n\n".join(t.strip() for t in texts if isinstance(t, str) and t.strip())
    return ""


def convert_message(raw: Any, where: str) -> list[dict[str, Any]]:
    raw = expect_object(raw, where)
    sender = raw.get("sender")
    role = SENDERS.get(sender, sender)
    time = raw.get("created_at")
    out: list[dict[str, Any]] = []
    texts: list[str] = []

    def flush() -> None:
        if texts:
            out.append(message(role, "\n\n".join(texts), time))
            texts.clear()

    blocks = raw.get("content")
    understood = isinstance(blocks, list) and any(isinstance(b, dict) and b.get("type") in KNOWN_BLOCKS for b in blocks)
    if understood:
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
                texts.append(block["text"].strip())
            elif kind == "tool_use":
                flush()
                out.append(message("tool", tool_call(block.get("name"), block.get("input")), time))
            elif kind == "tool_result":
                flush()
                result = block_text(block.get("content"))
                if result.strip():
                    out.append(message("tool", tool_result(block.get("name") or "tool", result,
                                                           failed=bool(block.get("is_error"))), time))
            elif kind == "image":
                texts.append(placeholder("image"))
            elif kind == "voice_note":
                spoken = next((block[k] for k in ("transcript", "text") if isinstance(block.get(k), str)), "")
                if spoken.strip():
                    texts.append(spoken.strip())
    elif isinstance(raw.get("text"), str) and raw["text"].strip():
        texts.append(raw["text"].strip())
    names = [f.get("file_name") for key in ("attachments", "files") for f in (raw.get(key) or [])
             if isinstance(f, dict) and isinstance(f.get("file_name"), str)]
    names = list(dict.fromkeys(names))
    if names:
        texts.append(" ".join(placeholder(f"attached file {n}") for n in names))
    flush()
    if role not in SENDERS.values() and out:
        raise InvalidInput(f"{where}: unknown sender {sender!r} (expected human or assistant)")
    return out


def conversation_session(conversation: Any, where: str) -> SessionInput | None:
    conversation = expect_object(conversation, where)
    chat = conversation.get("chat_messages")
    if not isinstance(chat, list):
        raise InvalidInput(f"{where}: 'chat_messages' must be a list, got {type(chat).__name__}")
    messages = [m for i, raw in enumerate(chat) for m in convert_message(raw, f"{where} message {i}")]
    if not messages:
        return None
    metadata: dict[str, Any] = {"source": "claude.ai"}
    if isinstance(conversation.get("name"), str) and conversation["name"].strip():
        metadata["title"] = conversation["name"]
    if (updated := iso_date(conversation.get("updated_at"))) is not None:
        metadata["updated"] = updated
    if isinstance(conversation.get("summary"), str) and conversation["summary"].strip():
        metadata["summary"] = conversation["summary"]
    return SessionInput(messages, conversation.get("uuid"), conversation.get("created_at"), metadata)


class ClaudeAIImporter:
    name = "claude-ai"
    title = "Claude.ai export conversations.json"
    suffixes = JSON_SUFFIXES
    unit = "session"

    def detect(self, source: Source, *, forced: bool = False) -> bool | str:
        if (why := record_shape(source)) is not None:
            return why
        if not isinstance(source.records[0].get("chat_messages"), list):
            return "no 'chat_messages' in record 1"
        return True

    def read(self, source: Source, limit: int | None = None) -> Iterator[SessionInput]:
        return each_conversation(source, limit, "Claude.ai", conversation_session)


IMPORTER = ClaudeAIImporter()
