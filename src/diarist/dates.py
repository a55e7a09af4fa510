"""Dates: every stored item keeps one, normalised to ISO 8601 when its format is known."""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timezone

from .errors import InvalidInput

_FORMATS = (
    "%Y/%m/%d (%a) %H:%M",  # LongMemEval: "2023/05/20 (Sat) 02:21"
    "%I:%M %p on %d %B, %Y",  # LoCoMo: "1:56 pm on 8 May, 2023"
    "%I:%M %p on %d %b, %Y",
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%d %B %Y",
    "%B %d, %Y",
)


#: Epoch numbers are seconds since 1970 within years 1 to 9999 (what a datetime can hold).
MIN_EPOCH = -62_135_596_800  # 0001-01-01T00:00:00Z
MAX_EPOCH = 253_402_300_799  # 9999-12-31T23:59:59Z
MAX_DATE_CHARS = 100


def _shown(value: object) -> str:
    try:
        if isinstance(value, int) and value.bit_length() > 200:
            return f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
        text = repr(value)
    except Exception:
        return f"<a {type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def _from_epoch(value: int | float) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput(f"date {value!r} is not a number of seconds since 1970")
    if not MIN_EPOCH <= value <= MAX_EPOCH:
        hint = " (milliseconds? give seconds since 1970)" if MAX_EPOCH < value <= MAX_EPOCH * 1000 else ""
        raise InvalidInput(f"date {_shown(value)} is out of range: seconds since 1970 must give a year 1 to 9999{hint}")
    try:
        return datetime.fromtimestamp(value, tz=timezone.utc).isoformat()
    except (OverflowError, OSError, ValueError) as exc:
        raise InvalidInput(f"date {_shown(value)} is out of range ({exc})") from None


def normalise_date(value: str | int | float | datetime | date | None) -> str | None:
    """Return an ISO 8601 string, or raise InvalidInput naming the value that did not parse.

    Accepted: None or "" (no date), a datetime or date, seconds since 1970 (int or float, years
    1 to 9999), or a string in ISO 8601 or one of the formats of ``_FORMATS``."""
    if value is None or (isinstance(value, str) and value == ""):
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day).isoformat()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _from_epoch(value)
    if not isinstance(value, str):
        raise InvalidInput(f"date {_shown(value)} is {type(value).__name__}, not a string")
    if len(value) > MAX_DATE_CHARS:
        raise InvalidInput(f"date {_shown(value)} is {len(value):,} characters: not a date")
    text = re.sub(r"\s+", " ", value.strip())
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).isoformat()
    except (ValueError, OverflowError, UnicodeError):
        pass
    for fmt in _FORMATS:
        try:
            return datetime.strptime(text, fmt).isoformat()
        except (ValueError, OverflowError, UnicodeError):
            continue
    raise InvalidInput(f"date {_shown(value)} is not in a known format (use ISO 8601, e.g. 2024-05-01T14:30)")


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
