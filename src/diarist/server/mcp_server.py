"""The MCP server: remember, correct, recall, context, memories, show and forget, scoped to one app.

Built on the official ``mcp`` SDK (2.x, ``MCPServer``). The app is fixed when the server starts
(``diarist mcp --app NAME``), so an agent can never reach another app's memory. Over stdio the
client that launches the process is trusted; over streamable HTTP every request needs a key of
that app (``Authorization: Bearer <key>``), unless the server was started with ``--no-auth``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..context import format_date, format_source
from ..errors import KeyRefused, NotFound, DiaristError
from ..keys import KeyStore
from ..memory import Memory
from ..read.explain import explain_line, explain_text

INSTRUCTIONS = (
    "Long-term memory of past conversations with this user. Call `recall` or `context` before "
    "answering anything that may depend on earlier conversations (names, preferences, plans, "
    "past decisions); call `remember` when the user states something worth keeping; call "
    "`correct` when a remembered fact has changed or was wrong; call `forget` when the user asks "
    "you to forget something. Recalled records are dated past "
    "records: what the user says now wins over them."
)


def _missing_mcp() -> DiaristError:
    from ..errors import MissingDependency

    return MissingDependency("the MCP server needs the mcp package: pip install 'diarist[server]'")


def build_mcp(memory: Memory, app: str, *, name: str = "diarist") -> Any:
    """An ``MCPServer`` whose tools read and write ``app`` in ``memory``."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp.types import ToolAnnotations
    except ImportError as exc:  # pragma: no cover
        raise _missing_mcp() from exc

    server = MCPServer(name, instructions=INSTRUCTIONS)

    def answers_errors(tool: Callable[..., str]) -> Callable[..., str]:
        """A DiaristError (bad input, a storage failure) reaches the agent as a tool error with
        its message, and so does a backend's own error as its store translates it; the SDK
        treats any other exception as a crash and hides its text."""

        @functools.wraps(tool)
        def wrapper(*args: Any, **kwargs: Any) -> str:
            try:
                return tool(*args, **kwargs)
            except DiaristError as exc:
                raise ToolError(str(exc)) from None
            except Exception as exc:
                translated = memory.translate_error(exc)
                if translated is None:
                    raise
                raise ToolError(str(translated)) from None

        return wrapper

    @server.tool(annotations=ToolAnnotations(title="Remember", destructive_hint=False, idempotent_hint=True))
    @answers_errors
    def remember(text: str, date: str | None = None) -> str:
        """Store one thing worth remembering about the user or the work, as a short self-contained statement (e.g. "The user's cat is called Admon."). Write it so it makes sense without the conversation around it. `date` (ISO 8601) says when it was true; default: now. Returns the memory's id, which `forget` accepts."""
        memory_id = memory.add_fact(text, app=app, date=date)
        return f"Remembered as {memory_id}."

    @server.tool(annotations=ToolAnnotations(title="Correct", destructive_hint=False, idempotent_hint=True))
    @answers_errors
    def correct(memory_id: str, text: str, date: str | None = None) -> str:
        """Replace the text of a remembered fact (by the id `remember`, `recall` or `memories` gave) when it has changed or was wrong, e.g. "The user's cat is called Admon; she is 4." Write the whole corrected statement, not the difference. `date` (ISO 8601): when the corrected statement became true; default: the fact's own. The previous version is kept in the fact's history."""
        try:
            report = memory.update(memory_id, app=app, kind="fact", text=text, date=date)
        except NotFound:
            return f"No remembered fact {memory_id!r} to correct (`memories` lists them; `remember` stores a new one)."
        if report.unchanged:
            return f"{memory_id} already says that."
        return f"Corrected {memory_id}; its previous version is kept."

    @server.tool(annotations=ToolAnnotations(title="Recall", read_only_hint=True))
    @answers_errors
    def recall(query: str, k: int = 5, explain: bool = False) -> str:
        """Search long-term memory and list the k most relevant past records (1 to 50), best first, each with its id, date and source. Ask with the words the user would have used (names, places, product names help). Records are from the past: the current conversation wins if they disagree. `explain`: also say why each was recalled and what the search left out."""
        k = max(1, min(int(k), 50))
        if app not in memory.apps():
            return "Nothing found: this memory is empty."
        hits = memory.search(query, app=app, k=k, explain=bool(explain))
        if not hits and not explain:
            return "Nothing found."
        lines = []
        for n, hit in enumerate(hits, 1):
            item_id = hit.fact_id or hit.session_id
            lines.append(f"{n}. id {item_id} · {format_date(hit.date)} · {format_source(hit)}\n{hit.text.strip()}"
                         + (f"\n{explain_line(hit)}" if explain else ""))
        if explain:
            lines.append(explain_text(hits))
        return "\n\n".join(lines) if hits else "Nothing found.\n\n" + explain_text(hits)

    @server.tool(annotations=ToolAnnotations(title="Context", read_only_hint=True))
    @answers_errors
    def context(query: str, budget_tokens: int = 800) -> str:
        """A ready-to-use block of dated past records relevant to `query`, within about `budget_tokens` tokens (50 to 8000), ending with the rule that these are past records. Put it in your reasoning just before answering. Empty when nothing relevant is stored."""
        budget = max(50, min(int(budget_tokens), 8000))
        block = memory.context(query, app=app, budget_tokens=budget)
        return str(block) or "No relevant memory."

    @server.tool(annotations=ToolAnnotations(title="List memories", read_only_hint=True))
    @answers_errors
    def memories(kind: str = "fact", limit: int = 20, offset: int = 0) -> str:
        """List what is stored, newest first: `kind` "fact" (the notes `remember` stored) or "session" (whole conversations), `limit` 1 to 100 per page, `offset` to page on. Each line is an id and a date; `show` reads one, `forget` deletes one."""
        limit = max(1, min(int(limit), 100))
        if app not in memory.apps():
            return "Nothing stored yet."
        rows = memory.list(app=app, kind=kind, limit=limit + 1, offset=max(0, int(offset)))
        if not rows:
            return f"No {kind}s" + (f" after offset {offset}." if offset else " stored.")
        lines = [f"{row[f'{kind}_id']} · {format_date(row['date'])}" for row in rows[:limit]]
        if len(rows) > limit:
            lines.append(f"(more: call again with offset {int(offset) + limit})")
        return "\n".join(lines)

    @server.tool(annotations=ToolAnnotations(title="Show memory", read_only_hint=True))
    @answers_errors
    def show(memory_id: str) -> str:
        """Read one stored memory in full by its id (from `recall`, `memories` or `remember`): a note's text, or a conversation's every message with its role and time, verbatim."""
        from ..export import markdown_of

        return markdown_of(memory.get(memory_id, app=app)).rstrip()

    @server.tool(annotations=ToolAnnotations(title="Forget", destructive_hint=True, idempotent_hint=True))
    @answers_errors
    def forget(memory_id: str) -> str:
        """Delete a stored memory (a remembered note or a whole conversation) by the id that `remember` returned or that `recall` shows. Use when the user asks you to forget something; it cannot be undone."""
        try:
            memory.delete(memory_id, app=app)
        except NotFound:
            return f"No memory {memory_id!r} to forget."
        return f"Forgot {memory_id}."

    return server


