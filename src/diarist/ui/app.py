"""The inspector: a Starlette app over one ``Memory``, mounted at ``/ui``; its pages are the
modules of ``ui/pages/`` (one per page, over ``pages.common.Site``).

Every page is rendered on the server (Jinja2, autoescaped: memory text is never markup); the
only script is the upload's progress bar. Every request that changes anything is a POST whose
form carries the session's CSRF token; every page and form of an app first checks that the
session may see that app (``keyed``: the one app of the API key it logged in with; local: any).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..memory import Memory
from ..server.middleware import EncodedPath, Wrapper
from .pages import routes
from .pages.common import CSP, HERE, SECURITY_HEADERS, Site

STATIC = HERE / "static"
PREFIX = "/ui"


def create_ui(memory: Memory, *, keyed: bool, allowed_hosts: tuple[str, ...] | None = None) -> EncodedPath:
    """The inspector over ``memory``. ``keyed``: ask for an API key and show only its app
    (``diarist serve``); otherwise every app, and only to requests addressed to a loopback
    host (``diarist ui``: a web page elsewhere cannot reach it through DNS rebinding).
    ``allowed_hosts``: the Host names accepted in local mode (default: loopback names)."""
    site = Site(memory, keyed=keyed, allowed_hosts=allowed_hosts)
    pages = Starlette(routes=[*routes(site), Mount("/static", StaticFiles(directory=STATIC), name="static")])
    pages.router.redirect_slashes = False  # ".../items/fact/x/" is not the item "x"
    return EncodedPath(SecurityHeaders(pages))


class SecurityHeaders(Wrapper):
    """``SECURITY_HEADERS`` on every answer of the inspector: its pages, its static files, and the
    router's own 404 and 405."""

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                given = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()
                         if k.lower().encode() not in given]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def local_app(memory: Memory, *, allowed_hosts: tuple[str, ...] | None = None) -> SecurityHeaders:
    """``diarist ui``: the inspector at /ui (every app, loopback only), / sending there."""

    async def home(request: Request) -> Response:
        return RedirectResponse(PREFIX + "/", 307)

    ui = create_ui(memory, keyed=False, allowed_hosts=allowed_hosts)
    return SecurityHeaders(Starlette(routes=[Route("/", home), Mount(PREFIX, app=ui)]))


__all__ = ["CSP", "PREFIX", "create_ui", "local_app"]
