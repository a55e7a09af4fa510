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

from diarist.cli import main
from diarist.memory import Memory

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


# -- the count, rerun (--heavy): every command that takes --db, with every hostile --db --

def _hostile_dbs(db: str, tmp: str) -> dict[str, str]:
    """Database paths that are not a diarist database, each made inside ``tmp`` (a link stands
    for a device, so that nothing is ever renamed onto /dev itself)."""
    base = os.path.join(tmp, "hostile")
    os.makedirs(base)
    os.mkfifo(os.path.join(base, "fifo"))
    for device in ("zero", "null", "urandom"):
        os.symlink(f"/dev/{device}", os.path.join(base, f"dev-{device}"))
    with open(os.path.join(base, "text.txt"), "w") as f:
        f.write("not a database\n")
    open(os.path.join(base, "empty"), "w").close()
    for name, sidecar in (("wal-fifo.sqlite", "-wal"), ("shm-link.sqlite", "-shm"), ("hnsw-fifo.sqlite", ".hnsw")):
        Memory(os.path.join(base, name), embedder="hash").close()
        path = os.path.join(base, name + sidecar)
        os.symlink("/dev/zero", path) if sidecar == "-shm" else os.mkfifo(path)
    names = ["fifo", "dev-zero", "dev-null", "dev-urandom", "text.txt", "empty", "wal-fifo.sqlite", "shm-link.sqlite",
             "hnsw-fifo.sqlite", LONG, "\udcff.sqlite", "no/such/folder/m.sqlite"]
    return {name[:20]: os.path.join(base, name) for name in names} | {"folder": base, "empty-string": ""}


def _commands(db: str, tmp: str) -> dict[str, list[str]]:
    """Each command that takes --db, with good other arguments (--db is appended)."""
    notes = os.path.join(tmp, "notes.md")
    with open(notes, "w") as f:
        f.write("# Note\n\nThe user's dog is called Rex.\n")
    hashed = ["--embedder", "hash"]
    return {
        "add": ["add", "a new fact", "--app", "a", *hashed], "backup": ["backup", os.path.join(tmp, "copy.sqlite")],
        "compact": ["compact"], "delete": ["delete", "f1", "--app", "a", "--yes", *hashed], "doctor": ["doctor", *hashed],
        "export": ["export", "--app", "a", "--out", os.path.join(tmp, "out.jsonl")], "history": ["history", "f1", "--app", "a"],
        "ingest": ["ingest", notes, "--app", "a", *hashed], "keys-create": ["keys", "create", "a"],
        "keys-list": ["keys", "list"], "keys-revoke": ["keys", "revoke", "1"], "list": ["list", "--app", "a"],
        "reindex": ["reindex", "--app", "a", *hashed], "restore": ["restore", db, "--force"],
        "search": ["search", "cat", "--app", "a", *hashed], "context": ["context", "cat", "--app", "a", *hashed],
        "show": ["show", "f1", "--app", "a"],
        "stats": ["stats", *hashed],
    }


#: SQLite's own words for a path that is not a database file: they name no cause ("--db /dev/zero":
#: "cannot rollback - no transaction is active").
SQLITE_WORDS = ("cannot rollback", "disk I/O error", "unable to open database file")


@pytest.mark.heavy
def test_hostile_databases_heavy(db, tmp_path):
    """Every command that takes --db, against 14 paths that are no diarist database: one line,
    never a traceback (RELIABILITY.md, "Bad input")."""
    tracebacks, misleading, cases, exits = [], [], 0, {}
    hostile = _hostile_dbs(db, str(tmp_path))
    for command, args in _commands(db, str(tmp_path)).items():
        for name, path in hostile.items():
            cases += 1
            result = CliRunner().invoke(main, [*args, "--db", path])
            exits[result.exit_code] = exits.get(result.exit_code, 0) + 1
            if not (result.exception is None or isinstance(result.exception, SystemExit)) \
                    or "Traceback" in result.output:
                tracebacks.append(f"{command} --db {name}: {type(result.exception).__name__}: {result.exception}")
            elif any(words in result.output for words in SQLITE_WORDS):
                misleading.append(f"{command} --db {name}: {result.output.strip()[:120]}")
    print(f"\nhostile --db: {cases} cases, {len(tracebacks)} tracebacks, {len(misleading)} SQLite messages "
          f"that do not say what the path is, exit codes {exits}")
    assert not tracebacks and not misleading, "\n".join(tracebacks + misleading)
