"""Storage behind one contract (``base.Store``); ``open_store`` picks the backend from a location."""

from .base import Store
from .open import open_store

__all__ = ["Store", "open_store"]
