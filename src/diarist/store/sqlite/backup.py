"""Backups and restores of a SQLite store, with SQLite's online backup API.

``backup_database`` copies a live database into a new file: it reads one snapshot through a
connection of its own, so writers of this and other processes carry on (WAL mode) and the
copy holds whole transactions only. The copy is written to a temporary file in the
destination's folder, checked with ``PRAGMA integrity_check``, made self-contained (rollback
journal mode: no ``-wal`` beside it) and synced; only then does it get the destination's name,
by a hard link (which refuses an existing name) or a rename. A backup that fails half-way never
appears under that name.

``restore_database`` is file-level and SQLite-only (the CLI's ``diarist restore``). It copies
the backup into a temporary file beside the target the same way, and verifies that copy: a
diarist database (``open_store(..., create=False)``: not SQLite, another program's database and
a newer schema are refused; an older schema is migrated), ``integrity_check`` ok. Every app of
the copy gets a new epoch, so that no process's cache of the target (keyed on the epoch, see
``AppVersion``) is taken for the restored data. Then:

- no database at the target: the verified copy is renamed into place (atomic);
- an existing database (only with ``force``): the copy is written *into* it with the backup
  API, under its write lock and through its own write-ahead log, so that connections that
  hold it open (a running server) see the restored data as one commit and the ``-wal`` and
  ``-shm`` stay consistent. A TRUNCATE checkpoint then drops the replaced content from the log.
  A target SQLite cannot open at all (its header is not SQLite's) is replaced by rename.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...errors import DatabaseNotFound, NotADatabase, StoreError, DiaristError
from ...files import not_regular
from .connection import Connection, check_sidecars, translate, unknown_schema_objects

BUSY_TIMEOUT_S = 30.0
SIDE_FILES = ("-wal", "-shm", "-journal")


@dataclass(frozen=True)
class RestoreReport:
    target: str
    bytes: int
    apps: list[str]
    method: str  # "renamed into place" or "backup API into the existing database"


# -- helpers ------------------------------------------------------------------------------------


def _connect(path: str | Path) -> sqlite3.Connection:
    return sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_S, check_same_thread=False)


def _temp_beside(path: Path) -> Path:
    """An empty temporary file in ``path``'s folder (so a rename stays on one file system)."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(name)


def _remove(path: Path) -> None:
    for suffix in ("", *SIDE_FILES):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _same_mode(model: str | Path, path: Path) -> None:
    """The permissions of ``model`` on ``path`` (a temporary file is created private)."""
    with contextlib.suppress(OSError):
        os.chmod(path, stat.S_IMODE(os.stat(model).st_mode))


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a folder
        _fsync(path)


def integrity(conn: sqlite3.Connection) -> str:
    """``PRAGMA integrity_check``: "ok", or its first complaint."""
    rows = conn.execute("PRAGMA integrity_check").fetchall()
    return "ok" if rows == [("ok",)] else "; ".join(str(r[0]) for r in rows[:3])


def _copy(source: sqlite3.Connection, tmp: Path, named: str) -> None:
    """The whole of ``source`` (one snapshot, one step) into the file ``tmp``, checked, in
    rollback journal mode (self-contained), synced. ``named`` names the source in errors."""
    dest = _connect(tmp)
    try:
        source.backup(dest)  # pages=-1: one step, one read transaction on the source
        dest.execute("PRAGMA journal_mode = DELETE")
        verdict = integrity(dest)
        if verdict != "ok":
            raise StoreError(f"the copy of {named} fails its integrity check ({verdict}); nothing was written")
    finally:
        dest.close()
    leftovers = [s for s in ("-wal", "-journal") if Path(f"{tmp}{s}").exists()]
    if leftovers:  # the copy would be incomplete without them under another name
        raise StoreError(f"the copy of {named} left {', '.join(leftovers)} files beside it; nothing was written")
    _fsync(tmp)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def _place(tmp: Path, dest: Path, overwrite: bool) -> None:
    """Give the finished copy its name: never over an existing file unless ``overwrite``."""
    if overwrite:
        os.replace(tmp, dest)
    else:
        try:
            os.link(tmp, dest)  # atomic, and refuses an existing name
        except FileExistsError:
            raise StoreError(f"{dest} already exists; pass --force to replace it") from None
        except OSError:  # a file system without hard links
            if dest.exists():
                raise StoreError(f"{dest} already exists; pass --force to replace it") from None
            os.replace(tmp, dest)
        else:
            os.unlink(tmp)
    _fsync_dir(dest.parent)


