"""The command line: every command has help text; ingest / search / stats / delete round trip."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from diarist.cli import main

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
CORE = {"ingest", "search", "context", "stats", "doctor", "delete", "reindex"}


def test_core_commands_exist():
    names = {path[0] for path, _ in COMMANDS}
    assert CORE <= names


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_has_help_text(path, command):
    assert (command.help or command.short_help or "").strip(), f"diarist {' '.join(path)} has no help text"
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    if path[0] in CORE:  # the options of the server and bench groups are their owners' to test
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert (param.help or "").strip(), f"diarist {' '.join(path)} {param.opts[0]} has no help text"


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

    block = _run("context", "Bianchi bicycle", *common, "--app", "me")
    assert block.exit_code == 0, block.output
    assert "Bianchi" in block.stdout and "2024-03-03" in block.stdout and "past records" in block.stdout
    shown = json.loads(_run("context", "Bianchi bicycle", *common, "--app", "me", "--json").stdout)
    assert shown["snippets"][0]["session_id"] and shown["n_tokens"] <= 1000 and "Bianchi" in shown["context"]
    explained = _run("context", "Bianchi bicycle", *common, "--app", "me", "--explain", "--trim", "pointers")
    assert explained.exit_code == 0 and "stages:" in explained.stdout and "trim" in explained.stdout
    small = json.loads(_run("context", "Bianchi bicycle", *common, "--app", "me", "--json", "--budget", "120").stdout)
    assert small["n_tokens"] <= 120
    assert _run("context", "Bianchi bicycle", *common, "--app", "me", "--budget", "0").exit_code == 2
    assert _run("context", "Bianchi", *common, "--app", "me", "--trim", "words").exit_code == 2
    nobody = _run("context", "Bianchi", *common, "--app", "nobody")
    assert nobody.exit_code == 0 and "nothing relevant" in nobody.stdout and "holds no memory" in nobody.stderr

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


def test_database_defaults_to_diarist_db(tmp_path):
    db = tmp_path / "env.sqlite"
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(make_sessions(1, seed=31)[0]) + "\n")
    env = {"DIARIST_DB": str(db)}
    assert _run("ingest", str(path), "--embedder", "hash", env=env).exit_code == 0
    assert db.exists()
    assert json.loads(_run("stats", "--embedder", "hash", env=env).stdout)["apps"]["default"]["sessions"] == 1


def test_entry_point_runs_as_a_subprocess(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "diarist.cli", "--help"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and "ingest" in result.stdout


# -- opening a database ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["search", "anything"], ["stats"], ["doctor"], ["reindex"], ["delete", "x"],
                                     ["keys", "list"]])
def test_commands_that_only_read_refuse_a_missing_database(tmp_path, command):
    missing = tmp_path / "no" / "such" / "memory.sqlite"
    result = _run(*command, "--db", str(missing), env={"DIARIST_DB": ""})
    assert result.exit_code == 1
    assert f"no database at {missing}" in result.output and "diarist ingest" in result.output
    assert not (tmp_path / "no").exists()  # no file, and no folders either
    assert "Traceback" not in result.output


@pytest.mark.parametrize("content", [b"this is a text file, not a database\n" * 20, b"\x00" * 4096])
def test_a_file_that_is_not_a_diarist_database_is_named(tmp_path, content):
    path = tmp_path / "notes.sqlite"
    path.write_bytes(content)
    result = _run("stats", "--db", str(path))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{path} is not a diarist database" in result.output or "of another program" in result.output


def test_another_programs_sqlite_file_is_refused_untouched(tmp_path):
    import sqlite3

    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    for command in (["stats"], ["ingest", str(tmp_path / "x.jsonl")]):
        (tmp_path / "x.jsonl").write_text(json.dumps({"session_id": "s", "messages": [{"role": "user", "content": "hi"}]}))
        result = _run(*command, "--db", str(path), "--embedder", "hash") if command[0] == "ingest" else _run(*command, "--db", str(path))
        assert result.exit_code == 1 and "another program" in result.output, result.output
    assert path.read_bytes() == before


def test_bad_options_are_one_line_errors(tmp_path):
    sessions = tmp_path / "s.jsonl"
    sessions.write_text(json.dumps({"session_id": "s", "messages": [{"role": "user", "content": "my cat Admon"}]}))
    db = str(tmp_path / "m.sqlite")
    result = _run("ingest", str(sessions), "--db", db, "--embedder", "nope")
    assert result.exit_code == 1 and "unknown embedder 'nope'" in result.output and "Traceback" not in result.output
    assert _run("ingest", str(sessions), "--db", db, "--embedder", "hash").exit_code == 0
    result = _run("search", "cat", "--db", db, "--embedder", "nope")
    assert result.exit_code == 1 and "unknown embedder 'nope'" in result.output
    for bad in (["--limit", "0"], ["--limit", "-5"], ["--batch", "-1"], ["--batch", "0"]):
        result = _run("ingest", str(sessions), "--db", db, *bad)
        assert result.exit_code == 2 and "Invalid value" in result.output, bad


def test_the_database_remembers_its_embedder_and_plan(tmp_path):
    sessions = tmp_path / "s.jsonl"
    sessions.write_text(json.dumps({"session_id": "s", "messages": [{"role": "user", "content": "my cat Admon"}]}))
    db = str(tmp_path / "m.sqlite")
    assert _run("ingest", str(sessions), "--db", db, "--embedder", "hash", "--plan", "all").exit_code == 0
    # later commands need neither option again
    result = _run("search", "Admon", "--db", db, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)[0]["session_id"] == "s"
    stats = json.loads(_run("stats", "--db", db).output)
    assert stats["embedder"].startswith("hash") and stats["index_plan"] == "all"
    # naming another one is refused with the recorded one in the message
    result = _run("ingest", str(sessions), "--db", db, "--plan", "split")
    assert result.exit_code == 1 and "indexed with plan 'all'" in result.output
    result = _run("search", "Admon", "--db", db, "--embedder", "hash:32")
    assert result.exit_code == 1 and "was built with embedder 'hash-64-64'" in result.output


def test_a_hits_snippet_centres_on_the_query_word_by_stem():
    """The snippet shows the part of a long hit that holds the query's word, matched by stem as
    the lexical channel matches it ("happiness" -> "happy"), not by the stem's letters."""
    from diarist.cli.commands import _snippet

    filler = " ".join(f"filler{n}" for n in range(120))
    text = f"{filler} and Maria was happy in Lisbon. {filler}"
    snippet = _snippet(text, "Where did I find happiness?")
    assert "was happy in Lisbon" in snippet and snippet.startswith("...")
    assert _snippet(text, "quartz").startswith("filler0")  # nothing matched: the start
    assert _snippet("short text", "text") == "short text"
