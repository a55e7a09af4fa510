"""Who is looking: the login page (keyed mode: an API key), login and logout."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ...errors import KeyRefused
from ..session import new_session
from .common import Ctx, Site, q


def login_page(site: Site, ctx: Ctx) -> Response:
    return site.render(ctx, "login.html")


def login(site: Site, ctx: Ctx) -> Response:
    key = ctx.field("key").strip()
    try:
        app = site.memory.keys.app_for(key)
    except KeyRefused as exc:
        return site.render(ctx, "login.html", 401, message=str(exc))
    ctx.extra_cookie = new_session(key)  # a new nonce: a session fixed before login is worth nothing
    return site.redirect(ctx, f"/apps/{q(app)}")


def logout(site: Site, ctx: Ctx) -> Response:
    site.signer.revoke(ctx.session)  # the cookie, wherever it was copied, opens nothing now
    ctx.extra_cookie = new_session()
    return site.redirect(ctx, "/login" if site.keyed else "/")


def routes(site: Site) -> list[Route]:
    return [
        Route("/login", site.endpoint(login_page, login=False), methods=["GET"]),
        Route("/login", site.endpoint(login, post=True, login=False), methods=["POST"]),
        Route("/logout", site.endpoint(logout, post=True, login=False), methods=["POST"]),
    ]
