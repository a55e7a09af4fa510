"""Storage failures get their own clear message, at every door: disk full, a read-only file, a
corrupt file and a file that is not SQLite, through the API (a ``StoreError``), the CLI (one
line, exit 1: `diarist stats`, `doctor`, `search`, `ingest`) and HTTP (a JSON error, never a
traceback or "internal error"). Messages are made in ``store/sqlite/connection.py: translate()``.

Findings this guards (the old build): a full disk reported "cannot rollback - no transaction is
active"; a corrupt file gave raw ``sqlite3.DatabaseError`` tracebacks from `stats`, `doctor`
and `search` (a failed COMMIT of a read snapshot escaped untranslated).

How each failure is made real, as root too (root ignores file permissions):

* disk full: ``PRAGMA max_page_count`` on the store's own connection (SQLITE_FULL, exactly what a
  full disk gives), and a 600 KiB tmpfs when the test may mount one (root);
* read-only: ``PRAGMA query_only`` on the store's connection (SQLITE_READONLY, the same error a
  0444 file gives), a 0444 file opened by an unprivileged user (``setpriv``, when root), and a
  read-only tmpfs (when the test may mount);
* corrupt: a real diarist file with 20% of its bytes overwritten in the middle;
* not SQLite: text, random bytes, a truncated SQLite header, another program's SQLite file.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from diarist.cli import main
from diarist.errors import NotADatabase, NotFound, StoreError, DiaristError
from diarist.keys import KeyStore
from diarist.memory import Memory
from diarist.server.app import create_app

APP = "a"
DIARIST = str(Path(sys.executable).parent / "diarist")


def _build(path: Path, n: int = 40) -> str:
    """A real diarist file with n distinct sessions; returns an API key of APP."""
    rng = random.Random(7)
    words = "amber basil cedar delta ember fjord garnet harbor indigo jasper kelp lumen".split()
    with Memory(path, embedder="hash") as mem:
        key = KeyStore(mem.store).create(APP)[0]
        for i in range(n):
            text = " ".join(rng.choice(words) + str(rng.randint(0, 999)) for _ in range(400))
            mem.add_session([{"role": "user", "content": f"topic{i} {text}"}], app=APP, session_id=f"s{i}",
                            date=f"2024-03-{1 + i % 28:02d}")
    return key


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    path = tmp_path_factory.mktemp("storage") / "original.sqlite"
    key = _build(path)
    return path, key


def _copy(original, tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copy(original[0], target)
    return target


def _corrupt(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(int(size * 0.4))
        f.write(b"\xde\xad\xbe\xef" * (int(size * 0.2) // 4))


def _cli(*args: str, db: Path):
    return CliRunner().invoke(main, [*args, "--db", str(db), "--embedder", "hash"])


def _one_line(result) -> str:
    assert isinstance(result.exception, SystemExit), f"a traceback: {result.exception!r}"
    return _error_of(result.stderr)


def _error_of(stderr: str) -> str:
    """One error line, last (a progress line may come before it), and no traceback."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0] and "Traceback" not in stderr, stderr
    return errors[0]


