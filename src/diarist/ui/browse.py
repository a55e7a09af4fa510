"""An app's memories, newest first, paged and filtered by kind, source, date range and metadata.

Unfiltered, a page is one indexed read (``Memory.list``). A metadata filter (``source`` is the
metadata key the importers fill) runs in the store, as search's ``where`` does, and the matching
items are ordered by their newest chunk (the order they were stored). A date range alone scans
the item summaries (ids and dates, no text) page by page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInput
from ..memory import Memory

PAGE_SIZE = 50
SCAN_PAGE = 50_000  # item summaries (id, date) read per query of a date scan: 100k items in 2
FETCH_BLOCK = 1000
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

    def admits(self, date: str | None) -> bool:
        if not (self.since or self.until):
            return True
        if not date:
            return False
        day = date[:10]
        return (not self.since or day >= self.since) and (not self.until or day <= self.until)


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
    if filters.where:
        ids = _matching_ids(memory, app, filters)
        rows = ids[offset : offset + limit + 1]
    elif filters.since or filters.until:
        rows = _scan_dates(memory, app, filters, offset + limit + 1)[offset:]
    else:
        rows = [_summary(filters.kind, r) for r in memory.list(app=app, kind=filters.kind, limit=limit + 1, offset=offset)]
    return rows[:limit], len(rows) > limit


def _summary(kind: str, row: dict[str, Any]) -> dict[str, Any]:
    return {"kind": kind, "id": row[f"{kind}_id"], "date": row["date"]}


def _scan_dates(memory: Memory, app: str, filters: Filters, wanted: int) -> list[dict[str, Any]]:
    """The first ``wanted`` items (newest first) dated inside the range: the summaries (ids and
    dates, no text) read ``SCAN_PAGE`` at a time, straight from the store (the app is checked)."""
    low, high = filters.since or "", filters.until or "9999-99-99"
    out, offset = [], 0
    while len(out) < wanted:
        rows = memory.store.list_items(app, filters.kind, SCAN_PAGE, offset, newest_first=True)
        out += [{"kind": filters.kind, "id": r.external_id, "date": r.date} for r in rows
                if r.date and low <= r.date[:10] <= high]
        if len(rows) < SCAN_PAGE:
            break
        offset += SCAN_PAGE
    return out


def _matching_ids(memory: Memory, app: str, filters: Filters) -> list[dict[str, Any]]:
    """Items of the filter's kind whose metadata matches, newest stored first."""
    chunk_ids = memory.store.chunk_ids_where(app, filters.where)
    newest: dict[str, tuple[int, str | None]] = {}
    for start in range(0, len(chunk_ids), FETCH_BLOCK):
        block = [int(i) for i in chunk_ids[start : start + FETCH_BLOCK]]
        for chunk_id, row in memory.store.fetch_chunks(app, block).items():
            item_id = row.fact_id if filters.kind == "fact" else (None if row.fact_id else row.session_id)
            if item_id is None or not filters.admits(row.date):
                continue
            if chunk_id > newest.get(item_id, (-1, None))[0]:
                newest[item_id] = (chunk_id, row.date)
    ordered = sorted(newest.items(), key=lambda kv: kv[1][0], reverse=True)
    return [{"kind": filters.kind, "id": item_id, "date": date} for item_id, (_, date) in ordered]


def preview(item: dict[str, Any]) -> str:
    """The first words of a fact, or of a session's first message."""
    if item["kind"] == "fact":
        text = item.get("text") or ""
    else:
        messages = item.get("messages") or []
        text = messages[0]["content"] if messages else ""
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS].rstrip() + "…"
