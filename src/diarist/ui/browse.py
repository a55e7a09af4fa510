"""An app's memories, newest first, paged and filtered by kind, source, date range and metadata
(``source`` is the metadata key the importers fill): the filters read from the page's form, and
``Memory.list`` (``diarist.read.listing``) reads the page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInput
from ..memory import Memory

PAGE_SIZE = 50
PREVIEW_CHARS = 240


@dataclass(frozen=True)
class Filters:
    kind: str = "session"
    source: str | None = None
    since: str | None = None  # YYYY-MM-DD, inclusive
    until: str | None = None  # YYYY-MM-DD, inclusive
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> dict[str, Any]:
        where = dict(self.metadata)
        if self.source:
            where["source"] = self.source
        return where


def parse_metadata_filter(text: str) -> dict[str, Any]:
    """``key=value`` pairs, one per line or separated by ``;``; a value is read as JSON when it
    parses (``n=1`` is the number 1), else as a string."""
    out: dict[str, Any] = {}
    for part in text.replace("\n", ";").split(";"):
        if not part.strip():
            continue
        key, sep, raw = part.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"metadata filter {part.strip()!r}: write key=value")
        try:
            value = json.loads(raw.strip())
        except ValueError:
            value = raw.strip()
        out[key.strip()] = value
    return out


def check_day(value: str | None, name: str) -> str | None:
    if not value:
        return None
    value = value.strip()
    if len(value) != 10 or value[4] != "-" or value[7] != "-" or not (value[:4] + value[5:7] + value[8:]).isdigit():
        raise InvalidInput(f"{name} must be a date YYYY-MM-DD, got {value[:40]!r}")
    return value


def page(memory: Memory, app: str, filters: Filters, offset: int, limit: int = PAGE_SIZE) -> tuple[list[dict[str, Any]], bool]:
    """One page of item summaries ({kind, id, date}) and whether another page follows."""
    rows = memory.list(app=app, kind=filters.kind, limit=limit + 1, offset=offset, where=filters.where or None,
                       since=filters.since, until=filters.until)
    return [_summary(filters.kind, r) for r in rows[:limit]], len(rows) > limit


def _summary(kind: str, row: dict[str, Any]) -> dict[str, Any]:
    return {"kind": kind, "id": row[f"{kind}_id"], "date": row["date"]}


def preview(item: dict[str, Any]) -> str:
    """The first words of a fact, or of a session's first message."""
    if item["kind"] == "fact":
        text = item.get("text") or ""
    else:
        messages = item.get("messages") or []
        text = messages[0]["content"] if messages else ""
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS].rstrip() + "…"
