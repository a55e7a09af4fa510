"""``diarist hooks install`` and the hooks it installs, for each agent: the documented event
payloads (tests/data/hooks/<agent>/, copied from each agent's documentation) fed to the installed
command exactly as the agent runs it (through the shell, the JSON on standard input), the
documented output checked; install then uninstall leaves the settings file byte-identical;
other hooks are kept; a malformed file is refused and left untouched; failures and deadlines
give the empty answer, never a traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from diarist.cli import main
from diarist.memory import Memory

SRC = Path(__file__).resolve().parents[2] / "src"
FIXTURES = Path(__file__).parents[1] / "data" / "hooks"
SETTINGS = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json", "gemini": ".gemini/settings.json"}
PROMPT_EVENT = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}
FACTS = ["The user wants every factorial function written iteratively, never recursively, in this codebase.",
         "The user's cat is called Admon."]
CASES = [(agent, event) for agent in SETTINGS for event in (PROMPT_EVENT[agent], "SessionStart")]


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home folder of its own (settings, data folder), and a memory with two facts in it."""
    home = tmp_path / "h"
    home.mkdir()
    for name, value in (("HOME", str(home)), ("DIARIST_HOOK_RESIDENT", "0")):
        monkeypatch.setenv(name, value)
    for name in ("XDG_DATA_HOME", "DIARIST_DB", "DIARIST_HOOK_DEADLINE"):
        monkeypatch.delenv(name, raising=False)
    with Memory(home / "memory.sqlite", embedder="hash", create=True) as memory:
        for text in FACTS:
            memory.add_fact(text)
    return home


def env_of(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "PYTHONPATH": str(SRC), "DIARIST_HOOK_RESIDENT": "0",
            "DIARIST_HOOK_DEADLINE": "120", **extra}


def install(home: Path, agent: str, *more: str) -> None:
    result = CliRunner().invoke(main, ["hooks", "install", agent, "--db", str(home / "memory.sqlite"), *more])
    assert result.exit_code == 0, result.output


def installed_command(home: Path, agent: str, event: str) -> str:
    settings = json.loads((home / SETTINGS[agent]).read_text())
    (ours,) = [h for group in settings["hooks"][event] for h in group["hooks"] if "diarist" in h["command"]]
    return ours["command"]


def run_hook(home: Path, command: str, payload: str, **extra: str) -> subprocess.CompletedProcess:
    """The command as the agent runs it: through the shell, the event on standard input."""
    return subprocess.run(["sh", "-c", command], input=payload, text=True, capture_output=True,
                          env=env_of(home, **extra), timeout=120)


