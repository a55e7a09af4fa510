"""Walking an imported folder: which files are read, and for every other one, why not.

Read: files whose kind a format reads (``.json``, ``.md``...; ``.gz`` looked through), in
sorted order of their path inside the folder. Every other entry is named with its reason, so
nothing is left out without a word: hidden files and folders (``.obsidian``, ``.git``: not
entered), links to folders (not followed), files of other kinds (``.png``), files matching an
``--exclude`` glob, and an Obsidian vault's templates folder (the ``folder`` of
``.obsidian/templates.json``, else the Templater plugin's ``templates_folder``, else
``Templates/`` at the top): templates are blanks, not memories.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from pathlib import Path

from ..errors import InvalidInput
from ..files import read_bounded

#: Why a file of a folder was refused before reading its text (reading.py's messages): such a
#: file is skipped and named, where an error in a file's content stops the import.
REFUSED_FILE = re.compile(r"not a file; diarist reads|not a regular file|outside the folder imported|"
                          r"bytes, the bound of one file|a link to a file that does not exist|cannot read the file|"
                          r"binary data, not text")

DEFAULT_TEMPLATES = "Templates"
#: An Obsidian settings file read for the templates folder is at most this long.
SETTINGS_BYTES = 1024 * 1024


def templates_folder(folder: Path) -> str | None:
    """The templates folder of an Obsidian vault, relative to it (``Templates`` when the vault
    names none; None for a folder that is not a vault and has no ``Templates/``)."""
    config = folder / ".obsidian"
    for file, key in ((config / "templates.json", "folder"),
                      (config / "plugins" / "templater-obsidian" / "data.json", "templates_folder")):
        try:  # bounded, never blocking: a link to /dev/zero or a FIFO there is no setting
            value = json.loads(read_bounded(file, SETTINGS_BYTES, folder).decode("utf-8")).get(key)
        except (InvalidInput, OSError, ValueError, AttributeError):
            continue
        if isinstance(value, str) and value.strip("/ "):
            return value.strip("/ ")
    return DEFAULT_TEMPLATES if (folder / DEFAULT_TEMPLATES).is_dir() else None


def _excluded(relative: str, patterns: tuple[str, ...]) -> str | None:
    """The first glob that matches the path (or one of its folders), or None."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        pattern = pattern.strip("/")
        if any(fnmatch.fnmatch(p, pattern) for p in prefixes) or fnmatch.fnmatch(parts[-1], pattern):
            return pattern
    return None


def suffix_of(name: str) -> str:
    """A file name's kind in lower case, ``.gz`` looked through (``a.jsonl.gz`` -> ``.jsonl``)."""
    suffixes = [s.lower() for s in Path(name).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def folder_files(folder: Path, suffixes: tuple[str, ...], exclude: tuple[str, ...] = (),
                 unreadable: list[tuple[str, str]] | None = None) -> tuple[list[Path], list[str]]:
    """(the files to read, in order; every other entry as ``PATH: why not read``). A folder that
    cannot be listed is named among them, or, given ``unreadable``, put there as (its path inside
    ``folder``, why) instead: ``diarist sync`` keeps the memories of what it cannot see."""
    templates = templates_folder(folder)
    found: list[Path] = []
    skipped: list[tuple[tuple[str, ...], str]] = []

    def cannot_list(exc: OSError) -> None:
        path = Path(exc.filename or folder)
        why = f"cannot read the folder ({exc.strerror or exc})"
        parts = path.relative_to(folder).parts if path != folder else ()
        if unreadable is not None:
            unreadable.append(("/".join(parts), why))
        else:
            skipped.append((parts, f"{path}: {why}, not entered"))

    for dirpath, dirnames, filenames in os.walk(folder, onerror=cannot_list):
        here = Path(dirpath)
        kept = []
        for name in sorted(dirnames):
            path = here / name
            relative = path.relative_to(folder).as_posix()
            if name.startswith("."):
                why = "hidden folder, not entered"
            elif path.is_symlink():
                why = "a link to a folder, not followed"
            elif templates is not None and relative == templates:
                why = "the vault's templates folder (templates are blanks, not notes), not entered"
            elif pattern := _excluded(relative, exclude):
                why = f"excluded by --exclude {pattern}"
            else:
                kept.append(name)
                continue
            skipped.append((path.relative_to(folder).parts, f"{path}: {why}"))
        dirnames[:] = kept
        for name in filenames:
            path = here / name
            relative = path.relative_to(folder).as_posix()
            kind = suffix_of(name)
            if name.startswith("."):
                why = "hidden file"
            elif kind not in suffixes:
                why = f"{f'a {kind} file' if kind else 'a file without a kind'}, not a kind diarist reads ({', '.join(sorted(suffixes))})"
            elif pattern := _excluded(relative, exclude):
                why = f"excluded by --exclude {pattern}"
            else:
                found.append(path)
                continue
            skipped.append((path.relative_to(folder).parts, f"{path}: {why}"))
    found.sort(key=lambda p: p.relative_to(folder).parts)
    return found, [line for _, line in sorted(skipped)]