def _sessions_in(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    finally:
        conn.close()


API_CALLS = {
    "stats": lambda m: m.stats(),
    "search": lambda m: m.search("topic3 amber", app=APP),
    "context": lambda m: m.context("topic3 amber", app=APP),
    "get": lambda m: m.get("s3", app=APP),
    "list": lambda m: m.list(app=APP),
    "add_session": lambda m: m.add_session([{"role": "user", "content": "new words " * 3000}], app=APP,
                                           session_id="new"),
    "add_fact": lambda m: m.add_fact("a new fact " * 2000, app=APP, fact_id="newfact"),
    "append": lambda m: m.append_messages("s1", [{"role": "user", "content": "more " * 3000}], app=APP),
    "delete": lambda m: m.delete("s5", app=APP),
    "reindex": lambda m: m.reindex(APP),
}


def _api_outcomes(mem: Memory) -> dict[str, str]:
    """Each call's outcome: "ok" or the DiaristError's message; any other exception fails."""
    out = {}
    for name, call in API_CALLS.items():
        try:
            call(mem)
            out[name] = "ok"
        except DiaristError as exc:
            out[name] = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # pragma: no cover - the failure this file exists to catch
            pytest.fail(f"{name} raised {type(exc).__name__}: {exc}")
    return out


def _http_outcomes(mem: Memory, key: str) -> dict[str, tuple[int, dict]]:
    client = TestClient(create_app(mem), raise_server_exceptions=False)
    auth = {"Authorization": f"Bearer {key}"}
    calls = [
        ("GET", "/health", None), ("GET", f"/v1/apps/{APP}/stats", None),
        ("POST", f"/v1/apps/{APP}/search", {"query": "topic3 amber"}),
        ("POST", f"/v1/apps/{APP}/context", {"query": "topic3 amber"}),
        ("POST", f"/v1/apps/{APP}/sessions", {"messages": [{"role": "user", "content": "new " * 3000}]}),
        ("POST", f"/v1/apps/{APP}/facts", {"text": "fact " * 3000}),
        ("GET", f"/v1/apps/{APP}/sessions/s3", None), ("DELETE", f"/v1/apps/{APP}/sessions/s6", None),
    ]
    out = {}
    for method, url, body in calls:
        response = client.request(method, url, headers=auth, json=body)
        assert response.headers["content-type"].startswith("application/json"), (url, response.text[:200])
        data = response.json()
        assert response.status_code != 500, (url, data)
        if response.status_code >= 400 and url != "/health":
            assert set(data["error"]) == {"status", "code", "message"}
            assert "internal" not in data["error"]["message"]
        out[f"{method} {url}"] = (response.status_code, data)
    return out


# -- disk full ---------------------------------------------------------------------------------


@contextmanager
def _full(mem: Memory):
    conn = mem.store._db.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # not one page more: a 16 KiB page holds a session
    try:
        yield
    finally:
        conn.execute("PRAGMA max_page_count = 1073741823")


def test_disk_full_through_the_api(original, tmp_path):
    path = _copy(original, tmp_path, "full.sqlite")
    with Memory(path, embedder="hash") as mem:
        before = _sessions_in(path)
        with _full(mem):
            out = _api_outcomes(mem)
            for name in ("add_session", "add_fact", "append"):
                assert "is full" in out[name] and "nothing of it was stored" in out[name], out[name]
                assert "cannot rollback" not in out[name]
            for name in ("stats", "search", "context", "get", "list"):
                assert out[name] == "ok", (name, out[name])
        assert _sessions_in(path) == before - (out["delete"] == "ok")
        with pytest.raises(NotFound):
            mem.get("new", app=APP)
        assert len(mem.get("s1", app=APP)["messages"]) == 1  # the append did not land
        # the connection is not left inside a failed transaction: the next write works
        mem.add_session([{"role": "user", "content": "after the disk has room again"}], app=APP, session_id="later")
        assert mem.get("later", app=APP)


def test_disk_full_through_http(original, tmp_path):
    path = _copy(original, tmp_path, "full_http.sqlite")
    with Memory(path, embedder="hash") as mem:
        with _full(mem):
            out = _http_outcomes(mem, original[1])
        for route in (f"POST /v1/apps/{APP}/sessions", f"POST /v1/apps/{APP}/facts"):
            status, body = out[route]
            assert status == 503 and body["error"]["code"] == "store_error" and "is full" in body["error"]["message"]
        assert out[f"POST /v1/apps/{APP}/search"][0] == 200


def _can_mount() -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    probe = Path(f"/tmp/diarist-mount-probe-{os.getpid()}")
    probe.mkdir(exist_ok=True)
    try:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True).returncode == 0
        if ok:
            subprocess.run(["umount", str(probe)], check=True)
        return ok
    finally:
        probe.rmdir()


needs_mount = pytest.mark.skipif(not _can_mount(), reason="needs root and permission to mount a tmpfs")


@contextmanager
def _tmpfs(tmp_path: Path, size: str):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


