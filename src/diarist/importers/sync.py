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
it is tried again by the next sync; so is a folder that cannot be listed (all the files recorded
under it are kept, never taken as deleted). A file is opened once, checked on the open
descriptor (``files.open_regular``: a link swapped to outside the folder is refused), and what
is hashed is what is parsed; a file that vanishes mid-sync is named in ``skipped``.

The record is keyed by (app, folder, path inside it), and each item belongs to one record: a
file whose item another folder's record holds takes it over when that file or its whole folder
is gone (a note moved between folders; a folder moved or renamed, whose other records are then
taken over too, so a note deleted before or after the move is deleted), and is refused (named in
``failed``) while the other file is still there (``todo.md`` in two folders synced into one app:
sync them into two apps).

Deletes run before the record drops the files that held them: a sync killed between the two
leaves those files in the record, so the next sync finds them gone again and finishes the
deletes (an item already deleted is passed over). Files left out by the walk, empty files and files in no
known format are named in ``skipped``, as ingest names them. An older export read after a newer
one leaves the stored, newer conversation (``importers.newer``).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..errors import InvalidInput, NotFound
from ..files import read_bounded
from ..store.base import Item, Store, SyncedFile
from ..write.validate import check_app
from . import IMPORTERS, Imported, folder_suffixes, read_folder_file
from .folder import REFUSED_FILE, folder_files
from .load import check_imported, store_imported
from .reading import DEFAULT_MAX_BYTES, bytes_text

Say = Callable[[str], None]


class Memory(Protocol):
    """What a sync (and ``watch``) uses of ``diarist.memory.Memory`` (named here, not imported:
    Memory.sync imports this module, and hands it the store)."""

    def sync(self, path: str | os.PathLike[str], *, app: str, **options: Any) -> SyncReport: ...

    def settle_imported(self, imported: Imported, app: str) -> None: ...

    def add_items(self, items: Sequence[Item], *, app: str) -> Any: ...

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


