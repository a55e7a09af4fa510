"""uvicorn's h11 protocol with a deadline on each request's headers and a refusal of ambiguous
body framing (request smuggling). ``diarist serve`` and ``diarist mcp --transport http`` load it by
name: ``http="diarist.server.protocol:RequestTimeoutProtocol"``."""

import asyncio
import json
import logging
from typing import Any

from .middleware import timeout_from_env

log = logging.getLogger("diarist.server")

#: What uvicorn is given to load the protocol by name (worker processes import it).
PROTOCOL = "diarist.server.protocol:RequestTimeoutProtocol"


def uvicorn_options(timeout_seconds: float) -> dict[str, Any]:
    """uvicorn's settings for every diarist server (``serve``, ``mcp --transport http``, ``ui``):
    this protocol (headers timed, ambiguous framing refused) and an idle keep-alive timeout
    (whole seconds, default 5) never longer than the request timeout."""
    keep_alive = 5 if not timeout_seconds else max(1, min(5, int(timeout_seconds)))
    return {"http": PROTOCOL, "timeout_keep_alive": keep_alive}

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

        ``diarist serve`` passes it as ``http=`` to uvicorn; the timeout is ``timeout_seconds``
        or else ``$DIARIST_TIMEOUT_SECONDS`` (default 10 s; 0: none). Importable by name, so
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