@needs_mount
@pytest.mark.slow
def test_a_really_full_disk_through_the_cli(tmp_path):
    """A 1.2 MiB tmpfs (an empty database of 16 KiB pages takes ~0.4 MiB): `diarist ingest` of a
    file that does not fit says so in one line."""
    big = tmp_path / "big.jsonl"
    rng = random.Random(3)
    big.write_text("".join(
        json.dumps({"session_id": f"b{i}", "messages": [{"role": "user", "content": " ".join(
            f"w{rng.randint(0, 10**6)}" for _ in range(300))}]}) + "\n" for i in range(200)))
    with _tmpfs(tmp_path, "1200k") as mnt:
        db = mnt / "m.sqlite"
        with Memory(db, embedder="hash") as mem:
            mem.add_session([{"role": "user", "content": "stored before the disk filled"}], session_id="seed")
        line = _one_line(_cli("ingest", str(big), db=db))
        assert "is full" in line, line
        stats = _cli("stats", db=db)
        assert stats.exit_code == 0, stats.output
        assert json.loads(stats.stdout)["apps"]["default"]["sessions"] >= 1
        with Memory(db, embedder="hash", create=False) as mem:
            assert mem.get("seed")
            with pytest.raises(StoreError, match="is full"):
                mem.add_session([{"role": "user", "content": " ".join(f"x{i}" for i in range(50_000))}])


# -- read-only ---------------------------------------------------------------------------------


def test_read_only_through_the_api_and_http(original, tmp_path):
    path = _copy(original, tmp_path, "ro.sqlite")
    with Memory(path, embedder="hash") as mem:
        mem.store._db.conn.execute("PRAGMA query_only = 1")  # SQLITE_READONLY, as a 0444 file gives
        out = _api_outcomes(mem)
        for name in ("add_session", "add_fact", "append", "delete"):
            assert "is read-only" in out[name], out[name]
        assert out["search"] == out["get"] == "ok"
        http = _http_outcomes(mem, original[1])
        status, body = http[f"POST /v1/apps/{APP}/sessions"]
        assert status == 503 and "is read-only" in body["error"]["message"]
        assert http[f"POST /v1/apps/{APP}/search"][0] == 200


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to act as nobody")
@pytest.mark.slow
def test_a_0444_file_for_an_unprivileged_user(original):
    """As nobody: a 0444 file in a folder it may write is read (stats) but not written (ingest);
    in a read-only folder it cannot even be read (no -shm file): each says so in one line."""
    base = Path(tempfile.mkdtemp(prefix="diarist-ro-"))  # pytest's tmp_path is 0700: nobody cannot enter
    base.chmod(0o755)
    new = base / "new.jsonl"
    new.write_text(json.dumps({"session_id": "x", "messages": [{"role": "user", "content": "hello"}]}) + "\n")
    new.chmod(0o644)
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    env = {**os.environ, "HOME": str(base)}

    def run(path: Path, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*nobody, DIARIST, *args, "--db", str(path), "--embedder", "hash"],
                              capture_output=True, text=True, env=env, timeout=120)

    def one_line(proc: subprocess.CompletedProcess) -> str:
        assert proc.returncode == 1, proc.stderr
        return _error_of(proc.stderr)

    folders = []
    try:
        for mode in (0o777, 0o555):
            folder = base / f"folder{mode:o}"
            folder.mkdir()
            folders.append(folder)
            path = _copy(original, folder, "m.sqlite")
            path.chmod(0o444)
            folder.chmod(mode)
            if mode == 0o777:
                stats = run(path, "stats")
                assert stats.returncode == 0, stats.stderr
                assert "is read-only: diarist cannot write to it" in one_line(run(path, "ingest", str(new)))
            else:
                assert "is read-only, and so is its folder" in one_line(run(path, "stats"))
            assert _sessions_in(path) == 40
    finally:
        for folder in folders:
            folder.chmod(0o755)
        shutil.rmtree(base)


@needs_mount
def test_a_read_only_file_system(original, tmp_path):
    with _tmpfs(tmp_path, "4m") as mnt:
        path = _copy(original, mnt, "m.sqlite")
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        for command in (["stats"], ["doctor"], ["search", "amber"], ["ingest", str(tmp_path / "none.jsonl")]):
            if command[0] == "ingest":
                (tmp_path / "none.jsonl").write_text('{"messages": [{"role": "user", "content": "x"}]}\n')
            line = _one_line(_cli(*command, db=path))
            assert "read-only" in line, (command, line)
        with pytest.raises(StoreError, match="read-only"):
            Memory(path, embedder="hash", create=False)


