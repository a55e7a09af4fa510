"""Ask: a question's hits with why each came back, what each stage left out, and the block
(``ui.explain``)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from .. import explain
from .common import Ctx, Site, whole_number

ASK_K = 10
MAX_ASK_K = 50


def ask_page(site: Site, ctx: Ctx) -> Response:
    app = site.grant(ctx, ctx.request.path_params["app"])
    query = ctx.param("q").strip()
    k = whole_number(ctx.param("k", str(ASK_K)), "k", 1, MAX_ASK_K)
    view = None
    if query:
        if app in site.memory.apps():
            view = explain.ask(site.memory, app, query, k)
        else:
            view = explain.AskView(query=query, notes=[f"app {app!r} holds no memory yet"])
    return site.render(ctx, "ask.html", app=app, query=query, k=k, view=view)


def routes(site: Site) -> list[Route]:
    return [Route("/apps/{app}/ask", site.endpoint(ask_page), methods=["GET"])]
