"""Input validation: every record is checked before anything is stored."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dates import normalise_date
from ..errors import InvalidInput
from ..types import ROLES, Message

MAX_MESSAGE_CHARS = 1_000_000  # one message; beyond this it is a paste accident, not memory
MAX_ID_CHARS = 256


@dataclass
class SessionInput:
    """A session as callers hand it in, before validation."""

    messages: list[Any]
    session_id: str | None = None
    date: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)


def _check_id(value: Any, what: str) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise InvalidInput(f"{what} must be a string, got {type(value).__name__}")
    value = str(value)
    if not value.strip() or len(value) > MAX_ID_CHARS:
        raise InvalidInput(f"{what} must be 1 to {MAX_ID_CHARS} characters, got {len(value)}")
    return value


def check_app(app: Any) -> str:
    return _check_id(app, "app name")


def check_message(raw: Any, where: str) -> Message:
    if isinstance(raw, Message):
        raw = {"role": raw.role, "content": raw.content, "time": raw.time}
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"{where}: a message must be an object, got {type(raw).__name__}")
    role = raw.get("role")
    if role is None:
        raise InvalidInput(f"{where}: message has no 'role'")
    if not isinstance(role, str) or role.strip().lower() not in ROLES:
        raise InvalidInput(f"{where}: unknown role {role!r} (expected one of {', '.join(ROLES)})")
    content = raw.get("content", raw.get("text"))
    if content is None:
        raise InvalidInput(f"{where}: message has no 'content'")
    if not isinstance(content, str):
        raise InvalidInput(f"{where}: 'content' must be a string, got {type(content).__name__}")
    if not content.strip():
        raise InvalidInput(f"{where}: message content is empty")
    if len(content) > MAX_MESSAGE_CHARS:
        raise InvalidInput(
            f"{where}: message is {len(content):,} characters, over the {MAX_MESSAGE_CHARS:,} limit"
        )
    try:
        content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{where}: content is not valid Unicode ({exc.reason})") from exc
    time = raw.get("time", raw.get("timestamp"))
    return Message(role=role.strip().lower(), content=content, time=normalise_date(time) if time else None)


def content_hash(payload: Any) -> str:
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def as_session_input(item: Any, where: str) -> SessionInput:
    """A SessionInput, or a mapping with its fields ({"messages", "session_id", "date", "metadata"})."""
    if isinstance(item, SessionInput):
        return item
    if isinstance(item, Mapping):
        unknown = set(item) - {"messages", "session_id", "date", "metadata"}
        if unknown:
            raise InvalidInput(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
        if "messages" not in item:
            raise InvalidInput(f"{where}: missing field 'messages'")
        return SessionInput(item["messages"], item.get("session_id"), item.get("date"), item.get("metadata") or {})
    raise InvalidInput(f"{where}: a session must be a SessionInput or an object, got {type(item).__name__}")


def check_session(item: SessionInput, where: str) -> tuple[str, str | None, list[Message], dict[str, Any], str]:
    """(session id, ISO date, messages, metadata, content hash), or InvalidInput naming the record."""
    item = as_session_input(item, where)
    if item.session_id is not None:
        where = f"{where} (session {item.session_id!r})"
    if not isinstance(item.messages, list):
        raise InvalidInput(f"{where}: 'messages' must be a list, got {type(item.messages).__name__}")
    if not item.messages:
        raise InvalidInput(f"{where}: session has no messages")
    messages = [check_message(m, f"{where} message {i}") for i, m in enumerate(item.messages)]
    try:
        date = normalise_date(item.date)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    if not isinstance(item.metadata, Mapping):
        raise InvalidInput(f"{where}: 'metadata' must be an object")
    metadata = dict(item.metadata)
    digest = content_hash(
        {"date": date, "metadata": metadata, "messages": [m.__dict__ for m in messages]}
    )
    session_id = _check_id(item.session_id, f"{where}: session id") if item.session_id is not None else digest[:16]
    return session_id, date, messages, metadata, digest


def check_unique(ids: Iterable[str], what: str) -> None:
    seen: set[str] = set()
    for value in ids:
        if value in seen:
            raise InvalidInput(f"{what} {value!r} appears twice in one batch")
        seen.add(value)
