"""ASGI middleware on every request's body: a size bound (``BodyLimit``, 413) and a deadline
(``BodyTimeout``, 408). Each answers before the app responds, or stops the body stream. And the
path routes match: as sent, percent-encoded (``EncodedPath``), so ids may hold ``/``."""

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import HTTPException
from fastapi.responses import JSONResponse

from .handlers import error

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024


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
                    await error(400, "bad_request", "invalid Content-Length header")(scope, receive, send)
                    return
                if declared > self.max_bytes:
                    await error(413, "too_large", message)(scope, receive, send)
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
                                 error(413, "too_large", message))


# -- slow clients ----------------------------------------------------------------------------

DEFAULT_TIMEOUT_SECONDS = 10.0  # a request's headers, and then its body, must arrive within this
TIMEOUT_ENV = "DIARIST_TIMEOUT_SECONDS"


def timeout_from_env() -> float:
    """The request timeout ``diarist serve --timeout-seconds`` hands its workers (0: none)."""
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
                                 error(408, "timeout", message, {"Connection": "close"}))


# -- ids with "/" ------------------------------------------------------------------------------------


class Wrapper:
    """An ASGI app around another, whose routes it lists (a Mount reads them)."""

    def __init__(self, app: Callable[..., Awaitable[None]]):
        self.app = app

    @property
    def routes(self) -> list[Any]:
        return getattr(self.app, "routes", [])


class EncodedPath(Wrapper):
    """Routes match the path as the client sent it, percent-encoded, so an id's ``/`` sent as
    ``%2F`` stays inside the id (``/v1/apps/a/sessions/d1%2Fn1.md`` is the session ``d1/n1.md``)
    and an id ending in ``%2Fdelete`` is not the delete page of another; the routes decode their
    path parameters (``decoded_params``). Without ``raw_path`` (a server that gives none) the
    path is left as it is."""

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        raw = scope.get("raw_path") if scope["type"] in ("http", "websocket") else None
        if raw:
            path = raw.decode("latin-1").split("?", 1)[0]
            root = scope.get("root_path", "")
            if path.startswith(root) or not root:
                scope = {**scope, "path": path}
        await self.app(scope, receive, send)


