"""Forgetting is real: after a delete returns, no byte of the deleted text is left on disk.

A secret with distinctive words is stored (in a message, a fact, metadata, ids, an app name),
with other data around it, in a real file kept open by a long-lived ``Memory`` (as a server
keeps it). After each kind of delete (the session, the fact, a replacement of the session by
one without the secret, the whole app) the raw bytes of ``memory.sqlite``, ``-wal`` and
``-shm`` are scanned for the secret and each of its words, as stored text (any case) and as
the term-dictionary entry: zero hits. The term dictionary has no row for them, the counts
moved, and the remaining data is still found.

What is guaranteed (see RELIABILITY.md, "Forgetting"): when the delete call returns, unless
another connection holds a read snapshot older than the delete. Then the copies stay in the
write-ahead log until that reader is done *and* the store's next write (or its close, or any
``PRAGMA wal_checkpoint(TRUNCATE)`` on the file) runs: ``test_reader_snapshot_delays_forgetting``.

``python tests/write/test_forgetting.py --report`` prints the bytes found for each delete kind
as shipped, without the checkpoint, and without secure_delete (the figures of RELIABILITY.md).
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from diarist.errors import NotFound
from diarist.lexical import analyze
from diarist.memory import Memory

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import add_all, make_sessions  # noqa: E402

SECRET = "Zorbaxian-773194 quintessential Lighthouse"
TERMS = analyze(SECRET)  # what the term dictionary would hold: zorbaxian, 773194, stems
assert TERMS == ["zorbaxian", "773194", "quintessenti", "lighthous"]  # stems
NEEDLES = sorted({SECRET, *SECRET.replace("-", " ").split(), *TERMS})
SUFFIXES = ("", "-wal", "-shm")
KINDS = ("session", "fact", "replace", "app")
NEIGHBOUR = "The marmalade recipe needs bitter Seville oranges."


def _read(path: Path, suffix: str) -> bytes:
    file = Path(f"{path}{suffix}")
    return file.read_bytes().lower() if file.exists() else b""  # UTF-8 text, any case


def scan(path: Path) -> dict[str, dict[str, int]]:
    """file name -> needle -> hits in its raw bytes, case-insensitive."""
    return {
        f"{path.name}{suffix}": {n: c for n in NEEDLES if (c := data.count(n.lower().encode()))}
        for suffix in SUFFIXES
        for data in [_read(path, suffix)]
    }


def total(found: dict[str, dict[str, int]]) -> int:
    return sum(sum(h.values()) for h in found.values())


def bytes_found(path: Path) -> dict[str, int]:
    """file name -> bytes covered by a match of any needle (overlaps counted once), for the report."""
    out = {}
    for suffix in SUFFIXES:
        data, covered = _read(path, suffix), set()
        for needle in {n.lower().encode() for n in NEEDLES}:
            at = data.find(needle)
            while at >= 0:
                covered.update(range(at, at + len(needle)))
                at = data.find(needle, at + 1)
        out[f"{path.name}{suffix}"] = len(covered)
    return out


def dictionary_rows(path: Path) -> list[str]:
    """The secret's terms present in the term dictionary, read by a separate read-only connection."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        marks = ",".join("?" * len(TERMS))
        return [r[0] for r in conn.execute(f"SELECT term FROM lex_terms WHERE term IN ({marks})", TERMS)]
    finally:
        conn.close()


def secret_session(session_id: str = "s-zorbaxian") -> dict[str, Any]:
    return {
        "session_id": session_id,
        "date": "2024-05-02T09:00:00",
        "metadata": {"note": SECRET},
        "messages": [
            {"role": "user", "content": f"Please remember my vault code: {SECRET}. Do not forget it."},
            {"role": "assistant", "content": f"Noted, the code is {SECRET}."},
            {"role": "user", "content": "Thanks! Also, " + " ".join(["garden river lantern"] * 40)},
        ],
    }


def store_secret(mem: Memory, kind: str) -> None:
    """The secret in exactly the item(s) the delete of ``kind`` removes."""
    if kind in ("session", "app"):
        add_all(mem, [secret_session()], app="vault" if kind == "app" else "a")
    if kind == "fact":
        mem.add_fact(f"The vault code is {SECRET}.", app="a", fact_id="f-zorbaxian", metadata={"note": SECRET})
    if kind == "replace":
        add_all(mem, [secret_session("s-vault")], app="a")
    if kind == "app":
        mem.add_fact(f"The vault code is {SECRET}.", app="vault", fact_id="f-zorbaxian", metadata={"note": SECRET})
        add_all(mem, make_sessions(8, seed=5, prefix="v"), app="vault")


