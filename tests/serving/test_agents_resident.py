"""The resident process the hooks ask (``diarist.server.resident``): it answers over its Unix
socket with the app's key and refuses another app's; a hook that finds none answers in-process
and starts one; one database served by a hook and written by a sync at once loses nothing and
no "database is locked" reaches the agent."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from diarist.agents import client
from diarist.agents.paths import socket_path
from diarist.cli import main
from diarist.memory import Memory

pytest.importorskip("uvicorn", reason="the resident process needs the server extra")

SRC = Path(__file__).resolve().parents[2] / "src"
FACT = "The user wants every factorial function written iteratively, never recursively."
PROMPT = {"session_id": "abc123", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp", "permission_mode": "default",
          "hook_event_name": "UserPromptSubmit", "prompt": "Write a function to calculate the factorial of a number"}


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "h"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_DATA_HOME", "DIARIST_DB", "DIARIST_HOOK_DEADLINE", "DIARIST_HOOK_RESIDENT"):
        monkeypatch.delenv(name, raising=False)
    with Memory(home / "memory.sqlite", embedder="hash", create=True) as memory:
        memory.add_fact(FACT)
    result = CliRunner().invoke(main, ["hooks", "install", "claude-code", "--db", str(home / "memory.sqlite"),
                                       "--no-mcp"])
    assert result.exit_code == 0, result.output
    return home


def env_of(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "PYTHONPATH": str(SRC), "DIARIST_HOOK_DEADLINE": "120", **extra}


def wait_for_socket(location: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not socket_path(location).exists():
        assert time.monotonic() < deadline, "the resident process did not come up"
        time.sleep(0.2)


def hook(home: Path, payload: dict | str = PROMPT, **extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "diarist.agents.hook", "claude-code", "UserPromptSubmit",
               "--db", str(home / "memory.sqlite")]
    stdin = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(command, input=stdin, text=True, capture_output=True, env=env_of(home, **extra), timeout=120)


def log_text(home: Path) -> str:
    path = home / ".local" / "share" / "diarist" / "logs" / "hooks.log"
    return path.read_text() if path.exists() else ""


@pytest.fixture
def resident(home):
    location = str(home / "memory.sqlite")
    process = subprocess.Popen([sys.executable, "-m", "diarist.server.resident", "--db", location],
                               env=env_of(home), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_socket(location)
        yield location
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert not socket_path(location).exists()  # removed on the way out


@pytest.mark.slow
def test_the_resident_process_answers_with_the_apps_key_and_no_other(home, resident):
    text = client.context(resident, "default", PROMPT["prompt"], budget_tokens=1000, timeout=10)
    assert "iteratively" in text
    answer = json.loads(hook(home, DIARIST_HOOK_RESIDENT="0").stdout)
    assert answer["hookSpecificOutput"]["additionalContext"] == text
    # Another app's key reaches nothing here, as with `diarist serve`.
    from diarist.cli.options import open_keys

    other, _ = open_keys(resident, create=False).create("other")
    with pytest.raises(client.Refused, match="^403"):
        client.request(resident, "POST", "/v1/apps/default/context", key=other, body={"query": "factorial"})
    with pytest.raises(client.Refused, match="^401"):
        client.request(resident, "POST", "/v1/apps/default/context", key="vst_not-a-key", body={"query": "x"})
    # A second resident process for the same database leaves at once: the first holds the lock.
    second = subprocess.run([sys.executable, "-m", "diarist.server.resident", "--db", resident], env=env_of(home),
                            capture_output=True, text=True, timeout=60)
    assert second.returncode == 0 and "already" in second.stderr


@pytest.mark.slow
def test_a_hook_answered_by_the_resident_process_imports_nothing_it_does_not_need(home, resident):
    """The hook's process is most of a prompt's time: numpy, the model, and pathlib (a fifth of the
    process under load) stay out of it when the resident process answers."""
    command = [sys.executable, "-X", "importtime", "-m", "diarist.agents.hook", "claude-code", "UserPromptSubmit",
               "--db", resident]
    done = subprocess.run(command, input=json.dumps(PROMPT), text=True, capture_output=True,
                          env=env_of(home, DIARIST_HOOK_RESIDENT="0"), timeout=120)
    assert "iteratively" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "json" in imported and "socket" in imported  # what it needs (and the check reads the trace)
    assert not imported & {"pathlib", "numpy", "onnxruntime", "diarist.memory"}, imported & {"pathlib", "numpy"}


@pytest.mark.slow
def test_without_a_resident_process_the_hook_answers_in_process_and_starts_one(home):
    location = str(home / "memory.sqlite")
    done = hook(home)
    assert done.returncode == 0 and "iteratively" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    try:
        wait_for_socket(location)
        assert "iteratively" in client.context(location, "default", PROMPT["prompt"], budget_tokens=1000, timeout=10)
    finally:
        pids = logged_pids(home)
        for pid in pids:
            os.kill(int(pid), signal.SIGINT)
    assert len(pids) == 1, log_text(home)


def logged_pids(home: Path, seconds: float = 30) -> list[str]:
    """The resident processes the hook log names. The socket file exists (and takes requests into
    its backlog) a moment before the process logs that it serves, so the line is waited for: CI
    once read the log in that moment."""
    deadline = time.monotonic() + seconds
    while not (pids := re.findall(r"\(pid (\d+)\)", log_text(home))) and time.monotonic() < deadline:
        time.sleep(0.1)
    return pids


def _notes(folder: Path, n: int) -> None:
    folder.mkdir()
    for i in range(n):
        (folder / f"note{i:04d}.md").write_text(f"# Note {i}\n\nMeeting {i} about the harbour crane number {i}.\n")


@pytest.mark.parametrize("path", ["in-process", "resident"])
@pytest.mark.slow
def test_a_hook_and_a_sync_at_once_lose_nothing_and_show_no_lock(home, request, path):
    """A sync writes hundreds of notes while hooks read the same database: every hook answers
    (the fact stored before), none gets an error, the log holds none, and every note is stored."""
    if path == "resident":
        request.getfixturevalue("resident")
    folder = home / "notes"
    _notes(folder, 400)
    sync = subprocess.Popen([sys.executable, "-m", "diarist.cli", "sync", str(folder), "--db",
                             str(home / "memory.sqlite")], env=env_of(home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    answers, during = [], 0
    while sync.poll() is None or len(answers) < 3:
        during += sync.poll() is None  # this hook starts while the sync writes
        done = hook(home, DIARIST_HOOK_RESIDENT="0")
        answers.append((done.returncode, done.stdout, done.stderr))
    out, err = sync.communicate()
    assert sync.returncode == 0, err[-2000:]
    assert during >= 2, "the sync was over before the hooks could overlap it"
    for code, stdout, stderr in answers:
        assert code == 0 and stderr == ""
        assert "iteratively" in json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    assert "locked" not in log_text(home).lower() and log_text(home) == ""
    with Memory(home / "memory.sqlite") as memory:
        counts = memory.app_stats("default")
        assert (counts["sessions"], counts["facts"]) == (400, 1)
