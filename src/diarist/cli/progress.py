"""Progress on standard error, also when it is not a terminal (a log, a pipe, CI).

On a terminal: a tqdm bar. Otherwise: one plain line at the start, then at most one every
``every`` seconds, and one at the end, so a long ingest is never silent.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType

import click


class Progress:
    def __init__(self, total: int, desc: str, unit: str, *, every: float = 5.0, stream=None):
        self.total, self.desc, self.unit, self.every = total, desc, unit, every
        self.stream = stream or sys.stderr
        self.done = 0
        self._bar = None
        self._last = 0.0
        self._start = time.monotonic()

    def __enter__(self) -> "Progress":
        if self.stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, unit=self.unit, desc=self.desc, file=self.stream)
        else:
            self._line()
        return self

    def update(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif time.monotonic() - self._last >= self.every:
            self._line()

    def _line(self) -> None:
        self._last = time.monotonic()
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        took = self._last - self._start
        rate = f", {self.done / took:.1f} {self.unit}/s" if self.done and took > 0 else ""
        click.echo(f"{self.desc}: {self.done}/{self.total} {self.unit}s{share}{rate}", err=True)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.close()
        elif kind is None and self.done:
            self._line()
