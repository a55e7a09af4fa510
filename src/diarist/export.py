"""Taking it all back out: an app's items as JSONL that ``diarist ingest`` reads back into
identical contents (and so identical rankings), or as Markdown a person can read and keep in
version control, one file per session.

JSONL: one record per line, in the order the items were stored, sessions first, then facts:
``{"kind": "session", "session_id", "date", "metadata", "messages": [{"role", "content",
"time"}]}`` and ``{"kind": "fact", "fact_id", "text", "date", "metadata"}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from .context import format_date
from .errors import InvalidInput


class Memory(Protocol):
    """What export reads of ``diarist.memory.Memory`` (named here, not imported: ``Memory.export``
    imports this module)."""

    def list(self, *, app: str, kind: str, limit: int, offset: int, newest_first: bool) -> Any: ...

    def get(self, item_id: str, *, app: str, kind: str) -> dict[str, Any]: ...

    def snapshot(self) -> AbstractContextManager[None]: ...


FORMATS = ("jsonl", "markdown")
PAGE = 500


def items(memory: "Memory", app: str) -> Iterator[dict[str, Any]]:
    """Every item of the app, whole (messages verbatim), in storage order, sessions then facts.

    All of it read in one snapshot of the store (one read transaction; PostgreSQL: REPEATABLE
    READ): read page by page outside one, a replace that moved an item to the end of the
    storage order during the export made a page skip one item and repeat another, and a delete
    between listing and reading an item aborted the export half-way."""
    with memory.snapshot():
        for kind in ("session", "fact"):
            offset = 0
            while True:
                page = memory.list(app=app, kind=kind, limit=PAGE, offset=offset, newest_first=False)
                for summary in page:
                    yield memory.get(summary[f"{kind}_id"], app=app, kind=kind)
                if len(page) < PAGE:
                    break
                offset += PAGE


def jsonl_lines(memory: "Memory", app: str) -> Iterator[str]:
    for item in items(memory, app):
        if item["kind"] == "session":
            item["messages"] = [{k: v for k, v in m.items() if v is not None} for m in item["messages"]]
        yield json.dumps(item, ensure_ascii=False, sort_keys=True)


_UNSAFE = re.compile(r"[^\w.-]+")


def markdown_name(item_id: str, taken: set[str]) -> str:
    """A file name for a session id: readable, safe on every file system, unique."""
    stem = _UNSAFE.sub("_", item_id).strip("._")[:100] or "session"
    name, n = f"{stem}.md", 1
    while name.lower() in taken:
        n += 1
        name = f"{stem}-{n}.md"
    taken.add(name.lower())
    return name


def markdown_of(item: dict[str, Any]) -> str:
    """One item as a Markdown document: a heading, its date and metadata, then each turn."""
    if item["kind"] == "fact":
        head = f"# Note {item['fact_id']}\n\n- date: {format_date(item['date'])}\n"
        return head + _metadata_lines(item) + f"\n{item['text'].strip()}\n"
    out = [f"# Session {item['session_id']}\n", f"- date: {format_date(item['date'])}"]
    meta = _metadata_lines(item)
    if meta:
        out.append(meta.rstrip("\n"))
    for message in item["messages"]:
        when = f" · {format_date(message['time'])}" if message.get("time") else ""
        out.append(f"\n## {message['role']}{when}\n\n{message['content'].strip()}")
    return "\n".join(out) + "\n"


def _metadata_lines(item: dict[str, Any]) -> str:
    if not item.get("metadata"):
        return ""
    return f"- metadata: `{json.dumps(item['metadata'], ensure_ascii=False, sort_keys=True)}`\n"


def write_markdown(memory: "Memory", app: str, folder: str | Path) -> int:
    """One file per session (and one notes.md for the facts) in ``folder``; returns files written."""
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InvalidInput(f"{folder} exists and is not an empty folder; choose a new one")
    folder.mkdir(parents=True, exist_ok=True)
    taken: set[str] = {"notes.md"}
    notes: list[str] = []
    written = 0
    for item in items(memory, app):
        if item["kind"] == "fact":
            notes.append(markdown_of(item))
            continue
        (folder / markdown_name(item["session_id"], taken)).write_text(markdown_of(item), encoding="utf-8")
        written += 1
    if notes:
        (folder / "notes.md").write_text("\n".join(notes), encoding="utf-8")
        written += 1
    return written