def forget(mem: Memory, kind: str) -> None:
    if kind == "session":
        mem.delete("s-zorbaxian", app="a")
    elif kind == "fact":
        mem.delete("f-zorbaxian", app="a")
    elif kind == "replace":
        mem.add_session([{"role": "user", "content": "The code changed; nothing to remember now."}],
                        app="a", session_id="s-vault", date="2024-05-03")
    else:
        mem.delete_app("vault")


def populate(path: Path, kind: str, where: str) -> Memory:
    """Data around the secret; the secret checkpointed into the file itself (``where="file"``:
    written, then the writer closed, as before a server restart) or only in the WAL. Returns
    the long-lived memory that deletes."""
    first = Memory(path, embedder="hash")
    add_all(first, make_sessions(25, seed=1), app="a")
    add_all(first, make_sessions(10, seed=2, prefix="b"), app="b")
    first.add_fact(NEIGHBOUR, app="a", fact_id="f-marmalade")
    if where == "file":
        store_secret(first, kind)
    first.close()  # the last connection: SQLite checkpoints and removes the WAL
    mem = Memory(path, embedder="hash")
    add_all(mem, make_sessions(25, seed=3, prefix="c"), app="a")
    if where == "wal":
        store_secret(mem, kind)
    add_all(mem, make_sessions(5, seed=4, prefix="d"), app="a")
    return mem


def counts(mem: Memory) -> dict[str, dict[str, Any]]:
    return mem.stats()["apps"]


@pytest.mark.parametrize("where", ["file", "wal"])
@pytest.mark.parametrize("kind", KINDS)
def test_delete_leaves_no_copy_on_disk(tmp_path: Path, kind: str, where: str):
    path = tmp_path / "memory.sqlite"
    mem = populate(path, kind, where)
    try:
        before = scan(path)
        assert total(before) > 0, "the scanner must see the secret before the delete"
        assert set(dictionary_rows(path)) == set(TERMS)
        if where == "file":
            assert before["memory.sqlite"], "the secret must be in the database file itself"
        stats_before = counts(mem)

        forget(mem, kind)

        after = scan(path)
        assert total(after) == 0, f"copies of the secret left on disk after {kind!r}: {after}"
        assert dictionary_rows(path) == []
        _assert_counts(kind, stats_before, counts(mem))
        _assert_rest_searchable(mem, kind)
    finally:
        mem.close()
    assert total(scan(path)) == 0


