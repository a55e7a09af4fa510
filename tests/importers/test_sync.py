"""``diarist sync`` and ``Memory.sync``: a folder kept in step with memory, file by file; the
guard that keeps a newer stored conversation when an older export is read after it; and
``--watch``."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import diarist.importers.sync as sync_module
from diarist.cli import main
from diarist.embed.hashing import HashEmbedder
from diarist.memory import Memory
from diarist.read.trim import lines_of
from export_shapes import chatgpt_conversation

SRC = Path(__file__).resolve().parents[2] / "src"


class Counting(HashEmbedder):
    """The hash embedder, counting the texts it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def embed_batch(self, texts):
        self.embedded.extend(texts)
        return super().embed_batch(texts)


def _note(n: int, extra: str = "") -> str:
    return f"# Note {n}\n\nThe note number {n} keeps the word token{n}x for its search.{extra}\n"


def _vault(folder: Path, n: int) -> Path:
    folder.mkdir()
    for i in range(n):
        sub = folder / f"d{i % 10}"
        sub.mkdir(exist_ok=True)
        (sub / f"n{i}.md").write_text(_note(i))
    return folder


def _sync(*args: str):
    return CliRunner().invoke(main, ["sync", *args], env={"DIARIST_DB": ""})


def _database_bytes(db: Path) -> bytes:
    """Every byte diarist keeps beside the file: the database, -wal, -shm, the HNSW sidecar."""
    found = [p for p in db.parent.iterdir() if p.name.startswith(db.name)]
    files = [f for p in found for f in ([p] if p.is_file() else [q for q in p.rglob("*") if q.is_file()])]
    assert db in files
    return b"".join(f.read_bytes() for f in files)


# -- 500 notes: only what changed is read and embedded; a deleted note is forgotten ----------------


def test_resync_of_500_notes_reads_and_embeds_only_the_3_edited_and_forgets_the_deleted(tmp_path, monkeypatch):
    vault = _vault(tmp_path / "vault", 500)
    secret = "zanzibar quokka lighthouse 4711"
    (vault / "d7" / "n7.md").write_text(_note(7, f" The gate code is {secret}."))
    db = tmp_path / "x.sqlite"
    embedder = Counting()
    with Memory(db, embedder=embedder) as mem:
        first = mem.sync(vault, app="v")
        assert len(first.added) == 500 and len(first.sessions_added) == 500 and not first.failed
        chunks = [t for t in embedder.embedded if "\n" in t]  # the rest: their lines (Memory's store_lines), once each
        assert len(chunks) == 500 and len(embedder.embedded) == 500 + len({x for c in chunks for x in lines_of(c)})
        assert secret in mem.search("gate code quokka", app="v", k=1)[0].text
        assert secret.encode() in _database_bytes(db), "the grep below sees stored text"

        edited = ["d1/n11.md", "d2/n22.md", "d3/n33.md"]
        for name in edited:
            (vault / name).write_text(_note(int(name.split("n")[-1][:-3]), " Edited: now with a heron."))
        (vault / "d7" / "n7.md").unlink()
        embedder.embedded.clear()
        opened: list[str] = []
        parsed: list[str] = []
        real_open, real_read = sync_module.read_bounded, sync_module.read_folder_file
        monkeypatch.setattr(sync_module, "read_bounded", lambda p, *a: opened.append(p.name) or real_open(p, *a))
        monkeypatch.setattr(sync_module, "read_folder_file", lambda out, f, file, *a, **k: parsed.append(file.name)
                            or real_read(out, f, file, *a, **k))
        lines: list[str] = []
        second = mem.sync(vault, app="v", say=lines.append)

        assert sorted(second.changed) == edited and second.deleted == ["d7/n7.md"] and second.unchanged == 496
        assert sorted(opened) == ["n11.md", "n22.md", "n33.md"], "unchanged files are not opened; a changed one once"
        assert sorted(parsed) == ["n11.md", "n22.md", "n33.md"]
        # Each edited note's chunk and its one new line; its other lines are read from the store.
        assert len(embedder.embedded) == 6 and all("heron" in t for t in embedder.embedded), embedder.embedded
        assert second.items_deleted == ["session d7/n7.md"] and sorted(second.sessions_replaced) == edited
        assert "deleted d7/n7.md (1 memories)" in lines and "changed d1/n11.md (1 sessions)" in lines
        assert mem.store.counts("v").sessions == 499
        assert "heron" in mem.search("heron", app="v", k=1)[0].text
        assert secret.encode() not in _database_bytes(db), "gone from the file, -wal and sidecars while open"
        third = mem.sync(vault, app="v")
        assert third.changes == 0 and third.unchanged == 499
    assert secret.encode() not in _database_bytes(db)


