"""The HTTP API: FastAPI over one ``Memory``, every route scoped to one app by its API key.

``create_app(memory)`` builds the application; ``app_from_env()`` is the factory uvicorn workers
import (the server edge is where environment variables are read). Errors are JSON,
``{"error": {"status", "code", "message"}}``, with the status that fits.
"""


import asyncio
import json
import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import settings
from ..context import place_context
from ..errors import InvalidInput, UnknownApp, VestigeError
from ..health import check
from ..memory import Memory
from ..store.sqlite.connection import translate
from ..write.validate import FactInput, SessionInput, check_json, check_metadata

log = logging.getLogger("vestige.server")

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_PAGE = 500
MAX_K = 100
MAX_TEXT = 100_000
MAX_QUERY = 10_000
MAX_METADATA_BYTES = 64 * 1024  # as vestige.write.validate checks it
HEALTH_MAX_APPS = 10  # the unauthenticated /health self-checks at most this many apps

# -- request and response bodies -------------------------------------------------------------

Role = Literal["user", "assistant", "system", "tool"]
Id = Annotated[str, Field(min_length=1, max_length=256)]


def _check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    # The library's own check (plain JSON, valid Unicode, bounded depth and size): an
    # InvalidInput is a ValueError, which pydantic reports as a 422 naming the field.
    return check_metadata(value)


def _check_chat(messages: "list[ChatMessage] | None") -> "list[ChatMessage] | None":
    # The messages are sent back (with the block placed): every string in them must be
    # encodable, or the response itself could not be written.
    for i, message in enumerate(messages or ()):
        check_json(message.model_dump(), f"message {i}")
    return messages


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageIn(Strict):
    role: Role
    content: str = Field(min_length=1, max_length=1_000_000)
    time: str | None = Field(default=None, max_length=64, description="When the message was sent (ISO 8601).")


class SessionIn(Strict):
    session_id: Id | None = Field(default=None, description="Your id; default: a hash of the content.")
    date: str | None = Field(default=None, max_length=64, description="When the session happened (ISO 8601).")
    metadata: dict[str, Any] = Field(default_factory=dict)
    messages: list[MessageIn] = Field(min_length=1, max_length=10_000)

    _metadata = field_validator("metadata")(_check_metadata)


class SessionsIn(Strict):
    sessions: list[SessionIn] = Field(min_length=1, max_length=100)


class MessagesIn(Strict):
    messages: list[MessageIn] = Field(min_length=1, max_length=1_000)
    date: str | None = Field(default=None, max_length=64, description="Date of the session if it is new.")


class FactIn(Strict):
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    fact_id: Id | None = None
    date: str | None = Field(default=None, max_length=64)
    metadata: dict[str, Any] = Field(default_factory=dict)

    _metadata = field_validator("metadata")(_check_metadata)


class SearchIn(Strict):
    query: str = Field(min_length=1, max_length=MAX_QUERY)
    k: int = Field(default=settings.HTTP_K, ge=1, le=MAX_K)
    previous: str | None = Field(default=None, max_length=MAX_QUERY, description="The previous turn, for a follow-up.")
    where: dict[str, Any] | None = Field(
        default=None, description='Only items whose metadata has these top-level keys equal to these values, e.g. {"source": "chat"}.')
    explain: bool = Field(default=False, description="Say why each hit was recalled (`why`) and what each stage left out (`dropped`).")

    _where = field_validator("where")(lambda v: v if v is None else _check_metadata(v))


class FactUpdateIn(Strict):
    text: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT, description="The new text (default: kept).")
    date: str | None = Field(default=None, max_length=64, description="The new date (default: kept).")
    metadata: dict[str, Any] | None = Field(default=None, description="The new metadata, whole (default: kept).")

    _metadata = field_validator("metadata")(lambda v: v if v is None else _check_metadata(v))