# -- corrupt -----------------------------------------------------------------------------------


def test_corrupt_file_through_the_api(original, tmp_path):
    path = _copy(original, tmp_path, "corrupt.sqlite")
    _corrupt(path)
    with Memory(path, embedder="hash", create=False) as mem:
        out = _api_outcomes(mem)
    failed = {k: v for k, v in out.items() if v != "ok"}
    assert "search" in failed, out
    for message in failed.values():
        assert f"{path} is corrupt" in message and "restore it from a backup" in message, message


@pytest.mark.parametrize("command", [["stats"], ["doctor"], ["search", "topic3", "--app", APP], ["ingest"]])
def test_corrupt_file_through_the_cli(original, tmp_path, command):
    path = _copy(original, tmp_path, "corrupt.sqlite")
    _corrupt(path)
    if command == ["ingest"]:
        source = tmp_path / "in.jsonl"
        source.write_text(json.dumps({"session_id": "s2", "messages": [{"role": "user", "content": "other"}]}) + "\n")
        command = ["ingest", str(source), "--app", APP]
    result = _cli(*command, db=path)
    if result.exit_code == 0:  # an ingest that touched only sound pages
        assert command[0] == "ingest", result.output
        return
    line = _one_line(result)
    assert f"{path} is corrupt" in line, line


def test_corrupt_file_through_http(original, tmp_path):
    path = _copy(original, tmp_path, "corrupt_http.sqlite")
    _corrupt(path)
    with Memory(path, embedder="hash", create=False) as mem:
        out = _http_outcomes(mem, original[1])
    status, body = out[f"POST /v1/apps/{APP}/search"]
    assert status == 503 and "is corrupt" in body["error"]["message"], body


# -- not SQLite --------------------------------------------------------------------------------


def _foreign_files(tmp_path: Path, original) -> dict[str, Path]:
    files = {}
    text = tmp_path / "notes.sqlite"
    text.write_text("these are my notes, not a database\n" * 100)
    files["text"] = text
    noise = tmp_path / "noise.sqlite"
    noise.write_bytes(random.Random(1).randbytes(64 * 1024))
    files["random bytes"] = noise
    header = tmp_path / "header.sqlite"
    header.write_bytes(original[0].read_bytes()[:100] + b"\x00" * 4000)
    files["a truncated SQLite file"] = header
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()
    files["another program's SQLite file"] = other
    return files


def test_not_sqlite_through_the_api_and_cli(original, tmp_path):
    for what, path in _foreign_files(tmp_path, original).items():
        before = path.read_bytes()
        with pytest.raises(StoreError) as raised:
            Memory(path, embedder="hash")
        assert str(path) in str(raised.value), (what, raised.value)
        if what != "a truncated SQLite file":
            assert isinstance(raised.value, NotADatabase), (what, raised.value)
        for command in (["stats"], ["doctor"], ["search", "x"], ["ingest", str(path)]):
            line = _one_line(_cli(*command, db=path))
            assert str(path) in line, (what, command, line)
        assert path.read_bytes() == before, f"{what} was changed"


@pytest.mark.slow
def test_not_sqlite_through_http(original, tmp_path):
    """`diarist serve` refuses to start on a foreign file, in one line; a file overwritten under
    a running server gives JSON errors, not 500s."""
    text = _foreign_files(tmp_path, original)["text"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("DIARIST_DB", None)
    proc = subprocess.run([DIARIST, "serve", "--db", str(text), "--embedder", "hash", "--port", "1"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1
    assert "is not a diarist database" in _error_of(proc.stderr)

    path = _copy(original, tmp_path, "overwritten.sqlite")
    with Memory(path, embedder="hash", create=False) as mem:
        with open(path, "r+b") as f:  # in place: the server's open connection sees the new bytes
            f.write(b"not a database any more " * 4096)
        out = _http_outcomes(mem, original[1])
    status, body = out[f"POST /v1/apps/{APP}/search"]
    assert 400 <= status < 600 and status != 500, body
