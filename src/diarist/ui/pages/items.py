"""One memory: its text or messages, its metadata and the versions ``update`` kept."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from .common import Ctx, Site, kind_of

ITEM = "/apps/{app}/items/{kind}/{item_id}"  # matched percent-encoded (EncodedPath): "/" is %2F in an id


def item_page(site: Site, ctx: Ctx) -> Response:
    app = site.grant(ctx, ctx.request.path_params["app"])
    kind, item_id = kind_of(ctx.request.path_params["kind"]), ctx.request.path_params["item_id"]
    item = site.memory.get(item_id, app=app, kind=kind)
    versions = site.memory.history(item_id, app=app, kind=kind)
    return site.render(ctx, "item.html", app=app, kind=kind, item_id=item_id, item=item, versions=versions,
                       saved=ctx.param("saved") or None)


def routes(site: Site) -> list[Route]:
    return [Route(ITEM, site.endpoint(item_page), methods=["GET"])]
