"""Backup and restore: `diarist backup` copies a live database consistently while writers run;
`diarist restore` puts a backup in place, and refuses anything that is not a sound diarist
database. A restored database answers the same searches as the source did at backup time."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from diarist.cli import main
from diarist.errors import ConfigError, StoreError
from diarist.memory import Memory
from diarist.store.base import Store
from diarist.store.sqlite import backup as backup_module

from conftest import add_all, make_sessions

QUERIES = ["garden river lantern", "copper falcon harbor", "marmalade oranges", "violin meadow", "zephyr wharf"]


def answers(mem: Memory, app: str = "a") -> list[list[tuple]]:
    """What each query finds: (session, fact, text, score) of every hit, in order."""
    return [
        [(h.session_id, h.fact_id, h.text, round(h.score, 9)) for h in mem.search(q, app=app, k=8)]
        for q in QUERIES
    ]


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def session_rows(path: Path, external_id: str) -> tuple[list[tuple], list[tuple]]:
    """(messages, chunks) of a session as stored, read with plain sqlite3."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        messages = conn.execute(
            "SELECT m.position, m.role, m.content FROM messages m JOIN sessions s ON s.id = m.session_id "
            "WHERE s.external_id = ? ORDER BY m.position", (external_id,)).fetchall()
        chunks = conn.execute(
            "SELECT c.position, c.view, c.text, c.in_lexical, c.vector IS NOT NULL FROM chunks c "
            "JOIN sessions s ON s.id = c.session_id WHERE s.external_id = ? ORDER BY c.id", (external_id,)).fetchall()
        return messages, chunks
    finally:
        conn.close()


def writer_session(t: int, i: int) -> dict:
    token = f"tok{t}q{i}x"  # one term only this session holds
    return {"session_id": f"w{t}-{i:03d}", "date": f"2024-06-{1 + i % 28:02d}T08:00:00", "messages": [
        {"role": "user", "content": f"Writer {t} note {i}: {token} the garden river lantern."},
        {"role": "assistant", "content": f"Stored {token} for writer {t}."},
        {"role": "user", "content": f"And the copper falcon number {i} of {token}."},
        {"role": "assistant", "content": "Noted."},
    ]}


