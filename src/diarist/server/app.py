"""The HTTP API: FastAPI over one ``Memory``, every route scoped to one app by its API key.

``create_app(memory)`` builds the application from its parts: the bodies (``schemas``), the
error answers (``handlers``), the body guards (``middleware``), the routes (``routes/``, one
module per resource), the offline docs (``docs``) and the inspector. ``app_from_env()`` is the
factory uvicorn workers import (the server edge is where environment variables are read); the
request headers are timed and checked by the protocol (``protocol.RequestTimeoutProtocol``).
Errors are JSON, ``{"error": {"status", "code", "message"}}``, with the status that fits.
"""

import os

from fastapi import FastAPI

from ..memory import Memory
from .docs import add_offline_docs
from .handlers import TranslatingRoute, add_exception_handlers
from .middleware import (DEFAULT_MAX_BODY_BYTES, DEFAULT_TIMEOUT_SECONDS, BodyLimit, BodyTimeout, EncodedPath,
                         timeout_from_env)
from .routes import add_routes
from .routes.health import HEALTH_MAX_APPS
from .routes.ui import mount_inspector

# The middleware was defined here before the split; its importers (diarist.ui.cli) still find it.
__all__ = ["BodyLimit", "BodyTimeout", "app_from_env", "create_app", "timeout_from_env"]


def create_app(
    memory: Memory,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    health_max_apps: int = HEALTH_MAX_APPS,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
) -> FastAPI:
    """The HTTP API over ``memory``; keys are read from (and live in) the memory's own store.

    ``timeout_seconds``: a request's body must arrive within it (408 otherwise; 0: no limit).
    The headers are timed by the server's protocol (``RequestTimeoutProtocol``)."""
    api = FastAPI(
        title="diarist",
        version="1",
        description=(
            "Long-term memory for AI agents. Every route under `/v1/apps/{app}` needs that app's "
            "API key (`Authorization: Bearer <key>`; create one with `diarist keys create --app APP`)."
        ),
        docs_url=None,  # served from local files (docs.py): the stock page loads its assets from a CDN
        redoc_url=None,
    )
    add_offline_docs(api)
    mount_inspector(api, memory)
    api.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    api.add_middleware(BodyTimeout, seconds=timeout_seconds)
    api.add_middleware(EncodedPath)  # ids with "/", sent as %2F, reach their routes
    api.router.redirect_slashes = False  # ".../sessions/abc/" is not the session "abc"
    add_exception_handlers(api, memory)
    api.router.route_class = TranslatingRoute  # a backend's own errors, as its store translates them
    add_routes(api, memory, health_max_apps=health_max_apps)
    api.state.memory = memory
    api.state.keys = memory.keys
    return api


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory``: reads DIARIST_DB, DIARIST_EMBEDDER, DIARIST_MAX_BODY_BYTES,
    DIARIST_TIMEOUT_SECONDS."""
    from ..config import default_db_path, lexical_fusion_enabled

    memory = Memory(
        default_db_path(),
        embedder=os.environ.get("DIARIST_EMBEDDER") or None,
        lexical_fusion=lexical_fusion_enabled(),
    )
    limit = int(os.environ.get("DIARIST_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES))
    return create_app(memory, max_body_bytes=limit, timeout_seconds=timeout_from_env())
