"""One registration shape for the extension points chosen by a spec string (docs/extending.md).

An embedder (``"minilm"``, ``"hash:64"``), a reranker (``"evidence:time"``) or a store
(``"postgresql://..."``) is named by a spec whose first part, up to a separator, picks an
entry of that kind's ``Registry``; the entry gets the whole spec and builds the thing.

    from vestige.embed import EMBEDDERS
    EMBEDDERS.register("mymodel", lambda spec: MyEmbedder(spec.partition(":")[2] or "base"))
    Memory("memory.sqlite", embedder="mymodel:large")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries of one extension point; a spec's name is its text up to ``separator``."""

    def __init__(self, kind: str, separator: str = ":"):
        self.kind = kind
        self.separator = separator
        self._entries: dict[str, Callable[[str], T]] = {}

    def register(self, name: str, factory: Callable[[str], T], *, replace: bool = False) -> None:
        """Make ``name`` (and ``name<separator>...``) build with ``factory(spec)``. A name taken
        already is refused unless ``replace``: two plug-ins never shadow each other silently."""
        if not name or self.separator in name:
            raise ConfigError(f"a {self.kind} name must be non-empty and hold no {self.separator!r}: {name!r}")
        if name in self._entries and not replace:
            raise ConfigError(f"{self.kind} {name!r} is registered already (pass replace=True to replace it)")
        self._entries[name] = factory

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

    def names(self) -> list[str]:
        return sorted(self._entries)
