"""Hostile CLI arguments end in a one-line error and exit status 1, never a traceback.

Finding this guards (the old build, e0b9e37): 11 tracebacks in 182 hostile argument cases (a
300-byte file name in backup, restore, export, ingest, compact, migrate; `export --out FOLDER`:
IsADirectoryError; `export --out /dev/full`; `keys list --app $'\\xff'`).

In-process through click's runner: a traceback shows as an exception that is not SystemExit.
"""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from vestige.cli import main
from vestige.memory import Memory

LONG = "x" * 300


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "m.sqlite"
    m = Memory(path, embedder="hash")
    m.add_fact("The user's cat is called Admon.", app="a")
    m.close()
    return str(path)


CASES = {
    "backup-long-name": lambda db, tmp: ["backup", "--db", db, os.path.join(tmp, LONG)],
    "restore-long-name": lambda db, tmp: ["restore", os.path.join(tmp, LONG), "--db", os.path.join(tmp, "r.sqlite")],
    "export-long-name": lambda db, tmp: ["export", "--db", db, "--app", "a", "--out", os.path.join(tmp, LONG)],
    "export-to-folder": lambda db, tmp: ["export", "--db", db, "--app", "a", "--out", tmp],
    "export-to-dev-full": lambda db, tmp: ["export", "--db", db, "--app", "a", "--out", "/dev/full"],
    "ingest-long-name": lambda db, tmp: ["ingest", os.path.join(tmp, LONG), "--db", db, "--app", "a"],
    "compact-long-db": lambda db, tmp: ["compact", "--db", os.path.join(tmp, LONG)],
    "migrate-long-name": lambda db, tmp: ["migrate", db, os.path.join(tmp, LONG)],
    "keys-list-bad-byte": lambda db, tmp: ["keys", "list", "--db", db, "--app", "\udcff"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_argument_is_one_line_error(db, tmp_path, name):
    args = CASES[name](db, str(tmp_path))
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{name}: {type(result.exception).__name__}: {result.exception}")
    assert result.exit_code != 0 or name == "keys-list-bad-byte", f"{name}: {result.output}"
    assert "Traceback" not in result.output
