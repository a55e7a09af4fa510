"""The apps (with their counts), an app's memories (browsed by kind, source, dates and metadata:
``ui.browse``), and deleting an app."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.responses import Response
from starlette.routing import Route

from ...errors import InvalidInput, NotFound
from .. import browse
from ..curate import SUPERSEDED_BY
from .common import Ctx, Site, q, whole_number
from .imports import import_report


def index(site: Site, ctx: Ctx) -> Response:
    if ctx.granted is not None:
        return site.redirect(ctx, f"/apps/{q(ctx.granted)}")
    return site.render(ctx, "index.html", apps=[(name, site.counts(name)) for name in site.memory.apps()],
                       deleted=ctx.param("deleted") or None)


def app_page(site: Site, ctx: Ctx) -> Response:
    memory = site.memory
    app = site.grant(ctx, ctx.request.path_params["app"])
    kind = ctx.param("kind", "session")
    if kind not in ("session", "fact"):
        raise InvalidInput(f"kind must be session or fact, got {kind[:40]!r}")
    meta_text = ctx.param("meta")
    filters = browse.Filters(kind=kind, source=ctx.param("source").strip() or None,
                             since=browse.check_day(ctx.param("since"), "from"),
                             until=browse.check_day(ctx.param("until"), "to"),
                             metadata=browse.parse_metadata_filter(meta_text))
    offset = whole_number(ctx.param("offset", "0"), "offset", 0, 10**9)
    known = app in memory.apps()
    rows, more = browse.page(memory, app, filters, offset) if known else ([], False)
    items = []
    for row in rows:
        try:
            item = memory.get(row["id"], app=app, kind=row["kind"])
        except NotFound:  # deleted since the page of ids was read
            continue
        items.append({**row, "title": item["metadata"].get("title"), "source": item["metadata"].get("source"),
                      "superseded_by": item["metadata"].get(SUPERSEDED_BY),
                      "preview": browse.preview(item)})
    query = {"kind": kind, "source": filters.source or "", "since": filters.since or "",
             "until": filters.until or "", "meta": meta_text}
    return site.render(ctx, "app.html", app=app, stats=site.counts(app), model=memory.embedder.model_id, items=items,
                       filters=query, offset=offset,
                       next_offset=offset + browse.PAGE_SIZE if more else None,
                       prev_offset=max(0, offset - browse.PAGE_SIZE) if offset else None,
                       page_query=urlencode(query), imported=import_report(ctx), deleted=ctx.param("deleted") or None)


def confirm_delete_app(site: Site, ctx: Ctx) -> Response:
    app = site.grant(ctx, ctx.request.path_params["app"])
    return site.render(ctx, "confirm.html", app=app, what=f"app {app} and everything it holds", item=None,
                       stats=site.counts(app), action=f"/apps/{q(app)}/delete", confirm_value=app)


def delete_app(site: Site, ctx: Ctx) -> Response:
    app = site.grant(ctx, ctx.request.path_params["app"])
    if ctx.field("confirm") != app:
        raise InvalidInput(f"to delete app {app!r}, type its name in the confirmation box")
    site.memory.delete_app(app)
    return site.redirect(ctx, "/" if ctx.granted is None else f"/apps/{q(app)}", deleted=app)


def routes(site: Site) -> list[Route]:
    return [
        Route("/", site.endpoint(index), methods=["GET"]),
        Route("/apps/{app}", site.endpoint(app_page), methods=["GET"]),
        Route("/apps/{app}/delete", site.endpoint(confirm_delete_app), methods=["GET"]),
        Route("/apps/{app}/delete", site.endpoint(delete_app, post=True), methods=["POST"]),
    ]
