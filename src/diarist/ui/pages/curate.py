"""Curate: pairs of memories to merge, delete or mark as superseded (``Memory.similar_pairs``),
and a person's choice on one (``ui.curate.apply``)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from .. import curate
from .common import Ctx, Site, kind_of, number, q


def curate_page(site: Site, ctx: Ctx) -> Response:
    app = site.grant(ctx, ctx.request.path_params["app"])
    duplicate = number(ctx.param("duplicate", str(curate.DUPLICATE_COSINE)), "duplicate")
    related = number(ctx.param("related", str(curate.RELATED_COSINE)), "related")
    memory = site.memory
    found = memory.similar_pairs(app, duplicate=duplicate, related=related) if app in memory.apps() else None
    return site.render(ctx, "curate.html", app=app, found=found, duplicate=duplicate, related=related,
                       done=ctx.param("done") or None)


def curate_action(site: Site, ctx: Ctx) -> Response:
    app = site.grant(ctx, ctx.request.path_params["app"])
    keep = (kind_of(ctx.field("keep_kind")), ctx.field("keep_id"))
    other = (kind_of(ctx.field("other_kind")), ctx.field("other_id"))
    done = curate.apply(site.memory, app, ctx.field("action"), keep, other)
    return site.redirect(ctx, f"/apps/{q(app)}/curate", done=done)


def routes(site: Site) -> list[Route]:
    return [
        Route("/apps/{app}/curate", site.endpoint(curate_page), methods=["GET"]),
        Route("/apps/{app}/curate", site.endpoint(curate_action, post=True), methods=["POST"]),
    ]
