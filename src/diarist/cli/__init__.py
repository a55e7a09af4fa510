"""The ``diarist`` command line: ``main`` with the core commands, and those of the serving,
item, backup and bench modules registered beside them.

``main`` is loaded on first use, so that a module of a command group (``diarist.server.cli``)
can import the shared options without importing every command first.
"""

from typing import Any

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name == "main":
        from .commands import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
