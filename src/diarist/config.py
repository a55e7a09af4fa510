"""Settings read from the environment. Only the CLI and server edges call these."""

from __future__ import annotations

import os
from pathlib import Path


def default_db_path() -> Path | str:
    """$DIARIST_DB (a path, or a URL such as postgresql://... kept as it is), else
    ~/.local/share/diarist/memory.sqlite (under $XDG_DATA_HOME if set)."""
    if os.environ.get("DIARIST_DB"):
        value = os.environ["DIARIST_DB"]
        return value if "://" in value else Path(value).expanduser()  # a Path folds "//" into "/"
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "diarist" / "memory.sqlite"


def lexical_fusion_enabled() -> bool:
    """DIARIST_LEXICAL_FUSION=0 turns the lexical channel off (vector-only ranking)."""
    return os.environ.get("DIARIST_LEXICAL_FUSION", "1").strip().lower() not in ("0", "false", "no", "off")
