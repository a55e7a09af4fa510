"""A database path, its -wal/-shm files, its graph folder or a backup's target that is not a regular
file is refused with one line naming what it is (issue 31 item 8).

Finding this guards (the old build, 563f944): ``--db /dev/zero`` (and /dev/null, /dev/urandom, a
link to one) printed "cannot rollback - no transaction is active"; a FIFO as the database "disk
I/O error"; a FIFO or a link to /dev/zero as a -wal or -shm file "unable to open database file"
or nothing at all; a graph file of ``<db>.hnsw/`` swapped for a FIFO hung the next search, a link
to /dev/zero read until memory ran out; ``backup --force`` and ``restore --force`` renamed their
file onto whatever the name held (as root, onto /dev/null itself).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from diarist.cli import main
from diarist.errors import NotADatabase, StoreError
from diarist.memory import Memory

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _special(folder: Path, kind: str) -> Path:
    """A path in ``folder`` that is a FIFO, a folder, or a link to /dev/zero or /dev/null."""
    path = folder / f"special-{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(f"/dev/{kind}")
    return path


@pytest.mark.parametrize("where", ["/dev/zero", "/dev/null", "/dev/urandom", "fifo", "folder", "zero", "null"])
def test_a_database_path_that_is_not_a_file_is_refused_by_name(tmp_path, where):
    path = Path(where) if where.startswith("/") else _special(tmp_path, where)
    with pytest.raises(NotADatabase, match="not a diarist database") as raised:
        Memory(path, embedder="hash")
    assert "rollback" not in str(raised.value)
    assert any(kind in str(raised.value) for kind in ("character device", "FIFO", "folder"))


@pytest.mark.parametrize("where", ["/dev/zero", "fifo", "zero"])
def test_the_cli_says_so_in_one_line(tmp_path, where):
    db = where if where.startswith("/") else str(_special(tmp_path, where))
    result = CliRunner().invoke(main, ["search", "cat", "--db", db])
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1 and result.output.startswith("Error: ")
    assert "not a diarist database" in result.output and "rollback" not in result.output


@pytest.mark.parametrize("sidecar", ["-wal", "-shm"])
@pytest.mark.parametrize("kind", ["fifo", "folder", "zero"])
def test_a_wal_or_shm_that_is_not_a_file_is_refused_by_name(tmp_path, sidecar, kind):
    db = tmp_path / "m.sqlite"
    Memory(db, embedder="hash").close()
    _special(tmp_path, kind).rename(f"{db}{sidecar}")
    with pytest.raises(StoreError, match=f"m.sqlite{sidecar} is a "):
        Memory(db, embedder="hash")


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_graph_folder_that_is_not_a_folder_is_refused(tmp_path, kind):
    db = tmp_path / "m.sqlite"
    Memory(db, embedder="hash").close()
    _special(tmp_path, kind).rename(f"{db}.hnsw")
    with pytest.raises(StoreError, match=r"m.sqlite.hnsw is a .*HNSW graphs"):
        Memory(db, embedder="hash", dense="hnsw")


GRAPH_FILES = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from diarist.memory import Memory
    from diarist.write.validate import FactInput
    folder = Path(sys.argv[1])
    for n, (suffix, kind) in enumerate([(".json", "fifo"), (".json", "zero"), (".ids.npy", "fifo"),
                                        (".usearch", "fifo"), (".usearch", "zero")]):
        db = folder / f"m{n}.sqlite"
        with Memory(db, embedder="hash", dense="hnsw") as m:
            m.add_facts([FactInput(f"fact {i} word{i}", f"f{i}") for i in range(50)], app="a")
            m.search("fact", app="a", k=3, rerank=False)  # builds and saves the graph
        victim = next(Path(f"{db}.hnsw").glob(f"*{suffix}"))
        victim.unlink()
        os.mkfifo(victim) if kind == "fifo" else victim.symlink_to("/dev/zero")
        print(suffix, kind, "...", flush=True)
        with Memory(db, embedder="hash", dense="hnsw") as m:
            assert [h.fact_id for h in m.search("word7", app="a", k=1, rerank=False)] == ["f7"]
        print(suffix, kind, "answered", flush=True)
""")


def test_a_graph_file_that_is_not_a_file_is_rebuilt_not_read(tmp_path):
    """Run apart, under a memory cap and a timeout: the old build hung on the FIFO or read
    /dev/zero until the cap stopped it."""
    def cap() -> None:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    env = {**os.environ, "PYTHONPATH": SRC}
    try:
        proc = subprocess.run([sys.executable, "-c", GRAPH_FILES, str(tmp_path)], capture_output=True, text=True,
                              timeout=60, env=env, preexec_fn=cap)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"a search hung on a graph file that is a FIFO: {exc.stdout}")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert proc.stdout.count("answered") == 5


@pytest.mark.parametrize("kind", ["fifo", "null"])
def test_backup_and_restore_never_rename_onto_a_special_file(tmp_path, kind):
    db = tmp_path / "m.sqlite"
    with Memory(db, embedder="hash") as m:
        m.add_fact("The user's cat is called Admon.", app="a")
    target = _special(tmp_path, kind)
    runs = [["backup", "--force", "--db", str(db), str(target)],
            ["restore", "--force", "--db", str(target), str(db)],
            ["restore", "--force", "--db", str(tmp_path / "r.sqlite"), str(target)]]
    for args in runs:
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1 and "a regular file" in result.output, (args, result.output)
    assert target.is_fifo() if kind == "fifo" else target.is_symlink()  # left as it was
