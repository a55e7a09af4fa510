"""The store factory: which backend a location names, and opening it.

Apart from the contract (``base.py``) so that the contract imports no backend: the backends
import the contract, and only this module imports the backends (each when first named).
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ConfigError
from ..registry import Registry
from .base import Store


def _sqlite(location: str) -> tuple[type[Store], str]:
    from .sqlite import SQLiteStore

    scheme, sep, rest = location.partition("://")
    # sqlite:///relative/path and sqlite:////absolute/path, as SQLAlchemy spells them.
    return SQLiteStore, (rest[1:] if rest.startswith("/") else rest) if sep else location


def _postgres(location: str) -> tuple[type[Store], str]:
    from .postgres import PostgresStore  # the ``postgres`` extra; MissingDependency names it when absent

    return PostgresStore, location


#: Store backends by URL scheme (diarist.registry; docs/extending.md): each entry gives the
#: ``Store`` class a location names and the location as that class takes it, opening nothing.
STORES: Registry[tuple[type[Store], str]] = Registry("store URL scheme", "://")
STORES.register("sqlite", _sqlite)
STORES.register("postgresql", _postgres)
STORES.register("postgres", _postgres)


def store_class(location: str) -> tuple[type[Store], str]:
    """The backend a location names and the location as that backend takes it, opening nothing:
    ``:memory:``, a file path or ``sqlite:///path`` (SQLite); ``postgresql://...`` or
    ``postgres://...`` (PostgreSQL + pgvector); a scheme registered in ``STORES``."""
    text = str(location)
    if "://" not in text:
        return _sqlite(text)
    if STORES.find(text) is None:
        raise ConfigError(f"unknown store URL scheme {STORES.name_of(text)!r}; use a file path, ':memory:', "
                          f"or one of {', '.join(f'{name}://' for name in STORES.names())}")
    return STORES.build(text)


def open_store(location: "str | Store | Any", *, create: bool = True, **options: Any) -> Store:
    """The store a location names (see ``store_class``); a ``Store`` is returned as is.
    ``create=False`` refuses a database that does not exist yet (``DatabaseNotFound``) instead of
    creating it. ``options`` go to the backend: ``PostgresStore``'s pool (``max_size``,
    ``min_size``, ``timeout``) and ``lock_timeout``, ``SQLiteStore``'s ``busy_timeout_ms``."""
    if isinstance(location, Store):
        return location
    if isinstance(location, os.PathLike):
        location = os.fspath(location)
    if not isinstance(location, str):  # str() of a 5,000-digit int raised ValueError
        raise ConfigError(f"a store location is a path, a URL or a Store, not {type(location).__name__}")
    backend, where = store_class(location)
    return backend(where, create=create, **options)
