"""``diarist hooks install|uninstall AGENT`` and ``diarist hook AGENT EVENT``: recall inside coding
agents (``diarist.agents``). Imports click and the agents' protocols only, so that ``--help``
stays fast; the database is opened only to create the hooks' key."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..agents.protocols import AGENTS

if TYPE_CHECKING:
    from ..agents.install import Change

DB_HELP = ("Database file or postgresql:// URL the hooks read (default: $DIARIST_DB, else "
           "~/.local/share/diarist/memory.sqlite).")
agent_argument = click.argument("agent", type=click.Choice(sorted(AGENTS)))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def hooks() -> None:
    """Install or remove recall on every prompt in a coding agent (Claude Code, Codex CLI, Gemini CLI).

    On each prompt the agent gets the memories that bear on it (nothing when none does); at the
    start of a session, what the user asked it to remember; at the end of a Claude Code session,
    its transcripts are synced. See docs/agents.md.
    """


def _paths(agent: str, settings: str | None, mcp_settings: str | None) -> tuple[Path, Path | None]:
    protocol = AGENTS[agent]
    home = Path.home()
    settings_path = Path(settings).expanduser() if settings else home / protocol.settings
    if mcp_settings:
        mcp_path: Path | None = Path(mcp_settings).expanduser()
    elif protocol.mcp_file == protocol.settings:
        mcp_path = settings_path  # the MCP servers live in the same file
    else:
        mcp_path = home / protocol.mcp_file if protocol.mcp_file else None
    return settings_path, mcp_path


def _store_key(location: str, app: str) -> None:
    """An API key of ``app`` for the hooks to present to the resident process, made once and
    kept (mode 0600) under the data folder; the database is created if it is not there yet."""
    from ..agents.paths import key_id, keys_file, private_dir
    from ..errors import KeyRefused
    from .options import open_keys

    path = keys_file()
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stored = {}
    keys = open_keys(location, create=True)
    current = stored.get(key_id(location, app))
    if current:
        try:
            keys.check(current, app)
            return
        except KeyRefused:
            pass  # revoked since: make another
    key, _ = keys.create(app, label="diarist hooks")
    stored[key_id(location, app)] = key
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(stored, f, indent=2)


def _want_mcp(no_mcp: bool, yes: bool, dry_run: bool, target: Path | None) -> bool:
    if no_mcp or target is None:
        return False
    if yes or dry_run:
        return True
    if sys.stdin.isatty():
        return click.confirm(f"Also add diarist's MCP server (remember, correct, forget, recall) to {target}?",
                             default=True)
    click.echo(f"note: not adding the MCP server to {target} without asking; pass --yes to add it", err=True)
    return False


def _planned(make: Callable[[], list[Change]], dry_run: bool) -> list[Change] | None:
    """The changes ``make`` plans, or None once their diffs are printed (--dry-run); a settings
    file diarist will not change is a one-line error."""
    from ..agents.install import SettingsError

    try:
        changes = make()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    if not dry_run:
        return changes
    for change in changes:
        click.echo(change.diff(), nl=False)
    return None


settings_option = click.option("--settings", "settings", type=click.Path(dir_okay=False),
                               help="The agent's settings file (default: the user's, e.g. ~/.claude/settings.json).")
mcp_settings_option = click.option("--mcp-settings", type=click.Path(dir_okay=False),
                                   help="Where the agent reads its MCP servers (default: the user's, e.g. "
                                   "~/.claude.json, ~/.codex/config.toml, ~/.gemini/settings.json).")
dry_run_option = click.option("--dry-run", is_flag=True, help="Print the change to each file as a unified diff; "
                              "write nothing.")


@hooks.command("install")
@agent_argument
@click.option("--db", help=DB_HELP)
@click.option("--app", default="default", show_default=True, help="The app (isolation unit) the hooks read.")
@settings_option
@mcp_settings_option
@click.option("--trim", type=click.Choice(["auto", "pointers", "lines", "none"]), default="auto", show_default=True,
              help="How each memory is shown in the prompt's block (as `diarist context --trim`). none: no line "
              "embeddings (auto and pointers embed the lines of memories not shown before): faster, a longer block.")
@click.option("--no-mcp", is_flag=True, help="Do not add diarist's MCP server to the agent.")
@click.option("--yes", is_flag=True, help="Add the MCP server without asking (for scripts).")
@dry_run_option
def install(agent: str, db: str | None, app: str, settings: str | None, mcp_settings: str | None, trim: str,
            no_mcp: bool, yes: bool, dry_run: bool) -> None:
    """Add diarist's hooks to AGENT's settings (the user's other settings and hooks are kept), and
    its MCP server if you agree (--yes: without asking; --no-mcp: not at all)."""
    from ..agents.install import install_changes, remember_original
    from ..agents.paths import db_location

    protocol = AGENTS[agent]
    settings_path, mcp_path = _paths(agent, settings, mcp_settings)
    location = db_location(db)
    want_mcp = _want_mcp(no_mcp, yes, dry_run, mcp_path)
    changes = _planned(lambda: install_changes(protocol, settings_path, location, app, mcp=want_mcp,
                                               mcp_file=mcp_path, trim=trim), dry_run)
    if changes is None:
        return
    _store_key(location, app)
    for change in changes:
        if change.changed:
            remember_original(change)
            change.write()
        click.echo(f"{'updated' if change.changed else 'unchanged'} {change.path}")
    events = ", ".join(f"{event} ({action})" for event, action in protocol.events.items())
    click.echo(f"{protocol.title}: diarist answers {events} from app {app!r} of {location}")
    if agent == "codex":
        click.echo("note: Codex releases before hooks were on by default need `[features] codex_hooks = true` in "
                   "~/.codex/config.toml", err=True)


@hooks.command("uninstall")
@agent_argument
@settings_option
@mcp_settings_option
@dry_run_option
def uninstall(agent: str, settings: str | None, mcp_settings: str | None, dry_run: bool) -> None:
    """Remove exactly what `hooks install` added to AGENT's settings (and its MCP server entry);
    a file left as install found it is written back byte for byte."""
    from ..agents.install import forget_original, uninstall_changes

    settings_path, mcp_path = _paths(agent, settings, mcp_settings)
    changes = _planned(lambda: uninstall_changes(AGENTS[agent], settings_path, mcp_file=mcp_path), dry_run)
    if changes is None:
        return
    for change in changes:
        if change.changed:
            change.write()
        forget_original(change.path)
        state = "removed" if change.after is None else "updated" if change.changed else "unchanged"
        click.echo(f"{state} {change.path}")
    if not changes:
        click.echo(f"nothing to remove: no {settings_path}")


@click.command("hook", context_settings={"help_option_names": ["-h", "--help"]})
@agent_argument
@click.argument("event")
@click.option("--db", help=DB_HELP)
@click.option("--app", default="default", show_default=True, help="The app (isolation unit) to read.")
@click.option("--budget", type=click.IntRange(min=1, max=100_000), default=1000, show_default=True,
              help="Tokens the context block may take.")
@click.option("--trim", type=click.Choice(["auto", "pointers", "lines", "none"]), default="auto", show_default=True,
              help="How each memory is shown (as `diarist context --trim`).")
def hook(agent: str, event: str, db: str | None, app: str, budget: int, trim: str) -> None:
    """Run one agent hook: read the agent's JSON event on standard input, answer as its hook protocol says (what `hooks install` puts in an agent's settings).

    Errors go to the log under the data folder (logs/hooks.log), never to the agent; past
    $DIARIST_HOOK_DEADLINE seconds (4) the answer is empty."""
    from ..agents.hook import main as run_hook

    argv = [agent, event, "--app", app, "--budget", str(budget), "--trim", trim] + (["--db", db] if db else [])
    sys.exit(run_hook(argv))
