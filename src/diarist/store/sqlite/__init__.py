"""The embedded default store: one SQLite file. Nothing outside this package touches SQLite."""

from .store import SQLiteStore

__all__ = ["SQLiteStore"]