def test_a_touched_file_is_hashed_not_parsed_and_keep_deleted_keeps_memories(tmp_path, monkeypatch):
    vault = _vault(tmp_path / "vault", 3)
    db = tmp_path / "x.sqlite"
    with Memory(db, embedder="hash") as mem:
        mem.sync(vault, app="v")
        parsed: list[str] = []
        real_read = sync_module.read_folder_file
        monkeypatch.setattr(sync_module, "read_folder_file",
                            lambda out, f, file, *a, **k: parsed.append(file.name) or real_read(out, f, file, *a, **k))
        stamp = time.time() + 100
        os.utime(vault / "d0" / "n0.md", (stamp, stamp))
        touched = mem.sync(vault, app="v")
        assert touched.changes == 0 and touched.unchanged == 3 and parsed == []
        record = {f.path: f for f in mem.store.synced_files("v")}["d0/n0.md"]
        assert record.mtime_ns == os.stat(vault / "d0" / "n0.md").st_mtime_ns, "the record follows the new time"

        same_size = _note(2).replace("token2x", "TOKEN2X")  # an edit that keeps the size...
        info = os.stat(vault / "d2" / "n2.md")
        (vault / "d2" / "n2.md").write_text(same_size)
        os.utime(vault / "d2" / "n2.md", ns=(info.st_atime_ns, info.st_mtime_ns))  # ...and the time (rsync -t)
        assert mem.sync(vault, app="v").changes == 0, "size and time as recorded: not opened"
        assert mem.sync(vault, app="v", rehash=True).changed == ["d2/n2.md"], "--rehash sees it"

        (vault / "d1" / "n1.md").unlink()
        kept = mem.sync(vault, app="v", keep_deleted=True)
        assert kept.kept_deleted == ["d1/n1.md"] and kept.deleted == [] and kept.items_deleted == []
        assert mem.get("d1/n1.md", app="v")["messages"], "its memory is kept"
        assert [f.path for f in mem.store.synced_files("v")] == ["d0/n0.md", "d2/n2.md"]
        assert mem.sync(vault, app="v").changes == 0, "reported once"


# -- exports: a changed file drops what it no longer holds; two exports of one account --------------


def _claude_ai(cid: str, texts: list[str], updated: str) -> dict:
    messages = [{"uuid": f"{cid}-{n}", "text": text, "sender": "human" if n % 2 == 0 else "assistant",
                 "created_at": updated, "updated_at": updated,
                 "content": [{"type": "text", "text": text}], "attachments": [], "files": []}
                for n, text in enumerate(texts)]
    return {"uuid": cid, "name": cid, "summary": "", "created_at": updated, "updated_at": updated,
            "account": {"uuid": "a0a0a0a0-0000-4000-8000-000000000001"}, "chat_messages": messages}


YEAR = 365 * 86400


def test_a_changed_export_drops_what_it_no_longer_holds_but_not_what_another_file_holds(tmp_path):
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "a.json").write_text(json.dumps([chatgpt_conversation("c1", ["porto trip"], 1.7e9),
                                                chatgpt_conversation("c2", ["bike brakes"], 1.7e9)]))
    (exports / "b.json").write_text(json.dumps([chatgpt_conversation("c2", ["bike brakes"], 1.7e9),
                                                chatgpt_conversation("c3", ["portuguese verbs"], 1.7e9)]))
    with Memory(tmp_path / "x.sqlite", embedder="hash") as mem:
        first = mem.sync(exports, app="v")
        assert sorted(first.sessions_added) == ["c1", "c2", "c3"] and first.superseded
        (exports / "a.json").write_text(json.dumps([chatgpt_conversation("c1", ["porto trip"], 1.7e9)]))
        second = mem.sync(exports, app="v")
        assert second.changed == ["a.json"] and second.items_deleted == [], "c2 is still in b.json"
        (exports / "b.json").unlink()
        third = mem.sync(exports, app="v")
        assert sorted(third.items_deleted) == ["session c2", "session c3"]
        assert [s["session_id"] for s in mem.list(app="v")] == ["c1"]


