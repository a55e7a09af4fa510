"""The store factory: which backend a location names, and opening it.

Apart from the contract (``base.py``) so that the contract imports no backend: the backends
import the contract, and only this module imports the backends (each when first named).
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .base import Store


def store_class(location: str) -> tuple[type[Store], str]:
    """The backend a location names and the location as that backend takes it, opening nothing:
    ``:memory:``, a file path or ``sqlite:///path`` (SQLite); ``postgresql://...`` or
    ``postgres://...`` (PostgreSQL + pgvector, the ``postgres`` extra)."""
    text = str(location)
    scheme, sep, rest = text.partition("://")
    if sep and scheme in ("postgresql", "postgres"):
        from .postgres import PostgresStore

        return PostgresStore, text
    if sep and scheme != "sqlite":
        raise ConfigError(f"unknown store URL scheme {scheme!r}; use a file path, ':memory:' or sqlite:///PATH")
    from .sqlite import SQLiteStore

    # sqlite:///relative/path and sqlite:////absolute/path, as SQLAlchemy spells them.
    return SQLiteStore, (rest[1:] if rest.startswith("/") else rest) if sep else text


def open_store(location: "str | Store | Any", *, create: bool = True, **options: Any) -> Store:
    """The store a location names (see ``store_class``); a ``Store`` is returned as is.
    ``create=False`` refuses a database that does not exist yet (``DatabaseNotFound``) instead of
    creating it. ``options`` go to the backend: ``PostgresStore``'s pool (``max_size``,
    ``min_size``, ``timeout``) and ``lock_timeout``, ``SQLiteStore``'s ``busy_timeout_ms``."""
    if isinstance(location, Store):
        return location
    backend, where = store_class(str(location))
    return backend(where, create=create, **options)
