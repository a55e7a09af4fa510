"""The web inspector: browse what a memory holds, ask it a question and see why each hit came
back, fix and curate it. Server-rendered pages over the same ``Memory`` as every other door:
``diarist ui`` (one person's local memory, on 127.0.0.1) and ``/ui`` of ``diarist serve`` (behind
an API key, showing only its app). Needs the ``server`` extra (Starlette, Jinja2, multipart).

The page modules are imported on first use, so that ``diarist`` (whose CLI registers ``diarist
ui``) starts without the server extra.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CSP", "PREFIX", "create_ui", "local_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module 'diarist.ui' has no attribute {name!r}")
