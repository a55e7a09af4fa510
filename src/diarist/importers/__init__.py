"""Importers: the exports people have, read into sessions. One module per format, behind the
``Importer`` interface (``base.py``), chosen by detection or by name (``--format``).

``read_sessions(path)`` takes a file, ``"-"`` (standard input) or a folder (walked in sorted
order, hidden files and folders skipped, each file of a supported kind read by detection) and
returns ``(format name, sessions)``. Nothing is validated or stored here: every front end
(``diarist ingest``, the inspector's upload, ``diarist sync``) hands what it read to the one
funnel, ``importers.load``, which checks every session before storing any.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..registry import Entries
from ..write.validate import FactInput, SessionInput
from . import chatgpt, claude_ai, claude_code, locomo, longmemeval, markdown, openai, sessions
from .base import STDIN, Importer, Source, shape_error
from .folder import REFUSED_FILE, folder_files
from .overlap import dedupe
from .reading import DEFAULT_MAX_BYTES

if TYPE_CHECKING:  # not imported: reading a file needs no numpy
    from ..store.base import Item

#: Importers by ``--format`` name (diarist.registry; docs/extending.md), in detection order:
#: ``IMPORTERS.register(name, importer, before="markdown")``. The most specific shapes first;
#: diarist's own sessions after the formats that also carry "messages"; Markdown last (it reads
#: any text).
IMPORTERS: Entries[Importer] = Entries("importer")
IMPORTERS.register("longmemeval", longmemeval.IMPORTER)
IMPORTERS.register("locomo", locomo.IMPORTER)
IMPORTERS.register("chatgpt", chatgpt.IMPORTER)
IMPORTERS.register("claude-ai", claude_ai.IMPORTER)
IMPORTERS.register("claude-code", claude_code.IMPORTER)
IMPORTERS.register("openai", openai.IMPORTER)
IMPORTERS.register("sessions", sessions.IMPORTER)
IMPORTERS.register("markdown", markdown.IMPORTER)
FORMATS: tuple[str, ...] = tuple(IMPORTERS)

__all__ = ["FORMATS", "IMPORTERS", "Imported", "Importer", "Source", "detect", "read_all", "read_sessions"]


@dataclass
class Imported:
    """What a path held: the format(s), the sessions, and for each session where it came from
    (``FILE record 3``), for error messages. Nothing read is dropped without a word: ``skipped``
    names every file of a folder not read, each with why (``PATH: reason``); ``superseded``
    every session met twice in one run whose other version was kept (``ID: reason``)."""

    format: str
    sessions: list[SessionInput] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    facts: list[FactInput] = field(default_factory=list)  # records of kind "fact" (diarist's export)
    files: int = 0  # files read
    superseded: list[str] = field(default_factory=list)
    files_of: list[str] = field(default_factory=list)  # per session: the file it came from
    kept_newer: list[str] = field(default_factory=list)  # sessions whose stored version is newer (newer.py)
    # Filled by importers.load.check_imported: each session and fact checked once, as it will be stored.
    items: list[Item] = field(default_factory=list)  # per session
    fact_items: list[Item] = field(default_factory=list)  # per fact

    def drop(self, indexes: set[int]) -> None:
        """Leave out the sessions at ``indexes``, with where each came from (and its item, once checked)."""
        for name in ("sessions", "where", "files_of", "items"):
            values = getattr(self, name)
            setattr(self, name, [v for i, v in enumerate(values) if i not in indexes])


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
        f"{source.name}: not a format diarist reads (tried {tried}); "
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


def read_all(path: str | Path, format: str | None = None, limit: int | None = None, *,
             max_bytes: int = DEFAULT_MAX_BYTES, exclude: tuple[str, ...] = ()) -> Imported:
    """Every session of a file, standard input (``"-"``) or folder, with where each came from.

    ``format`` forces one importer (a name of ``FORMATS``); ``limit`` reads only the first N
    top-level records (sessions, conversations, questions) of each file; ``max_bytes`` bounds
    what one file may hold (``importers.reading``). In a folder (``importers.folder``), a file not
    read is named in ``skipped`` with why: in no known format (``user.json`` beside
    ``conversations.json``), empty, a device, FIFO or link out of the folder, over the bound,
    hidden, excluded (``exclude`` globs, an Obsidian templates folder); a file that is in a format
    but breaks it is an error. A session met twice (two exports of one account) is kept once, its
    latest version (``dedupe``)."""
    if format is not None and format not in IMPORTERS:
        raise InvalidInput(f"unknown format {format!r} (expected one of {', '.join(FORMATS)})")
    if str(path) != STDIN and Path(path).is_dir():
        out = _read_folder(Path(path), format, limit, max_bytes, exclude)
    else:
        source = Source(path, max_bytes=max_bytes)
        if source.is_blank():
            raise InvalidInput(f"{source.name}: file is empty")
        imp = _choose(source, format)
        out = Imported(imp.name)
        _collect(out, source, imp, limit)
    dedupe(out)
    return out


def folder_suffixes(format: str | None) -> tuple[str, ...]:
    """The kinds of file read in a folder: those of ``format``, else of every importer."""
    return IMPORTERS[format].suffixes if format else tuple({s for i in IMPORTERS.values() for s in i.suffixes})


def _read_folder(folder: Path, format: str | None, limit: int | None, max_bytes: int,
                 exclude: tuple[str, ...]) -> Imported:
    suffixes = folder_suffixes(format)
    out = Imported("")
    names: list[str] = []
    files, out.skipped = folder_files(folder, suffixes, exclude)
    for file in files:
        name = read_folder_file(out, folder, file, format, limit, max_bytes)
        if name is not None and name not in names:
            names.append(name)
    if not names:
        kinds = ", ".join(sorted(suffixes))
        detail = ""
        if out.skipped:
            more = f" and {len(out.skipped) - 1} more" if len(out.skipped) > 1 else ""
            detail = f"; skipped {out.skipped[0]}{more}"
        raise InvalidInput(f"{folder}: no file diarist can read in this folder ({kinds}){detail}")
    out.format = "+".join(names)
    return out


def read_folder_file(out: Imported, folder: Path, file: Path, format: str | None, limit: int | None,
                     max_bytes: int, text: str | None = None) -> str | None:
    """Read one file of an imported folder into ``out``; the name of the format it was read
    as, or None when it was skipped (named in ``out.skipped``). ``diarist sync`` reads the
    files that changed with it, giving the ``text`` it read (the file is not opened again)."""
    source = Source(file, root=folder, max_bytes=max_bytes, text=text)
    try:
        blank = source.is_blank()
    except InvalidInput as exc:
        if not REFUSED_FILE.search(str(exc)):
            raise
        out.skipped.append(str(exc))  # a device, a FIFO, a link out, over the bound: named
        return None
    if blank:
        out.skipped.append(f"{file}: file is empty")
        return None
    try:
        imp = _choose(source, format)
    except InvalidInput:
        if source.json_error is not None and source.looks_like_json():
            raise
        named = f"--format {format}" if format else "a format diarist reads"
        out.skipped.append(f"{file}: not {named}")
        return None
    _collect(out, source, imp, limit)
    return imp.name


def _collect(out: Imported, source: Source, imp: Importer, limit: int | None) -> None:
    out.files += 1
    found_any = False
    for n, found in enumerate(_read(source, imp, limit), start=1):
        found_any = True
        if isinstance(found, FactInput):
            out.facts.append(found)
            continue
        out.sessions.append(found)
        out.where.append(f"{source.name} {imp.unit} {n}")
        out.files_of.append(source.name)
    out.skipped.extend(source.dropped)
    if not found_any and not source.dropped:
        out.skipped.append(f"{source.name}: read as {imp.name}, nothing to keep (no message with text)")


def read_sessions(
    path: str | Path, format: str | None = None, limit: int | None = None
) -> tuple[str, list[SessionInput]]:
    """(format name, sessions) of a file, ``"-"`` or folder; see ``read_all``."""
    imported = read_all(path, format, limit)
    return imported.format, imported.sessions
