"""4 writer processes and 2 readers on one database file, beside 2 server workers.

Two writers use the Python API directly (as `diarist ingest` does), two write over HTTP to a
`diarist serve --workers 2`; one reader searches directly, one over HTTP. Bounded operations.
Every acknowledged write must be found afterwards, and no process may see a single error.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from test_server_support import DIARIST, create_key, free_port, diarist_env, wait_for_http

from diarist.memory import Memory

APP = "conc"
WRITES = 12  # per writer
READS = 15  # per reader

WORKER = r"""
import json, sys
role, via, db, n, url, key, name = sys.argv[1:8]
n = int(n)
if via == "http":
    import httpx
    http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120)
else:
    from diarist.memory import Memory
    memory = Memory(db, embedder="hash")
errors = 0
for i in range(n):
    token = f"tok{name}x{i}"
    try:
        if role == "write":
            if i % 2:
                text = f"note {token} written by {name}"
                if via == "http":
                    r = http.post(f"/v1/apps/conc/facts", json={"text": text, "fact_id": token})
                    r.raise_for_status()
                else:
                    memory.add_fact(text, app="conc", fact_id=token)
                print(json.dumps({"kind": "fact", "id": token}), flush=True)
            else:
                messages = [{"role": "user", "content": f"session {token} from {name}"},
                            {"role": "assistant", "content": "noted"}]
                if via == "http":
                    r = http.post(f"/v1/apps/conc/sessions", json={"session_id": token, "messages": messages})
                    r.raise_for_status()
                else:
                    memory.add_session(messages, app="conc", session_id=token)
                print(json.dumps({"kind": "session", "id": token}), flush=True)
        else:
            query = f"note written by w{i % 4}"
            if via == "http":
                r = http.post(f"/v1/apps/conc/search", json={"query": query, "k": 5})
                r.raise_for_status()
                http.get("/v1/apps/conc/stats").raise_for_status()
            elif "conc" in memory.apps():
                memory.search(query, app="conc", k=5)
                memory.stats("conc")
            print(json.dumps({"kind": "read"}), flush=True)
    except Exception as exc:
        errors += 1
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
sys.exit(1 if errors else 0)
"""


@pytest.mark.slow
def test_writers_and_readers_share_one_file(tmp_path):
    db = tmp_path / "shared.sqlite"
    Memory(db, embedder="hash").close()  # the schema exists before anyone races for it
    key = create_key(db, APP)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [DIARIST, "serve", "--db", str(db), "--embedder", "hash", "--port", str(port), "--workers", "2",
         "--log-level", "warning"],
        env=diarist_env(), stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for_http(f"{url}/health", server)
        plan = [("write", "direct", "w0"), ("write", "direct", "w1"), ("write", "http", "w2"), ("write", "http", "w3"),
                ("read", "direct", "r0"), ("read", "http", "r1")]
        procs = [
            (name, role, subprocess.Popen(
                [sys.executable, "-c", WORKER, role, via, str(db), str(WRITES if role == "write" else READS), url, key, name],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=diarist_env()))
            for role, via, name in plan
        ]
        acknowledged, reads = [], 0
        for name, role, proc in procs:
            out, err = proc.communicate(timeout=300)
            lines = [json.loads(line) for line in out.splitlines() if line.strip()]
            failures = [line["error"] for line in lines if "error" in line]
            assert proc.returncode == 0 and not failures, f"{name}: {failures} {err[-2000:]}"
            assert "database is locked" not in err
            acknowledged += [line for line in lines if line.get("kind") in ("fact", "session")]
            reads += sum(line.get("kind") == "read" for line in lines)
        assert len(acknowledged) == 4 * WRITES and reads == 2 * READS

        # every acknowledged write is there, over HTTP and directly, and can be found by search
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
            stats = http.get(f"/v1/apps/{APP}/stats").json()
            assert stats["facts"] + stats["sessions"] == 4 * WRITES
            for item in acknowledged[::5]:
                path = "facts" if item["kind"] == "fact" else "sessions"
                assert http.get(f"/v1/apps/{APP}/{path}/{item['id']}").status_code == 200
        memory = Memory(db, embedder="hash")
        for item in acknowledged:
            found = memory.get(item["id"], app=APP)
            assert found["kind"] == item["kind"]
            hits = memory.search(item["id"], app=APP, k=3)
            assert (hits[0].fact_id or hits[0].session_id) == item["id"]
        assert memory.lexical.status(APP) is None  # the BM25 counters survived the race
        memory.close()
    finally:
        server.terminate()
        _, server_err = server.communicate(timeout=60)
    assert "database is locked" not in server_err
    assert "Traceback" not in server_err, server_err[-3000:]
