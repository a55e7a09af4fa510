"""What every page of the inspector shares: the request as a handler sees it (``Ctx``), the
``Site`` (the memory, the session signer, the templates, who may see which app) and the wrapper
that turns a handler into an endpoint (host check, CSRF, login, errors as pages, cookies,
security headers), as ``server/routes/common.py`` is for the HTTP API's routes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ...errors import DiaristError, InvalidInput, KeyForbidden, UnknownApp
from ...memory import Memory
from ...server.handlers import decoded_params
from ..session import COOKIE, Session, Signer, new_session

HERE = Path(__file__).parent.parent
#: No script, style, image, font or connection from anywhere but this server; no inline script
#: or style; no framing; forms post only here.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


class NeedLogin(Exception):
    """Keyed mode, and the session holds no live key."""


@dataclass
class Ctx:
    """One request as a page handler sees it."""

    request: Request
    session: Session
    granted: str | None  # keyed mode: the one app this session may see; local: None (any)
    form: FormData | None = None
    extra_cookie: Session | None = None  # a session to set (after login or logout)
    flags: dict[str, Any] = field(default_factory=dict)

    def param(self, name: str, default: str = "") -> str:
        return self.request.query_params.get(name, default)

    def field(self, name: str, default: str = "") -> str:
        value = self.form.get(name, default) if self.form is not None else default
        return value if isinstance(value, str) else default


Handler = Callable[["Site", Ctx], Response]


class Site:
    """The inspector over one ``memory``: ``keyed`` (``diarist serve``) shows the one app of the
    API key a session logged in with; local (``diarist ui``) every app, to loopback hosts only."""

    def __init__(self, memory: Memory, *, keyed: bool, allowed_hosts: tuple[str, ...] | None = None):
        self.memory = memory
        self.keyed = keyed
        self.signer = Signer(memory.keys)
        self.hosts = allowed_hosts or LOOPBACK_HOSTS
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))
        self.env.filters["q"] = q
        self.env.filters["json"] = to_json
        # An app's counts, kept while its version stands (every write moves it): counting the
        # messages of 100k chunks takes ~0.3 s, reading the version well under 1 ms.
        self.counted: dict[str, tuple[Any, dict[str, Any]]] = {}

    def granted_app(self, session: Session) -> str | None:
        if not self.keyed:
            return None
        if session.key_hash is None:
            raise NeedLogin
        app = self.memory.keys.app_for_hash(session.key_hash)
        if app is None:
            raise NeedLogin
        return app

    def grant(self, ctx: Ctx, app: str) -> str:
        if ctx.granted is not None and app != ctx.granted:
            raise KeyForbidden(f"this session's API key does not grant access to app {app!r}")
        return app

    def base(self, ctx: Ctx) -> str:
        return ctx.request.scope.get("root_path", "").rstrip("/")

    def render(self, ctx: Ctx, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        page = self.env.get_template(name).render(
            base=self.base(ctx), csrf=self.signer.csrf(ctx.session), keyed=self.keyed, granted=ctx.granted, **values)
        return HTMLResponse(page, status)

    def redirect(self, ctx: Ctx, path: str, **query: Any) -> RedirectResponse:
        tail = ("?" + urlencode({k: v for k, v in query.items() if v is not None})) if query else ""
        return RedirectResponse(self.base(ctx) + path + tail, 303)

    def host_ok(self, request: Request) -> bool:
        if self.keyed:
            return True
        host = request.headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return name in self.hosts

    def counts(self, app: str) -> dict[str, Any]:
        version = self.memory.app_version(app)
        if version is None:
            return {"sessions": 0, "messages": 0, "facts": 0, "chunks": 0, "lexical_index": "empty"}
        kept = self.counted.get(app)
        if kept is not None and kept[0] == version:
            return kept[1]
        try:
            stats = self.memory.app_stats(app)
        except UnknownApp:  # deleted since its version was read
            return self.counts(app)
        self.counted[app] = (version, stats)  # the version read before counting: a write between only recounts
        return stats

    def endpoint(self, handler: Handler, *, post: bool = False, login: bool = True
                 ) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            request.scope["path_params"] = decoded_params(request.path_params)  # matched encoded: ids may hold "/"
            session = self.signer.load(request.cookies.get(COOKIE))
            fresh = session is None
            ctx = Ctx(request, session or new_session(), None)
            try:
                if not self.host_ok(request):
                    raise KeyForbidden("the inspector answers only requests addressed to this machine (127.0.0.1)")
                if post:
                    ctx.form = await request.form(max_files=1, max_fields=50)
                    if fresh or not self.signer.csrf_ok(ctx.session, ctx.form.get("csrf")):
                        raise KeyForbidden("this form's token is missing or out of date: reload the page and try again")
                if login:
                    ctx.granted = await run_in_threadpool(self.granted_app, ctx.session)
                response = await run_in_threadpool(handler, self, ctx)
            except NeedLogin:
                response = RedirectResponse(self.base(ctx) + "/login", 303)
            except DiaristError as exc:
                status = exc.status if exc.status >= 400 else 500
                message = str(exc)
                location = self.memory.location
                if status >= 500 and location:  # where the database lives stays in the server's log
                    message = message.replace(str(location), "the database")
                response = self.render(ctx, "error.html", status, message=message, code=status)
            finally:
                if ctx.form is not None:
                    await ctx.form.close()
            if fresh or ctx.extra_cookie is not None:
                cookie = ctx.extra_cookie or ctx.session
                response.set_cookie(COOKIE, self.signer.dump(cookie), httponly=True, samesite="strict",
                                    path=self.base(ctx) or "/", secure=request.url.scheme == "https")
            response.headers.update(SECURITY_HEADERS)
            return response

        return run


def q(value: Any) -> str:
    return quote(str(value), safe="")


def to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def item_path(app: str, kind: str, item_id: str) -> str:
    return f"/apps/{q(app)}/items/{kind}/{q(item_id)}"


def kind_of(value: str) -> str:
    if value not in ("session", "fact"):
        raise InvalidInput(f"kind must be session or fact, got {value[:40]!r}")
    return value


def whole_number(text: str, name: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, got {text[:40]!r}") from None
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be from {low} to {high}, got {value}")
    return value


def number(text: str, name: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InvalidInput(f"{name} must be a number, got {text[:40]!r}") from None
