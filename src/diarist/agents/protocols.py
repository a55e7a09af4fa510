"""Each coding agent's hook protocol, as its documentation states it: the settings file the
hooks go in, the events diarist answers and what it does on each, the shape of one hook entry,
and the output the agent reads. Standard library only (the hook reads this on every prompt).

Protocol versions implemented (the payloads in tests/data/hooks/<agent>/ are copied from these):

* Claude Code: the hooks reference (code.claude.com/docs/en/hooks), Claude Code 2.x, as of
  2026: ``UserPromptSubmit`` and ``SessionStart`` answer ``{"hookSpecificOutput":
  {"hookEventName", "additionalContext"}}``; ``SessionEnd`` output is ignored; ``timeout`` in
  seconds.
* Codex CLI: developers.openai.com/codex/hooks and the JSON schemas of openai/codex
  (codex-rs/hooks/schema/generated, 2026-05): ``~/.codex/hooks.json``, the same nesting and
  output as Claude Code; hooks on by default (older releases: ``[features] codex_hooks = true``
  in config.toml); no session-end event.
* Gemini CLI: docs/hooks/reference.md of google-gemini/gemini-cli (commit 06c0d81, 2026):
  ``BeforeAgent`` and ``SessionStart`` answer ``hookSpecificOutput.additionalContext``;
  stdout must be JSON only (``{}`` when there is nothing to add); ``timeout`` in milliseconds.
"""

from __future__ import annotations

import json

CONTEXT = "context"  # the context block for the prompt
FACTS = "facts"  # what the user asked the agent to remember
SYNC = "sync"  # the transcripts folder brought into memory

#: Our own deadline for an answer (seconds); the agent's own timeout is set above it.
DEFAULT_DEADLINE_S = 4.0


class Protocol:
    """One agent's hook protocol."""

    def __init__(self, name: str, title: str, settings: str, events: dict[str, str], *,
                 timeout: int, timeout_unit: str, empty_output: str, named: bool = False,
                 transcripts: str | None = None, mcp_file: str | None = None, mcp_format: str = "json") -> None:
        self.name = name
        self.title = title
        self.settings = settings  # relative to the home folder
        self.events = events  # the agent's event name -> what diarist does
        self.timeout = timeout  # the agent's own limit for our command, in its unit
        self.timeout_unit = timeout_unit
        self.empty_output = empty_output  # what to print when there is nothing to add
        self.named = named  # hook entries carry a "name"
        self.transcripts = transcripts  # folder synced at session end (relative to home)
        self.mcp_file = mcp_file  # where the agent reads its MCP servers (relative to home)
        self.mcp_format = mcp_format

    def handler(self, command: str, event: str) -> dict:
        """One hook entry running ``command``, as the agent's settings want it."""
        entry: dict = {"type": "command", "command": command}
        if self.named:
            entry["name"] = f"diarist-{self.events[event]}"
        entry["timeout"] = self.timeout
        return entry

    def output(self, event: str, text: str) -> str:
        """What the hook prints: the text as the agent's additional context, or the empty answer."""
        if not text or self.events.get(event) == SYNC:
            return self.empty_output
        return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
                          ensure_ascii=False)


AGENTS: dict[str, Protocol] = {
    "claude-code": Protocol(
        "claude-code", "Claude Code", ".claude/settings.json",
        {"UserPromptSubmit": CONTEXT, "SessionStart": FACTS, "SessionEnd": SYNC},
        timeout=10, timeout_unit="s", empty_output="", transcripts=".claude/projects", mcp_file=".claude.json",
    ),
    "codex": Protocol(
        "codex", "Codex CLI", ".codex/hooks.json",
        {"UserPromptSubmit": CONTEXT, "SessionStart": FACTS},
        timeout=10, timeout_unit="s", empty_output="", mcp_file=".codex/config.toml", mcp_format="toml",
    ),
    "gemini": Protocol(
        "gemini", "Gemini CLI", ".gemini/settings.json",
        {"BeforeAgent": CONTEXT, "SessionStart": FACTS},
        timeout=10_000, timeout_unit="ms", empty_output="{}", named=True, mcp_file=".gemini/settings.json",
    ),
}
