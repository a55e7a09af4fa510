"""docs/agents.md shows what each agent gets on a prompt: each example there is the installed
hook's real output for the documented event, on the memory below, so the page cannot go stale
(on a mismatch this test prints the block to paste)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from diarist.cli import main
from diarist.memory import Memory

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "hooks"
PAGE = ROOT / "docs" / "agents.md"
#: The memory of the examples, with the default model.
FACTS = [("The user wants every factorial function written iteratively, never recursively, in this codebase.",
          "2026-11-02"),
         ("The user's team ships with `make release`, never by hand.", "2026-10-15")]
EVENTS = {"claude-code": ("UserPromptSubmit", "SessionStart"), "codex": ("UserPromptSubmit",),
          "gemini": ("BeforeAgent",)}
SETTINGS = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json", "gemini": ".gemini/settings.json"}


def example_output(tmp_path: Path, agent: str, event: str, prompt: str | None = None) -> str:
    """The installed hook's output for the documented event (its prompt replaced by ``prompt``)."""
    home = tmp_path / agent / event
    home.mkdir(parents=True)
    env = {"HOME": str(home), "XDG_DATA_HOME": "", "DIARIST_DB": ""}
    with Memory(home / "memory.sqlite", create=True) as memory:
        for text, date in FACTS:
            memory.add_fact(text, date=date)
    result = CliRunner().invoke(main, ["hooks", "install", agent, "--db", str(home / "memory.sqlite"), "--no-mcp"],
                                env=env)
    assert result.exit_code == 0, result.output
    settings = json.loads((home / SETTINGS[agent]).read_text())
    (command,) = [h["command"] for g in settings["hooks"][event] for h in g["hooks"]]
    payload = json.loads((FIXTURES / agent / f"{event}.json").read_text())
    if prompt is not None:
        payload["prompt"] = prompt
    done = subprocess.run(["sh", "-c", command], input=json.dumps(payload), text=True,
                          capture_output=True, timeout=120,
                          env={**os.environ, **env, "PYTHONPATH": str(ROOT / "src"), "DIARIST_HOOK_RESIDENT": "0",
                               "DIARIST_HOOK_DEADLINE": "120"})
    assert done.returncode == 0 and done.stderr == ""
    return json.dumps(json.loads(done.stdout), indent=2, ensure_ascii=False) if done.stdout else ""


@pytest.mark.parametrize("agent,event", [(a, e) for a, events in EVENTS.items() for e in events])
@pytest.mark.slow
def test_the_page_shows_the_real_output(tmp_path, agent, event):
    shown = re.search(rf"<!-- example {agent} {event} -->\n```json\n(.*?)\n```", PAGE.read_text(), re.S)
    real = example_output(tmp_path, agent, event)
    assert shown is not None and shown.group(1) == real, (
        f"docs/agents.md: put this under <!-- example {agent} {event} -->:\n```json\n{real}\n```")


@pytest.mark.slow
def test_the_pages_off_topic_example_gets_nothing(tmp_path):
    """The page's off-topic example: a coding prompt nothing stored bears on adds nothing."""
    prompt = "Set up a GitHub Actions workflow that runs pytest on every push"
    assert prompt in PAGE.read_text()
    assert example_output(tmp_path, "claude-code", "UserPromptSubmit", prompt) == ""