def log_text(home: Path) -> str:
    path = home / ".local" / "share" / "diarist" / "logs" / "hooks.log"
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("agent,event", CASES)
@pytest.mark.slow
def test_the_documented_event_gets_the_documented_output(home, agent, event):
    install(home, agent, "--no-mcp")
    payload = (FIXTURES / agent / f"{event}.json").read_text()
    done = run_hook(home, installed_command(home, agent, event), payload)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    answer = json.loads(done.stdout)
    assert list(answer) == ["hookSpecificOutput"]
    assert list(answer["hookSpecificOutput"]) == ["hookEventName", "additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "iteratively" in context  # the fact about factorials, for the documented factorial prompt
    if event == "SessionStart":
        assert "Admon" in context  # every remembered fact, not only those the prompt is about
    assert log_text(home) == ""


@pytest.mark.parametrize("agent", sorted(SETTINGS))
def test_nothing_to_add_is_the_documented_empty_answer(home, agent):
    """An empty memory, or a prompt nothing stored bears on: Claude Code and Codex get no output
    at all, Gemini CLI (whose stdout must be JSON) gets {}."""
    install(home, agent, "--no-mcp")
    event = PROMPT_EVENT[agent]
    payload = json.loads((FIXTURES / agent / f"{event}.json").read_text())
    empty = "{}\n" if agent == "gemini" else ""
    payload["prompt"] = "   "
    done = run_hook(home, installed_command(home, agent, event), json.dumps(payload))
    assert (done.returncode, done.stdout, done.stderr) == (0, empty, "")
    (home / "memory.sqlite").unlink()  # no memory at all yet
    payload["prompt"] = "Write a function to calculate the factorial of a number"
    done = run_hook(home, installed_command(home, agent, event), json.dumps(payload))
    assert (done.returncode, done.stdout, done.stderr) == (0, empty, "")


@pytest.mark.parametrize("stdin", ["not json {", "[1, 2]"])
def test_a_bad_event_gives_the_empty_answer_and_a_log_line_never_a_traceback(home, stdin):
    install(home, "claude-code", "--no-mcp")
    done = run_hook(home, installed_command(home, "claude-code", "UserPromptSubmit"), stdin)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert "Traceback" in log_text(home) and "claude-code UserPromptSubmit" in log_text(home)


def test_past_the_deadline_the_answer_is_empty(home):
    install(home, "gemini", "--no-mcp")
    payload = (FIXTURES / "gemini" / "BeforeAgent.json").read_text()
    done = run_hook(home, installed_command(home, "gemini", "BeforeAgent"), payload, DIARIST_HOOK_DEADLINE="0.001")
    assert (done.returncode, done.stdout, done.stderr) == (0, "{}\n", "")
    assert "no answer within the deadline" in log_text(home)


def test_claude_code_session_end_syncs_the_transcripts(home):
    import shutil

    install(home, "claude-code", "--no-mcp")
    projects = home / ".claude" / "projects"
    shutil.copytree(Path(__file__).parents[1] / "data" / "importers" / "claude_code", projects)
    payload = (FIXTURES / "claude-code" / "SessionEnd.json").read_text()
    done = run_hook(home, installed_command(home, "claude-code", "SessionEnd"), payload)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    deadline = time.monotonic() + 120  # the sync runs in the background: the session is ending
    while time.monotonic() < deadline:
        with Memory(home / "memory.sqlite") as memory:
            if memory.list(kind="session"):
                break
        time.sleep(0.5)
    with Memory(home / "memory.sqlite") as memory:
        assert len(memory.list(kind="session")) == 1, log_text(home)


# -- the settings file ---------------------------------------------------------------------------

OTHER_HOOKS = ('{\n    "model": "opus",\n    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": '
               '[{"type": "command", "command": "echo checked"}]}],\n'
               '              "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "date"}]}]}\n}')


@pytest.mark.parametrize("agent", sorted(SETTINGS))
@pytest.mark.parametrize("before", [None, "", OTHER_HOOKS])
def test_install_then_uninstall_leaves_the_file_byte_identical(home, agent, before):
    settings = home / SETTINGS[agent]
    mcp = home / "mcp-settings.json"
    if before is not None:
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(before)
    install(home, agent, "--yes", "--mcp-settings", str(settings if agent == "gemini" else mcp))
    data = json.loads(settings.read_text())
    ours = [PROMPT_EVENT[agent], "SessionStart"]
    assert all(installed_command(home, agent, e) for e in ours)
    if before == OTHER_HOOKS:  # the user's own hooks are kept, beside ours
        assert data["model"] == "opus" and data["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "echo checked"
        if agent != "gemini":
            assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == "date"
    install(home, agent, "--yes", "--mcp-settings", str(settings if agent == "gemini" else mcp))  # twice: once
    assert len(json.loads(settings.read_text())["hooks"]["SessionStart"]) == 1
    result = CliRunner().invoke(main, ["hooks", "uninstall", agent, "--mcp-settings",
                                       str(settings if agent == "gemini" else mcp)])
    assert result.exit_code == 0, result.output
    if before is None:
        assert not settings.exists()
    else:
        assert settings.read_text() == before
    assert not mcp.exists()


def test_uninstall_after_the_user_changed_the_file_removes_only_ours(home):
    settings = home / SETTINGS["claude-code"]
    settings.parent.mkdir(parents=True)
    settings.write_text(OTHER_HOOKS)
    install(home, "claude-code", "--no-mcp")
    data = json.loads(settings.read_text())
    data["theme"] = "dark"  # the user (or the agent) changed something since
    settings.write_text(json.dumps(data))
    assert CliRunner().invoke(main, ["hooks", "uninstall", "claude-code"]).exit_code == 0
    assert json.loads(settings.read_text()) == {**json.loads(OTHER_HOOKS), "theme": "dark"}


def test_codex_mcp_server_goes_in_config_toml_and_comes_out(home):
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    before = 'model = "gpt-5-codex"\n\n[mcp_servers.other]\ncommand = "other"\n'
    config.write_text(before)
    install(home, "codex", "--yes")
    text = config.read_text()
    assert text.startswith(before) and "[mcp_servers.diarist]" in text and '"diarist.cli", "mcp"' in text
    import tomllib

    assert tomllib.loads(text)["mcp_servers"]["diarist"]["args"][-2:] == ["--db", str(home / "memory.sqlite")]
    assert CliRunner().invoke(main, ["hooks", "uninstall", "codex"]).exit_code == 0
    assert config.read_text() == before


@pytest.mark.parametrize("text", ['{"hooks": {', '{"hooks": []}', "[]", '{"hooks": {"SessionStart": {}}}'])
def test_a_malformed_settings_file_is_refused_and_left_untouched(home, text):
    settings = home / SETTINGS["claude-code"]
    settings.parent.mkdir(parents=True)
    settings.write_text(text)
    stamp = settings.stat().st_mtime_ns
    for command in (["hooks", "install", "claude-code", "--no-mcp"], ["hooks", "uninstall", "claude-code"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 1
        assert len(result.output.strip().splitlines()) == 1 and "left untouched" in result.output, result.output
    assert settings.read_text() == text and settings.stat().st_mtime_ns == stamp


def test_dry_run_prints_the_diff_and_writes_nothing(home):
    settings = home / SETTINGS["claude-code"]
    settings.parent.mkdir(parents=True)
    settings.write_text(OTHER_HOOKS)
    result = CliRunner().invoke(main, ["hooks", "install", "claude-code", "--dry-run", "--yes",
                                       "--mcp-settings", str(home / ".claude.json")])
    assert result.exit_code == 0
    assert f"--- {settings}\n+++ {settings}\n" in result.output and "--- /dev/null" in result.output
    assert re.search(r'\n\+ +"command": ".* -m diarist\.agents\.hook claude-code SessionStart --db ', result.output)
    assert settings.read_text() == OTHER_HOOKS and not (home / ".claude.json").exists()
    assert not (home / ".local" / "share" / "diarist" / "agents").exists()  # no key made either


def test_trim_goes_to_the_prompt_hook_only(home):
    install(home, "claude-code", "--no-mcp", "--trim", "none")
    assert installed_command(home, "claude-code", "UserPromptSubmit").endswith("--app default --trim none")
    assert installed_command(home, "claude-code", "SessionStart").endswith("--app default")
    payload = (FIXTURES / "claude-code" / "UserPromptSubmit.json").read_text()
    done = run_hook(home, installed_command(home, "claude-code", "UserPromptSubmit"), payload)
    assert "iteratively" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