class VersionOut(BaseModel):
    replaced_at: str
    kind: Literal["session", "fact"]
    session_id: str | None = None
    fact_id: str | None = None
    date: str | None
    metadata: dict[str, Any]
    text: str | None = None
    messages: list[dict[str, Any]] | None = None


class HistoryOut(BaseModel):
    versions: list[VersionOut] = Field(description="Previous versions kept by updates, oldest first.")


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str = Field(max_length=64)
    content: str | list[dict[str, Any]] | None = None


class ContextIn(Strict):
    query: str | None = Field(default=None, min_length=1, max_length=MAX_QUERY,
                              description="The question; default: the last user turn of `messages`.")
    messages: list[ChatMessage] | None = Field(
        default=None, max_length=1_000,
        description="An OpenAI-style chat; the response returns it with the block in the last user turn.")
    previous: str | None = Field(default=None, max_length=MAX_QUERY)
    budget_tokens: int = Field(default=settings.CONTEXT_BUDGET_TOKENS, ge=1, le=100_000)
    k: int = Field(default=settings.CONTEXT_K, ge=1, le=MAX_K)
    order: Literal["date", "relevance"] = "date"
    explain: bool = Field(default=False, description="Say why each memory was chosen and what each stage left out.")

    _messages = field_validator("messages")(_check_chat)


class ErrorBody(BaseModel):
    status: int
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorBody


class StoredOut(BaseModel):
    id: str
    status: Literal["added", "replaced", "unchanged"]
    chunks: int


class BatchOut(BaseModel):
    added: list[str]
    replaced: list[str]
    unchanged: list[str]
    chunks: int


class HitOut(BaseModel):
    chunk_id: int
    session_id: str | None
    fact_id: str | None
    date: str | None
    text: str
    score: float
    ranks: dict[str, int | None]
    scores: dict[str, float | None]
    roles: list[str]
    view: str
    stage: str
    app: str | None
    first_turn: int | None = None
    last_turn: int | None = None
    id: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    passages: list[str] = Field(default_factory=list, description="The memory's best passages, in original order.")
    why: dict[str, Any] | None = Field(default=None, description="With explain: why it was recalled.")


class StageOut(BaseModel):
    stage: str
    kept: int
    dropped: int
    note: str


class DroppedOut(BaseModel):
    id: str
    stage: str
    reason: str
    score: float | None = None


class SearchOut(BaseModel):
    hits: list[HitOut]
    notes: list[str]
    trace: list[StageOut] = Field(default_factory=list, description="What each stage of the read path decided.")
    dropped: list[DroppedOut] = Field(default_factory=list, description="With explain: what each stage left out.")


class SnippetOut(HitOut):
    n_tokens: int
    earlier_than: int | None = None


class ContextOut(BaseModel):
    context: str = Field(description="The block to put in the prompt; empty when nothing relevant was found.")
    n_tokens: int
    snippets: list[SnippetOut]
    notes: list[str]
    trace: list[StageOut] = Field(default_factory=list, description="What each stage of the read path decided.")
    dropped: list[DroppedOut] = Field(default_factory=list, description="With explain: what each stage left out.")
    messages: list[dict[str, Any]] | None = None


class MessageOut(BaseModel):
    role: str
    content: str
    time: str | None


class ItemOut(BaseModel):
    kind: Literal["session", "fact"]
    session_id: str | None = None
    fact_id: str | None = None
    date: str | None
    metadata: dict[str, Any]
    text: str | None = None
    messages: list[MessageOut] | None = None


class ListOut(BaseModel):
    items: list[dict[str, Any]]
    limit: int
    offset: int
    next_offset: int | None = Field(description="Pass as `offset` for the next page; null on the last page.")


class DeletedOut(BaseModel):
    deleted: str


