"""A stored note shown as a note: its title, its front matter as fields, its body as text.

A Markdown note is stored as a session of ``user`` messages (importers/markdown.py: the front
matter block first, then one message per section), which is how it is searched; shown that way it
reads as a chat with nobody. ``diarist show`` and the inspector show it by this module's rules:

- the title: the front matter's ``title``, else the file name without its suffix (``Hit.title``'s
  rule), never a section heading;
- the fields: the front matter's keys and values, in the note's order;
- the body: the sections joined as written, without the front matter block (the first message
  whenever the metadata holds ``front_matter``: the importer puts it first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class NoteView:
    title: str
    path: str | None
    date: str | None
    fields: list[tuple[str, Any]]
    body: str


def is_note(item: dict[str, Any]) -> bool:
    """A session the Markdown importer wrote (a note, a text file)."""
    return item.get("kind") == "session" and (item.get("metadata") or {}).get("source") == "markdown"


def note_title(metadata: dict[str, Any]) -> str | None:
    """The front matter's title, else the file name without its suffix, else the stored title."""
    front = metadata.get("front_matter")
    if isinstance(front, dict) and isinstance(front.get("title"), str) and front["title"].strip():
        return front["title"].strip()
    path = metadata.get("path")
    if isinstance(path, str) and path.strip():
        name = path.replace("\\", "/").rsplit("/", 1)[-1]
        return name.rsplit(".", 1)[0] if "." in name[1:] else name
    value = metadata.get("title")
    return value if isinstance(value, str) and value.strip() else None


def note_view(item: dict[str, Any]) -> NoteView:
    metadata = item.get("metadata") or {}
    front = metadata.get("front_matter")
    messages = [m["content"] for m in item.get("messages") or []]
    if isinstance(front, dict) and messages:
        messages = messages[1:]  # the front matter block, shown as fields
    fields = list(front.items()) if isinstance(front, dict) else []
    return NoteView(note_title(metadata) or str(item.get("session_id")), metadata.get("path"), item.get("date"),
                    fields, "\n\n".join(m.strip() for m in messages))


def _when(date: str | None) -> str:
    if not date:
        return "undated"
    day, _, time = date.partition("T")
    return day if not time or time[:5] == "00:00" else f"{day} {time[:5]}"


def _value(value: Any) -> str:
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def note_markdown(item: dict[str, Any]) -> str:
    """``diarist show`` of a note: its title as the heading, its path, date and fields, its body."""
    view = note_view(item)
    lines = [f"# {view.title}", ""]
    lines += [f"- path: {view.path}"] if view.path else []
    lines.append(f"- date: {_when(view.date)}")
    lines += [f"- {key}: {_value(value)}" for key, value in view.fields]
    return "\n".join(lines) + (f"\n\n{view.body}\n" if view.body else "\n")