def _assert_counts(kind: str, before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> None:
    if kind == "app":
        assert "vault" in before and "vault" not in after
        assert after == {k: v for k, v in before.items() if k != "vault"}
        return
    a0, a1 = before["a"], after["a"]
    assert after["b"] == before["b"]
    assert a1["lexical_index"] == "complete"
    if kind == "session":
        assert (a1["sessions"], a1["messages"], a1["facts"]) == (a0["sessions"] - 1, a0["messages"] - 3, a0["facts"])
        assert a1["chunks"] < a0["chunks"]
    elif kind == "fact":
        assert (a1["sessions"], a1["messages"], a1["facts"]) == (a0["sessions"], a0["messages"], a0["facts"] - 1)
        assert a1["chunks"] == a0["chunks"] - 1
    else:  # replace: one session of 3 messages became one of 1
        assert (a1["sessions"], a1["messages"], a1["facts"]) == (a0["sessions"], a0["messages"] - 2, a0["facts"])


def _assert_rest_searchable(mem: Memory, kind: str) -> None:
    hits = mem.search("marmalade recipe Seville oranges", app="a", k=3)
    assert hits and hits[0].fact_id == "f-marmalade"
    c0 = mem.get("c0", app="a")["messages"][0]["content"]
    assert "c0" in [h.session_id for h in mem.search(c0, app="a", k=5)]
    for h in mem.search(SECRET, app="a", k=10):
        assert "zorbaxian" not in h.text.lower()
    if kind == "replace":
        assert mem.search("code changed nothing to remember", app="a", k=3)[0].session_id == "s-vault"
    with pytest.raises(NotFound):
        mem.get("s-zorbaxian" if kind != "fact" else "f-zorbaxian", app="a")


def test_delete_inside_an_outer_transaction_forgets_when_it_commits(tmp_path: Path):
    path = tmp_path / "memory.sqlite"
    mem = populate(path, "session", "wal")
    try:
        with mem.store.transaction():
            assert mem.store.delete_item("a", "session", "s-zorbaxian")
            assert total(scan(path)) > 0  # not committed yet: nothing can be forgotten
        assert total(scan(path)) == 0
    finally:
        mem.close()


@pytest.mark.parametrize("then", ["next write", "explicit checkpoint", "close"])
def test_reader_snapshot_delays_forgetting(tmp_path: Path, then: str):
    """A second connection reading an older snapshot keeps the old pages alive in the WAL: the
    delete commits at once (and is not blocked), the copies go once that reader is done and the
    next write of the store, its close, or an explicit checkpoint runs."""
    path = tmp_path / "memory.sqlite"
    writer = populate(path, "fact", "wal")
    reader = Memory(path, embedder="hash")  # another connection on the same file
    try:
        with reader.store._db.snapshot() as cur:  # an open read transaction: a snapshot
            cur.execute("SELECT count(*) FROM facts").fetchone()
            writer.delete("f-zorbaxian", app="a")
            with pytest.raises(NotFound):
                writer.get("f-zorbaxian", app="a")
            # The reader's snapshot still sees the fact: its pages must stay readable.
            assert cur.execute("SELECT count(*) FROM facts WHERE external_id = 'f-zorbaxian'").fetchone()[0] == 1
            assert scan(path)["memory.sqlite-wal"], "a snapshot older than the delete keeps the old pages"
        assert total(scan(path)) > 0  # the reader is done, but nothing has checkpointed yet
        if then == "next write":
            writer.add_fact(NEIGHBOUR + " Also marzipan.", app="b", fact_id="f-marzipan")
        elif then == "explicit checkpoint":
            conn = sqlite3.connect(path)  # what an operator runs: any connection will do
            assert conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
            conn.close()
        else:
            writer.close()
        assert total(scan(path)) == 0
        assert dictionary_rows(path) == []
        assert reader.search("marmalade recipe", app="a", k=1)[0].fact_id == "f-marmalade"
    finally:
        reader.close()
        writer.close()


# -- figures for RELIABILITY.md --------------------------------------------------------------------


def _report() -> None:  # pragma: no cover - run by hand
    import tempfile

    from diarist.store.sqlite import connection as sqlite_connection
    from diarist.store.sqlite.store import SQLiteStore

    shipped_setup, shipped_forget = sqlite_connection.Connection._setup, SQLiteStore._forget

    def insecure_setup(self, busy_timeout_ms):
        shipped_setup(self, busy_timeout_ms)
        self.conn.execute("PRAGMA secure_delete = OFF")

    variants = {
        "as shipped": (shipped_setup, shipped_forget),
        "no checkpoint": (shipped_setup, lambda self, removed: None),
        "secure_delete off": (insecure_setup, shipped_forget),
    }
    print("| delete | secret written | variant | before: db / wal / shm | after: db / wal / shm |")
    print("|---|---|---|---|---|")
    for kind in KINDS:
        for where in ("file", "wal"):
            for name, (setup, fgt) in variants.items():
                sqlite_connection.Connection._setup, SQLiteStore._forget = setup, fgt
                try:
                    with tempfile.TemporaryDirectory() as tmp:
                        path = Path(tmp) / "memory.sqlite"
                        mem = populate(path, kind, where)
                        before = bytes_found(path)
                        forget(mem, kind)
                        after = bytes_found(path)
                        mem.close()
                finally:
                    sqlite_connection.Connection._setup, SQLiteStore._forget = shipped_setup, shipped_forget
                fmt = lambda d: " / ".join(str(d[f"memory.sqlite{s}"]) for s in SUFFIXES)  # noqa: E731
                print(f"| {kind} | {where} | {name} | {fmt(before)} | {fmt(after)} |")


if __name__ == "__main__":  # pragma: no cover
    if "--report" in sys.argv:
        _report()