class StatsOut(BaseModel):
    app: str
    sessions: int
    messages: int
    facts: int
    chunks: int
    lexical_index: str
    embedder: str


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut, "description": text}
    for code, text in (
        (400, "Malformed request (e.g. an invalid Content-Length)"),
        (401, "Missing, unknown or revoked API key"),
        (403, "The key belongs to another app"),
        (404, "Not found"),
        (413, "Request body too large"),
        (422, "Invalid input"),
    )
}


# -- plumbing --------------------------------------------------------------------------------


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    # A message may quote the request (a field name): a lone surrogate there must not turn the
    # error into a 500 when the response is encoded.
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return JSONResponse({"error": {"status": status, "code": code, "message": message}}, status, headers=headers)


class _TooLarge(HTTPException):
    """Raised from inside the body stream; an HTTPException so FastAPI's body parser lets it through."""

    def __init__(self, message: str):
        super().__init__(413, message)


async def _run_guarding_body(
    app: Callable[..., Awaitable[None]], scope: dict, receive: Callable, send: Callable,
    guarded_receive: Callable, stopped: type[Exception], answer: JSONResponse,
) -> None:
    """Run ``app`` reading its body through ``guarded_receive``; when the guard stops the body
    (raising ``stopped``, which FastAPI's body parser lets through) before a response started,
    send ``answer`` instead."""
    started = False

    async def tracking_send(event: dict) -> None:
        nonlocal started
        if event["type"] == "http.response.start":
            started = True
        await send(event)

    try:
        await app(scope, guarded_receive, tracking_send)
    except stopped:
        if not started:
            await answer(scope, receive, send)


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, whether or not they declare a length."""

    def __init__(self, app: Callable[..., Awaitable[None]], max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = f"request body is over the {self.max_bytes:,}-byte limit"
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _error(400, "bad_request", "invalid Content-Length header")(scope, receive, send)
                    return
                if declared > self.max_bytes:
                    await _error(413, "too_large", message)(scope, receive, send)
                    return
        received = 0

        async def limited_receive() -> dict:
            nonlocal received
            event = await receive()
            if event["type"] == "http.request":
                received += len(event.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge(message)
            return event

        await _run_guarding_body(self.app, scope, receive, send, limited_receive, _TooLarge,
                                 _error(413, "too_large", message))


# -- slow clients ----------------------------------------------------------------------------

DEFAULT_TIMEOUT_SECONDS = 10.0  # a request's headers, and then its body, must arrive within this
TIMEOUT_ENV = "VESTIGE_TIMEOUT_SECONDS"


def timeout_from_env() -> float:
    """The request timeout ``vestige serve --timeout-seconds`` hands its workers (0: none)."""
    try:
        value = float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_SECONDS))
    except ValueError:
        return DEFAULT_TIMEOUT_SECONDS
    return value if value > 0 else 0.0


class _BodyTimedOut(HTTPException):
    """Raised from inside the body stream, like _TooLarge, so FastAPI's body parser lets it through."""

    def __init__(self, message: str):
        super().__init__(408, message, headers={"Connection": "close"})


class BodyTimeout:
    """A request's body must arrive whole within ``seconds`` of its headers: a client that sends
    part of a body and stalls gets 408 and its connection is closed (``Connection: close``).

    Only the body is timed: once it is complete, the app may take as long as it needs, and later
    ``receive()`` calls (waiting for a disconnect) are passed through untimed."""

    def __init__(self, app: Callable[..., Awaitable[None]], seconds: float):
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or not self.seconds:
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.seconds
        message = f"the request body did not arrive within {self.seconds:g} s"
        complete = False

        async def timed_receive() -> dict:
            nonlocal complete
            if complete:
                return await receive()
            try:
                event = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.0))
            except asyncio.TimeoutError:
                raise _BodyTimedOut(message) from None
            if event["type"] != "http.request" or not event.get("more_body", False):
                complete = True
            return event

        await _run_guarding_body(self.app, scope, receive, send, timed_receive, _BodyTimedOut,
                                 _error(408, "timeout", message, {"Connection": "close"}))


try:
    from uvicorn.protocols.http.h11_impl import H11Protocol
