"""``diarist sync --watch``: sync a folder, then again each time its files change.

Changes are seen by ``watchfiles`` (the ``watch`` extra: the operating system's file events)
when it is installed, else by polling: the folder is walked every ``poll`` seconds and its files'
sizes and modification times compared (nothing is read unless they moved). A burst of changes
(an editor's save, a ``git pull``) is waited out: a sync starts once the folder has been still
for ``debounce`` seconds. Each sync reads only what changed (``diarist.importers.sync``).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import DiaristError
from . import folder_suffixes
from .folder import folder_files
from .sync import Memory, Say, SyncReport, check_folder

POLL_SECONDS = 1.0
DEBOUNCE_SECONDS = 0.3


def has_watchfiles() -> bool:
    return importlib.util.find_spec("watchfiles") is not None


def how_watched(poll: float | None) -> str:
    """The watcher ``watch`` uses, in words."""
    if poll is None and has_watchfiles():
        return "watchfiles (file system events)"
    seconds = POLL_SECONDS if poll is None else poll
    why = "" if poll is not None else "; watchfiles is not installed: pip install 'diarist[watch]'"
    return f"polling every {seconds:g}s{why}"


def watch(memory: Memory, path: str | os.PathLike[str], *, app: str, poll: float | None = None,
          debounce: float = DEBOUNCE_SECONDS, stop: threading.Event | None = None, say: Say | None = None,
          on_sync: Callable[[SyncReport], None] | None = None, **options: Any) -> None:
    """Sync ``path`` into ``app`` now and after every change until ``stop`` is set (or Ctrl-C:
    KeyboardInterrupt reaches the caller). ``poll``: poll every so many seconds even when
    watchfiles is installed; ``options`` are ``Memory.sync``'s; ``on_sync`` gets each report."""
    folder = check_folder(path)
    stop = stop or threading.Event()
    say = say or (lambda line: None)

    def run() -> None:
        report = memory.sync(folder, app=app, say=say, **options)
        if on_sync is not None:
            on_sync(report)

    if poll is None and has_watchfiles():
        run()
        changes = _events(folder, debounce, stop)
    else:
        suffixes, exclude = folder_suffixes(options.get("format")), options.get("exclude", ())
        seen = _fingerprint(folder, suffixes, exclude)  # before the first sync: a change during it is seen
        run()
        changes = _polls(folder, seen, poll or POLL_SECONDS, debounce, stop, suffixes, exclude)
    say(f"watching {folder} with {how_watched(poll)}; Ctrl-C stops")
    for _ in changes:
        try:
            run()
        except DiaristError as exc:  # a locked database, a file that vanished mid-read: not the end
            if not folder.is_dir():
                raise
            say(f"failed: {exc}; trying again on the next change")


def _events(folder: Path, debounce: float, stop: threading.Event) -> Iterator[None]:
    """One item per burst of changes, and one when the watcher first times out: by then it is
    watching, so that sync catches a change made between the first sync and its start."""
    import watchfiles

    caught_up = False
    for changes in watchfiles.watch(folder, debounce=int(debounce * 1000), step=50, stop_event=stop,
                                    rust_timeout=1000, yield_on_timeout=True):
        if changes or not caught_up:
            caught_up = True
            yield None


def _fingerprint(folder: Path, suffixes: tuple[str, ...], exclude: tuple[str, ...]) -> frozenset[tuple[str, int, int]]:
    """(path, size, modification time) of every file a sync would look at."""
    out = set()
    for file in folder_files(folder, suffixes, exclude)[0]:
        try:
            info = os.stat(file)
        except OSError:
            continue  # gone between the walk and the stat: the next poll sees it
        out.add((str(file), info.st_size, info.st_mtime_ns))
    return frozenset(out)


def _polls(folder: Path, last: frozenset[tuple[str, int, int]], every: float, debounce: float,
           stop: threading.Event, suffixes: tuple[str, ...], exclude: tuple[str, ...]) -> Iterator[None]:
    while not stop.wait(every):
        now = _fingerprint(folder, suffixes, exclude)
        if now == last:
            continue
        while not stop.wait(debounce):  # still moving: wait until it is still
            settled = _fingerprint(folder, suffixes, exclude)
            if settled == now:
                break
            now = settled
        last = now
        if not stop.is_set():
            yield None
