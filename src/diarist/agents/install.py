"""``diarist hooks install`` / ``uninstall``: an agent's settings file changed to run diarist's
hooks (and, if asked, to know diarist's MCP server), and changed back exactly.

Every change is a ``Change``: the file's text before and after, shown as a unified diff
(``--dry-run``) or written whole (a temporary file renamed over it). The user's other settings
and hooks are kept as they are; diarist's hook entries are the ones whose command runs
``diarist.agents.hook``. Install keeps a record of the file as it was (under the data folder);
uninstall removes diarist's entries and, when what remains is what the record holds, writes the
recorded text back byte for byte (or removes the file install created). A file that is not
valid JSON (or not an object where hooks go) is refused and left untouched.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from .paths import private_dir, records_dir
from .protocols import CONTEXT, Protocol

MARKER = "diarist.agents.hook"
MCP_NAME = "diarist"
TOML_BEGIN = "# diarist: added by `diarist hooks install codex`; `diarist hooks uninstall codex` removes it"
TOML_END = "# diarist: end"


class SettingsError(Exception):
    """A settings file diarist will not change (not JSON, or not the shape the agent documents)."""


class Change:
    """A file's text before (None: no file) and after (None: the file removed)."""

    def __init__(self, path: Path, before: str | None, after: str | None) -> None:
        self.path, self.before, self.after = path, before, after

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        lines = difflib.unified_diff((self.before or "").splitlines(keepends=True),
                                     (self.after or "").splitlines(keepends=True),
                                     fromfile=str(self.path) if self.before is not None else "/dev/null",
                                     tofile=str(self.path) if self.after is not None else "/dev/null")
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)

    def write(self) -> None:
        if self.after is None:
            self.path.unlink(missing_ok=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        mode = self.path.stat().st_mode & 0o777 if self.path.exists() else 0o600
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(self.after)
            os.chmod(tmp, mode)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def hook_command(agent: str, event: str, location: str, app: str, trim: str = "auto") -> str:
    """The shell command an agent runs for ``event``: this Python, so no PATH is needed."""
    more = ["--trim", trim] if trim != "auto" else []
    return shlex.join([sys.executable, "-m", MARKER, agent, event, "--db", location, "--app", app, *more])


def mcp_command(location: str, app: str) -> list[str]:
    return [sys.executable, "-m", "diarist.cli", "mcp", "--app", app, "--db", location]


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def load_json(path: Path, text: str | None) -> dict[str, Any]:
    """The settings object (empty when the file is missing or blank); SettingsError otherwise."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        where = f" (line {exc.lineno}, column {exc.colno})" if hasattr(exc, "lineno") else ""
        raise SettingsError(f"{path} is not valid JSON{where}: left untouched; fix it and run this again") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path} holds a JSON {type(data).__name__}, not an object: left untouched")
    return data


def dump_json(data: dict[str, Any], like: str | None = None) -> str:
    """``data`` as JSON, indented as the file ``like`` was (2 spaces when it tells nothing)."""
    return json.dumps(data, indent=_indent_of(like), ensure_ascii=False) + "\n"


def _indent_of(text: str | None) -> int | str:
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and line != stripped:
            lead = line[: len(line) - len(stripped)]
            return lead if "\t" in lead else len(lead)
    return 2


def _is_ours(handler: Any) -> bool:
    return isinstance(handler, dict) and MARKER in str(handler.get("command", ""))


def _hooks_table(path: Path, data: dict[str, Any], event: str | None = None) -> Any:
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError(f"{path}: \"hooks\" is not an object: left untouched")
    if event is not None and not isinstance(hooks.get(event, []), list):
        raise SettingsError(f"{path}: \"hooks\".\"{event}\" is not a list: left untouched")
    return hooks


def remove_hooks(path: Path, data: dict[str, Any], protocol: Protocol) -> None:
    """Take diarist's hook entries out of ``data``; a list or table left empty goes too."""
    if "hooks" not in data:
        return
    hooks = _hooks_table(path, data)
    for event in protocol.events:
        if event not in hooks:
            continue
        groups = _hooks_table(path, data, event)[event]
        kept = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list) and any(_is_ours(h) for h in handlers):
                handlers = [h for h in handlers if not _is_ours(h)]
                if not handlers:
                    continue
                group = {**group, "hooks": handlers}
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del data["hooks"]


def add_hooks(path: Path, data: dict[str, Any], protocol: Protocol, location: str, app: str,
              trim: str = "auto") -> None:
    """Put diarist's hook entries in ``data`` (once: a re-install replaces its own)."""
    remove_hooks(path, data, protocol)
    hooks = _hooks_table(path, data)
    data["hooks"] = hooks
    for event in protocol.events:
        _hooks_table(path, data, event)
        hooks.setdefault(event, []).append(
            {"hooks": [protocol.handler(hook_command(protocol.name, event, location, app,
                                                     trim if protocol.events[event] == CONTEXT else "auto"), event)]})


def mcp_entry(location: str, app: str) -> dict[str, Any]:
    command, *args = mcp_command(location, app)
    return {"command": command, "args": args}


def set_mcp_json(path: Path, data: dict[str, Any], entry: dict[str, Any] | None) -> None:
    """Add (entry) or remove (None) diarist under "mcpServers"."""
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise SettingsError(f"{path}: \"mcpServers\" is not an object: left untouched")
    if entry is None:
        if MCP_NAME in servers and _is_our_mcp(servers[MCP_NAME]):
            del servers[MCP_NAME]
            if not servers:
                data.pop("mcpServers", None)
        return
    if MCP_NAME in servers and not _is_our_mcp(servers[MCP_NAME]):
        raise SettingsError(f"{path}: an MCP server named {MCP_NAME!r} is there already, not added by diarist: "
                            "left untouched (pass --no-mcp)")
    servers[MCP_NAME] = entry
    data["mcpServers"] = servers


