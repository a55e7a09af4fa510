"""The inspector's pages: a Starlette app over one ``Memory``, mounted at ``/ui``.

Every page is rendered on the server (Jinja2, autoescaped: memory text is never markup); the
only script is the upload's progress bar. Every request that changes anything is a POST whose
form carries the session's CSRF token; every page and form of an app first checks that the
session may see that app (``keyed``: the one app of the API key it logged in with; local: any).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import InvalidInput, KeyForbidden, KeyRefused, NotFound, UnknownApp, DiaristError
from ..memory import Memory
from ..server.handlers import decoded_params
from ..server.middleware import EncodedPath, Wrapper
from . import browse, curate, explain
from .session import COOKIE, Session, Signer, new_session

HERE = Path(__file__).parent
STATIC = HERE / "static"
PREFIX = "/ui"
ASK_K = 10
MAX_ASK_K = 50
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
_UNSAFE_NAME = re.compile(r"[^\w.-]+")


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


def _q(value: Any) -> str:
    return quote(str(value), safe="")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def create_ui(memory: Memory, *, keyed: bool, allowed_hosts: tuple[str, ...] | None = None) -> EncodedPath:
    """The inspector over ``memory``. ``keyed``: ask for an API key and show only its app
    (``diarist serve``); otherwise every app, and only to requests addressed to a loopback
    host (``diarist ui``: a web page elsewhere cannot reach it through DNS rebinding).
    ``allowed_hosts``: the Host names accepted in local mode (default: loopback names)."""
    signer = Signer(memory.keys)
    hosts = allowed_hosts or LOOPBACK_HOSTS
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))
    env.filters["q"] = _q
    env.filters["json"] = _json

    def granted_app(session: Session) -> str | None:
        if not keyed:
            return None
        if session.key_hash is None:
            raise NeedLogin
        app = memory.keys.app_for_hash(session.key_hash)
        if app is None:
            raise NeedLogin
        return app

    def grant(ctx: Ctx, app: str) -> str:
        if ctx.granted is not None and app != ctx.granted:
            raise KeyForbidden(f"this session's API key does not grant access to app {app!r}")
        return app

    def base(ctx: Ctx) -> str:
        return ctx.request.scope.get("root_path", "").rstrip("/")

    def render(ctx: Ctx, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        page = env.get_template(name).render(
            base=base(ctx), csrf=signer.csrf(ctx.session), keyed=keyed, granted=ctx.granted, **values)
        return HTMLResponse(page, status)

    def redirect(ctx: Ctx, path: str, **query: Any) -> RedirectResponse:
        tail = ("?" + urlencode({k: v for k, v in query.items() if v is not None})) if query else ""
        return RedirectResponse(base(ctx) + path + tail, 303)

    def host_ok(request: Request) -> bool:
        if keyed:
            return True
        host = request.headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return name in hosts

    def endpoint(handler: Callable[[Ctx], Response], *, post: bool = False, login: bool = True
                 ) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            request.scope["path_params"] = decoded_params(request.path_params)  # matched encoded: ids may hold "/"
            session = signer.load(request.cookies.get(COOKIE))
            fresh = session is None
            ctx = Ctx(request, session or new_session(), None)
            try:
                if not host_ok(request):
                    raise KeyForbidden("the inspector answers only requests addressed to this machine (127.0.0.1)")
                if post:
                    ctx.form = await request.form(max_files=1, max_fields=50)
                    if fresh or not signer.csrf_ok(ctx.session, ctx.form.get("csrf")):
                        raise KeyForbidden("this form's token is missing or out of date: reload the page and try again")
                if login:
                    ctx.granted = await run_in_threadpool(granted_app, ctx.session)
                response = await run_in_threadpool(handler, ctx)
            except NeedLogin:
                response = RedirectResponse(base(ctx) + "/login", 303)
            except DiaristError as exc:
                status = exc.status if exc.status >= 400 else 500
                message = str(exc)
                if status >= 500 and memory.location:  # where the database lives stays in the server's log
                    message = message.replace(str(memory.location), "the database")
                response = render(ctx, "error.html", status, message=message, code=status)
            finally:
                if ctx.form is not None:
                    await ctx.form.close()
            if fresh or ctx.extra_cookie is not None:
                cookie = ctx.extra_cookie or ctx.session
                response.set_cookie(COOKIE, signer.dump(cookie), httponly=True, samesite="strict",
                                    path=base(ctx) or "/", secure=request.url.scheme == "https")
            response.headers.update(SECURITY_HEADERS)
            return response

        return run

    # -- who -------------------------------------------------------------------------------

    def login_page(ctx: Ctx) -> Response:
        return render(ctx, "login.html")

    def login(ctx: Ctx) -> Response:
        key = ctx.field("key").strip()
        try:
            app = memory.keys.app_for(key)
        except KeyRefused as exc:
            return render(ctx, "login.html", 401, message=str(exc))
        ctx.extra_cookie = new_session(key)  # a new nonce: a session fixed before login is worth nothing
        return redirect(ctx, f"/apps/{_q(app)}")

    def logout(ctx: Ctx) -> Response:
        signer.revoke(ctx.session)  # the cookie, wherever it was copied, opens nothing now
        ctx.extra_cookie = new_session()
        return redirect(ctx, "/login" if keyed else "/")

    # -- browse ----------------------------------------------------------------------------

    # An app's counts, kept while its version stands (every write moves it): counting the
    # messages of 100k chunks takes ~0.3 s, reading the version well under 1 ms.
    counted: dict[str, tuple[Any, dict[str, Any]]] = {}

    def counts(app: str) -> dict[str, Any]:
        version = memory.app_version(app)
        if version is None:
            return {"sessions": 0, "messages": 0, "facts": 0, "chunks": 0, "lexical_index": "empty"}
        kept = counted.get(app)
        if kept is not None and kept[0] == version:
            return kept[1]
        try:
            stats = memory.app_stats(app)
        except UnknownApp:  # deleted since its version was read
            return counts(app)
        counted[app] = (version, stats)  # the version read before counting: a write between only recounts
        return stats

    def index(ctx: Ctx) -> Response:
        if ctx.granted is not None:
            return redirect(ctx, f"/apps/{_q(ctx.granted)}")
        return render(ctx, "index.html", apps=[(name, counts(name)) for name in memory.apps()],
                      deleted=ctx.param("deleted") or None)

    def app_page(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"])
        kind = ctx.param("kind", "session")
        if kind not in ("session", "fact"):
            raise InvalidInput(f"kind must be session or fact, got {kind[:40]!r}")
        meta_text = ctx.param("meta")
        filters = browse.Filters(kind=kind, source=ctx.param("source").strip() or None,
                                 since=browse.check_day(ctx.param("since"), "from"),
                                 until=browse.check_day(ctx.param("until"), "to"),
                                 metadata=browse.parse_metadata_filter(meta_text))
        offset = _int(ctx.param("offset", "0"), "offset", 0, 10**9)
        known = app in memory.apps()
        rows, more = browse.page(memory, app, filters, offset) if known else ([], False)
        items = []
        for row in rows:
            try:
                item = memory.get(row["id"], app=app, kind=row["kind"])
            except NotFound:  # deleted since the page of ids was read
                continue
            items.append({**row, "title": item["metadata"].get("title"), "source": item["metadata"].get("source"),
                          "superseded_by": item["metadata"].get(curate.SUPERSEDED_BY),
                          "preview": browse.preview(item)})
        query = {"kind": kind, "source": filters.source or "", "since": filters.since or "",
                 "until": filters.until or "", "meta": meta_text}
        return render(ctx, "app.html", app=app, stats=counts(app), model=memory.embedder.model_id, items=items,
                      filters=query, offset=offset,
                      next_offset=offset + browse.PAGE_SIZE if more else None,
                      prev_offset=max(0, offset - browse.PAGE_SIZE) if offset else None,
                      page_query=urlencode(query), imported=_report(ctx), deleted=ctx.param("deleted") or None)

    def item_page(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"])
        kind, item_id = _kind(ctx.request.path_params["kind"]), ctx.request.path_params["item_id"]
        item = memory.get(item_id, app=app, kind=kind)
        versions = memory.history(item_id, app=app, kind=kind)
        return render(ctx, "item.html", app=app, kind=kind, item_id=item_id, item=item, versions=versions,
                      saved=ctx.param("saved") or None)

    # -- ask -------------------------------------------------------------------------------

    def ask_page(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"])
        query = ctx.param("q").strip()
        k = _int(ctx.param("k", str(ASK_K)), "k", 1, MAX_ASK_K)
        view = None
        if query:
            if app in memory.apps():
                view = explain.ask(memory, app, query, k)
            else:
                view = explain.AskView(query=query, notes=[f"app {app!r} holds no memory yet"])
        return render(ctx, "ask.html", app=app, query=query, k=k, view=view)

    # -- fix -------------------------------------------------------------------------------

    def edit_text(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"])
        kind, item_id = _kind(ctx.request.path_params["kind"]), ctx.request.path_params["item_id"]
        if kind != "fact":
            raise InvalidInput("only a fact's text is edited here; a session's messages are its record")
        report = memory.update(item_id, app=app, kind=kind, text=ctx.field("text"))
        return redirect(ctx, _item_path(app, kind, item_id), saved="unchanged" if report.unchanged else "text")

    def set_metadata(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"])
        kind, item_id = _kind(ctx.request.path_params["kind"]), ctx.request.path_params["item_id"]
        key = ctx.field("key").strip()
        if not key:
            raise InvalidInput("give the metadata key to set")
        raw = ctx.field("value")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw  # not JSON: the text itself
        report = memory.update(item_id, app=app, kind=kind, metadata={key: value}, merge_metadata=True)
        return redirect(ctx, _item_path(app, kind, item_id), saved="unchanged" if report.unchanged else "metadata")

    def remove_metadata(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"])
        kind, item_id = _kind(ctx.request.path_params["kind"]), ctx.request.path_params["item_id"]
        key = ctx.field("key")
        current = memory.get(item_id, app=app, kind=kind)["metadata"]
        if key not in current:
            raise NotFound(f"{kind} {item_id!r} has no metadata key {key!r}")
        memory.update(item_id, app=app, kind=kind, metadata={k: v for k, v in current.items() if k != key})
        return redirect(ctx, _item_path(app, kind, item_id), saved="metadata")

    def confirm_delete_item(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"])
        kind, item_id = _kind(ctx.request.path_params["kind"]), ctx.request.path_params["item_id"]
        item = memory.get(item_id, app=app, kind=kind)
        return render(ctx, "confirm.html", app=app, what=f"{kind} {item_id}", item=item,
                      action=_item_path(app, kind, item_id) + "/delete", confirm_value=None)

    def delete_item(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"])
        kind, item_id = _kind(ctx.request.path_params["kind"]), ctx.request.path_params["item_id"]
        memory.delete(item_id, app=app, kind=kind)
        return redirect(ctx, f"/apps/{_q(app)}", kind=kind, deleted=item_id)

    def confirm_delete_app(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"])
        return render(ctx, "confirm.html", app=app, what=f"app {app} and everything it holds", item=None,
                      stats=counts(app), action=f"/apps/{_q(app)}/delete", confirm_value=app)

    def delete_app(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"])
        if ctx.field("confirm") != app:
            raise InvalidInput(f"to delete app {app!r}, type its name in the confirmation box")
        memory.delete_app(app)
        return redirect(ctx, "/" if ctx.granted is None else f"/apps/{_q(app)}", deleted=app)

    def import_file(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"] if "app" in ctx.request.path_params else ctx.field("app").strip())
        upload = ctx.form.get("file") if ctx.form is not None else None
        if not isinstance(upload, UploadFile) or not upload.filename:
            raise InvalidInput("choose a file to import")
        report = _ingest(memory, app, upload)
        return redirect(ctx, f"/apps/{_q(app)}", **report)

    def export_file(ctx: Ctx) -> Response:
        from ..export import jsonl_lines

        app = grant(ctx, ctx.request.path_params["app"])
        memory.export(app=app)  # refuses an unknown app before the download starts
        name = _UNSAFE_NAME.sub("_", app).strip("._") or "app"
        return StreamingResponse((line + "\n" for line in jsonl_lines(memory, app)), media_type="application/x-ndjson",
                                 headers={"Content-Disposition": f'attachment; filename="{name}.jsonl"'})

    # -- curate ----------------------------------------------------------------------------

    def curate_page(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"])
        duplicate = _float(ctx.param("duplicate", str(curate.DUPLICATE_COSINE)), "duplicate")
        related = _float(ctx.param("related", str(curate.RELATED_COSINE)), "related")
        found = memory.similar_pairs(app, duplicate=duplicate, related=related) if app in memory.apps() else None
        return render(ctx, "curate.html", app=app, found=found, duplicate=duplicate, related=related,
                      done=ctx.param("done") or None)

    def curate_action(ctx: Ctx) -> Response:
        app = grant(ctx, ctx.request.path_params["app"])
        keep = (_kind(ctx.field("keep_kind")), ctx.field("keep_id"))
        other = (_kind(ctx.field("other_kind")), ctx.field("other_id"))
        done = curate.apply(memory, app, ctx.field("action"), keep, other)
        return redirect(ctx, f"/apps/{_q(app)}/curate", done=done)

    item = "/apps/{app}/items/{kind}/{item_id}"  # matched percent-encoded (EncodedPath): "/" is %2F in an id
    routes = [
        Route("/", endpoint(index), methods=["GET"]),
        Route("/login", endpoint(login_page, login=False), methods=["GET"]),
        Route("/login", endpoint(login, post=True, login=False), methods=["POST"]),
        Route("/logout", endpoint(logout, post=True, login=False), methods=["POST"]),
        Route("/import", endpoint(import_file, post=True), methods=["POST"]),
        Route("/apps/{app}", endpoint(app_page), methods=["GET"]),
        Route("/apps/{app}/ask", endpoint(ask_page), methods=["GET"]),
        Route("/apps/{app}/curate", endpoint(curate_page), methods=["GET"]),
        Route("/apps/{app}/curate", endpoint(curate_action, post=True), methods=["POST"]),
        Route("/apps/{app}/delete", endpoint(confirm_delete_app), methods=["GET"]),
        Route("/apps/{app}/delete", endpoint(delete_app, post=True), methods=["POST"]),
        Route("/apps/{app}/import", endpoint(import_file, post=True), methods=["POST"]),
        Route("/apps/{app}/export.jsonl", endpoint(export_file), methods=["GET"]),
        Route(item + "/text", endpoint(edit_text, post=True), methods=["POST"]),
        Route(item + "/metadata", endpoint(set_metadata, post=True), methods=["POST"]),
        Route(item + "/metadata/remove", endpoint(remove_metadata, post=True), methods=["POST"]),
        Route(item + "/delete", endpoint(confirm_delete_item), methods=["GET"]),
        Route(item + "/delete", endpoint(delete_item, post=True), methods=["POST"]),
        Route(item, endpoint(item_page), methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    pages = Starlette(routes=routes)
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


def _item_path(app: str, kind: str, item_id: str) -> str:
    return f"/apps/{_q(app)}/items/{kind}/{_q(item_id)}"


def _kind(value: str) -> str:
    if value not in ("session", "fact"):
        raise InvalidInput(f"kind must be session or fact, got {value[:40]!r}")
    return value


def _int(text: str, name: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, got {text[:40]!r}") from None
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be from {low} to {high}, got {value}")
    return value


def _float(text: str, name: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InvalidInput(f"{name} must be a number, got {text[:40]!r}") from None


def _report(ctx: Ctx) -> dict[str, int] | None:
    """The counts an import redirected with (numbers only: nothing a link could make the page say)."""
    found = {name: ctx.param(name) for name in ("added", "replaced", "unchanged", "facts")}
    if not any(found.values()):
        return None
    return {name: int(v) if v.isdigit() else 0 for name, v in found.items()}


def _ingest(memory: Memory, app: str, upload: UploadFile) -> dict[str, int]:
    """Read an uploaded file with the importers (format detected as ``diarist ingest`` does) and
    store it through the import funnel (``importers.load``), as ``diarist ingest`` does."""
    from ..importers import read_all
    from ..importers.load import check_imported, store_imported

    name = _UNSAFE_NAME.sub("_", Path(upload.filename or "upload").name).strip("._") or "upload"
    with tempfile.TemporaryDirectory(prefix="diarist-ui-") as folder:
        path = Path(folder) / name
        with open(path, "wb") as out:
            upload.file.seek(0)
            while block := upload.file.read(1 << 20):
                out.write(block)
        try:
            imported = read_all(path)
            check_imported(imported, name)
        except InvalidInput as exc:  # named by the file's own name, never the server's temporary folder
            raise InvalidInput(str(exc).replace(str(path), name).replace(folder, "")) from None
    stored = store_imported(memory, imported, app=app)
    report, facts = stored.sessions, stored.facts
    return {"added": len(report.added), "replaced": len(report.replaced), "unchanged": len(report.unchanged),
            "facts": len(facts.added) if facts else 0}


def local_app(memory: Memory, *, allowed_hosts: tuple[str, ...] | None = None) -> SecurityHeaders:
    """``diarist ui``: the inspector at /ui (every app, loopback only), / sending there."""

    async def home(request: Request) -> Response:
        return RedirectResponse(PREFIX + "/", 307)

    ui = create_ui(memory, keyed=False, allowed_hosts=allowed_hosts)
    return SecurityHeaders(Starlette(routes=[Route("/", home), Mount(PREFIX, app=ui)]))


__all__ = ["CSP", "PREFIX", "create_ui", "local_app"]