def files_in(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


# -- backup ------------------------------------------------------------------------------------


def test_backup_while_two_writers_run_is_a_consistent_prefix(tmp_path: Path):
    src = tmp_path / "memory.sqlite"
    dest = tmp_path / "backup.sqlite"
    mem = Memory(src, embedder="hash")  # long-lived, as a server
    add_all(mem, make_sessions(20, seed=1), app="a")
    written = [0, 0]
    started = [threading.Event(), threading.Event()]
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        own = Memory(src, embedder="hash")  # a connection of its own, as another process
        try:
            after_stop = 0
            for i in range(400):  # bounded whatever happens
                add_all(own, [writer_session(t, i)], app="a")  # one session per transaction
                written[t] = i + 1
                if i >= 4:
                    started[t].set()
                if stop.is_set():
                    after_stop += 1
                    if after_stop >= 3:
                        break
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            started[t].set()
        finally:
            own.close()

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    try:
        for ev in started:
            assert ev.wait(60)
        mem.backup(dest)
        during = list(written)
    finally:
        stop.set()
        for th in threads:
            th.join(60)
    assert not errors, errors
    assert min(during) >= 5, "both writers were running when the backup was taken"

    assert integrity(dest) == "ok"
    assert not Path(f"{dest}-wal").exists()  # self-contained
    assert files_in(tmp_path) <= {"memory.sqlite", "memory.sqlite-wal", "memory.sqlite-shm", "backup.sqlite"}
    copy = Memory(dest, embedder="hash", create=False)
    try:
        held = {s["session_id"] for s in copy.list(app="a", limit=10_000)}
        assert {f"s{i}" for i in range(20)} <= held
        total = 0
        for t in range(2):
            mine = sorted(int(s.split("-")[1]) for s in held if s.startswith(f"w{t}-"))
            assert mine == list(range(len(mine))), f"writer {t}: not a prefix of its sessions: {mine}"
            total += len(mine)
            for i in mine:  # every session it holds is whole: all its messages and chunks
                sid = f"w{t}-{i:03d}"
                expected = writer_session(t, i)["messages"]
                assert [m["content"] for m in copy.get(sid, app="a")["messages"]] == [m["content"] for m in expected]
                assert session_rows(dest, sid) == session_rows(src, sid)
                assert session_rows(dest, sid)[1], "a stored session has chunks"
            for i in mine[::7] + mine[-1:]:
                hits = copy.search(f"tok{t}q{i}x", app="a", k=3)
                assert hits[0].session_id == f"w{t}-{i:03d}"
        assert total >= 10
        stats = copy.stats()["apps"]["a"]
        assert stats["lexical_index"] == "complete"
        assert stats["sessions"] == 20 + total
    finally:
        copy.close()
    assert mem.stats()["apps"]["a"]["sessions"] > 20 + total  # the writers carried on after it
    mem.close()


def test_backup_refuses_an_existing_dest_unless_forced(tmp_path: Path):
    src = tmp_path / "memory.sqlite"
    with Memory(src, embedder="hash") as mem:
        add_all(mem, make_sessions(5, seed=1), app="a")
    dest = tmp_path / "backup.sqlite"
    dest.write_bytes(b"an older backup")
    runner = CliRunner()
    refused = runner.invoke(main, ["backup", str(dest), "--db", str(src)])
    assert refused.exit_code == 1
    assert "already exists; pass --force" in refused.output and len(refused.output.strip().splitlines()) == 1
    assert dest.read_bytes() == b"an older backup"
    done = runner.invoke(main, ["backup", str(dest), "--db", str(src), "--force"])
    assert done.exit_code == 0, done.output
    assert "integrity ok" in done.output
    assert integrity(dest) == "ok"
    assert files_in(tmp_path) == {"memory.sqlite", "backup.sqlite"}  # no temporary file left
    itself = runner.invoke(main, ["backup", str(src), "--db", str(src), "--force"])
    assert itself.exit_code == 1 and "is the database itself" in itself.output
    missing = runner.invoke(main, ["backup", str(tmp_path / "b2.sqlite"), "--db", str(tmp_path / "nope.sqlite")])
    assert missing.exit_code == 1 and "no database at" in missing.output
    assert not (tmp_path / "nope.sqlite").exists()


def test_a_failed_backup_never_appears_under_dest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    src = tmp_path / "memory.sqlite"
    dest = tmp_path / "backup.sqlite"
    with Memory(src, embedder="hash") as mem:
        add_all(mem, make_sessions(5, seed=1), app="a")
        monkeypatch.setattr(backup_module, "integrity", lambda conn: "*** in database main *** Page 7: corrupt")
        with pytest.raises(StoreError, match="fails its integrity check"):
            mem.backup(dest)
        assert files_in(tmp_path) <= {"memory.sqlite", "memory.sqlite-wal", "memory.sqlite-shm"}
        monkeypatch.undo()
        mem.backup(dest)
    assert integrity(dest) == "ok"


def test_backup_of_an_in_memory_store_and_the_contract_default(tmp_path: Path):
    with Memory(":memory:", embedder="hash") as mem:
        add_all(mem, make_sessions(5, seed=1), app="a")
        before = answers(mem)
        mem.backup(tmp_path / "copy.sqlite")
    with Memory(tmp_path / "copy.sqlite", embedder="hash", create=False) as copy:
        assert answers(copy) == before
    with pytest.raises(ConfigError, match="backups of this store are not supported"):
        Store.backup(SimpleNamespace(location="somewhere"), str(tmp_path / "x.sqlite"))


# -- restore -----------------------------------------------------------------------------------


def _source_with_backup(tmp_path: Path, deletes: bool = True) -> tuple[Path, Path, list, list]:
    """A database, its backup, and the answers of both apps at backup time; then the database
    moves on (more sessions, and deletes unless told not), so it no longer answers the same."""
    src = tmp_path / "memory.sqlite"
    bak = tmp_path / "backup.sqlite"
    with Memory(src, embedder="hash") as mem:
        add_all(mem, make_sessions(20, seed=1), app="a")
        add_all(mem, make_sessions(8, seed=2, prefix="b"), app="b")
        mem.add_fact("The marmalade recipe needs bitter Seville oranges.", app="a", fact_id="f1")
        at_backup = answers(mem), answers(mem, "b")
        result = CliRunner().invoke(main, ["backup", str(bak), "--db", str(src)])
        assert result.exit_code == 0, result.output
        add_all(mem, make_sessions(10, seed=9, prefix="late"), app="a")
        if deletes:
            mem.delete("s3", app="a")
            mem.delete("f1", app="a")
        assert (answers(mem), answers(mem, "b")) != at_backup
    return src, bak, *at_backup


def test_restore_into_a_new_path_answers_as_at_backup_time(tmp_path: Path):
    _, bak, at_a, at_b = _source_with_backup(tmp_path)
    target = tmp_path / "restored" / "memory.sqlite"
    result = CliRunner().invoke(main, ["restore", str(bak), "--db", str(target)])
    assert result.exit_code == 0, result.output
    assert "renamed into place" in result.output and "apps: a, b" in result.output
    assert integrity(target) == "ok"
    with Memory(target, embedder="hash", create=False) as mem:
        assert answers(mem) == at_a and answers(mem, "b") == at_b
        assert mem.get("f1", app="a")["text"].startswith("The marmalade")


@pytest.mark.parametrize("deletes", [True, False], ids=["moved-on-with-deletes", "moved-on-by-adding"])
def test_restore_over_an_existing_database_needs_force_and_reaches_open_readers(tmp_path: Path, deletes: bool):
    src, bak, at_a, at_b = _source_with_backup(tmp_path, deletes)
    live = Memory(src, embedder="hash", create=False)  # a server holding the target open
    try:
        moved_on = answers(live)  # its caches now hold the later state
        before = src.read_bytes()
        runner = CliRunner()
        refused = runner.invoke(main, ["restore", str(bak), "--db", str(src)])
        assert refused.exit_code == 1
        assert "already exists; pass --force" in refused.output and len(refused.output.strip().splitlines()) == 1
        assert src.read_bytes() == before and answers(live) == moved_on

        done = runner.invoke(main, ["restore", str(bak), "--db", str(src), "--force"])
        assert done.exit_code == 0, done.output
        assert "backup API into the existing database" in done.output
        assert integrity(src) == "ok"
        assert Path(f"{src}-wal").stat().st_size == 0  # the replaced content left the log too
        # The open connection sees the restored data, and no cache of the later state survives.
        assert answers(live) == at_a and answers(live, "b") == at_b
        add_all(live, make_sessions(3, seed=11, prefix="new"), app="a")  # it keeps working
        assert live.stats()["apps"]["a"]["sessions"] == 20 + 3
        with Memory(src, embedder="hash", create=False) as fresh:  # no cache: the truth
            assert answers(live) == answers(fresh)
            for s in make_sessions(3, seed=11, prefix="new"):
                query = s["messages"][0]["content"]
                assert [h.chunk_id for h in live.search(query, app="a", k=5)] == \
                    [h.chunk_id for h in fresh.search(query, app="a", k=5)]
    finally:
        live.close()
    with Memory(src, embedder="hash", create=False) as again:
        assert again.stats()["apps"]["a"]["sessions"] == 23
    assert files_in(tmp_path) == {"memory.sqlite", "backup.sqlite"}


def test_restore_with_force_replaces_a_file_that_is_not_sqlite(tmp_path: Path):
    _, bak, at_a, _ = _source_with_backup(tmp_path)
    target = tmp_path / "broken.sqlite"
    target.write_bytes(b"garbage, not SQLite" * 500)
    assert CliRunner().invoke(main, ["restore", str(bak), "--db", str(target)]).exit_code == 1
    result = CliRunner().invoke(main, ["restore", str(bak), "--db", str(target), "--force"])
    assert result.exit_code == 0, result.output
    assert "renamed into place" in result.output
    with Memory(target, embedder="hash", create=False) as mem:
        assert answers(mem) == at_a


def test_restore_refuses_what_is_not_a_diarist_database(tmp_path: Path):
    _, bak, _, _ = _source_with_backup(tmp_path)
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a database\n" * 100)
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)")
    conn.commit()
    conn.close()
    newer = tmp_path / "newer.sqlite"
    newer.write_bytes(bak.read_bytes())
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    damaged = tmp_path / "damaged.sqlite"
    data = bytearray(bak.read_bytes())
    page = 4096
    for n in range(2, len(data) // page):  # scramble the cell area of every b-tree page
        data[n * page + 100 : n * page + 3000] = bytes(range(256)) * 11 + bytes(100)
    damaged.write_bytes(bytes(data))
    cases = {
        text: "is not a diarist database (not a SQLite file)",
        empty: "is not a diarist database (an empty SQLite file)",
        other: "is not a diarist database (a SQLite database of another program)",
        newer: "is newer than this diarist",
        damaged: "is corrupt",
        tmp_path / "missing.sqlite": "no backup at",
    }
    runner = CliRunner()
    target = tmp_path / "target" / "memory.sqlite"
    for src, message in cases.items():
        result = runner.invoke(main, ["restore", str(src), "--db", str(target), "--force"])
        assert result.exit_code == 1, (src, result.output)
        line = result.output.strip()
        assert line.startswith("Error: ") and len(line.splitlines()) == 1, line
        assert message in line and str(src.name) in line and line.endswith("nothing was restored"), line
        assert not target.exists()
        assert not target.parent.exists() or not list(target.parent.iterdir())
    assert text.read_text().startswith("hello")  # the backup is only read
    with pytest.raises(StoreError, match="is a folder"):
        backup_module.restore_database(tmp_path, target, force=True)
    url = runner.invoke(main, ["restore", str(bak), "--db", "postgresql://user@localhost/memory", "--force"])
    assert url.exit_code == 1 and "in place of a SQLite file" in url.output


def page_size(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("old", ["backup", "target"])
def test_restore_between_page_sizes_reaches_open_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str):
    """Files made by earlier versions have 4 KiB pages, new ones 16 KiB. A database in WAL mode
    cannot change its page size, and the backup API copies pages as they are: a restore across
    the two rewrites the copy with the target's page size, and open readers see the backup."""
    from diarist.store.sqlite import connection

    with monkeypatch.context() as patched:
        if old == "backup":
            patched.setattr(connection, "PAGE_SIZE", 4096)
        src, bak, at_a, at_b = _source_with_backup(tmp_path)
    target = tmp_path / "target.sqlite"
    with monkeypatch.context() as patched:
        if old == "target":
            patched.setattr(connection, "PAGE_SIZE", 4096)
        with Memory(target, embedder="hash") as mem:
            add_all(mem, make_sessions(5, seed=21, prefix="t"), app="a")
    assert page_size(bak) == (4096 if old == "backup" else 16384)
    assert page_size(target) == (4096 if old == "target" else 16384)
    live = Memory(target, embedder="hash", create=False)
    try:
        answers(live)  # its caches hold the target's own state
        done = CliRunner().invoke(main, ["restore", str(bak), "--db", str(target), "--force"])
        assert done.exit_code == 0, done.output
        assert "backup API into the existing database" in done.output
        assert integrity(target) == "ok" and page_size(target) == (4096 if old == "target" else 16384)
        assert answers(live) == at_a and answers(live, "b") == at_b
    finally:
        live.close()


def test_new_files_have_16k_pages_and_old_files_keep_theirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from diarist.store.sqlite import connection

    with Memory(tmp_path / "new.sqlite", embedder="hash") as mem:
        add_all(mem, make_sessions(2, seed=1), app="a")
    assert page_size(tmp_path / "new.sqlite") == connection.PAGE_SIZE == 16384
    with monkeypatch.context() as patched:
        patched.setattr(connection, "PAGE_SIZE", 4096)
        with Memory(tmp_path / "old.sqlite", embedder="hash") as mem:
            add_all(mem, make_sessions(2, seed=1), app="a")
    with Memory(tmp_path / "old.sqlite", embedder="hash") as mem:  # reopened by this version
        add_all(mem, make_sessions(2, seed=2, prefix="more"), app="a")
        assert mem.stats()["apps"]["a"]["sessions"] == 4
    assert page_size(tmp_path / "old.sqlite") == 4096


# -- compact -----------------------------------------------------------------------------------


def test_compact_moves_an_old_file_to_16k_pages_and_gives_back_deleted_space(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch):
    from diarist.store.sqlite import connection

    db = tmp_path / "old.sqlite"
    with monkeypatch.context() as patched:
        patched.setattr(connection, "PAGE_SIZE", 4096)
        with Memory(db, embedder="hash") as mem:
            add_all(mem, make_sessions(30, seed=4), app="a")
            add_all(mem, make_sessions(8, seed=2, prefix="b"), app="b")
            for n in range(10, 30):
                mem.delete(f"s{n}", app="a")
            want = answers(mem), answers(mem, "b")
            ids = [h.chunk_id for h in mem.search("garden river lantern", app="a", k=8)]
    assert page_size(db) == 4096
    result = CliRunner().invoke(main, ["compact", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "pages of 4096 -> 16384 bytes" in result.output and "integrity ok" in result.output
    assert page_size(db) == 16384 and integrity(db) == "ok"
    with Memory(db, embedder="hash", create=False) as mem:
        assert (answers(mem), answers(mem, "b")) == want
        assert [h.chunk_id for h in mem.search("garden river lantern", app="a", k=8)] == ids  # ids kept
        add_all(mem, make_sessions(2, seed=5, prefix="new"), app="a")  # and it keeps working
    again = CliRunner().invoke(main, ["compact", "--db", str(db)])
    assert again.exit_code == 0 and "pages of 16384 -> 16384 bytes" in again.output


def test_compact_refuses_a_file_another_program_holds_and_changes_nothing(tmp_path: Path):
    db = tmp_path / "busy.sqlite"
    holder = Memory(db, embedder="hash")
    try:
        add_all(holder, make_sessions(5, seed=1), app="a")
        want = answers(holder)
        before = db.read_bytes()
        result = CliRunner().invoke(main, ["compact", "--db", str(db)])
        assert result.exit_code == 1 and "open in another program" in result.output
        assert "nothing was changed" in result.output and len(result.output.strip().splitlines()) == 1
        assert db.read_bytes() == before and answers(holder) == want
        add_all(holder, make_sessions(2, seed=3, prefix="more"), app="a")  # the holder still writes
    finally:
        holder.close()


def test_compact_refuses_what_is_not_a_diarist_sqlite_file(tmp_path: Path):
    runner = CliRunner()
    missing = runner.invoke(main, ["compact", "--db", str(tmp_path / "none.sqlite")])
    assert missing.exit_code == 1 and "no database at" in missing.output
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    refused = runner.invoke(main, ["compact", "--db", str(other)])
    assert refused.exit_code == 1 and "another program" in refused.output
    url = runner.invoke(main, ["compact", "--db", "postgresql://localhost/x"])
    assert url.exit_code == 1 and "rewrites a SQLite file" in url.output


def test_doctor_suggests_compact_for_a_file_of_4k_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from diarist.store.sqlite import connection

    old, new = tmp_path / "old.sqlite", tmp_path / "new.sqlite"
    with monkeypatch.context() as patched:
        patched.setattr(connection, "PAGE_SIZE", 4096)
        with Memory(old, embedder="hash") as mem:
            add_all(mem, make_sessions(2, seed=1), app="a")
    with Memory(new, embedder="hash") as mem:
        add_all(mem, make_sessions(2, seed=1), app="a")
    runner = CliRunner()
    said = runner.invoke(main, ["doctor", "--db", str(old), "--embedder", "hash"])
    assert said.exit_code == 0 and "pages of 4096 bytes" in said.output and "diarist compact" in said.output
    quiet = runner.invoke(main, ["doctor", "--db", str(new), "--embedder", "hash"])
    assert quiet.exit_code == 0 and "diarist compact" not in quiet.output
    import gc

    gc.collect()  # the CLI's commands leave their memory to the process's end: close doctor's here
    assert runner.invoke(main, ["compact", "--db", str(old)]).exit_code == 0
    assert "diarist compact" not in runner.invoke(main, ["doctor", "--db", str(old), "--embedder", "hash"]).output
