"""Restore refuses a file with schema objects diarist did not create, and doctor reports them
(issue 31, item 5). A backup holding a ``TRIGGER ... AFTER DELETE ON messages`` that copies the
text elsewhere was restored with exit 0; afterwards every delete kept the text, and doctor said ok.
"""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner

from diarist.cli import main
from diarist.errors import StoreError
from diarist.memory import Memory
from diarist.store.sqlite.backup import restore_database

EXTRAS = {
    "table": ("CREATE TABLE stash (body TEXT)", "table 'stash'"),
    "trigger": ("CREATE TABLE stash (body TEXT); CREATE TRIGGER keep_text AFTER DELETE ON messages "
                "BEGIN INSERT INTO stash VALUES (old.content); END", "trigger 'keep_text'"),
    "view": ("CREATE VIEW everything AS SELECT content FROM messages", "view 'everything'"),
    "index": ("CREATE INDEX peek ON messages (content)", "index 'peek'"),
}


def _tampered(tmp_path, extra: str):
    path = tmp_path / "backup.sqlite"
    with Memory(path, embedder="hash") as memory:
        memory.add_session([{"role": "user", "content": "the secret plan"}], app="a", session_id="s1")
    conn = sqlite3.connect(path)
    conn.executescript(EXTRAS[extra][0])
    conn.close()
    return path


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_restore_refuses_unknown_schema_objects_by_name(tmp_path, extra):
    _assert_refused(_tampered(tmp_path, extra), tmp_path / "restored.sqlite", EXTRAS[extra][1])


def _assert_refused(backup, target, named: str, pattern: str | None = None) -> None:
    """Restore refuses ``backup`` naming ``named``, by the API and the CLI; nothing is written."""
    with pytest.raises(StoreError, match=pattern or named):
        restore_database(backup, target)
    assert not target.exists()
    result = CliRunner().invoke(main, ["restore", str(backup), "--db", str(target)], env={"DIARIST_DB": ""})
    assert result.exit_code != 0 and named in result.output and "Traceback" not in result.output
    assert not target.exists()


def test_doctor_reports_unknown_schema_objects(tmp_path):
    path = _tampered(tmp_path, "trigger")
    with Memory(path, embedder="hash", create=False) as memory:
        report = memory.health()
    assert not report.ok
    assert any(line.startswith("FAIL") and "trigger 'keep_text'" in line for line in report.lines)


def test_a_clean_file_restores_and_passes_doctor(tmp_path):
    backup = tmp_path / "backup.sqlite"
    with Memory(backup, embedder="hash") as memory:
        memory.add_session([{"role": "user", "content": "the plan"}], app="a", session_id="s1")
    restore_database(backup, tmp_path / "restored.sqlite")
    with Memory(tmp_path / "restored.sqlite", embedder="hash", create=False) as memory:
        report = memory.health()
    assert report.ok, report.lines


# -- issue 45: the definitions, not only the names ---------------------------------------------------

#: A table rebuilt under its own name without ``ON DELETE CASCADE``: a deleted session's
#: messages (or chunks) would stay in the file.
REBUILT = {
    "messages": ("CREATE TABLE messages (session_id INTEGER NOT NULL REFERENCES sessions(id), position INTEGER NOT NULL, "
                 "role TEXT NOT NULL, content TEXT NOT NULL, time TEXT, PRIMARY KEY (session_id, position)) WITHOUT ROWID"),
    "chunks": None,  # built from the real definition below, its CASCADEs dropped
}


def _rebuilt(tmp_path, table: str):
    path = tmp_path / "backup.sqlite"
    with Memory(path, embedder="hash") as memory:
        memory.add_session([{"role": "user", "content": "the secret plan"}], app="a", session_id="s1")
    conn = sqlite3.connect(path, isolation_level=None)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    rebuilt = REBUILT[table] or sql.replace(" ON DELETE CASCADE", "")
    indexes = [r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
                                          "AND sql IS NOT NULL", (table,))]
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("BEGIN")
    conn.execute(f"ALTER TABLE {table} RENAME TO old_{table}")
    conn.execute(rebuilt)
    conn.execute(f"INSERT INTO {table} SELECT * FROM old_{table}")
    conn.execute(f"DROP TABLE old_{table}")
    for index in indexes:
        conn.execute(index)
    conn.execute("COMMIT")
    conn.close()
    return path


@pytest.mark.parametrize("table", sorted(REBUILT))
def test_restore_refuses_a_table_rebuilt_without_on_delete_cascade(tmp_path, table):
    backup = _rebuilt(tmp_path, table)
    _assert_refused(backup, tmp_path / "restored.sqlite", f"table '{table}'", f"table '{table}'.*definition")
    with Memory(backup, embedder="hash", create=False) as memory:
        report = memory.health()
    assert not report.ok and any(line.startswith("FAIL") and f"table '{table}'" in line for line in report.lines)