# -- backup -----------------------------------------------------------------------------------------


def check_backup_dest(source_path: str, dest: str | os.PathLike[str], overwrite: bool) -> Path:
    """The destination of a backup, refused when it is the database itself, a folder, a live
    database (its ``-wal`` beside it), or an existing file without ``overwrite``."""
    path = Path(dest).expanduser()
    if path.is_dir():
        raise StoreError(f"{path} is a folder; give the backup's file name")
    if (what := not_regular(path)) is not None:  # --force over /dev/null renamed the copy onto the device
        raise StoreError(f"{path} is {what}; a backup is written to a regular file")
    if source_path != ":memory:" and _same_file(path, Path(source_path)):
        raise StoreError(f"{path} is the database itself; back it up to another file")
    if Path(f"{path}-wal").exists():
        raise StoreError(f"{path} is a database in use ({path}-wal exists); not overwritten "
                         "(to put a backup in place of a database use `diarist restore`)")
    if path.exists() and not overwrite:
        raise StoreError(f"{path} already exists; pass --force to replace it")
    if not path.parent.is_dir():
        raise StoreError(f"cannot write {path}: no folder {path.parent}")
    return path


def backup_database(db: Connection, dest: str | os.PathLike[str], *, overwrite: bool = False) -> int:
    """Copy the store's database into ``dest`` (see the module doc); returns its size in bytes."""
    path = check_backup_dest(db.path, dest, overwrite)
    try:
        tmp = _temp_beside(path)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        if db.in_memory:
            with db.lock:  # the store's own connection is the only way to an in-memory database
                _copy(db.conn, tmp, db.path)
        else:
            source = _connect(db.path)  # a reader of its own: writers carry on meanwhile
            try:
                _copy(source, tmp, db.path)
            finally:
                source.close()
            _same_mode(db.path, tmp)
        size = tmp.stat().st_size
        _place(tmp, path, overwrite)
        return size
    except sqlite3.Error as exc:
        raise translate(exc, db.path) from None
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        _remove(tmp)


# -- restore ----------------------------------------------------------------------------------------


def _verified_copy(src: Path, tmp: Path) -> list[str]:
    """Copy the backup ``src`` into ``tmp`` and prove it is a sound diarist database; returns
    its apps. The backup itself is only read."""
    try:
        source = _connect(src)
        try:
            _copy(source, tmp, str(src))
        finally:
            source.close()
        check = _connect(tmp)
        try:
            version = check.execute("PRAGMA user_version").fetchone()[0]
            tables = check.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
        finally:
            check.close()
    except sqlite3.Error as exc:
        raise translate(exc, str(src)) from None
    if version == 0:
        what = "a SQLite database of another program" if tables else "an empty SQLite file"
        raise NotADatabase(f"{src} is not a diarist database ({what})")
    try:
        db = Connection(str(tmp), create=False, busy_timeout_ms=30_000)  # refuses a newer schema, migrates an older one
    except DiaristError as exc:  # name the backup, not the temporary copy
        raise type(exc)(str(exc).replace(str(tmp), str(src))) from None
    try:
        apps = [r[0] for r in db.read("SELECT name FROM apps ORDER BY name")]
    finally:
        db.close()
    conn = _connect(tmp)
    try:
        unknown = unknown_schema_objects(conn)
        if unknown:  # a trigger could copy every deleted message elsewhere: nothing unknown comes in
            raise StoreError(f"{src} holds schema objects diarist did not create: {', '.join(unknown)}")
        conn.execute("PRAGMA journal_mode = DELETE")
        # A new epoch per app: caches of the target's apps in running processes are rebuilt.
        conn.execute("UPDATE apps SET epoch = lower(hex(randomblob(16)))")
        verdict = integrity(conn)
    except sqlite3.Error as exc:
        raise translate(exc, str(src)) from None
    finally:
        conn.close()
    if verdict != "ok":
        raise StoreError(f"{src} fails its integrity check ({verdict})")
    _fsync(tmp)
    return apps


