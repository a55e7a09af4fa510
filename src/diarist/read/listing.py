"""``Memory.list``: an app's item summaries (id and date), paged, and filtered by metadata and dates.

Unfiltered, a page is one indexed read (``Store.list_items``). A metadata filter (``where``) runs
in the store, as search's does, and the matching items are ordered by their newest chunk (the
order they were stored). A date range alone scans the summaries (ids and dates, no text)
``SCAN_PAGE`` at a time, so that a page at a large offset costs a few queries, not one per page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..store.base import ItemSummary, Store

SCAN_PAGE = 50_000  # item summaries (id, date) read per query of a date scan: 100k items in 2
FETCH_BLOCK = 1000  # chunks read per query when ordering the items a metadata filter matched


def summaries(store: Store, app: str, kind: str, limit: int, offset: int, *, newest_first: bool,
              where: Mapping[str, Any] | None, since: str | None, until: str | None) -> list[ItemSummary]:
    """One page of ``kind``'s summaries; ``since``/``until``: inclusive days (YYYY-MM-DD)."""
    if where:
        return _matching(store, app, kind, where, since, until, newest_first)[offset : offset + limit]
    if since or until:
        return _scan_dates(store, app, kind, since, until, offset + limit, newest_first)[offset:]
    return store.list_items(app, kind, limit, offset, newest_first=newest_first)


def _admits(date: str | None, since: str | None, until: str | None) -> bool:
    if not (since or until):
        return True
    if not date:
        return False
    day = date[:10]
    return (not since or day >= since) and (not until or day <= until)


def _scan_dates(store: Store, app: str, kind: str, since: str | None, until: str | None, wanted: int,
                newest_first: bool) -> list[ItemSummary]:
    """The first ``wanted`` summaries dated inside the range, ``SCAN_PAGE`` read at a time."""
    out: list[ItemSummary] = []
    offset = 0
    while len(out) < wanted:
        rows = store.list_items(app, kind, SCAN_PAGE, offset, newest_first=newest_first)
        out += [r for r in rows if _admits(r.date, since, until)]
        if len(rows) < SCAN_PAGE:
            break
        offset += SCAN_PAGE
    return out


def _matching(store: Store, app: str, kind: str, where: Mapping[str, Any], since: str | None,
              until: str | None, newest_first: bool) -> list[ItemSummary]:
    """Items of ``kind`` whose metadata matches ``where`` (and dated inside the range), by their
    newest chunk: newest stored first, or (``newest_first=False``) oldest first."""
    chunk_ids = store.chunk_ids_where(app, where)
    newest: dict[str, tuple[int, str | None]] = {}
    for start in range(0, len(chunk_ids), FETCH_BLOCK):
        block = [int(i) for i in chunk_ids[start : start + FETCH_BLOCK]]
        for chunk_id, row in store.fetch_chunks(app, block).items():
            item_id = row.fact_id if kind == "fact" else (None if row.fact_id else row.session_id)
            if item_id is None or not _admits(row.date, since, until):
                continue
            if chunk_id > newest.get(item_id, (-1, None))[0]:
                newest[item_id] = (chunk_id, row.date)
    ordered = sorted(newest.items(), key=lambda kv: kv[1][0], reverse=newest_first)
    return [ItemSummary(kind, item_id, date) for item_id, (_, date) in ordered]
