"""What a path the store opens is, when it is not what diarist writes there.

A database path that is a device, a FIFO or a folder made SQLite fail with an unrelated message
(``--db /dev/zero``: "cannot rollback - no transaction is active"), and a graph file swapped for
a FIFO or a link to ``/dev/zero`` hung a search or read until memory ran out. Each is checked
with one ``stat`` before it is opened.
"""

from __future__ import annotations

import os
import stat

_KINDS = {stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device", stat.S_IFIFO: "a FIFO",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder", stat.S_IFREG: "a regular file"}


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
