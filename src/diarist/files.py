"""What a path diarist opens is, and reading one without being led astray.

A database path that is a device, a FIFO or a folder made SQLite fail with an unrelated message
(``--db /dev/zero``: "cannot rollback - no transaction is active"), and a graph file swapped for
a FIFO or a link to ``/dev/zero`` hung a search or read until memory ran out. Each is checked
with one ``stat`` before it is opened.

A file read from a folder (an import, ``diarist sync``, an Obsidian vault's settings) is opened
once (``open_regular``) and checked on the open descriptor: a regular file, and, inside a
folder, the very file its path names inside it, so a link swapped between a check and the open
cannot lead the read outside; a FIFO never blocks the open (``O_NONBLOCK``). ``read_bounded``
then reads at most a bound.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import InvalidInput

_KINDS = {stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device", stat.S_IFIFO: "a FIFO",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder", stat.S_IFREG: "a regular file"}
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_READ_BYTES = 1024 * 1024


def kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is, following links ("a FIFO", "a folder", ...); None when nothing is there."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def not_regular(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists and is not a regular file (a link to one is one); else None."""
    found = kind(path)
    return None if found in (None, "a regular file") else found


def too_big(name: str, max_bytes: int, gz: bool = False) -> InvalidInput:
    what = "decompresses to" if gz else "holds"
    return InvalidInput(f"{name}: {what} more than {max_bytes:,} bytes, the bound of one file; "
                        "raise it with --max-bytes if the file is meant")


def inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether ``path``, its links followed, is ``root`` or below it."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def open_regular(path: Path, root: Path | None = None) -> int:
    """A read-only descriptor of ``path``, opened once: InvalidInput unless what was opened is a
    regular file and, with ``root``, the file the path names inside ``root`` (its links followed
    only there), checked on the descriptor itself."""
    try:
        before = os.stat(path)  # a device is named, never opened
    except FileNotFoundError:
        if os.path.islink(path):
            raise InvalidInput(f"{path}: a link to a file that does not exist") from None
        raise InvalidInput(f"{path}: no such file") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if not stat.S_ISREG(before.st_mode):
        raise InvalidInput(f"{path}: {_KINDS.get(stat.S_IFMT(before.st_mode), 'not a regular file')}, not a file; "
                           "diarist reads regular files only")
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise InvalidInput(f"{path}: not a regular file; diarist reads regular files only")
        if root is not None:
            _check_opened_inside(path, root, opened)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_opened_inside(path: Path, root: Path, opened: os.stat_result) -> None:
    """The descriptor's file is the one ``path`` resolves to inside ``root`` now: a link swapped
    to a file outside and back around the open leaves a descriptor of another file."""
    real = os.path.realpath(path)
    if not inside(real, root):
        raise InvalidInput(f"{path}: a link to {real}, outside the folder imported; not read")
    try:
        now = os.stat(real)
    except OSError:
        now = None
    if now is None or (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
        raise InvalidInput(f"{path}: the file opened is not the one inside the folder (a link changed as it was "
                           "opened), so it may be outside the folder imported; not read")


def read_bounded(path: Path, max_bytes: int, root: Path | None = None) -> bytes:
    """The bytes of a regular file (``open_regular``), at most ``max_bytes`` (InvalidInput past it)."""
    fd = open_regular(path, root)
    with os.fdopen(fd, "rb") as handle:
        parts, total = [], 0
        while chunk := handle.read(min(_READ_BYTES, max_bytes + 1 - total)):
            parts.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise too_big(str(path), max_bytes)
    return b"".join(parts)