def sync_folder(memory: Memory, store: Store, path: str | os.PathLike[str], *, app: str, format: str | None = None,
                keep_deleted: bool = False, exclude: tuple[str, ...] = (), max_bytes: int = DEFAULT_MAX_BYTES,
                rehash: bool = False, say: Say | None = None) -> SyncReport:
    """Bring the folder ``path`` into ``app`` (see the module; ``Memory.sync``, which hands over
    its store: the sync records what it read there); ``say`` gets one line per change.
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
    every = store.synced_files(app)
    recorded = {f.path: f for f in every if f.root == root}
    unreadable: list[tuple[str, str]] = []
    files, report.skipped = folder_files(folder, folder_suffixes(format), exclude, unreadable)
    for line in report.skipped:
        say(f"skipped {line}")
    present = _unseen_kept(recorded, unreadable, report, say)

    reads: list[_Read] = []
    touched: list[SyncedFile] = []  # new time, same bytes: the record follows, nothing is read
    for file in files:
        relative = file.relative_to(folder).as_posix()
        present.add(relative)
        old = recorded.get(relative)
        try:
            info = os.stat(file)
            if not rehash and old is not None and (old.size, old.mtime_ns) == (info.st_size, info.st_mtime_ns):
                report.unchanged += 1
                continue
            raw = read_bounded(file, max_bytes, folder)  # opened once: what is hashed is what is read
        except (InvalidInput, OSError) as exc:
            _vanished(report, say, relative) if not os.path.lexists(file) else _fail(report, say, relative, exc)
            continue
        sha = hashlib.sha256(raw).hexdigest()
        if old is not None and old.sha256 == sha:
            touched.append(SyncedFile(root, relative, sha, info.st_size, info.st_mtime_ns, old.items))
            report.unchanged += 1
            continue
        read = _read_file(folder, file, relative, raw, info, sha, old is None, format, max_bytes, report, say)
        if read is not None:
            reads.append(read)

    others = [f for f in every if f.root != root]
    reads, taken = _claim(reads, others, app, report, say)
    gone = [old for relative, old in recorded.items() if relative not in present]
    gone += [old for old in taken if old.path not in present and not os.path.isdir(old.root)]  # deleted before the move
    _store(memory, app, reads, report, say)
    records = [SyncedFile(root, r.path, r.sha256, r.info.st_size, r.info.st_mtime_ns, tuple(r.items)) for r in reads]
    # Deleted before the record drops the files (a kill in between: the next sync finds them gone
    # again and deletes the rest), keeping what any file still recorded after this sync holds.
    staying = {(f.root, f.path): f.items for f in every}
    staying.update({(root, f.path): f.items for f in records + touched})
    for old in gone + taken:
        staying.pop((old.root, old.path), None)
    claimed = {item for items in staying.values() for item in items}
    stale = [item for r in reads if not r.new for item in recorded[r.path].items if item not in r.items]
    for old in gone:
        if keep_deleted:
            report.kept_deleted.append(old.path)
            say(f"deleted {old.path} (its {len(old.items)} memories kept: --keep-deleted)")
            continue
        report.deleted.append(old.path)
        stale += old.items
        say(f"deleted {old.path} ({len(old.items)} memories)")
    for kind, item_id in stale:
        if (kind, item_id) in claimed:
            continue
        claimed.add((kind, item_id))  # once, if two files held it
        try:
            memory.delete(item_id, app=app, kind=kind)
        except NotFound:
            continue  # deleted by hand meanwhile, or by a sync killed before its record
        report.items_deleted.append(f"{kind} {item_id}")
    dropped = {(old.root, old.path) for old in gone + taken}
    store.record_synced_files(app, records + touched, drop=sorted(dropped))
    report.seconds = time.perf_counter() - started
    return report


def _unseen_kept(recorded: dict[str, SyncedFile], unreadable: list[tuple[str, str]], report: SyncReport,
                 say: Say) -> set[str]:
    """The recorded files inside folders the walk could not list: failed, and kept (as present)."""
    kept: set[str] = set()
    for where, why in unreadable:
        inside = [p for p in recorded if not where or p.startswith(where + "/")]
        kept.update(inside)
        line = f"{where or '.'}/: {why}; the memories of its {len(inside)} recorded files are left as they were"
        report.failed.append(line)
        say(f"failed {line} (tried again next sync)")
    return kept


def _claim(reads: list[_Read], others: list[SyncedFile], app: str, report: SyncReport,
           say: Say) -> tuple[list[_Read], list[SyncedFile]]:
    """Each item belongs to one record. A file whose item another folder's record holds takes it
    over when that file is gone (a note moved between folders) or its folder is (a folder moved or
    renamed: then every file recorded there is taken over, so its deleted notes are deleted); it is
    refused while the other file is still there (two folders with ``todo.md`` in one app).
    Returns (the reads to store, the other folders' records taken over)."""
    holder = {item: f for f in others for item in f.items}
    kept: list[_Read] = []
    taken: dict[tuple[str, str], SyncedFile] = {}
    for read in reads:
        held = [(item, holder[item]) for item in read.items if item in holder]
        live = [(item, f) for item, f in held if os.path.lexists(os.path.join(f.root, f.path))]
        if live:
            (kind, item_id), other = live[0]
            _fail(report, say, read.path, InvalidInput(
                f"{read.path}: its {kind} id {item_id!r} is synced from {os.path.join(other.root, other.path)} in app "
                f"{app!r} already; sync one of the two folders into another app (--app)"))
            continue
        kept.append(read)
        for _, f in held:
            moved = not os.path.isdir(f.root)
            for each in (g for g in others if g.root == f.root and (moved or g.path == f.path)):
                if (each.root, each.path) not in taken:
                    say(f"took over {os.path.join(each.root, each.path)}'s record ({'its folder' if moved else 'it'} is gone)")
                taken[(each.root, each.path)] = each
    return kept, list(taken.values())


def _fail(report: SyncReport, say: Say, relative: str, exc: Exception) -> None:
    why = str(exc) if isinstance(exc, InvalidInput) else f"{relative}: {getattr(exc, 'strerror', None) or exc}"
    report.failed.append(why)
    say(f"failed {why} (its memories are left as they were; tried again next sync)")


def _vanished(report: SyncReport, say: Say, relative: str) -> None:
    line = f"{relative}: vanished during the sync (what it held is left as it was until the next sync)"
    report.skipped.append(line)
    say(f"skipped {line}")


def _read_file(folder: Path, file: Path, relative: str, raw: bytes, info: os.stat_result, sha: str, new: bool,
               format: str | None, max_bytes: int, report: SyncReport, say: Say) -> _Read | None:
    """A changed file read (from its bytes ``raw``) and checked, or None when it failed (named
    in ``report.failed``) or vanished meanwhile (named in ``report.skipped``)."""
    imported = Imported("")
    try:
        text = bytes_text(raw, str(file), max_bytes)
        read_folder_file(imported, folder, file, format, None, max_bytes, text=text)
        if imported.skipped and REFUSED_FILE.search(imported.skipped[0]):
            raise InvalidInput(imported.skipped[0])  # a device, a link out, over the bound: not recorded
        check_imported(imported, str(file))
    except InvalidInput as exc:
        _fail(report, say, relative, exc)
        return None
    except FileNotFoundError:  # an importer looked at the file again (a note's time)
        _vanished(report, say, relative)
        return None
    except OSError as exc:
        _fail(report, say, relative, exc)
        return None
    for line in imported.skipped:
        report.skipped.append(line)
        say(f"skipped {line}")
    imported.skipped = []
    items = [(item.kind, item.external_id) for item in imported.items + imported.fact_items]
    return _Read(relative, info, sha, new, imported, items)


def _store(memory: Memory, app: str, reads: list[_Read], report: SyncReport, say: Say) -> None:
    """Store the sessions and facts of the files read through the import funnel; one line per file."""
    whole = Imported("")
    for read in reads:
        for name in ("sessions", "where", "files_of", "items", "facts", "fact_items"):
            getattr(whole, name).extend(getattr(read.imported, name))
    stored = store_imported(memory, whole, app=app)  # one conversation in two files: its latest version
    report.superseded += whole.superseded
    report.kept_newer += whole.kept_newer
    for line in whole.superseded:
        say(f"superseded {line}")
    for line in whole.kept_newer:
        say(f"kept newer {line}")
    report.sessions_added += stored.sessions.added
    report.sessions_replaced += stored.sessions.replaced
    report.sessions_unchanged += stored.sessions.unchanged
    report.chunks += stored.sessions.chunks + (stored.facts.chunks if stored.facts else 0)
    for read in reads:
        (report.added if read.new else report.changed).append(read.path)
        count = sum(kind == "session" for kind, _ in read.items)
        facts = len(read.items) - count
        held = (f"{count} sessions" + (f", {facts} facts" if facts else "")) if read.items else "nothing stored"
        say(f"{'added' if read.new else 'changed'} {read.path} ({held})")