@pytest.mark.parametrize("shape", ["chatgpt", "claude-ai"])
def test_an_older_export_ingested_after_a_newer_one_keeps_the_newer(tmp_path, shape):
    if shape == "chatgpt":
        old = [chatgpt_conversation("c1", ["plan the trip to Porto"], 1.70e9), chatgpt_conversation("c2", ["fix the bike"], 1.70e9)]
        new = [chatgpt_conversation("c1", ["plan the trip to Porto", "and the ferry to Madeira"], 1.70e9 + YEAR),
               chatgpt_conversation("c2", ["fix the bike"], 1.70e9)]
    else:
        old = [_claude_ai("c1", ["plan the trip to Porto"], "2024-01-10T09:00:00Z"),
               _claude_ai("c2", ["fix the bike"], "2024-01-10T09:00:00Z")]
        new = [_claude_ai("c1", ["plan the trip to Porto", "and the ferry to Madeira"], "2025-01-10T09:00:00Z"),
               _claude_ai("c2", ["fix the bike"], "2024-01-10T09:00:00Z")]
    (tmp_path / "2025.json").write_text(json.dumps(new))
    (tmp_path / "2024.json").write_text(json.dumps(old))
    db = str(tmp_path / "x.sqlite")
    common = ["--db", db, "--embedder", "hash", "--app", "t"]
    runner = CliRunner()
    assert runner.invoke(main, ["ingest", str(tmp_path / "2025.json"), *common], env={"DIARIST_DB": ""}).exit_code == 0
    result = runner.invoke(main, ["ingest", str(tmp_path / "2024.json"), *common], env={"DIARIST_DB": ""})
    assert result.exit_code == 0, result.output
    assert "kept newer c1: the version in" in result.stderr and "0 replaced" in result.stdout
    report = json.loads(runner.invoke(main, ["ingest", str(tmp_path / "2024.json"), *common, "--json"],
                                      env={"DIARIST_DB": ""}).stdout)
    assert [line.split(":")[0] for line in report["kept_newer"]] == ["c1"] and report["replaced"] == []
    with Memory(db, embedder="hash") as mem:
        assert "Madeira" in json.dumps(mem.get("c1", app="t")), "the newer version stays"
        assert len(mem.list(app="t")) == 2
    # the other way round, the newer export replaces the older one
    db2 = str(tmp_path / "y.sqlite")
    other = ["--db", db2, "--embedder", "hash", "--app", "t"]
    runner.invoke(main, ["ingest", str(tmp_path / "2024.json"), *other], env={"DIARIST_DB": ""})
    report = json.loads(runner.invoke(main, ["ingest", str(tmp_path / "2025.json"), *other, "--json"],
                                      env={"DIARIST_DB": ""}).stdout)
    assert report["replaced"] == ["c1"] and report["kept_newer"] == []


def test_sync_keeps_the_newer_stored_conversation_when_an_older_export_appears(tmp_path):
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "b-2025.json").write_text(json.dumps([chatgpt_conversation("c1", ["porto", "madeira ferry"], 1.7e9 + YEAR)]))
    with Memory(tmp_path / "x.sqlite", embedder="hash") as mem:
        mem.sync(exports, app="v")
        (exports / "a-2024.json").write_text(json.dumps([chatgpt_conversation("c1", ["porto"], 1.7e9)]))
        report = mem.sync(exports, app="v")
        assert report.added == ["a-2024.json"] and [k.split(":")[0] for k in report.kept_newer] == ["c1"]
        assert "madeira" in json.dumps(mem.get("c1", app="v"))


# -- the command line --------------------------------------------------------------------------------


def test_cli_sync_lines_json_and_failed_files(tmp_path):
    vault = _vault(tmp_path / "vault", 2)
    (vault / "broken.json").write_text('[{"session_id": "s1", "messages": [')
    db = str(tmp_path / "x.sqlite")
    result = _sync(str(vault), "--db", db, "--embedder", "hash", "--app", "t")
    assert result.exit_code == 1, "a file that could not be read: status 1"
    assert "added d0/n0.md (1 sessions)" in result.stderr and "failed " in result.stderr and "broken.json" in result.stderr
    assert "2 files added, 0 changed, 0 deleted, 0 unchanged, 1 failed" in result.stderr
    (vault / "broken.json").write_text(json.dumps([{"session_id": "s1", "messages": [{"role": "user", "content": "hi"}]}]))
    (vault / "d1" / "n1.md").unlink()
    report = json.loads(_sync(str(vault), "--db", db, "--app", "t", "--json").stdout)
    assert report["added"] == ["broken.json"] and report["deleted"] == ["d1/n1.md"] and report["unchanged"] == 1
    assert report["sessions_added"] == ["s1"] and report["items_deleted"] == ["session d1/n1.md"]


