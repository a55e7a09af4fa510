"""``diarist sync``: a folder kept in step with memory, file by file.

A folder (an Obsidian vault, ``~/.claude/projects``, a folder of exports) is walked as ingest
walks it (``importers.folder``). Each file read is recorded in the store (``Store.synced_files``:
its path inside the folder, the SHA-256 of its bytes, its size and modification time, and the
items it produced), so a later sync

- does not open a file whose size and modification time are as recorded, and does not parse or
  embed one whose bytes hash as recorded (a ``touch``);
- reads a new or changed file through the importers and stores its sessions (a session whose
  content did not change is not embedded again, ``Memory.add_sessions``), and deletes the items
  the file produced before and no longer does;
- deletes the items of a file that is gone (deleted, or now left out by ``exclude``) through
  ``Memory.delete`` (text, vectors, postings, the HNSW graph's copy, the write-ahead log: the
  forgetting guarantees hold), or keeps them with ``keep_deleted``. An item another recorded file still holds (two exports of one account) is
  not deleted with the first file.

A file that cannot be read or parsed is named in ``failed``: its memories stay as they were and
it is tried again by the next sync. Files left out by the walk, empty files and files in no
known format are named in ``skipped``, as ingest names them. An older export read after a newer
one leaves the stored, newer conversation (``importers.newer``).
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .errors import InvalidInput, NotFound
from .importers import IMPORTERS, Imported, folder_suffixes, read_folder_file
from .importers.folder import REFUSED_FILE, folder_files
from .importers.newer import keep_stored_newer
from .importers.overlap import dedupe
from .importers.reading import CHUNK_BYTES, DEFAULT_MAX_BYTES, check_readable
from .store.base import Store, SyncedFile
from .write.validate import check_app, check_fact, check_session, check_unique

#: Sessions embedded and stored per transaction.
BATCH = 64

Say = Callable[[str], None]


class Memory(Protocol):
    """What a sync uses of ``diarist.memory.Memory`` (named here, not imported: Memory.sync
    imports this module)."""

    store: Store

    def add_sessions(self, sessions: Any, *, app: str) -> Any: ...

    def add_facts(self, facts: Any, *, app: str) -> Any: ...

    def delete(self, item_id: str, *, app: str, kind: str | None = None) -> None: ...


@dataclass
class SyncReport:
    """What a sync did. File lists hold paths inside the folder; item lists hold ids."""

    root: str
    added: list[str] = field(default_factory=list)  # files new to the record
    changed: list[str] = field(default_factory=list)  # files whose bytes changed
    deleted: list[str] = field(default_factory=list)  # files gone: their memories deleted
    kept_deleted: list[str] = field(default_factory=list)  # files gone: memories kept (keep_deleted)
    unchanged: int = 0  # files not read (or read and found the same bytes)
    failed: list[str] = field(default_factory=list)  # "PATH: why": memories left as they were
    skipped: list[str] = field(default_factory=list)  # "PATH: why", as ingest names them
    superseded: list[str] = field(default_factory=list)  # one session in two files: the other kept
    kept_newer: list[str] = field(default_factory=list)  # stored version newer than the file's
    sessions_added: list[str] = field(default_factory=list)
    sessions_replaced: list[str] = field(default_factory=list)
    sessions_unchanged: list[str] = field(default_factory=list)
    items_deleted: list[str] = field(default_factory=list)  # "kind id"
    chunks: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @property
    def changes(self) -> int:
        return len(self.added) + len(self.changed) + len(self.deleted) + len(self.kept_deleted)

    def summary(self) -> str:
        return (f"{len(self.added)} files added, {len(self.changed)} changed, {len(self.deleted)} deleted"
                f"{f' ({len(self.kept_deleted)} more deleted, memories kept)' if self.kept_deleted else ''}, "
                f"{self.unchanged} unchanged{f', {len(self.failed)} failed' if self.failed else ''}; "
                f"sessions: {len(self.sessions_added)} added, {len(self.sessions_replaced)} replaced, "
                f"{len(self.items_deleted)} deleted; {self.chunks} chunks indexed in {self.seconds:.1f}s")


@dataclass
class _Read:
    """A file that changed, read: what it held and the ids its records give."""

    path: str  # inside the folder
    info: os.stat_result
    sha256: str
    new: bool
    imported: Imported
    items: list[tuple[str, str]] = field(default_factory=list)


def check_folder(path: str | os.PathLike[str]) -> Path:
    """The folder to sync, or InvalidInput saying what PATH is instead."""
    folder = Path(path).expanduser()
    if not folder.exists():
        raise InvalidInput(f"{path}: no such folder")
    if not folder.is_dir():
        raise InvalidInput(f"{path}: not a folder; diarist sync keeps a folder in step (read one file with diarist ingest)")
    return folder


def file_sha256(path: Path, root: Path, max_bytes: int) -> str:
    """SHA-256 of a file's first ``max_bytes`` + 1 bytes (a longer file is refused when read),
    opened as the importers open it: only a regular file inside ``root``, never blocking."""
    check_readable(path, root)
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise InvalidInput(f"{path}: not a regular file; diarist reads regular files only")
        left = max_bytes + 1
        while left > 0 and (chunk := handle.read(min(CHUNK_BYTES, left))):
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def sync_folder(memory: Memory, path: str | os.PathLike[str], *, app: str, format: str | None = None,
                keep_deleted: bool = False, exclude: tuple[str, ...] = (), max_bytes: int = DEFAULT_MAX_BYTES,
                rehash: bool = False, say: Say | None = None) -> SyncReport:
    """Bring the folder ``path`` into ``app`` (see the module); ``say`` gets one line per change.
    ``rehash``: hash every file, even one whose size and time are as recorded (a copy that kept
    the times of a same-size edit is seen then)."""
    app = check_app(app)
    folder = check_folder(path)
    if format is not None and format not in IMPORTERS:
        raise InvalidInput(f"unknown format {format!r} (expected one of {', '.join(IMPORTERS)})")
    say = say or (lambda line: None)
    started = time.perf_counter()
    root = str(folder.resolve())
    report = SyncReport(root)
    store = memory.store
    recorded = {f.path: f for f in store.synced_files(app) if f.root == root}
    files, report.skipped = folder_files(folder, folder_suffixes(format), exclude)
    for line in report.skipped:
        say(f"skipped {line}")

    reads: list[_Read] = []
    touched: list[SyncedFile] = []  # new time, same bytes: the record follows, nothing is read
    present: set[str] = set()
    for file in files:
        relative = file.relative_to(folder).as_posix()
        present.add(relative)
        old = recorded.get(relative)
        try:
            info = os.stat(file)
            if not rehash and old is not None and (old.size, old.mtime_ns) == (info.st_size, info.st_mtime_ns):
                report.unchanged += 1
                continue
            sha = file_sha256(file, folder, max_bytes)
        except (InvalidInput, OSError) as exc:
            _fail(report, say, relative, exc)
            continue
        if old is not None and old.sha256 == sha:
            touched.append(SyncedFile(root, relative, sha, info.st_size, info.st_mtime_ns, old.items))
            report.unchanged += 1
            continue
        read = _read_file(folder, file, relative, info, sha, old is None, format, max_bytes, report, say)
        if read is not None:
            reads.append(read)

    gone = [old for relative, old in recorded.items() if relative not in present]
    _store(memory, app, reads, report, say)
    records = [SyncedFile(root, r.path, r.sha256, r.info.st_size, r.info.st_mtime_ns, tuple(r.items)) for r in reads]
    store.record_synced_files(app, records + touched, drop=[(root, old.path) for old in gone])
    # Items a changed or deleted file no longer holds, unless a recorded file still holds them.
    claimed = {item for f in store.synced_files(app) for item in f.items}
    stale = [(r.path, item) for r in reads if not r.new for item in recorded[r.path].items if item not in r.items]
    for old in gone:
        if keep_deleted:
            report.kept_deleted.append(old.path)
            say(f"deleted {old.path} (its {len(old.items)} memories kept: --keep-deleted)")
            continue
        report.deleted.append(old.path)
        stale += [(old.path, item) for item in old.items]
        say(f"deleted {old.path} ({len(old.items)} memories)")
    for _, (kind, item_id) in stale:
        if (kind, item_id) in claimed:
            continue
        claimed.add((kind, item_id))  # once, if two files held it
        try:
            memory.delete(item_id, app=app, kind=kind)
        except NotFound:
            continue  # deleted by hand meanwhile
        report.items_deleted.append(f"{kind} {item_id}")
    report.seconds = time.perf_counter() - started
    return report


def _fail(report: SyncReport, say: Say, relative: str, exc: Exception) -> None:
    why = str(exc) if isinstance(exc, InvalidInput) else f"{relative}: {getattr(exc, 'strerror', None) or exc}"
    report.failed.append(why)
    say(f"failed {why} (its memories are left as they were; tried again next sync)")


def _read_file(folder: Path, file: Path, relative: str, info: os.stat_result, sha: str, new: bool,
               format: str | None, max_bytes: int, report: SyncReport, say: Say) -> _Read | None:
    """A changed file read and checked, or None when it failed (named in ``report.failed``)."""
    imported = Imported("")
    try:
        read_folder_file(imported, folder, file, format, None, max_bytes)
        if imported.skipped and REFUSED_FILE.search(imported.skipped[0]):
            raise InvalidInput(imported.skipped[0])  # a device, a link out, over the bound: not recorded
        ids = [check_session(s, where)[0] for s, where in zip(imported.sessions, imported.where)]
        check_unique(ids, f"{file}: session id")
        fact_ids = [check_fact(f, f"{file} fact {n}")[0] for n, f in enumerate(imported.facts, 1)]
        check_unique(fact_ids, f"{file}: fact id")
    except InvalidInput as exc:
        _fail(report, say, relative, exc)
        return None
    for line in imported.skipped:
        report.skipped.append(line)
        say(f"skipped {line}")
    imported.skipped = []
    items = [("session", i) for i in ids] + [("fact", i) for i in fact_ids]
    return _Read(relative, info, sha, new, imported, items)


def _store(memory: Memory, app: str, reads: list[_Read], report: SyncReport, say: Say) -> None:
    """Store the sessions and facts of the files read, in batches; one line per file."""
    whole = Imported("")
    for read in reads:
        whole.sessions += read.imported.sessions
        whole.where += read.imported.where
        whole.files_of += read.imported.files_of
        whole.facts += read.imported.facts
    dedupe(whole)  # one conversation in two exports: its latest version
    keep_stored_newer(whole, memory.store, app)  # an older export than what is stored
    report.superseded += whole.superseded
    report.kept_newer += whole.kept_newer
    for line in whole.superseded:
        say(f"superseded {line}")
    for line in whole.kept_newer:
        say(f"kept newer {line}")
    for offset in range(0, len(whole.sessions), BATCH):
        done = memory.add_sessions(whole.sessions[offset : offset + BATCH], app=app)
        report.sessions_added += done.added
        report.sessions_replaced += done.replaced
        report.sessions_unchanged += done.unchanged
        report.chunks += done.chunks
    if whole.facts:
        report.chunks += memory.add_facts(whole.facts, app=app).chunks
    for read in reads:
        (report.added if read.new else report.changed).append(read.path)
        count = sum(kind == "session" for kind, _ in read.items)
        facts = len(read.items) - count
        held = (f"{count} sessions" + (f", {facts} facts" if facts else "")) if read.items else "nothing stored"
        say(f"{'added' if read.new else 'changed'} {read.path} ({held})")