except ImportError:  # pragma: no cover - served by another ASGI server: BodyTimeout still applies
    H11Protocol = None  # type: ignore[assignment,misc]

if H11Protocol is not None:
    import h11

    def ambiguous_framing(request: "h11.Request") -> str | None:
        """Why a request's body framing is ambiguous (RFC 9112 section 6.1), or None.

        h11 reads Content-Length + Transfer-Encoding as chunked and keeps the connection open; a
        proxy in front that reads the Content-Length instead then forwards the bytes after the
        chunked body as a second request (smuggling). h11 already refuses differing
        Content-Length values and any coding but chunked."""
        names = {name for name, _ in request.headers}
        if b"transfer-encoding" in names and b"content-length" in names:
            return "a request may not carry both Content-Length and Transfer-Encoding"
        if b"transfer-encoding" in names and request.http_version == b"1.0":
            return "Transfer-Encoding is not allowed in an HTTP/1.0 request"
        return None

    class FramingCheckedConnection(h11.Connection):
        """h11's server connection that refuses a request whose framing is ambiguous: uvicorn
        answers the RemoteProtocolError with 400 and closes the connection, so nothing after the
        request's headers is ever read as a request."""

        def next_event(self) -> Any:
            event = super().next_event()
            if isinstance(event, h11.Request):
                reason = ambiguous_framing(event)
                if reason is not None:
                    log.warning("refused a request with ambiguous framing: %s", reason)
                    raise h11.RemoteProtocolError(reason, error_status_hint=400)
            return event

    class RequestTimeoutProtocol(H11Protocol):  # type: ignore[valid-type,misc]
        """uvicorn's h11 protocol with a deadline on each request's headers, refusing requests
        whose body framing is ambiguous (``FramingCheckedConnection``).

        uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but has no timeout
        for a connection that never completes a request line and headers: a client that
        connects and sends nothing, or trickles its headers a byte at a time (slowloris), held
        its connection for ever. Here a timer starts when the connection is made, and again
        when the first byte of each later request arrives; it is cancelled when the request's
        headers are complete (the body is then timed by ``BodyTimeout``). When it fires, a
        client that sent part of a request gets a 408, and the connection is closed.

        ``vestige serve`` passes it as ``http=`` to uvicorn; the timeout is ``timeout_seconds``
        or else ``$VESTIGE_TIMEOUT_SECONDS`` (default 10 s; 0: none). Importable by name, so
        that worker processes can load it."""

        timeout_seconds: float | None = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # Same settings as uvicorn's own connection; it also refuses ambiguous framing.
            limit = self.config.h11_max_incomplete_event_size
            self.conn = FramingCheckedConnection(h11.SERVER, *(() if limit is None else (limit,)))

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            self._request_timer: asyncio.TimerHandle | None = None
            self._partial = False
            seconds = self.timeout_seconds
            self._seconds = timeout_from_env() if seconds is None else seconds
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._partial = False
            if self._seconds:
                self._request_timer = self.loop.call_later(self._seconds, self._timed_out)

        def _disarm(self) -> None:
            if self._request_timer is not None:
                self._request_timer.cancel()
                self._request_timer = None

        def data_received(self, data: bytes) -> None:
            if self._request_timer is None and (self.cycle is None or self.cycle.response_complete):
                self._arm()  # the first bytes of the next request on a kept-alive connection
            self._partial = True
            super().data_received(data)

        def handle_events(self) -> None:
            before = self.cycle
            super().handle_events()
            if self.cycle is not before:  # a request's headers are complete
                self._disarm()

        def handle_websocket_upgrade(self, event: Any) -> None:
            self._disarm()
            super().handle_websocket_upgrade(event)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _timed_out(self) -> None:
            self._request_timer = None
            if self.transport.is_closing():
                return
            if self._partial:
                body = json.dumps({"error": {"status": 408, "code": "timeout", "message": (
                    f"the request headers did not arrive within {self._seconds:g} s")}}).encode()
                self.transport.write(
                    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
                    b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
                )
            log.info("closed a connection from %s: no complete request in %g s", self.client, self._seconds)
            self.transport.close()


