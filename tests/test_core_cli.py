"""The command line: every command has help text; ingest / search / stats / delete round trip."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from vestige.cli import main

from conftest import make_sessions


def _walk(group: click.Group, prefix: tuple[str, ...] = ()):
    """Every (path, command) under a click group, recursively (as sqlite-utils' test does)."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield prefix + (name,), command
        if isinstance(command, click.Group):
            yield from _walk(command, prefix + (name,))


COMMANDS = list(_walk(main))
CORE = {"ingest", "search", "stats", "doctor", "delete", "reindex"}


def test_core_commands_exist():
    names = {path[0] for path, _ in COMMANDS}
    assert CORE <= names


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_has_help_text(path, command):
    assert (command.help or command.short_help or "").strip(), f"vestige {' '.join(path)} has no help text"
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    if path[0] in CORE:  # the options of the server and bench groups are their owners' to test
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert (param.help or "").strip(), f"vestige {' '.join(path)} {param.opts[0]} has no help text"


def test_group_help_lists_commands():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for name in ("ingest", "search", "stats", "doctor", "delete", "reindex"):
        assert name in result.output
    assert CliRunner().invoke(main, ["-h"]).exit_code == 0


def _run(*args, env=None, input=None):
    return CliRunner().invoke(main, list(args), env=env or {}, input=input)


def test_round_trip(tmp_path):
    db = str(tmp_path / "cli.sqlite")
    sessions = make_sessions(6, seed=30)
    sessions[2]["messages"].append({"role": "user", "content": "My bicycle is a red Bianchi from 1987."})
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in sessions))
    common = ["--db", db, "--embedder", "hash"]

    ingested = _run("ingest", str(path), *common, "--app", "me")
    assert ingested.exit_code == 0, ingested.output
    assert "6 sessions added" in ingested.stdout

    found = _run("search", "Bianchi bicycle", *common, "--app", "me", "--json", "-k", "3")
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)
    assert 1 <= len(hits) <= 3
    top = hits[0]
    assert top["session_id"] == "s2" and "Bianchi" in top["text"]
    assert top["date"] == "2024-03-03T10:00:00"
    assert set(top["ranks"]) == {"dense", "lexical"} and top["ranks"]["lexical"] == 1
    assert isinstance(top["score"], float)

    plain = _run("search", "Bianchi bicycle", *common, "--app", "me", "-k", "2")
    assert plain.exit_code == 0
    assert plain.stdout.startswith("1. [2024-03-03T10:00:00] s2") and "lexical #1" in plain.stdout

    stats = _run("stats", *common)
    assert stats.exit_code == 0
    counts = json.loads(stats.stdout)["apps"]["me"]
    assert counts["sessions"] == 6 and counts["lexical_index"] == "complete"
    assert json.loads(_run("stats", *common, "--app", "me").stdout)["apps"].keys() == {"me"}
    assert _run("stats", *common, "--app", "nobody").exit_code == 1

    doctor = _run("doctor", *common)
    assert doctor.exit_code == 0, doctor.output

    deleted = _run("delete", "s2", *common, "--app", "me")
    assert deleted.exit_code == 0 and "deleted 's2'" in deleted.stdout
    hits = json.loads(_run("search", "Bianchi bicycle", *common, "--app", "me", "--json", "-k", "10").stdout)
    assert all(h["session_id"] != "s2" for h in hits)
    again = _run("delete", "s2", *common, "--app", "me")
    assert again.exit_code == 1 and "no session or fact 's2'" in again.stderr
    assert _run("delete", *common, "--app", "me").exit_code == 2  # neither an id nor --all

    refused = _run("delete", "--all", *common, "--app", "me", input="n\n")
    assert refused.exit_code == 1
    assert json.loads(_run("stats", *common).stdout)["apps"]["me"]["sessions"] == 5
    wiped = _run("delete", "--all", "--yes", *common, "--app", "me")
    assert wiped.exit_code == 0
    assert json.loads(_run("stats", *common).stdout)["apps"] == {}
    gone = _run("search", "Bianchi", *common, "--app", "me")
    assert gone.exit_code == 1 and "holds no memory" in gone.stderr


def test_database_defaults_to_vestige_db(tmp_path):
    db = tmp_path / "env.sqlite"
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(make_sessions(1, seed=31)[0]) + "\n")
    env = {"VESTIGE_DB": str(db)}
    assert _run("ingest", str(path), "--embedder", "hash", env=env).exit_code == 0
    assert db.exists()
    assert json.loads(_run("stats", "--embedder", "hash", env=env).stdout)["apps"]["default"]["sessions"] == 1


def test_entry_point_runs_as_a_subprocess(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "vestige.cli", "--help"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and "ingest" in result.stdout