@pytest.mark.parametrize("args,message", [
    (["{tmp}/missing"], "Error: {tmp}/missing: no such folder"),
    (["{tmp}/file.md"], "Error: {tmp}/file.md: not a folder; diarist sync keeps a folder in step"),
    (["{tmp}", "--app", ""], "Error: app name must be"),
    (["{tmp}", "--app", "x" * 300], "Error: app name must be 1 to 256 characters"),
    (["{tmp}", "--watch", "--poll", "0"], "Error: Invalid value for '--poll'"),
])
def test_cli_sync_bad_input_is_one_line(tmp_path, args, message):
    (tmp_path / "file.md").write_text("x")
    db = tmp_path / "db" / "x.sqlite"
    result = _sync(*[a.format(tmp=tmp_path) for a in args], "--db", str(db))
    assert result.exit_code != 0
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith(("Usage", "Try"))]
    assert len(lines) == 1 and lines[0].startswith(message.format(tmp=tmp_path)), result.stderr
    assert not db.exists(), "no database is created for a bad command"


@pytest.mark.slow
def test_watch_picks_up_an_edit_within_5_seconds_and_ctrl_c_exits_0(tmp_path):
    vault = _vault(tmp_path / "vault", 2)
    env = {**os.environ, "PYTHONPATH": str(SRC), "DIARIST_DB": "", "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "diarist.cli", "sync", str(vault), "--db", str(tmp_path / "x.sqlite"),
         "--embedder", "hash", "--app", "t", "--watch", "--poll", "0.1"],
        stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        stderr = _read_lines(proc.stderr)
        lines = _lines_until(stderr, "watching ", 60)  # the start (imports) is not what is bounded
        assert "polling every 0.1s" in lines[-1], lines
        (vault / "d0" / "n0.md").write_text(_note(0, " Edited: a kingfisher."))
        start = time.monotonic()
        _lines_until(stderr, "changed d0/n0.md", 5)
        assert time.monotonic() - start < 5, "an edit is picked up within 5 s"
        _ctrl_c(proc, stderr)
    finally:
        proc.kill()
    rest = "".join(_drain(stderr))
    assert proc.returncode == 0, rest
    assert "stopped watching" in rest and "Traceback" not in rest
    with Memory(tmp_path / "x.sqlite", embedder="hash") as mem:
        assert "kingfisher" in mem.search("kingfisher", app="t", k=1)[0].text


@pytest.mark.slow
def test_ctrl_c_stops_the_watcher_even_when_it_was_started_with_ctrl_c_ignored(tmp_path):
    # A parent (a test runner, a supervisor) may hand its child SIGINT ignored; --watch says
    # "Ctrl-C stops", so the watcher takes Ctrl-C back while it watches.
    vault = _vault(tmp_path / "vault", 1)
    env = {**os.environ, "PYTHONPATH": str(SRC), "DIARIST_DB": "", "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "diarist.cli", "sync", str(vault), "--db", str(tmp_path / "x.sqlite"),
         "--embedder", "hash", "--app", "t", "--watch", "--poll", "0.1"],
        stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        stderr = _read_lines(proc.stderr)
        _lines_until(stderr, "watching ", 60)
        _ctrl_c(proc, stderr)
    finally:
        proc.kill()
    rest = "".join(_drain(stderr))
    assert proc.returncode == 0 and "stopped watching" in rest and "Traceback" not in rest, rest


def _ctrl_c(proc: subprocess.Popen, stderr: "queue.Queue[str]") -> None:
    """Ctrl-C to a watcher started with PYTHONFAULTHANDLER=1; one still running 30 s later is made
    to dump every thread's stack (SIGABRT), which the failure shows."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        proc.wait(timeout=30)
        pytest.fail("Ctrl-C did not stop the watcher within 30 s; where it was:\n" + "".join(_drain(stderr)))


def _lines_until(lines: "queue.Queue[str]", wanted: str, seconds: float) -> list[str]:
    """Lines of the queue until one holds ``wanted``; fails after ``seconds``."""
    seen: list[str] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        seen.append(line)
        if wanted in line:
            return seen
    pytest.fail(f"no line with {wanted!r} within {seconds}s: {seen}")


def _drain(lines: "queue.Queue[str]") -> list[str]:
    time.sleep(0.1)  # the reader thread's last lines
    out = []
    while not lines.empty():
        out.append(lines.get())
    return out


def _read_lines(stream) -> "queue.Queue[str]":
    """A queue the lines of ``stream`` arrive in, read by a thread (no buffered line is missed)."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    return lines


