"""PostgreSQL killed mid-write loses nothing acknowledged (the "held" list of issue 31: the hostile
run killed the server under a writer, 9,015 acknowledged, 0 lost; its script was not kept).

A server of its own (not the session's: it is killed), with PostgreSQL's durable defaults
(``synchronous_commit`` on: the session's server turns durability off). A writer process adds
sessions one call each and prints each id once the call returned. After a random number of
acknowledgements every process of the server gets SIGKILL at once (the postmaster and its
backends: a crash, not a shutdown); the server is started again (crash recovery) and then:

* every acknowledged session is there, whole (its 3 messages, in order), and search finds it;
* the session in flight landed whole or not at all;
* the lexical index is complete (``lexical.status`` is None).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pg_server import _import, _log_tail, _start

from diarist.errors import NotFound

SRC = str(Path(__file__).resolve().parents[2] / "src")

WRITER = """
import sys
from diarist.memory import Memory
memory = Memory(sys.argv[1], embedder="hash")
for i in range(100_000):
    sid = f"s{sys.argv[2]}-{i}"
    print("start", sid, flush=True)
    memory.add_session([{"role": "user", "content": f"note {sid} one"}, {"role": "assistant", "content": "two"},
                        {"role": "user", "content": f"three {sid}"}], app="a", session_id=sid)
    print("ack", sid, flush=True)
"""


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _crash(server) -> None:
    """SIGKILL to the postmaster and every backend at once (stopped first: it forks no more)."""
    pid = server.get_pid()
    os.kill(pid, signal.SIGSTOP)
    for each in [*_children(pid), pid]:
        try:
            os.kill(each, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:  # before a restart, which reads its pid file
        time.sleep(0.05)


def _restart(server, pg) -> None:
    """Start the server again: PostgreSQL's crash recovery replays its log."""
    # Stale lock files: the dead postmaster may linger as a zombie here (a container's PID 1 need
    # not reap it), and PostgreSQL would take its PID for a running server.
    for lock in [pg.data / "postmaster.pid", *pg.data.glob(".s.PGSQL.*.lock")]:
        lock.unlink(missing_ok=True)
    try:
        server.ensure_postgres_running()
    except subprocess.CalledProcessError:
        pytest.fail(f"PostgreSQL did not start again after the crash:\n{_log_tail(pg.data)}")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture()
def own_server():
    server, pg, base = _start(_import())
    with pg.connect() as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
    yield server, pg
    try:
        server.cleanup()
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)


def run_trials(own_server, trials: int, seed: int) -> dict[str, int]:
    from diarist.memory import Memory

    server, pg = own_server
    rng = random.Random(seed)
    url = pg.new_url("crash")
    totals = {"acknowledged": 0, "lost": 0, "partial": 0, "in_flight_landed": 0, "in_flight_absent": 0}
    for trial in range(trials):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, url, str(trial)], stdout=subprocess.PIPE, text=True,
                                  env={**os.environ, "PYTHONPATH": SRC})
        acked, started, want = [], None, rng.randint(3, 40)
        assert writer.stdout is not None
        for line in writer.stdout:
            kind, sid = line.split()
            if kind == "start":
                started = sid
                if len(acked) >= want:  # the next write has begun: kill the server under it
                    time.sleep(rng.random() * 0.05)
                    break
            else:
                acked.append(sid)
        _crash(server)
        writer.kill()  # its next write would only wait for the pool
        writer.wait(timeout=60)
        _restart(server, pg)
        with Memory(url, embedder="hash", create=False) as memory:
            for sid in acked:
                try:
                    messages = memory.get(sid, app="a")["messages"]
                except NotFound:
                    totals["lost"] += 1
                    continue
                whole = [m["content"] for m in messages] == [f"note {sid} one", "two", f"three {sid}"]
                totals["partial"] += not whole
            last = acked[-1]
            assert any(h.session_id == last for h in memory.search(f"note {last} one", app="a", k=5)), last
            if started not in acked:  # the call in flight when the server died
                try:
                    landed = len(memory.get(started, app="a")["messages"]) == 3
                    totals["in_flight_landed" if landed else "partial"] += 1
                except NotFound:
                    totals["in_flight_absent"] += 1
            assert memory.lexical.status("a") is None, _log_tail(pg.data)
        totals["acknowledged"] += len(acked)
    return totals


@pytest.mark.heavy  # a server of its own and a writer per trial: about 20 s a trial on 2 busy cores
def test_postgres_killed_mid_write_heavy(own_server):
    start = time.perf_counter()
    totals = run_trials(own_server, trials=30, seed=2)
    print(f"\nPostgreSQL killed mid-write: {totals} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    assert totals["lost"] == 0 and totals["partial"] == 0, totals
