"""Text as PostgreSQL stores it: everything but the NUL character, which SQLite keeps.

A PostgreSQL ``text`` value cannot hold U+0000, and diarist stores what it is given verbatim. A
string with a NUL (or one that starts with the marker) is stored as the marker U+FDD0 (a Unicode
noncharacter) followed by the string with ``\\`` doubled and each NUL written ``\\0``; every other
string is stored as it is. The mapping is one-to-one, so equality look-ups on encoded values
(ids, names) stay exact; only the order of the rare encoded values differs from Python's.
"""

from __future__ import annotations

import re

MARK = "\ufdd0"
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def to_db(value: str | None) -> str | None:
    if value is None or ("\x00" not in value and not value.startswith(MARK)):
        return value
    return MARK + value.replace("\\", "\\\\").replace("\x00", "\\0")


def from_db(value: str | None) -> str | None:
    if value is None or not value.startswith(MARK):
        return value
    return _ESCAPE.sub(lambda m: "\x00" if m.group(1) == "0" else m.group(1), value[1:])
