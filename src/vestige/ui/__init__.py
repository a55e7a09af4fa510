"""The web inspector: browse what a memory holds, ask it a question and see why each hit came
back, fix and curate it. Server-rendered pages over the same ``Memory`` as every other door:
``vestige ui`` (one person's local memory, on 127.0.0.1) and ``/ui`` of ``vestige serve`` (behind
an API key, showing only its app). Needs the ``server`` extra (Starlette, Jinja2, multipart).
"""

from .app import CSP, PREFIX, create_ui, local_app

__all__ = ["CSP", "PREFIX", "create_ui", "local_app"]