def _into_existing(tmp: Path, target: Path) -> bool:
    """Write the copy into the existing database with the backup API; False when SQLite cannot
    open the target at all (then it is replaced by rename)."""
    source = _connect(tmp)
    dest = _connect(target)
    try:
        try:
            dest.execute("PRAGMA user_version").fetchone()
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc).lower():
                return False
            raise
        _match_page_size(source, dest.execute("PRAGMA page_size").fetchone()[0])
        source.backup(dest)  # under the target's write lock, through its journal or WAL
        if dest.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            # Best effort, without waiting long behind readers: the replaced pages leave the log.
            dest.execute("PRAGMA busy_timeout = 1000")
            dest.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        verdict = integrity(dest)
        if verdict != "ok":
            raise StoreError(f"{target} fails its integrity check after the restore ({verdict})")
        return True
    finally:
        dest.close()
        source.close()


def _match_page_size(copy: sqlite3.Connection, page_size: int) -> None:
    """Rewrite the copy (a private file in rollback journal mode) with ``page_size``: the
    backup API copies pages as they are, and a target in WAL mode cannot change its page size
    (files of earlier versions have 4 KiB pages, new ones 16 KiB). VACUUM keeps every row and
    id (every table that others refer to has an INTEGER PRIMARY KEY)."""
    if copy.execute("PRAGMA page_size").fetchone()[0] != page_size:
        copy.execute(f"PRAGMA page_size = {int(page_size)}")
        copy.execute("VACUUM")


def restore_database(src: str | os.PathLike[str], target: str | os.PathLike[str], *,
                     force: bool = False) -> RestoreReport:
    """Put the backup ``src`` in place of the database ``target`` (see the module doc)."""
    src_path, path = Path(src).expanduser(), Path(target).expanduser()
    if not src_path.exists():
        raise DatabaseNotFound(f"no backup at {src_path}; nothing was restored")
    if src_path.is_dir():
        raise NotADatabase(f"{src_path} is a folder, not a diarist database")
    if path.is_dir():
        raise StoreError(f"{path} is a folder; give the database's file name")
    for named, what in ((src_path, not_regular(src_path)), (path, not_regular(path))):
        if what is not None:  # a FIFO hung the copy; --force renamed the restored file onto a device
            raise StoreError(f"{named} is {what}, not a diarist database (a regular file); nothing was restored")
    check_sidecars(path)
    if _same_file(src_path, path):
        raise StoreError(f"{src_path} is the database itself; nothing to restore")
    exists = path.exists() or Path(f"{path}-wal").exists()
    if exists and not force:
        raise StoreError(f"{path} already exists; pass --force to replace it with {src_path}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _temp_beside(path)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        try:
            apps = _verified_copy(src_path, tmp)
        except DiaristError as exc:  # one wording for every refusal of the backup
            text = str(exc).replace("; restore it from a backup", "").replace("; nothing was restored", "")
            raise type(exc)(f"{text}; nothing was restored") from None
        _same_mode(src_path, tmp)
        size = tmp.stat().st_size
        if path.exists() and _into_existing(tmp, path):
            method = "backup API into the existing database"
        else:
            for suffix in SIDE_FILES:  # a stale log of a database that is gone or unreadable
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{path}{suffix}")
            _place(tmp, path, overwrite=force)
            method = "renamed into place"
        return RestoreReport(str(path), size, apps, method)
    except sqlite3.Error as exc:
        raise translate(exc, str(path)) from None
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        _remove(tmp)
