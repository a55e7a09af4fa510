"""How the HTTP API answers a failure: every error is JSON, ``{"error": {"status", "code",
"message"}}``, with the status that fits; a server-side failure names no path or host."""

import logging
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import unquote

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import Scope

from ..errors import DiaristError
from ..memory import Memory

log = logging.getLogger("diarist.server")


def error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The JSON error response."""
    # A message may quote the request (a field name): a lone surrogate there must not turn the
    # error into a 500 when the response is encoded.
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return JSONResponse({"error": {"status": status, "code": code, "message": message}}, status, headers=headers)


def _describe(errors: list[dict[str, Any]]) -> str:
    parts = []
    for err in errors[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(parts) + more


class BackendFailure(Exception):
    """A store backend's own error (sqlite3, psycopg) that escaped a store call, with the diarist
    error the store translates it to (``Store.translate_error``)."""

    def __init__(self, original: BaseException, translated: DiaristError):
        super().__init__(str(translated))
        self.original, self.translated = original, translated


def decoded_params(params: dict[str, Any]) -> dict[str, Any]:
    """Path parameters matched on the encoded path (``middleware.EncodedPath``), decoded as UTF-8."""
    return {name: unquote(value) if isinstance(value, str) else value for name, value in params.items()}


class TranslatingRoute(APIRoute):
    """A route whose backend errors reach the handlers as ``BackendFailure``: the store of the
    app's memory (``app.state.memory``, set by ``create_app``) says what its own exceptions mean,
    so the server names no backend (a psycopg error was a 500 when it caught sqlite3's only)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """Matched on the encoded path (``middleware.EncodedPath``): the parameters decoded."""
        match, child = super().matches(scope)
        if match != Match.NONE and "path_params" in child:
            child = {**child, "path_params": decoded_params(child["path_params"])}
        return match, child

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def translating(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception as exc:
                translated = request.app.state.memory.translate_error(exc)
                if translated is None:
                    raise
                raise BackendFailure(exc, translated) from exc

        return translating


def add_exception_handlers(api: FastAPI, memory: Memory) -> None:
    """Answer diarist's errors with their own status, malformed requests with 4xx, and anything
    else with a 500 that points to the server log."""

    def for_clients(message: str) -> str:
        """A server-side failure as a client may read it: where the database lives (a path, a
        host) is the operator's business, and stays in the server log."""
        location = str(memory.location or "")
        return message.replace(location, "the database") if location else message

    @api.exception_handler(DiaristError)
    async def diarist_error(request: Request, exc: DiaristError) -> JSONResponse:
        # Each error class carries its status and code (diarist.errors): nothing is matched by text.
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        if exc.status >= 500:
            log.error("%s on %s %s: %s", type(exc).__name__, request.method, request.url.path, exc)
            return error(exc.status, exc.code, for_clients(str(exc)), headers)
        return error(exc.status, exc.code, str(exc), headers)

    @api.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error(422, "invalid_input", _describe(list(exc.errors())))

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
            return error(422, "invalid_input", reason)
        code = {404: "not_found", 405: "method_not_allowed", 408: "timeout", 413: "too_large"}.get(exc.status_code, "error")
        return error(exc.status_code, code, str(exc.detail), getattr(exc, "headers", None))

    @api.exception_handler(UnicodeError)
    async def bad_unicode(request: Request, exc: UnicodeError) -> JSONResponse:
        return error(422, "invalid_input", "text is not valid Unicode (lone surrogate?)")

    @api.exception_handler(BackendFailure)
    async def storage_error(request: Request, exc: BackendFailure) -> JSONResponse:
        # Every store call translates its own errors; this is the net under any that does not.
        translated = exc.translated
        log.error("%s on %s %s: %s", type(exc.original).__name__, request.method, request.url.path, translated)
        return error(translated.status, translated.code, for_clients(str(translated)))

    @api.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error(500, "internal", f"internal error ({type(exc).__name__}); see the server log")