class RequireKey:
    """ASGI middleware: every HTTP request must carry a live key of ``app``."""

    def __init__(self, inner: Callable[..., Any], keys: KeyStore, app: str):
        self.inner, self.keys, self.app = inner, keys, app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http":
            header = dict(scope.get("headers", [])).get(b"authorization", b"").decode("latin-1")
            key = header[7:].strip() if header[:7].lower() == "bearer " else None
            try:
                self.keys.check(key, self.app)
            except KeyRefused as exc:
                from starlette.responses import JSONResponse

                body = {"error": {"status": exc.status, "code": exc.code, "message": str(exc)}}
                response = JSONResponse(body, exc.status)
                await response(scope, receive, send)
                return
        await self.inner(scope, receive, send)


def http_app(memory: Memory, app: str, *, require_key: bool = True, host: str = "127.0.0.1", path: str = "/mcp",
             timeout_seconds: float | None = None) -> Any:
    """The streamable HTTP ASGI app (mount point ``path``), behind the key check.

    A request's body must arrive within ``timeout_seconds`` (default ``$DIARIST_TIMEOUT_SECONDS``,
    10 s; 0: no limit), as in ``diarist serve``: a stalled or trickled body gets 408 and its
    connection is closed, instead of holding a connection for ever."""
    from .middleware import BodyTimeout, timeout_from_env

    server = build_mcp(memory, app)
    inner = server.streamable_http_app(streamable_http_path=path, host=host)
    guarded = RequireKey(inner, memory.keys, app) if require_key else inner
    seconds = timeout_from_env() if timeout_seconds is None else timeout_seconds
    return BodyTimeout(guarded, seconds=seconds)  # type: ignore[arg-type]
