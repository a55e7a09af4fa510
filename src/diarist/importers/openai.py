"""OpenAI chat messages: a bare message list (one session), or records holding one
(``{"messages": [...]}``: fine-tuning JSONL, request logs, diarist sessions written with OpenAI
messages; ``session_id``/``id``, ``date`` and ``metadata`` are read as in diarist's own format).

What each message becomes:

- roles: ``system`` and ``developer`` -> system; ``user``; ``assistant``; ``tool`` and the
  legacy ``function`` -> tool. Any other role is handed on and refused by validation.
- content: a string as is; a list of parts has its text parts (``text``, ``input_text``,
  ``output_text``, ``refusal``) joined by blank lines, an image part noted as ``[image]``, audio
  as ``[audio]`` and a file as ``[file NAME]`` (so a turn that only shared a picture is not lost,
  and says so); an assistant ``refusal`` with no content is kept as its text.
- an assistant turn with ``tool_calls`` (or a legacy ``function_call``): its text, if any, as an
  assistant message, then one ``tool`` message per call, ``called tool NAME(ARGS)`` with the
  arguments shortened to 200 characters. A spoken reply (``audio``) is kept as its transcript.
- a ``tool`` turn: ``NAME returned: OUTPUT`` (its ``name``, else the name of the call its
  ``tool_call_id`` answers), the output shortened to 2,000 characters.
- ``name`` (a named participant) is kept as the speaker, in front of the content (``Alice:
  ...``), as LoCoMo turns are: so the name is indexed and found.
- a turn with nothing left (empty content, no tool call) is dropped; ``time`` (or ``timestamp``)
  is kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..write.validate import SessionInput
from .base import (
    JSON_SUFFIXES,
    Source,
    limited,
    message,
    placeholder,
    record_shape,
    tool_call,
    tool_result,
)
from .sessions import session_from_record

ROLE_MAP = {"developer": "system", "function": "tool"}
TEXT_PARTS = ("text", "input_text", "output_text", "refusal")
IMAGE_PARTS = ("image_url", "input_image", "image", "image_file")
AUDIO_PARTS = ("input_audio", "audio", "output_audio")
FILE_PARTS = ("file", "input_file")
#: Fields only OpenAI messages have: they tell an OpenAI log from diarist's own sessions.
OPENAI_FIELDS = ("tool_calls", "tool_call_id", "function_call", "name", "refusal", "audio")
#: What a message list's first message holds besides its role (one of them).
MESSAGE_BODY = ("content", "text", "tool_calls", "function_call", "refusal", "audio")


def part_text(part: Any) -> str | None:
    """One content part as text: its words, a placeholder, or None (dropped)."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind in TEXT_PARTS or (kind is None and isinstance(part.get("text"), str)):
        text = part.get("text", part.get("refusal"))
        return text if isinstance(text, str) else None
    if kind in IMAGE_PARTS:
        return placeholder("image")
    if kind in AUDIO_PARTS:
        transcript = (part.get("input_audio") or part.get("audio") or {})
        text = transcript.get("transcript") if isinstance(transcript, dict) else None
        return text if isinstance(text, str) and text.strip() else placeholder("audio")
    if kind in FILE_PARTS:
        info = part.get("file") if isinstance(part.get("file"), dict) else part
        filename = info.get("filename") or info.get("file_name")
        return placeholder(f"file {filename}" if filename else "file")
    return None


def content_text(content: Any) -> Any:
    """A string, the joined text of a list of parts, or the value as is (validation names it)."""
    if isinstance(content, list):
        texts = [t.strip() for t in map(part_text, content) if t and t.strip()]
        return "\n\n".join(texts)
    return content


def convert_message(raw: Any, call_names: dict[str, str] | None = None) -> list[Any]:
    """The diarist messages one OpenAI message becomes (none, one, or its text and tool calls);
    ``call_names`` (tool call id -> function name) names the tool a ``tool`` turn answers."""
    call_names = {} if call_names is None else call_names
    if not isinstance(raw, dict):
        return [raw]  # validation says what is wrong with it
    role = raw.get("role")
    role = ROLE_MAP.get(role, role) if isinstance(role, str) else role
    time = raw.get("time", raw.get("timestamp"))
    content = content_text(raw.get("content", raw.get("text")))
    if content is None and isinstance(raw.get("refusal"), str):
        content = raw["refusal"]
    if content is None and isinstance(raw.get("audio"), dict) and isinstance(raw["audio"].get("transcript"), str):
        content = raw["audio"]["transcript"]
    name = raw.get("name")
    calls = list(raw.get("tool_calls") or [])
    if isinstance(raw.get("function_call"), dict):
        calls.append({"function": raw["function_call"]})

    out: list[Any] = []
    if role == "tool":
        if not (isinstance(name, str) and name.strip()):
            name = call_names.get(raw.get("tool_call_id"))
        if isinstance(content, str) and content.strip():
            out.append(message("tool", tool_result(name, content), time))
        elif content is not None and not isinstance(content, str):
            out.append({"role": "tool", "content": content})
    elif isinstance(content, str):
        if content.strip():
            speaker = f"{name}: " if isinstance(name, str) and name.strip() else ""
            out.append(message(role, speaker + content, time))
    elif content is not None or not calls:
        out.append({**raw, "role": role, "content": content})  # refused by validation, named
    for call in calls:
        function = call.get("function", call) if isinstance(call, dict) else {}
        if not isinstance(function, dict):
            function = {}
        if isinstance(call, dict) and isinstance(call.get("id"), str) and isinstance(function.get("name"), str):
            call_names[call["id"]] = function["name"]
        out.append(message("tool", tool_call(function.get("name"), function.get("arguments")), time))
    return out


def convert_messages(messages: Any) -> Any:
    if not isinstance(messages, list):
        return messages
    call_names: dict[str, str] = {}
    return [m for raw in messages for m in convert_message(raw, call_names)]


def _has_openai_fields(record: dict[str, Any]) -> bool:
    if "model" in record:
        return True
    messages = record.get("messages")
    for m in messages if isinstance(messages, list) else []:
        if isinstance(m, dict) and (
            m.get("role") in ROLE_MAP
            or isinstance(m.get("content"), list)
            or any(key in m for key in OPENAI_FIELDS)
            or ("content" in m and m["content"] is None)
        ):
            return True
    return False


class OpenAIImporter:
    name = "openai"
    title = "OpenAI chat messages and logs"
    suffixes = JSON_SUFFIXES
    unit = "record"

    @staticmethod
    def _is_message_list(source: Source) -> bool:
        return "role" in source.records[0]

    def detect(self, source: Source, *, forced: bool = False) -> bool | str:
        if (why := record_shape(source)) is not None:
            return why
        first = source.records[0]
        if "role" in first:
            if forced or any(key in first for key in MESSAGE_BODY):
                return True
            return "record 1 has a 'role' but no 'content'"
        if not isinstance(first.get("messages"), list):
            return "record 1 has neither 'role' nor a 'messages' list"
        if forced or any(isinstance(r, dict) and _has_openai_fields(r) for r in source.peek()):
            return True
        return "its messages have no OpenAI-only field (developer role, content parts, tool calls)"

    def read(self, source: Source, limit: int | None = None) -> Iterator[SessionInput]:
        records = source.iter_records()
        if self._is_message_list(source):
            yield SessionInput(convert_messages(list(records)), None, None, {})
            return
        for number, record in enumerate(limited(records, limit), start=1):
            where = f"{source.name} record {number}"
            converted = convert_messages(record.get("messages")) if isinstance(record, dict) else None
            yield session_from_record(record, where, converted)


IMPORTER = OpenAIImporter()
