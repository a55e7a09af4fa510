"""The ``vestige`` command line: ``main`` with the core commands, and those of the serving and
bench modules registered beside them."""

from .commands import main

__all__ = ["main"]
