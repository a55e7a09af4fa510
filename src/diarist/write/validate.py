"""Input validation: every record is checked before anything is stored."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dates import normalise_date, now_iso
from ..errors import InvalidInput
from ..types import ROLES, Message

MAX_MESSAGE_CHARS = 1_000_000  # one message; beyond this it is a paste accident, not memory
MAX_ID_CHARS = 256
MAX_QUERY_CHARS = MAX_MESSAGE_CHARS  # a query may be a whole pasted user turn
MAX_METADATA_BYTES = 64 * 1024  # as JSON in UTF-8
MAX_METADATA_DEPTH = 32  # nesting of objects and lists
MAX_JSON_INT = 2**63 - 1  # integers in metadata fit 64 bits (what most JSON readers keep exactly)


@dataclass
class SessionInput:
    """A session as callers hand it in, before validation."""

    messages: list[Any]
    session_id: str | None = None
    date: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class FactInput:
    """A fact (a short standalone note) as callers hand it in, before validation."""

    text: Any
    fact_id: str | None = None
    date: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages: never raises (a
    5,000-digit int or a hostile __repr__), and escapes lone surrogates (repr does)."""
    try:
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
            return f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
        text = repr(value)
    except Exception:
        return f"<a {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_encodable(value: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{what} is not valid Unicode: {exc.reason} at character {exc.start} "
            f"({shown(value[exc.start:exc.end])})"
        ) from None


