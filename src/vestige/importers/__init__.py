"""Importers: the exports people have, read into sessions. One module per format, behind the
``Importer`` interface (``base.py``), chosen by detection or by name (``--format``).

``read_sessions(path)`` takes a file, ``"-"`` (standard input) or a folder (walked in sorted
order, hidden files and folders skipped, each file of a supported kind read by detection) and
returns ``(format name, sessions)``. Nothing is validated or stored here: the caller checks every
session first (``vestige ingest`` does, before storing any).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InvalidInput
from ..write.validate import FactInput, SessionInput
from . import chatgpt, claude_ai, claude_code, locomo, longmemeval, markdown, openai, sessions
from .base import STDIN, Importer, Source, shape_error

#: Detection order: the most specific shapes first; vestige's own sessions after the formats
#: that also carry "messages"; Markdown last (it reads any text).
IMPORTERS: dict[str, Importer] = {
    imp.name: imp
    for imp in (
        longmemeval.IMPORTER,
        locomo.IMPORTER,
        chatgpt.IMPORTER,
        claude_ai.IMPORTER,
        claude_code.IMPORTER,
        openai.IMPORTER,
        sessions.IMPORTER,
        markdown.IMPORTER,
    )
}
FORMATS: tuple[str, ...] = tuple(IMPORTERS)

__all__ = ["FORMATS", "IMPORTERS", "Imported", "Importer", "Source", "detect", "read_all", "read_sessions"]


@dataclass
class Imported:
    """What a path held: the format(s), the sessions, and for each session where it came from
    (``FILE record 3``), for error messages; ``skipped`` names the files of a folder that are in
    no format vestige reads (or empty), each with why."""

    format: str
    sessions: list[SessionInput] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    facts: list[FactInput] = field(default_factory=list)  # records of kind "fact" (vestige's export)


def detect(source: Source) -> Importer:
    """The first importer whose ``detect`` says yes, or InvalidInput naming the file, every format
    tried and why each did not match (the JSON error itself when the text looks like broken JSON)."""
    if source.records == []:
        raise InvalidInput(f"{source.name}: the file holds no records")
    reasons: dict[str, list[str]] = {}  # why -> the formats that said so, in detection order
    for imp in IMPORTERS.values():
        verdict = imp.detect(source)
        if verdict is True:
            return imp
        reasons.setdefault(verdict or "does not match", []).append(imp.name)
    if source.json_error is not None and source.looks_like_json():
        raise source.json_error
    tried = "; ".join(f"{', '.join(names)}: {why}" for why, names in reasons.items())
    raise InvalidInput(
        f"{source.name}: not a format vestige reads (tried {tried}); "
        f"name one with --format ({', '.join(FORMATS)})"
    )


def _choose(source: Source, format: str | None) -> Importer:
    if format is None:
        return detect(source)
    if format not in IMPORTERS:
        raise InvalidInput(f"unknown format {format!r} (expected one of {', '.join(FORMATS)})")
    imp = IMPORTERS[format]
    verdict = imp.detect(source, forced=True)
    if verdict is not True:
        if source.json_error is not None and source.looks_like_json():
            raise source.json_error
        raise InvalidInput(
            f"{source.name} does not match --format {imp.name} ({imp.title}): {verdict or 'a different shape'}"
        )
    return imp


def _read(source: Source, imp: Importer, limit: int | None) -> list[SessionInput]:
    try:
        return list(imp.read(source, limit))
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        # a file that passed detection but breaks the format's shape further in
        raise InvalidInput(f"{source.name}: not valid {imp.name} input ({shape_error(exc)})") from None


def _folder_files(folder: Path, suffixes: tuple[str, ...]) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for filename in filenames:
            if filename.startswith("."):
                continue
            path = Path(dirpath, filename)
            if Source(path).suffix in suffixes:
                found.append(path)
    return sorted(found, key=lambda p: p.relative_to(folder).parts)


def read_all(path: str | Path, format: str | None = None, limit: int | None = None) -> Imported:
    """Every session of a file, standard input (``"-"``) or folder, with where each came from.

    ``format`` forces one importer (a name of ``FORMATS``); ``limit`` reads only the first N
    top-level records (sessions, conversations, questions) of each file. In a folder, a file in
    no known format (``user.json`` beside ``conversations.json``) or an empty one is skipped and
    named in ``skipped``; a file that is in a format but breaks it is an error."""
    if format is not None and format not in IMPORTERS:
        raise InvalidInput(f"unknown format {format!r} (expected one of {', '.join(FORMATS)})")
    if str(path) != STDIN and Path(path).is_dir():
        folder = Path(path)
        suffixes = IMPORTERS[format].suffixes if format else tuple({s for i in IMPORTERS.values() for s in i.suffixes})
        out = Imported("")
        names: list[str] = []
        for file in _folder_files(folder, suffixes):
            source = Source(file, root=folder)
            if not source.text.strip():
                out.skipped.append(f"{file}: file is empty")
                continue
            try:
                imp = _choose(source, format)
            except InvalidInput:
                if source.json_error is not None and source.looks_like_json():
                    raise
                named = f"--format {format}" if format else "a format vestige reads"
                out.skipped.append(f"{file}: not {named}")
                continue
            _collect(out, source, imp, limit)
            if imp.name not in names:
                names.append(imp.name)
        if not names:
            kinds = ", ".join(sorted(suffixes))
            detail = ""
            if out.skipped:
                more = f" and {len(out.skipped) - 1} more" if len(out.skipped) > 1 else ""
                detail = f"; skipped {out.skipped[0]}{more}"
            raise InvalidInput(f"{folder}: no file vestige can read in this folder ({kinds}){detail}")
        out.format = "+".join(names)
        return out
    source = Source(path)
    if not source.text.strip():
        raise InvalidInput(f"{source.name}: file is empty")
    imp = _choose(source, format)
    out = Imported(imp.name)
    _collect(out, source, imp, limit)
    return out


def _collect(out: Imported, source: Source, imp: Importer, limit: int | None) -> None:
    for n, found in enumerate(_read(source, imp, limit), start=1):
        if isinstance(found, FactInput):
            out.facts.append(found)
            continue
        out.sessions.append(found)
        out.where.append(f"{source.name} {imp.unit} {n}")


def read_sessions(
    path: str | Path, format: str | None = None, limit: int | None = None
) -> tuple[str, list[SessionInput]]:
    """(format name, sessions) of a file, ``"-"`` or folder; see ``read_all``."""
    imported = read_all(path, format, limit)
    return imported.format, imported.sessions