def test_watch_with_watchfiles_in_a_thread(tmp_path):
    pytest.importorskip("watchfiles")
    from diarist.importers.watch import watch

    vault = _vault(tmp_path / "vault", 2)
    lines: list[str] = []
    stop = threading.Event()
    with Memory(tmp_path / "x.sqlite", embedder="hash") as mem:
        worker = threading.Thread(target=watch, args=(mem, vault), daemon=True,
                                  kwargs={"app": "t", "stop": stop, "say": lines.append, "debounce": 0.05})
        worker.start()
        deadline = time.monotonic() + 30
        while not any(line.startswith("watching") for line in lines) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "watchfiles" in lines[-1]
        (vault / "d1" / "n1.md").unlink()  # maybe before the watcher runs: its first timeout catches up
        deadline = time.monotonic() + 5
        while "deleted d1/n1.md (1 memories)" not in lines and time.monotonic() < deadline:
            time.sleep(0.02)
        stop.set()
        worker.join(10)
        assert "deleted d1/n1.md (1 memories)" in lines, lines
        assert not worker.is_alive()


# -- PostgreSQL --------------------------------------------------------------------------------------


def test_sync_on_postgresql(tmp_path, pg_server):
    vault = _vault(tmp_path / "vault", 4)
    secret = "marmalade otter 9911"
    (vault / "d3" / "n3.md").write_text(_note(3, f" {secret}"))
    with Memory(pg_server.new_url("sync"), embedder="hash") as mem:
        assert len(mem.sync(vault, app="v").sessions_added) == 4
        (vault / "d0" / "n0.md").write_text(_note(0, " Edited."))
        (vault / "d3" / "n3.md").unlink()
        report = mem.sync(vault, app="v")
        assert report.changed == ["d0/n0.md"] and report.deleted == ["d3/n3.md"] and report.unchanged == 2
        assert [f.path for f in mem.store.synced_files("v")] == ["d0/n0.md", "d1/n1.md", "d2/n2.md"]
        rows = mem.store._db.read("SELECT count(*) FROM chunks WHERE text LIKE %s", (f"%{secret}%",))
        assert rows[0][0] == 0 and mem.store.counts("v").sessions == 3


# -- the Claude Code hook of docs/claude-code-hook.md, run as written --------------------------------


def test_the_documented_claude_code_hook_runs_as_written(tmp_path):
    import re
    import shutil

    doc = (Path(__file__).resolve().parents[2] / "docs" / "claude-code-hook.md").read_text()
    settings = json.loads(re.search(r"```json\n(.*?)```", doc, re.S).group(1))
    (entry,) = settings["hooks"]["SessionEnd"]
    (hook,) = entry["hooks"]
    assert hook["type"] == "command" and isinstance(hook["timeout"], int) and set(entry) == {"hooks"}
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    shutil.copytree(Path(__file__).parents[1] / "data" / "importers" / "claude_code", projects)
    env = {"HOME": str(home), "DIARIST_DB": "", "XDG_DATA_HOME": ""}
    first = CliRunner().invoke(main, ["sync", str(projects), "--app", "claude-code", "--embedder", "hash"], env=env)
    assert first.exit_code == 0 and "1 files added" in first.stderr, first.output
    session = {"type": "user", "sessionId": "9e1d", "uuid": "u1", "timestamp": "2025-06-01T10:00:00Z",
               "message": {"role": "user", "content": "The staging deploy needs the flag --canary-weight 5."}}
    (projects / "-home-ana-src-tidewater" / "9e1d.jsonl").write_text(json.dumps(session) + "\n")
    stdin = json.dumps({"session_id": "9e1d", "transcript_path": str(projects / "-home-ana-src-tidewater" / "9e1d.jsonl"),
                        "cwd": "/home/ana/src/tidewater", "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
    run_env = {**os.environ, **env, "PYTHONPATH": str(SRC),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", hook["command"]], input=stdin, text=True, env=run_env,
                          capture_output=True, timeout=hook["timeout"])
    assert done.returncode == 0, done.stderr
    log = (home / ".claude" / "diarist-sync.log").read_text()
    assert "added -home-ana-src-tidewater/9e1d.jsonl (1 sessions)" in log and "1 unchanged" in log, log
    with Memory(home / ".local" / "share" / "diarist" / "memory.sqlite") as mem:
        assert "canary-weight" in mem.search("staging deploy flag", app="claude-code", k=1)[0].text
