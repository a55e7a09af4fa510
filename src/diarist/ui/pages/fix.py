"""Fixing one memory: a fact's text, a metadata key set or removed, the memory deleted (each
``Memory.update`` keeps the previous version)."""

from __future__ import annotations

import json

from starlette.responses import Response
from starlette.routing import Route

from ...errors import InvalidInput, NotFound
from .common import Ctx, Site, item_path, kind_of, q
from .items import ITEM


def edit_text(site: Site, ctx: Ctx) -> Response:
    app = site.grant(ctx, ctx.request.path_params["app"])
    kind, item_id = kind_of(ctx.request.path_params["kind"]), ctx.request.path_params["item_id"]
    if kind != "fact":
        raise InvalidInput("only a fact's text is edited here; a session's messages are its record")
    report = site.memory.update(item_id, app=app, kind=kind, text=ctx.field("text"))
    return site.redirect(ctx, item_path(app, kind, item_id), saved="unchanged" if report.unchanged else "text")


def set_metadata(site: Site, ctx: Ctx) -> Response:
    app = site.grant(ctx, ctx.request.path_params["app"])
    kind, item_id = kind_of(ctx.request.path_params["kind"]), ctx.request.path_params["item_id"]
    key = ctx.field("key").strip()
    if not key:
        raise InvalidInput("give the metadata key to set")
    raw = ctx.field("value")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw  # not JSON: the text itself
    report = site.memory.update(item_id, app=app, kind=kind, metadata={key: value}, merge_metadata=True)
    return site.redirect(ctx, item_path(app, kind, item_id), saved="unchanged" if report.unchanged else "metadata")


def remove_metadata(site: Site, ctx: Ctx) -> Response:
    app = site.grant(ctx, ctx.request.path_params["app"])
    kind, item_id = kind_of(ctx.request.path_params["kind"]), ctx.request.path_params["item_id"]
    key = ctx.field("key")
    current = site.memory.get(item_id, app=app, kind=kind)["metadata"]
    if key not in current:
        raise NotFound(f"{kind} {item_id!r} has no metadata key {key!r}")
    site.memory.update(item_id, app=app, kind=kind, metadata={k: v for k, v in current.items() if k != key})
    return site.redirect(ctx, item_path(app, kind, item_id), saved="metadata")


def confirm_delete_item(site: Site, ctx: Ctx) -> Response:
    app = site.grant(ctx, ctx.request.path_params["app"])
    kind, item_id = kind_of(ctx.request.path_params["kind"]), ctx.request.path_params["item_id"]
    item = site.memory.get(item_id, app=app, kind=kind)
    return site.render(ctx, "confirm.html", app=app, what=f"{kind} {item_id}", item=item,
                       action=item_path(app, kind, item_id) + "/delete", confirm_value=None)


def delete_item(site: Site, ctx: Ctx) -> Response:
    app = site.grant(ctx, ctx.request.path_params["app"])
    kind, item_id = kind_of(ctx.request.path_params["kind"]), ctx.request.path_params["item_id"]
    site.memory.delete(item_id, app=app, kind=kind)
    return site.redirect(ctx, f"/apps/{q(app)}", kind=kind, deleted=item_id)


def routes(site: Site) -> list[Route]:
    return [
        Route(ITEM + "/text", site.endpoint(edit_text, post=True), methods=["POST"]),
        Route(ITEM + "/metadata", site.endpoint(set_metadata, post=True), methods=["POST"]),
        Route(ITEM + "/metadata/remove", site.endpoint(remove_metadata, post=True), methods=["POST"]),
        Route(ITEM + "/delete", site.endpoint(confirm_delete_item), methods=["GET"]),
        Route(ITEM + "/delete", site.endpoint(delete_item, post=True), methods=["POST"]),
    ]
