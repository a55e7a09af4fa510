"""Where the hooks keep their state, under the data folder (``$XDG_DATA_HOME/diarist``, else
``~/.local/share/diarist``): the resident process's socket, the API key each hook uses, what
``hooks install`` changed, and the log that takes every error a hook meets (the agent sees none).
Standard library only: the hook imports this on every prompt, and pathlib only where a ``Path``
is asked for (its import was a fifth of the hook's process under load): the hook's path to the
resident process reads the ``*_name`` functions, plain strings."""

from __future__ import annotations

import hashlib
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

#: A Unix socket's path must fit in sockaddr_un (108 bytes on Linux, 104 on macOS).
MAX_SOCKET_PATH = 100


def _path(name: str) -> Path:
    from pathlib import Path

    return Path(name)


def data_dir_name() -> str:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "diarist")


def data_dir() -> Path:
    return _path(data_dir_name())


def db_location(db: str | None) -> str:
    """The database a hook reads: --db, else $DIARIST_DB, else the default file (as the CLI)."""
    if db:
        return db if "://" in db else os.path.realpath(os.path.expanduser(db))
    value = os.environ.get("DIARIST_DB")
    if value:
        return value if "://" in value else os.path.realpath(os.path.expanduser(value))
    return os.path.join(data_dir_name(), "memory.sqlite")


def _tag(location: str) -> str:
    return hashlib.sha256(location.encode()).hexdigest()[:16]


def private_dir(path: Path) -> Path:
    """``path`` created if missing, readable by this user only."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_uid != os.getuid():  # a shared folder (/tmp) someone else made first
        raise PermissionError(f"{path} belongs to another user")
    return path


def socket_name(location: str) -> str:
    """The resident process's socket for the database at ``location``: one per database, shared
    by every hook and agent of this user. Under the data folder, or, when that path is too long
    for a socket, under the temporary folder (a private one per user)."""
    name = f"{_tag(location)}.sock"
    path = os.path.join(data_dir_name(), "run", name)
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", f"diarist-{os.getuid()}", name)


def socket_path(location: str) -> Path:
    return _path(socket_name(location))


def keys_file_name() -> str:
    """The API key each (database, app) pair's hooks present to the resident process (mode 0600)."""
    return os.path.join(data_dir_name(), "agents", "keys.json")


def keys_file() -> Path:
    return _path(keys_file_name())


def records_dir() -> Path:
    """What each ``hooks install`` changed in which file, for ``hooks uninstall`` to undo it."""
    return data_dir() / "agents" / "installed"


def log_file() -> Path:
    return data_dir() / "logs" / "hooks.log"


def key_id(location: str, app: str) -> str:
    return f"{_tag(location)}:{app}"
