"""The ``diarist`` command line: one group, ``main``, whose commands are loaded on first use.

A command's module is imported only when that command runs (or its own ``--help`` is asked
for), so that ``diarist --version``, ``diarist --help`` and the agents' hooks (``diarist hook``)
pay for click and nothing else: no numpy, no model, no store. ``diarist --help`` lists the
commands from ``COMMANDS``, whose one-line summaries are each command's own (a test checks them
against the loaded commands). A command is registered by adding one line to ``COMMANDS``.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from .. import __version__

__all__ = ["COMMANDS", "LazyGroup", "main"]

#: Each command: the module that defines it, and its one-line summary for ``diarist --help``.
COMMANDS: dict[str, tuple[str, str]] = {
    "add": ("diarist.cli.items", "Remember one fact (a short self-contained statement); prints its id."),
    "backup": ("diarist.cli.backup", "Copy the database into the new file DEST, consistently, while writers carry on."),
    "bench": ("diarist.bench.cli", "Retrieval benchmarks (LongMemEval, LoCoMo): run, verify, compare."),
    "compact": ("diarist.cli.backup",
                "Rewrite the database file whole (SQLite's VACUUM), in this version's 16 KiB pages."),
    "context": ("diarist.cli.commands", "Print the context block an agent is given for QUERY: the memories that "
                "answer it, dated, within the budget, and the rule that they are past records; nothing when nothing "
                "is relevant."),
    "delete": ("diarist.cli.commands",
               "Delete a session or fact by ID (text, vectors and index postings), or a whole app."),
    "demo": ("diarist.cli.demo", "Show what diarist does, on its own sample data: import a few conversations (a "
             "ChatGPT and a Claude.ai export), notes and facts, ask questions a person would ask, show each hit and "
             "why it was recalled, and print the context block an agent would be given."),
    "doctor": ("diarist.cli.commands", "Check the database (schema objects diarist did not create included), the "
               "embedder and each app's indexes (the HNSW graph's recall too, which /health skips); exit 1 on any "
               "problem."),
    "export": ("diarist.cli.items",
               "Write everything an app holds, verbatim: JSONL to re-import, or Markdown to read."),
    "history": ("diarist.cli.items", "Show the previous versions of an item that updates kept, oldest first."),
    "hook": ("diarist.cli.hooks", "Run one agent hook: read the agent's JSON event on standard input, answer as "
             "its hook protocol says (what `hooks install` puts in an agent's settings)."),
    "hooks": ("diarist.cli.hooks",
              "Install or remove recall on every prompt in a coding agent (Claude Code, Codex CLI, Gemini CLI)."),
    "ingest": ("diarist.cli.commands", "Read conversations and notes from PATH (a file, - for standard input, or a "
               "folder) into memory."),
    "keys": ("diarist.server.cli", "Create, list and revoke per-app API keys (only their hashes are stored)."),
    "list": ("diarist.cli.items", "List the ids and dates of stored sessions or facts, newest first "
             "(--oldest-first: in the order stored)."),
    "mcp": ("diarist.server.cli", "Run the MCP server (tools remember, correct, recall, context, memories, show, "
            "forget) for one app."),
    "migrate": ("diarist.cli.migrate", "Copy everything SRC holds into DST: apps, sessions, facts, chunks with their "
                "vectors (as stored: nothing is re-embedded), the versions `update` kept, API keys, the recorded "
                "embedder and index plan."),
    "models": ("diarist.cli.models", "Optional embedding models (the default, MiniLM, needs no install)."),
    "reindex": ("diarist.cli.commands", "Rebuild an app's indexes from what it stores: titles, line vectors, BM25 "
                "and the HNSW graph."),
    "restore": ("diarist.cli.backup", "Put the backup SRC in place of the database (--db)."),
    "search": ("diarist.cli.commands", "Search memory: the k best memories (each session, note or fact once, with "
               "its best passages); each hit shows its rank in the dense and lexical channels."),
    "serve": ("diarist.server.cli",
              "Serve the HTTP API (OpenAPI docs at /docs); each app is reached with its own key."),
    "show": ("diarist.cli.items", "Show one stored session (every message, verbatim), note (its title, front matter "
             "fields and text) or fact by its id."),
    "stats": ("diarist.cli.commands", "Counts of sessions, messages, facts and chunks per app."),
    "sync": ("diarist.cli.sync", "Bring the folder PATH (an Obsidian or Markdown vault, ~/.claude/projects, a folder "
             "of exports) into memory incrementally, and keep it there."),
    "ui": ("diarist.ui.cli",
           "Open the web inspector on http://127.0.0.1:PORT/ui/: browse, ask with the why, fix, curate."),
    "update": ("diarist.cli.items", "Change a fact's text, or an item's date or metadata; the previous version is "
               "kept (see history)."),
}


def load_command(name: str, module_name: str) -> click.Command:
    """The command called ``name`` that ``module_name`` defines at its top level."""
    module = importlib.import_module(module_name)
    for value in vars(module).values():
        if isinstance(value, click.Command) and value.name == name:
            return value
    raise LookupError(f"{module_name} defines no command {name!r}")  # a wrong COMMANDS line


class LazyGroup(click.Group):
    """A group whose commands are imported when they are first looked up (click's lazy group)."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(load_command(cmd_name, self.lazy[cmd_name][0]), cmd_name)
        found = super().get_command(ctx, cmd_name)
        if found is None:  # one registered the eager way, in diarist.cli.commands
            from .commands import main as eager

            found = eager.get_command(ctx, cmd_name)
        return found

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their summaries, as click writes them, without importing any."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.commands:
                rows.append((name, self.commands[name].get_short_help_str(limit)))
            else:
                rows.append((name, click.utils.make_default_short_help(self.lazy[name][1], limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="diarist")
def main() -> None:
    """diarist: long-term memory for AI agents in one SQLite file."""
