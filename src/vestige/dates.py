"""Dates: every stored item keeps one, normalised to ISO 8601 when its format is known."""

from __future__ import annotations

import re
from datetime import datetime, timezone

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


def normalise_date(value: str | int | float | datetime | None) -> str | None:
    """Return an ISO 8601 string, or raise InvalidInput naming the value that did not parse."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=timezone.utc).isoformat()
    if not isinstance(value, str):
        raise InvalidInput(f"date {value!r} is {type(value).__name__}, not a string")
    text = re.sub(r"\s+", " ", value.strip())
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).isoformat()
    except ValueError:
        pass
    for fmt in _FORMATS:
        try:
            return datetime.strptime(text, fmt).isoformat()
        except ValueError:
            continue
    raise InvalidInput(f"date {value!r} is not in a known format (use ISO 8601, e.g. 2024-05-01T14:30)")


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