def _is_our_mcp(entry: Any) -> bool:
    return isinstance(entry, dict) and "diarist.cli" in entry.get("args", []) and "mcp" in entry.get("args", [])


def toml_block(location: str, app: str) -> str:
    command, *args = mcp_command(location, app)
    # JSON's string escapes are TOML basic strings' too.
    return (f"{TOML_BEGIN}\n[mcp_servers.{MCP_NAME}]\ncommand = {json.dumps(command)}\n"
            f"args = [{', '.join(json.dumps(a) for a in args)}]\n{TOML_END}\n")


def without_toml_block(text: str) -> str:
    start = text.find(TOML_BEGIN)
    if start < 0:
        return text
    end = text.find(TOML_END, start)
    if end < 0:
        raise SettingsError(f"diarist's MCP block has no end line ({TOML_END!r}): left untouched")
    end += len(TOML_END) + 1
    if start > 0 and text[start - 1] == "\n" and text[start - 2 : start] == "\n\n":
        start -= 1  # the blank line install put before it
    return text[:start] + text[end:]


def with_toml_block(path: Path, text: str | None, location: str, app: str) -> str:
    base = without_toml_block(text or "")
    if f"[mcp_servers.{MCP_NAME}]" in base:
        raise SettingsError(f"{path}: an MCP server named {MCP_NAME!r} is there already, not added by diarist: "
                            "left untouched (pass --no-mcp)")
    if not base:
        return toml_block(location, app)
    return base + ("" if base.endswith("\n") else "\n") + "\n" + toml_block(location, app)


# --- the records of what install changed -------------------------------------------------------

def _record_path(path: Path) -> Path:
    return records_dir() / f"{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]}.json"


def remember_original(change: Change) -> None:
    """Keep the file as it was before the first install (a re-install keeps the first record)."""
    record = _record_path(change.path)
    if record.exists():
        return
    private_dir(record.parent)
    record.write_text(json.dumps({"path": str(change.path), "original": change.before}), encoding="utf-8")
    os.chmod(record, 0o600)


def recorded_original(path: Path) -> tuple[bool, str | None]:
    """(whether a record exists, the text it holds: None for no file)."""
    try:
        record = json.loads(_record_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, None
    return True, record.get("original")


def forget_original(path: Path) -> None:
    _record_path(path).unlink(missing_ok=True)


def restored(path: Path, remaining: str | None, same: Any) -> str | None:
    """The recorded original when what remains after uninstall is the same as it (``same``
    compares them), else what remains: byte for byte what was there before install."""
    found, original = recorded_original(path)
    if found and same(original, remaining):
        return original
    return remaining


# --- the changes ---------------------------------------------------------------------------------

def install_changes(protocol: Protocol, settings: Path, location: str, app: str, *,
                    mcp: bool, mcp_file: Path | None, trim: str = "auto") -> list[Change]:
    before = read_text(settings)
    data = load_json(settings, before)
    add_hooks(settings, data, protocol, location, app, trim)
    changes = []
    if mcp and mcp_file is not None and mcp_file == settings and protocol.mcp_format == "json":
        set_mcp_json(settings, data, mcp_entry(location, app))
    changes.append(Change(settings, before, dump_json(data, before)))
    if mcp and mcp_file is not None and mcp_file != settings:
        mcp_before = read_text(mcp_file)
        if protocol.mcp_format == "toml":
            changes.append(Change(mcp_file, mcp_before, with_toml_block(mcp_file, mcp_before, location, app)))
        else:
            mcp_data = load_json(mcp_file, mcp_before)
            set_mcp_json(mcp_file, mcp_data, mcp_entry(location, app))
            changes.append(Change(mcp_file, mcp_before, dump_json(mcp_data, mcp_before)))
    return changes


def _same_json(a: str | None, b: str | None) -> bool:
    try:
        return (json.loads(a) if a and a.strip() else {}) == (json.loads(b) if b and b.strip() else {})
    except ValueError:
        return False


def _same_text(a: str | None, b: str | None) -> bool:
    return (a or "").rstrip() == (b or "").rstrip()


def uninstall_changes(protocol: Protocol, settings: Path, *, mcp_file: Path | None) -> list[Change]:
    changes = []
    before = read_text(settings)
    if before is not None:
        data = load_json(settings, before)
        remove_hooks(settings, data, protocol)
        if mcp_file == settings and protocol.mcp_format == "json":
            set_mcp_json(settings, data, None)
        remaining = dump_json(data, before) if data else None
        # Nothing of ours there: the bytes are left alone; else the original where it matches.
        after = before if _same_json(before, remaining) else restored(settings, remaining, _same_json)
        changes.append(Change(settings, before, after))
    if mcp_file is not None and mcp_file != settings:
        mcp_before = read_text(mcp_file)
        if mcp_before is not None:
            if protocol.mcp_format == "toml":
                remaining = without_toml_block(mcp_before)
                after = mcp_before if remaining == mcp_before else restored(mcp_file, remaining or None, _same_text)
                changes.append(Change(mcp_file, mcp_before, after))
            else:
                mcp_data = load_json(mcp_file, mcp_before)
                set_mcp_json(mcp_file, mcp_data, None)
                remaining = dump_json(mcp_data, mcp_before) if mcp_data else None
                after = (mcp_before if _same_json(mcp_before, remaining)
                         else restored(mcp_file, remaining, _same_json))
                changes.append(Change(mcp_file, mcp_before, after))
    return changes
