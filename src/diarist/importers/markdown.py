"""Markdown and text notes (``.md``, ``.markdown``, ``.txt``; a folder of them, an Obsidian vault).

What a note becomes: one session, id its path inside the imported folder (its file name when a
single file is given; a content hash from standard input), cut at its headings into messages:
each ``#`` to ``######`` heading outside a fenced code block starts a message holding the
heading line and the text under it (the text before the first heading is a message of its own; a
heading with nothing under it before the next one is joined to it), so chunks follow the
note's sections. Every message has the role ``user``: a note is its author's own words, and the
default index plan gives user words a vector as well as BM25.

The date is the first of the YAML front matter's ``date``, ``created``, ``start``, ``published``,
``clipped`` (``DATE_KEYS``, in that order: when the note's subject happened or was written before
when it was filed: a trip note's ``start``, an article's ``published`` before the day it was
``clipped``) that parses as a date, else the file's modification time (now, from standard input); a
front matter date that does not parse (a template's ``{{date}}``) counts as none, and stays in the
metadata. The title is the front matter's ``title:``, else the file name without its suffix (its
name in Obsidian), never a section heading; none from standard input. Only simple front matter
lines are read (no YAML library): ``key: value``, and ``key:`` followed by ``- item`` lines (a
list); they are kept as metadata (``front_matter``), with ``{"source": "markdown", "path",
"title"}``. The front matter block is also the note's first message, its lines as written
(``servings: 8``), so it is searched like the rest; a note with only front matter is a memory of
it. A note with no text at all is named as skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..write.validate import SessionInput
from .base import JSON_SUFFIXES, TEXT_SUFFIXES, Source, iso_date, message

HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(\S.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
FRONT_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$")
DATE_KEYS = ("date", "created", "start", "published", "clipped")
LIST_ITEM = re.compile(r"^\s*-\s+(.*?)\s*$")


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """(simple ``key: value`` pairs of a leading ``---`` block, the rest of the text)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        return {}, text
    front: dict[str, str | list[str]] = {}
    listing: str | None = None  # the key whose "- item" lines follow
    for line in lines[1:end]:
        if listing is not None and (item := LIST_ITEM.match(line)) and item.group(1):
            items = front.setdefault(listing, [])
            if isinstance(items, list):
                items.append(_unquoted(item.group(1)))
            continue
        listing = None
        if m := FRONT_KEY.match(line):
            if m.group(2).strip():
                front[m.group(1)] = _unquoted(m.group(2).strip())
            else:
                listing = m.group(1)
    return front, "\n".join(lines[end + 1 :])


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def front_matter_date(front: dict[str, Any]) -> str | None:
    """The first of ``DATE_KEYS`` whose value parses as a date, as written."""
    return next((v for k in DATE_KEYS if isinstance(v := front.get(k), str) and v and iso_date(v)), None)


def front_matter_title(front: dict[str, Any]) -> str | None:
    value = front.get("title")
    return value.strip() if isinstance(value, str) and value.strip() else None


def front_matter_text(text: str) -> str:
    """The front matter block's lines as written (``key: value``, list items), without its
    ``---`` fences and blank lines: the note's first message."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return ""
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            return "\n".join(line.rstrip() for line in lines[1:end] if line.strip())
    return ""


def sections(body: str) -> list[str]:
    """The note cut before each heading outside a fenced code block; empty parts dropped and a
    heading with nothing under it joined to the section after it."""
    parts: list[list[str]] = [[]]
    fence: str | None = None
    for line in body.splitlines():
        if m := FENCE.match(line):
            mark = m.group(1)[0] * 3
            fence = None if fence == mark else (fence or mark)
        elif fence is None and HEADING.match(line) and any(l.strip() for l in parts[-1]):
            parts.append([])
        parts[-1].append(line)
    texts = ["\n".join(p).strip() for p in parts]
    texts = [t for t in texts if t]
    merged: list[str] = []
    for text in texts:
        if merged and HEADING.match(merged[-1]) and "\n" not in merged[-1]:
            merged[-1] = f"{merged[-1]}\n\n{text}"
        else:
            merged.append(text)
    return merged


class MarkdownImporter:
    name = "markdown"
    title = "Markdown or text notes, .md .markdown .txt"
    suffixes = TEXT_SUFFIXES
    unit = "note"

    def detect(self, source: Source, *, forced: bool = False) -> bool | str:
        if forced or source.suffix in TEXT_SUFFIXES:
            return True
        if source.suffix in JSON_SUFFIXES:
            return f"a {source.suffix} file, not a note"
        if source.records is not None:
            return "the text is JSON"
        if source.looks_like_json():
            return "the text starts like JSON but does not parse"
        return True  # text of another kind (standard input, a file without a known suffix)

    def read(self, source: Source, limit: int | None = None) -> Iterator[SessionInput]:
        front, body = split_front_matter(source.text)
        parts = sections(body)
        block = front_matter_text(source.text)
        if block:  # searchable: "how many servings?" is answered by "servings: 8"
            parts.insert(0, block)
        if not parts:
            source.drop(source.name, "a note with no text (an empty front matter, no body)")
            return
        date: Any = front_matter_date(front)
        if date is None and source.path is not None:
            date = source.path.stat().st_mtime
        title = front_matter_title(front) or source.stem or None
        metadata: dict[str, Any] = {"source": "markdown"}
        if source.relative:
            metadata["path"] = source.relative
        if title:
            metadata["title"] = title
        if front:
            metadata["front_matter"] = front
        yield SessionInput([message("user", p) for p in parts], source.relative, date, metadata)


IMPORTER = MarkdownImporter()