def _describe(errors: list[dict[str, Any]]) -> str:
    parts = []
    for err in errors[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(parts) + more


# -- the application -------------------------------------------------------------------------


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
    keys = memory.keys
    api = FastAPI(
        title="vestige",
        version="1",
        description=(
            "Long-term memory for AI agents. Every route under `/v1/apps/{app}` needs that app's "
            "API key (`Authorization: Bearer <key>`; create one with `vestige keys create --app APP`)."
        ),
        docs_url=None,  # served below from local files: the stock page loads its assets from a CDN
        redoc_url=None,
    )
    _offline_docs(api)
    _inspector(api, memory)
    api.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    api.add_middleware(BodyTimeout, seconds=timeout_seconds)
    bearer = HTTPBearer(auto_error=False, description="A per-app key from `vestige keys create`.")

    def for_clients(message: str) -> str:
        """A server-side failure as a client may read it: where the database lives (a path, a
        host) is the operator's business, and stays in the server log."""
        location = str(memory.store.location or "")
        return message.replace(location, "the database") if location else message

    @api.exception_handler(VestigeError)
    async def vestige_error(request: Request, exc: VestigeError) -> JSONResponse:
        # Each error class carries its status and code (vestige.errors): nothing is matched by text.
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        if exc.status >= 500:
            log.error("%s on %s %s: %s", type(exc).__name__, request.method, request.url.path, exc)
            return _error(exc.status, exc.code, for_clients(str(exc)), headers)
        return _error(exc.status, exc.code, str(exc), headers)

    @api.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "invalid_input", _describe(list(exc.errors())))

    @api.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            cause = exc.__cause__
            if isinstance(cause, RecursionError):
                reason = "the request body is JSON nested too deeply"
            elif isinstance(cause, UnicodeDecodeError):
                reason = "the request body is not valid UTF-8"
            elif isinstance(cause, ValueError) and "digits" in str(cause):
                reason = "the request body holds a JSON number with too many digits"
            else:
                reason = "the request body is not valid JSON in UTF-8"
            return _error(422, "invalid_input", reason)
        code = {404: "not_found", 405: "method_not_allowed", 408: "timeout", 413: "too_large"}.get(exc.status_code, "error")
        return _error(exc.status_code, code, str(exc.detail), getattr(exc, "headers", None))

    @api.exception_handler(UnicodeError)
    async def bad_unicode(request: Request, exc: UnicodeError) -> JSONResponse:
        return _error(422, "invalid_input", "text is not valid Unicode (lone surrogate?)")

    @api.exception_handler(sqlite3.Error)
    async def storage_error(request: Request, exc: sqlite3.Error) -> JSONResponse:
        # Every store call translates its own errors; this is the net under any that does not.
        error = translate(exc, memory.store.location)
        log.error("%s on %s %s: %s", type(exc).__name__, request.method, request.url.path, error)
        return _error(error.status, error.code, for_clients(str(error)))

    @api.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return _error(500, "internal", f"internal error ({type(exc).__name__}); see the server log")

    def authorized(
        app: Annotated[str, Path(min_length=1, max_length=256, description="The app (isolation unit).")],
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> str:
        keys.check(credentials.credentials if credentials else None, app)
        return app

    App = Annotated[str, Depends(authorized)]
    Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page size.")]
    Offset = Annotated[int, Query(ge=0, le=10**9, description="Items to skip.")]

    def stored(report: Any) -> StoredOut:
        for status in ("added", "replaced", "unchanged"):
            ids = getattr(report, status)
            if ids:
                return StoredOut(id=ids[0], status=status, chunks=report.chunks)
        raise AssertionError("empty ingest report")  # pragma: no cover

    def as_input(s: SessionIn) -> SessionInput:
        return SessionInput([m.model_dump() for m in s.messages], s.session_id, s.date, s.metadata)

    # -- writing ---------------------------------------------------------------------------

    prefix = "/v1/apps/{app}"

    @api.post(f"{prefix}/sessions", status_code=201, response_model=StoredOut, responses=ERRORS, tags=["write"])
    def add_session(app: App, body: SessionIn) -> StoredOut:
        """Store one conversation session. Re-sending the same id with the same content changes nothing; new content replaces it."""
        return stored(memory.add_sessions([as_input(body)], app=app))

    @api.post(f"{prefix}/sessions/batch", status_code=201, response_model=BatchOut, responses=ERRORS, tags=["write"])
    def add_sessions(app: App, body: SessionsIn) -> BatchOut:
        """Store up to 100 sessions in one transaction: all of them, or none if any is invalid."""
        report = memory.add_sessions([as_input(s) for s in body.sessions], app=app)
        return BatchOut(added=report.added, replaced=report.replaced, unchanged=report.unchanged, chunks=report.chunks)

    @api.post(f"{prefix}/sessions/{{session_id}}/messages", status_code=201, response_model=StoredOut,
              responses=ERRORS, tags=["write"])
    def add_messages(app: App, session_id: Annotated[str, Path(min_length=1, max_length=256)], body: MessagesIn) -> StoredOut:
        """Append messages to a session (created if new); the session is re-indexed whole."""
        # Atomic across workers and processes: Memory.append_messages is a compare-and-swap.
        return stored(memory.append_messages(session_id, [m.model_dump() for m in body.messages], app=app,
                                             date=body.date))

    @api.post(f"{prefix}/facts", status_code=201, response_model=StoredOut, responses=ERRORS, tags=["write"])
    def add_fact(app: App, body: FactIn) -> StoredOut:
        """Store a short standalone note (a fact about the user, a preference, a decision)."""
        if not body.text.strip():
            raise InvalidInput("a fact must be a non-empty string")
        report = memory.add_facts([FactInput(body.text, body.fact_id, body.date, body.metadata)], app=app)
        return stored(report)  # an identical fact posted again is "unchanged", as a session is

    @api.patch(f"{prefix}/facts/{{fact_id}}", response_model=StoredOut, responses=ERRORS, tags=["write"])
    def update_fact(app: App, fact_id: Annotated[str, Path(min_length=1, max_length=256)], body: FactUpdateIn) -> StoredOut:
        """Change a fact's text, date or metadata; the previous version is kept (`.../history`)."""
        return stored(memory.update(fact_id, app=app, kind="fact", text=body.text, date=body.date,
                                    metadata=body.metadata))

    @api.get(f"{prefix}/facts/{{fact_id}}/history", response_model=HistoryOut, responses=ERRORS, tags=["read"])
    def fact_history(app: App, fact_id: Annotated[str, Path(min_length=1, max_length=256)]) -> HistoryOut:
        """The previous versions of a fact that updates kept, oldest first."""
        return HistoryOut(versions=[VersionOut(**v) for v in memory.history(fact_id, app=app, kind="fact")])

    @api.get(f"{prefix}/sessions/{{session_id}}/history", response_model=HistoryOut, responses=ERRORS, tags=["read"])
    def session_history(app: App, session_id: Annotated[str, Path(min_length=1, max_length=256)]) -> HistoryOut:
        """The previous versions of a session that updates kept, oldest first."""
        return HistoryOut(versions=[VersionOut(**v) for v in memory.history(session_id, app=app, kind="session")])

    # -- reading ---------------------------------------------------------------------------

    @api.post(f"{prefix}/search", response_model=SearchOut, responses=ERRORS, tags=["read"])
    def search(app: App, body: SearchIn) -> SearchOut:
        """The k most relevant memories (each session, note or fact once, with its best passages), best first; each shows its rank in the dense and lexical channels. With `explain`, each says why it was recalled and `dropped` lists what each stage left out."""
        if not body.query.strip():
            raise InvalidInput("the query is empty")
        if app not in memory.apps():
            return SearchOut(hits=[], notes=[f"app {app!r} holds no memory yet"])
        results = memory.search(body.query, app=app, k=body.k, previous=body.previous or None, where=body.where,
                                explain=body.explain)
        return SearchOut(**results.to_dict())

    @api.post(f"{prefix}/context", response_model=ContextOut, responses=ERRORS, tags=["read"])
    def context(app: App, body: ContextIn) -> ContextOut:
        """The block to put in a prompt: dated snippets within the token budget, ending with the rule that they are past records. Empty when nothing is found. Give `messages` to get them back with the block placed in the last user turn, just before the question."""
        messages = [m.model_dump(exclude_none=False) for m in body.messages] if body.messages is not None else None
        query, previous = body.query, body.previous
        if query is None:
            if not messages:
                raise InvalidInput("give a `query`, or `messages` that end with a user turn")
            users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
            if not users:
                raise InvalidInput("`messages` has no user turn")
            last = users[-1]
            query = _text(messages[last].get("content"))
            if previous is None and last > 0 and messages[last - 1].get("role") in ("user", "assistant"):
                previous = _text(messages[last - 1].get("content")) or None
        if not query or not query.strip():
            raise InvalidInput("the query is empty")
        block = memory.context(query, app=app, budget_tokens=body.budget_tokens, k=body.k,
                               previous=previous or None, order=body.order, explain=body.explain)
        out = block.to_dict()
        if messages is not None:
            out["messages"] = place_context(messages, block) if block else messages
        return ContextOut(**out)

    @api.get(f"{prefix}/sessions", response_model=ListOut, responses=ERRORS, tags=["read"])
    def list_sessions(app: App, limit: Limit = 50, offset: Offset = 0) -> ListOut:
        """Session ids and dates, in the order they were stored; page with `limit` and `offset`."""
        return _page(memory.list(app=app, kind="session", limit=limit + 1, offset=offset, newest_first=False), limit, offset)

    @api.get(f"{prefix}/facts", response_model=ListOut, responses=ERRORS, tags=["read"])
    def list_facts(app: App, limit: Limit = 50, offset: Offset = 0) -> ListOut:
        """Fact ids and dates, in the order they were stored; page with `limit` and `offset`."""
        return _page(memory.list(app=app, kind="fact", limit=limit + 1, offset=offset, newest_first=False), limit, offset)

    @api.get(f"{prefix}/sessions/{{session_id}}", response_model=ItemOut, responses=ERRORS, tags=["read"])
    def get_session(app: App, session_id: Annotated[str, Path(min_length=1, max_length=256)]) -> ItemOut:
        """A stored session with all its messages."""
        return ItemOut(**memory.get(session_id, app=app, kind="session"))

    @api.get(f"{prefix}/facts/{{fact_id}}", response_model=ItemOut, responses=ERRORS, tags=["read"])
    def get_fact(app: App, fact_id: Annotated[str, Path(min_length=1, max_length=256)]) -> ItemOut:
        """A stored fact."""
        return ItemOut(**memory.get(fact_id, app=app, kind="fact"))

    @api.get(f"{prefix}/stats", response_model=StatsOut, responses=ERRORS, tags=["read"])
    def stats(app: App) -> StatsOut:
        """Counts of sessions, messages, facts and chunks, and the state of the lexical index."""
        try:
            counts = memory.app_stats(app)
        except UnknownApp:
            counts = {"sessions": 0, "messages": 0, "facts": 0, "chunks": 0, "lexical_index": "empty"}
        return StatsOut(app=app, embedder=memory.embedder.model_id, **counts)

    # -- deleting --------------------------------------------------------------------------

    @api.delete(f"{prefix}/sessions/{{session_id}}", response_model=DeletedOut, responses=ERRORS, tags=["delete"])
    def delete_session(app: App, session_id: Annotated[str, Path(min_length=1, max_length=256)]) -> DeletedOut:
        """Delete a session with its messages, chunks, vectors and index postings."""
        memory.delete(session_id, app=app, kind="session")
        return DeletedOut(deleted=session_id)

    @api.delete(f"{prefix}/facts/{{fact_id}}", response_model=DeletedOut, responses=ERRORS, tags=["delete"])
    def delete_fact(app: App, fact_id: Annotated[str, Path(min_length=1, max_length=256)]) -> DeletedOut:
        """Delete a fact with its chunk, vector and index postings."""
        memory.delete(fact_id, app=app, kind="fact")
        return DeletedOut(deleted=fact_id)

    @api.delete(prefix, response_model=DeletedOut, responses=ERRORS, tags=["delete"])
    def delete_app(app: App, confirm: Annotated[str, Query(description="Must repeat the app's name.")]) -> DeletedOut:
        """Delete everything the app holds (its keys stay valid). `confirm` must repeat the app's name."""
        if confirm != app:
            raise InvalidInput(f"to delete app {app!r}, pass confirm={app!r}")
        memory.delete_app(app)
        return DeletedOut(deleted=app)

    # -- health ----------------------------------------------------------------------------

    @api.get("/health", tags=["health"], responses={503: {"description": "Retrieval is failing"}})
    def health() -> JSONResponse:
        """Embed a known probe and find it through each channel, then retrieve a stored chunk from each app's own index (up to a cap). 200 when all of it works, 503 otherwise. No key needed; app names are not shown."""
        names = memory.apps()[-health_max_apps:] if health_max_apps else []
        report = check(memory, apps=names, deep=False)  # no whole-matrix recall check (doctor has it)
        body = report.to_dict(app_names=False)
        body["apps_total"] = len(memory.apps())
        body["embedder"] = memory.embedder.model_id
        return JSONResponse(body, 200 if report.ok else 503)

    api.state.memory = memory
    api.state.keys = keys
    return api


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


DOCS_ASSETS = "/docs-assets"


def _offline_docs(api: FastAPI) -> None:
    """/docs with the Swagger UI vendored in vestige.ui (it reads OpenAPI 3.1), served by this
    server, so the page renders with no network."""
    from fastapi.responses import HTMLResponse
    from fastapi.staticfiles import StaticFiles

    from ..ui.docs import DOCS_CSP, SWAGGER_DIR, docs_page

    api.mount(DOCS_ASSETS, StaticFiles(directory=SWAGGER_DIR), name="docs-assets")

    @api.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(docs_page(api.openapi_url or "/openapi.json", DOCS_ASSETS),
                            headers={"Content-Security-Policy": DOCS_CSP})


def _inspector(api: FastAPI, memory: Memory) -> None:
    """The web inspector at /ui (vestige.ui), behind an API key: each session sees its key's app."""
    from ..ui import PREFIX, create_ui

    api.mount(PREFIX, create_ui(memory, keyed=True), name="ui")


def _page(rows: list[dict[str, Any]], limit: int, offset: int) -> ListOut:
    more = len(rows) > limit
    return ListOut(items=rows[:limit], limit=limit, offset=offset, next_offset=offset + limit if more else None)


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory``: reads VESTIGE_DB, VESTIGE_EMBEDDER, VESTIGE_MAX_BODY_BYTES,
    VESTIGE_TIMEOUT_SECONDS."""
    from ..config import default_db_path, lexical_fusion_enabled

    memory = Memory(
        default_db_path(),
        embedder=os.environ.get("VESTIGE_EMBEDDER") or None,
        lexical_fusion=lexical_fusion_enabled(),
    )
    limit = int(os.environ.get("VESTIGE_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES))
    return create_app(memory, max_body_bytes=limit, timeout_seconds=timeout_from_env())