def check_text(value: Any, what: str, *, max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """A non-empty string, encodable as UTF-8 (no lone surrogates), at most ``max_chars``."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(f"{what} is empty")
    if len(value) > max_chars:
        raise InvalidInput(f"{what} is {len(value):,} characters, over the {max_chars:,} limit")
    _check_encodable(value, what)
    return value


def _check_id(value: Any, what: str) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise InvalidInput(f"{what} must be a string or an integer, got {type(value).__name__}")
    if isinstance(value, int):
        if value.bit_length() > 3 * MAX_ID_CHARS:  # str() of a huge int is slow, then refused
            raise InvalidInput(f"{what} must be 1 to {MAX_ID_CHARS} characters, got {shown(value)}")
        value = str(value)
    if not value.strip() or len(value) > MAX_ID_CHARS:
        raise InvalidInput(f"{what} must be 1 to {MAX_ID_CHARS} characters, got {len(value)}")
    _check_encodable(value, what)
    return value


def check_id(value: Any, what: str) -> str:
    """An item id (session or fact): a string or int, 1 to MAX_ID_CHARS characters, valid Unicode."""
    return _check_id(value, what)


def check_json(value: Any, where: str, max_depth: int = MAX_METADATA_DEPTH) -> Any:
    """``value`` as plain JSON (objects with string keys, lists, valid-Unicode strings, finite
    numbers, integers within 64 bits, booleans, None), nested at most ``max_depth`` levels."""
    return _check_json(value, where, 1, max_depth)


def _check_json(value: Any, where: str, depth: int, max_depth: int = MAX_METADATA_DEPTH) -> Any:
    if depth > max_depth:
        raise InvalidInput(f"{where} is nested too deeply (over {max_depth} levels)")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        _check_encodable(value, where)
        return value
    if isinstance(value, int):
        if not -MAX_JSON_INT - 1 <= value <= MAX_JSON_INT:
            raise InvalidInput(f"{where}: integer {shown(value)} does not fit 64 bits")
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{where}: {value!r} is not a JSON number")
        return float(value)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"{where}: key {shown(key)} is {type(key).__name__}, not a string")
            _check_encodable(key, f"{where} key {shown(key)}")
            out[key] = _check_json(item, f"{where}.{shown(key, 30)}" if depth < 4 else where, depth + 1, max_depth)
        return out
    if isinstance(value, (list, tuple)):
        return [_check_json(item, where, depth + 1, max_depth) for item in value]
    raise InvalidInput(f"{where}: {type(value).__name__} {shown(value, 40)} is not plain JSON")


def check_metadata(value: Any, where: str = "metadata") -> dict[str, Any]:
    """Metadata as plain JSON: an object with string keys, JSON values only (finite numbers,
    valid Unicode), at most MAX_METADATA_DEPTH levels and MAX_METADATA_BYTES as JSON."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{where} must be an object, got {type(value).__name__}")
    checked = _check_json(value, where, 1)
    size = len(json.dumps(checked, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise InvalidInput(f"{where} is {size:,} bytes as JSON, over the {MAX_METADATA_BYTES:,} limit")
    return checked


def check_date(value: Any, what: str | None = None) -> str | None:
    """``normalise_date``, its message prefixed with what the date belongs to."""
    try:
        return normalise_date(value)
    except InvalidInput as exc:
        if what is None:
            raise
        raise InvalidInput(f"{what}: {exc}") from None


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
        raise InvalidInput(f"{where}: unknown role {shown(role)} (expected one of {', '.join(ROLES)})")
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
    _check_encodable(content, f"{where}: message content")
    time = raw.get("time", raw.get("timestamp"))
    return Message(role=role.strip().lower(), content=content,
                   time=check_date(time, f"{where}: time") if time is not None else None)


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
            raise InvalidInput(f"{where}: unknown field(s) {', '.join(sorted(shown(k, 30) for k in unknown))}")
        if "messages" not in item:
            raise InvalidInput(f"{where}: missing field 'messages'")
        return SessionInput(item["messages"], item.get("session_id"), item.get("date"), item.get("metadata"))
    raise InvalidInput(f"{where}: a session must be a SessionInput or an object, got {type(item).__name__}")


def check_session(item: SessionInput, where: str) -> tuple[str, str | None, list[Message], dict[str, Any], str]:
    """(session id, ISO date, messages, metadata, content hash), or InvalidInput naming the record.

    Everything a store would have to encode is checked here, before anything is stored: the id,
    every message (UTF-8 encodable, bounded), the date and the metadata (plain JSON)."""
    item = as_session_input(item, where)
    session_id = None
    if item.session_id is not None:
        session_id = _check_id(item.session_id, f"{where}: session id")
        where = f"{where} (session {shown(session_id)})"
    if not isinstance(item.messages, list):
        raise InvalidInput(f"{where}: 'messages' must be a list, got {type(item.messages).__name__}")
    if not item.messages:
        raise InvalidInput(f"{where}: session has no messages")
    messages = [check_message(m, f"{where} message {i}") for i, m in enumerate(item.messages)]
    date = check_date(item.date, where)
    metadata = check_metadata(item.metadata, f"{where}: metadata")
    digest = content_hash(
        {"date": date, "metadata": metadata, "messages": [m.__dict__ for m in messages]}
    )
    return session_id if session_id is not None else digest[:16], date, messages, metadata, digest


def check_unique(ids: Iterable[str], what: str) -> None:
    seen: set[str] = set()
    for value in ids:
        if value in seen:
            raise InvalidInput(f"{what} {value!r} appears twice in one batch")
        seen.add(value)


def check_fact(fact: FactInput, where: str) -> tuple[str, str, str, dict[str, Any], str]:
    """(fact id, ISO date, text, metadata, content hash), or InvalidInput naming the record.
    A fact without a date is dated now; without an id, its id is a hash of its content."""
    if not isinstance(fact, FactInput):
        raise InvalidInput(f"{where}: a fact must be a FactInput, got {type(fact).__name__}")
    if not isinstance(fact.text, str) or not fact.text.strip():
        raise InvalidInput(f"{where}: a fact must be a non-empty string")
    text = check_text(fact.text, f"{where}: the fact")
    fact_id = check_id(fact.fact_id, f"{where}: fact id") if fact.fact_id is not None else None
    date = check_date(fact.date, f"{where}: date") or now_iso()
    metadata = check_metadata(fact.metadata, f"{where}: metadata")
    digest = content_hash({"text": text, "date": date, "metadata": metadata})
    return (fact_id if fact_id is not None else digest[:16]), date, text, metadata, digest
