"""Claude Code session logs: the JSONL files under ``~/.claude/projects/<project>/``.

One JSON object per line, each with a ``type``: ``user`` and ``assistant`` lines carry a
``message`` ``{role, content}`` (a string, or blocks: ``text``, ``tool_use``, ``tool_result``,
``thinking``, ``image``) with ``timestamp``, ``sessionId``, ``uuid``, ``parentUuid``, ``cwd`` and
``gitBranch``; ``summary`` lines title the session; other lines (``system``,
``file-history-snapshot``, ...) are bookkeeping.

What a file becomes: one session per ``sessionId`` in it (a resumed session's file holds the
earlier one's lines too), id the file's name without ``.jsonl`` (the session's uuid; for
standard input, the ``sessionId``) when the file holds one, else each its ``sessionId`` (the one
named like the file keeps the file's name); date its first ``timestamp``, metadata ``{"source":
"claude-code", "title" (the first summary of its lines), "cwd", "git_branch", "session"}``. Along the lines:

- user text and assistant text are kept verbatim, each line's ``timestamp`` its time;
- ``tool_use`` becomes a ``tool`` message ``called tool NAME(INPUT)`` shortened to 200
  characters (``called tool Bash(command="pytest -q", ...)``), and ``tool_result`` a ``tool``
  message ``NAME returned: OUTPUT`` (or ``NAME failed: ...``) shortened to 2,000 characters, the
  name taken from the call it answers: file contents and command output are not memory;
- ``thinking`` blocks are skipped; an image is noted as ``[image]``;
- skipped too: sub-agent lines (``isSidechain``, and so the ``agent-*.jsonl`` files),
  ``isMeta`` lines, the echo of slash commands (``<command-name>``, ``<local-command-stdout>``)
  and ``[Request interrupted by user]``; a line seen twice (same ``uuid``) counts once;
- the summary Claude Code writes when it compacts a long session (``isCompactSummary``) is kept
  as a ``system`` message.

A session with nothing left is skipped and named.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..write.validate import SessionInput
from .base import (
    Source,
    message,
    placeholder,
    record_shape,
    tool_call,
    tool_result,
)
from .claude_ai import block_text

TURN_TYPES = ("user", "assistant")
NOISE = re.compile(r"^\s*(<command-(name|message|args)>|<local-command-(stdout|stderr)>|\[Request interrupted by user)")


def _is_turn(record: Any) -> bool:
    return isinstance(record, dict) and record.get("type") in TURN_TYPES and isinstance(record.get("message"), dict)


class _Session:
    """The turns of one sessionId of a file, and what its metadata is read from."""

    def __init__(self, first: dict[str, Any]):
        self.first = first
        self.messages: list[dict[str, Any]] = []
        self.summaries: list[str] = []

    def session(self, sid: Any) -> SessionInput:
        metadata: dict[str, Any] = {"source": "claude-code"}
        if self.summaries:
            metadata["title"] = self.summaries[0]
        for key, field in (("cwd", "cwd"), ("git_branch", "gitBranch"), ("session", "sessionId")):
            if isinstance(self.first.get(field), str) and self.first[field]:
                metadata[key] = self.first[field]
        return SessionInput(self.messages, sid, self.first.get("timestamp"), metadata)


class ClaudeCodeImporter:
    name = "claude-code"
    title = "Claude Code session logs, ~/.claude/projects/*/*.jsonl"
    suffixes = (".jsonl",)
    unit = "session"

    def detect(self, source: Source, *, forced: bool = False) -> bool | str:
        if (why := record_shape(source)) is not None:
            return why
        for record in source.peek():
            if _is_turn(record) and "sessionId" in record:
                return True
        return "no line with a 'type', a 'message' and a 'sessionId'"

    def read(self, source: Source, limit: int | None = None) -> Iterator[SessionInput]:
        groups: dict[Any, _Session] = {}  # sessionId -> its turns, in the order first met
        tools: dict[str, str] = {}  # tool_use id -> tool name, for the results that answer it
        seen: set[str] = set()
        summaries: list[tuple[Any, str]] = []  # (leafUuid, summary)
        owner: dict[str, Any] = {}  # message uuid -> sessionId, to give each summary its session
        current: Any = None
        for record in source.iter_records():
            if not isinstance(record, dict):
                continue
            if record.get("type") == "summary" and isinstance(record.get("summary"), str):
                summaries.append((record.get("leafUuid"), record["summary"]))
                continue
            if not _is_turn(record) or record.get("isSidechain") or record.get("isMeta"):
                continue
            uuid = record.get("uuid")
            if isinstance(uuid, str):
                if uuid in seen:
                    continue
                seen.add(uuid)
            sid = record.get("sessionId") if isinstance(record.get("sessionId"), str) else current
            current = sid
            group = groups.setdefault(sid, _Session(record))
            if isinstance(uuid, str):
                owner[uuid] = sid
            group.messages.extend(self._turn(record, tools))
        for leaf, summary in summaries:
            sid = owner.get(leaf) if isinstance(leaf, str) else None
            targets = [groups[sid]] if sid in groups else list(groups.values())
            for group in targets:
                group.summaries.append(summary)
        single = len(groups) == 1
        for number, (sid, group) in enumerate(groups.items(), start=1):
            if limit and number > limit:
                return
            if not group.messages:
                source.drop(f"{source.name} session {sid or number}", "no message with text")
                continue
            # One session in the file: its id is the file's name, as always; several (a file
            # that went on in a resumed session): each its sessionId, the file's own its name.
            name = source.stem if (single or sid == source.stem) and source.stem else None
            yield group.session(name or sid)


    @staticmethod
    def _turn(record: dict[str, Any], tools: dict[str, str]) -> list[dict[str, Any]]:
        msg = record["message"]
        role = msg.get("role") or record["type"]
        if record.get("isCompactSummary"):
            role = "system"
        time = record.get("timestamp")
        content = msg.get("content")
        if isinstance(content, str):
            return [] if not content.strip() or NOISE.match(content) else [message(role, content, time)]
        out: list[dict[str, Any]] = []
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if isinstance(text, str) and text.strip() and not NOISE.match(text):
                    out.append(message(role, text, time))
            elif kind == "tool_use":
                if isinstance(block.get("id"), str):
                    tools[block["id"]] = str(block.get("name") or "tool")
                out.append(message("tool", tool_call(block.get("name"), block.get("input")), time))
            elif kind == "tool_result":
                result = block_text(block.get("content"))
                if result.strip():
                    name = tools.get(block.get("tool_use_id"), "tool")
                    out.append(message("tool", tool_result(name, result, failed=bool(block.get("is_error"))), time))
            elif kind == "image":
                out.append(message(role, placeholder("image"), time))
        return out


IMPORTER = ClaudeCodeImporter()
