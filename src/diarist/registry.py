"""One registration shape for every extension point (docs/extending.md).

Each point keeps its entries by name, in registration order, and registers the library's own
the same way as a plug-in's: ``register(name, entry)``, a taken name refused unless
``replace=True``. Two kinds of entry:

- a factory of a spec (``Registry``): an embedder (``"minilm"``, ``"hash:64"``), a reranker
  (``"evidence:time"``) or a store (``"postgresql://..."``) is named by a spec whose first part,
  up to a separator, picks the entry; the entry gets the whole spec and builds the thing;
- the thing itself (``Entries``), where a name takes no arguments: an importer, by its
  ``--format`` name, the order being the order formats are detected in.

    from diarist.embed import EMBEDDERS
    EMBEDDERS.register("mymodel", lambda spec: MyEmbedder(spec.partition(":")[2] or "base"))
    Memory("memory.sqlite", embedder="mymodel:large")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from .errors import ConfigError

E = TypeVar("E")
T = TypeVar("T")


class Entries(Mapping[str, E]):
    """Named entries of one extension point, in registration order (a read-only mapping)."""

    def __init__(self, kind: str, separator: str = ":"):
        self.kind = kind
        self.separator = separator
        self._entries: dict[str, E] = {}

    def register(self, name: str, entry: E, *, replace: bool = False, before: str | None = None) -> None:
        """Add ``entry`` as ``name``, last in order or just ahead of the entry ``before``. A name
        taken already is refused unless ``replace`` (which keeps its place): two plug-ins never
        shadow each other silently."""
        if not name or self.separator in name:
            raise ConfigError(f"a {self.kind} name must be non-empty and hold no {self.separator!r}: {name!r}")
        if name in self._entries and not replace:
            raise ConfigError(f"{self.kind} {name!r} is registered already (pass replace=True to replace it)")
        if before is None or name in self._entries:
            self._entries[name] = entry
            return
        if before not in self._entries:
            raise ConfigError(f"cannot register {self.kind} {name!r} before {before!r}: no such {self.kind}")
        items = list(self._entries.items())
        at = [n for n, _ in items].index(before)
        self._entries = dict(items[:at] + [(name, entry)] + items[at:])

    def __getitem__(self, name: str) -> E:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return sorted(self._entries)


class Registry(Entries[Callable[[str], T]]):
    """Factories of one extension point; a spec's name is its text up to ``separator``."""

    def name_of(self, spec: str) -> str:
        return spec.partition(self.separator)[0] if self.separator in spec else spec

    def find(self, spec: str) -> Callable[[str], T] | None:
        """The factory a spec names, or None when none is registered under its name."""
        return self._entries.get(self.name_of(spec))

    def build(self, spec: str) -> T:
        factory = self.find(spec)
        if factory is None:
            raise ConfigError(f"unknown {self.kind} {spec!r}; registered: {', '.join(self.names()) or 'none'}")
        return factory(spec)
