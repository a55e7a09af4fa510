"""No network and no telemetry at run time, proved in a network namespace.

``diarist ingest``, ``diarist search``, the exact scan's int8 kernel over a large app,
``diarist keys create`` and an exercised ``diarist serve`` run with the real default embedder
inside ``unshare -n -m``: a namespace whose only interface is
loopback, with a private /etc/resolv.conf (and /etc/hosts, /etc/nsswitch.conf) that sends every
DNS lookup to a recording listener on 127.0.0.1:53. The test asserts

* zero DNS queries (a canary lookup made first proves the listener does see them),
* zero attempts to route a packet off the machine (the namespace's Ip/Ip6 OutNoRoutes counters),
* nothing written under HOME / XDG_*_HOME (pointed at a fresh, empty folder) or TMPDIR; the
  only files are in the database's folder.

The environment handed to diarist carries no ORT_DISABLE_TELEMETRY: silence must come from
diarist itself. Needs root and util-linux ``unshare``; skipped otherwise. Run by hand for the
figures: ``python tests/reliability/test_network_silence.py --report [SERVE_ROUNDS]`` (as root).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.model

CANARY = "canary.diarist-silence.test"
SENTINEL = "sentinel.diarist-silence.test"
SERVE_ROUNDS = 10  # rounds of health + write + search, one every ROUND_PAUSE seconds
ROUND_PAUSE = 2.0
INNER_TIMEOUT = 240  # seconds; a hang guard only, never reached in a passing run

SESSIONS = [
    {"session_id": "s1", "date": "2024-05-01T10:00", "messages": [
        {"role": "user", "content": "I adopted a beagle called Biscuit last spring."},
        {"role": "assistant", "content": "Lovely! How is Biscuit settling in?"},
    ]},
    {"session_id": "s2", "date": "2024-05-03T18:30", "messages": [
        {"role": "user", "content": "My sister Ana moved to Lisbon for a job at a bakery."},
    ]},
    {"session_id": "s3", "date": "2024-05-07T08:15", "messages": [
        {"role": "user", "content": "I am training for a half marathon in October."},
    ]},
]


# The exact scan's int8 kernel (an onnxruntime session of its own) over an app of 6,000 chunks,
# large enough for it; vectors given, nothing embedded, in a database of its own (random vectors
# would fail the health probe of the served one).
INT8_SCAN = """
import sys
import numpy as np
from diarist.store import open_store
from diarist.store.base import IndexedChunk, Item
from diarist.types import Chunk, Message
from diarist.vectors import ExactDenseIndex, int8_scan
store = open_store(sys.argv[1])
vectors = np.random.default_rng(0).integers(-127, 128, (6000, 384)).astype(np.int8)
items = [(Item("session", f"big{s}", None, f"big{s}", {}, (Message("user", "x"),)),
          [IndexedChunk(Chunk(f"c{s + j}", j, ("user",), j, j), v, ["c"]) for j, v in enumerate(vectors[s:s + 500])])
         for s in range(0, 6000, 500)]
store.put_items("int8-scan", items)
found = ExactDenseIndex(store).search("int8-scan", vectors[:1].astype(np.float32) / 127.0, 10)
store.close()
print("ok" if found and int8_scan._broken is None else f"failed: {int8_scan._broken}")
"""


# -- the namespace side (run as a script inside unshare) ------------------------------------------

class DnsRecorder:
    """A stub DNS server on 127.0.0.1:53 (UDP and TCP): records every question, answers NXDOMAIN."""

    def __init__(self) -> None:
        self.queries: list[dict] = []
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self.phase = "setup"
        self._udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._udp.bind(("127.0.0.1", 53))
        self._tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._tcp.bind(("127.0.0.1", 53))
        self._tcp.listen(16)
        for target in (self._serve_udp, self._serve_tcp):
            threading.Thread(target=target, daemon=True).start()

    @staticmethod
    def _question(packet: bytes) -> tuple[str, int, int]:
        labels, pos = [], 12
        while pos < len(packet) and packet[pos] != 0:
            length = packet[pos]
            labels.append(packet[pos + 1:pos + 1 + length].decode("ascii", "replace"))
            pos += 1 + length
        pos += 1
        qtype = struct.unpack("!H", packet[pos:pos + 2])[0] if pos + 2 <= len(packet) else 0
        return ".".join(labels), qtype, pos + 4

    def _answer(self, packet: bytes, transport: str) -> bytes:
        name, qtype, end = self._question(packet) if len(packet) >= 12 else ("?", 0, len(packet))
        with self._lock:
            self.queries.append({"name": name, "type": qtype, "via": transport, "phase": self.phase,
                                 "t": round(time.monotonic() - self._t0, 2)})
        if len(packet) < 12:
            return b""
        ident, flags = struct.unpack("!HH", packet[:4])
        flags = 0x8000 | (flags & 0x7900) | 0x0080 | 3  # response, same opcode and RD, RA, NXDOMAIN
        return struct.pack("!HHHHHH", ident, flags, 1, 0, 0, 0) + packet[12:end]

    def drain(self) -> None:
        """Wait until every query already sent has been recorded: a sentinel queued behind them."""
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
            question = b"".join(bytes([len(p)]) + p.encode() for p in SENTINEL.split(".")) + b"\0"
            client.sendto(struct.pack("!HHHHHH", 1, 0x0100, 1, 0, 0, 0) + question + b"\0\1\0\1",
                          ("127.0.0.1", 53))
            client.settimeout(30)
            client.recv(4096)  # the reply comes after the sentinel (and all before it) is recorded

    def _serve_udp(self) -> None:
        while True:
            packet, peer = self._udp.recvfrom(4096)
            reply = self._answer(packet, "udp")
            if reply:
                self._udp.sendto(reply, peer)

    def _serve_tcp(self) -> None:
        while True:
            conn, _ = self._tcp.accept()
            with conn:
                try:
                    conn.settimeout(10)
                    size = struct.unpack("!H", conn.recv(2))[0]
                    packet = b""
                    while len(packet) < size:
                        chunk = conn.recv(size - len(packet))
                        if not chunk:
                            break
                        packet += chunk
                    reply = self._answer(packet, "tcp")
                    conn.sendall(struct.pack("!H", len(reply)) + reply)
                except (OSError, struct.error):
                    pass


def _no_route_counters() -> dict[str, int]:
    """Packets this namespace could not route: any attempt to reach an address off loopback."""
    counters = {}
    lines = Path("/proc/net/snmp").read_text().splitlines()
    for head, values in zip(lines[::2], lines[1::2]):
        if head.startswith("Ip:"):
            counters["Ip.OutNoRoutes"] = int(dict(zip(head.split(), values.split()))["OutNoRoutes"])
    snmp6 = Path("/proc/net/snmp6")
    if snmp6.exists():
        for line in snmp6.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "Ip6OutNoRoutes":
                counters["Ip6.OutNoRoutes"] = int(value.strip())
    return counters


def _private_etc(work: Path) -> None:
    """Name resolution in this mount namespace: files, then DNS at 127.0.0.1 only."""
    etc = work / "etc"
    etc.mkdir()
    (etc / "resolv.conf").write_text("nameserver 127.0.0.1\noptions attempts:1 timeout:2\n")
    (etc / "hosts").write_text("127.0.0.1 localhost\n::1 localhost ip6-localhost\n")
    nss = Path("/etc/nsswitch.conf")
    lines = [ln for ln in (nss.read_text().splitlines() if nss.exists() else [])
             if not ln.strip().startswith("hosts:")]
    (etc / "nsswitch.conf").write_text("\n".join(lines + ["hosts: files dns", ""]))
    for name in ("resolv.conf", "hosts", "nsswitch.conf"):
        target = Path("/etc") / name
        if not target.exists():  # a dangling symlink (say, to a stopped resolver): nothing to cover
            continue
        subprocess.run(["mount", "--bind", str(etc / name), str(target)], check=True)


def _request(port: int, method: str, path: str, body: dict | None = None, key: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    try:
        conn.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def inside(work: Path) -> None:
    """Run diarist inside this (fresh) namespace; write what was seen to work/report.json."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    _private_etc(work)
    dns = DnsRecorder()
    config = json.loads((work / "config.json").read_text())
    env, diarist, rounds = config["env"], config["diarist"], config["rounds"]
    db = work / "db" / "memory.sqlite"
    report: dict = {"steps": {}}

    def step(name: str, *args: str) -> str:
        dns.phase = name
        start = time.monotonic()
        done = subprocess.run([diarist, *args], env=env, capture_output=True, text=True, timeout=120)
        report["steps"][name] = {"rc": done.returncode, "seconds": round(time.monotonic() - start, 1),
                                 "stderr": done.stderr[-2000:]}
        return done.stdout

    # The canary: a lookup through the same libc path every child uses must reach the recorder.
    dns.phase = "canary"
    subprocess.run([sys.executable, "-c", f"import socket\ntry: socket.getaddrinfo({CANARY!r}, 443)\n"
                    "except OSError: pass"], env=env, timeout=30)
    routes_before = _no_route_counters()

    step("ingest", "ingest", str(work / "sessions.jsonl"), "--db", str(db), "--app", "notes")
    hits = step("search", "search", "what is the dog called", "--db", str(db), "--app", "notes")
    report["search_found_biscuit"] = "Biscuit" in hits
    dns.phase = "int8-scan"
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", INT8_SCAN, str(db.with_name("int8-scan.sqlite"))], env=env,
                          capture_output=True, text=True, timeout=120)
    report["steps"]["int8-scan"] = {"rc": done.returncode, "seconds": round(time.monotonic() - start, 1),
                                    "stdout": done.stdout[-200:], "stderr": done.stderr[-2000:]}
    key = step("keys", "keys", "create", "--app", "notes", "--db", str(db)).strip().splitlines()[-1:]
    key = key[0].strip() if key else ""

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dns.phase = "serve"
    start = time.monotonic()
    server = subprocess.Popen([diarist, "serve", "--db", str(db), "--port", str(port), "--log-level", "warning"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    statuses: list[int] = []
    up = False
    try:
        deadline = time.monotonic() + 120
        while not up:  # wait for the server to listen (a hang guard, not a timing assertion)
            try:
                up = _request(port, "GET", "/health")[0] == 200
            except OSError:
                pass
            if not up and (server.poll() is not None or time.monotonic() > deadline):
                break
            time.sleep(0.25)
        found = False
        for n in range(rounds if up else 0):
            statuses.append(_request(port, "GET", "/health")[0])
            session = {"session_id": f"http-{n}", "date": "2024-06-01T09:00", "messages": [
                {"role": "user", "content": f"Note {n}: the spare key is under the blue flower pot."}]}
            statuses.append(_request(port, "POST", "/v1/apps/notes/sessions", session, key)[0])
            status, body = _request(port, "POST", "/v1/apps/notes/search",
                                    {"query": "where is the spare key", "k": 3}, key)
            statuses.append(status)
            found = found or "flower pot" in json.dumps(body)
            time.sleep(ROUND_PAUSE)
        report["serve_search_found"] = found
    finally:
        server.send_signal(signal.SIGINT)  # a graceful stop: shutdown paths (flushes) run too
        try:
            output, _ = server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            output, _ = server.communicate()
        report["steps"]["serve"] = {"rc": server.returncode, "seconds": round(time.monotonic() - start, 1),
                                    "http_statuses": statuses, "output": output[-3000:]}
    if not up:
        raise RuntimeError(f"diarist serve did not come up:\n{json.dumps(report['steps'], indent=1)}")
    dns.phase = "after"
    dns.drain()
    report["canary_seen"] = any(q["name"] == CANARY for q in dns.queries)
    report["queries"] = [q for q in dns.queries if q["name"] not in (CANARY, SENTINEL)]
    routes_after = _no_route_counters()
    report["no_route_attempts"] = {k: routes_after[k] - routes_before.get(k, 0) for k in routes_after}
    (work / "report.json").write_text(json.dumps(report, indent=1))


# -- the host side --------------------------------------------------------------------------------

def _files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def run_in_namespace(work: Path, rounds: int = SERVE_ROUNDS) -> tuple[dict, dict[str, list[str]]]:
    """Run :func:`inside` under ``unshare -n -m``; return its report and the files left behind."""
    home, tmp = work / "home", work / "tmp"
    for folder in (home, tmp, work / "db"):
        folder.mkdir()
    with open(work / "sessions.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(s) + "\n" for s in SESSIONS)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ORT_", "XDG_", "DIARIST_")) and k.lower() not in
           ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "home", "tmpdir", "temp", "tmp")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local" / "share"), XDG_STATE_HOME=str(home / ".local" / "state"),
               TMPDIR=str(tmp), PYTHONDONTWRITEBYTECODE="1")
    script = Path(sys.executable).with_name("diarist")
    script = str(script if script.exists() else shutil.which("diarist"))
    (work / "config.json").write_text(json.dumps({"env": env, "diarist": script, "rounds": rounds}))
    done = subprocess.run(["unshare", "-n", "-m", "--", sys.executable, str(Path(__file__).resolve()),
                           "--inside", str(work)], env=env, capture_output=True, text=True,
                          timeout=INNER_TIMEOUT + 3 * rounds * ROUND_PAUSE)
    if done.returncode != 0 or not (work / "report.json").exists():
        raise AssertionError(f"the namespace run failed (rc {done.returncode}):\n{done.stdout}\n{done.stderr}")
    report = json.loads((work / "report.json").read_text())
    left = {"home": _files_under(home), "tmp": _files_under(tmp), "db": _files_under(work / "db")}
    return report, left


def _namespace_unavailable() -> str | None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root (unshare -n -m, a DNS listener on port 53)"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs util-linux unshare and iproute2 ip"
    probe = subprocess.run(["unshare", "-n", "-m", "--", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare -n -m is not permitted here: {probe.stderr.strip()}"
    return None


@pytest.mark.slow
def test_no_network_and_no_files_outside_the_database_folder(tmp_path: Path) -> None:
    reason = _namespace_unavailable()
    if reason:
        pytest.skip(reason)
    report, left = run_in_namespace(tmp_path)

    steps = report["steps"]
    for name in ("ingest", "search", "int8-scan", "keys"):
        assert steps[name]["rc"] == 0, f"diarist {name} failed: {steps[name]['stderr']}"
    assert steps["int8-scan"]["stdout"].strip() == "ok", steps["int8-scan"]
    assert report["search_found_biscuit"], "the search did not find the ingested session"
    statuses = steps["serve"]["http_statuses"]
    assert len(statuses) == 3 * SERVE_ROUNDS and all(200 <= s < 300 for s in statuses), steps["serve"]
    assert report["serve_search_found"], "the server's search did not find the posted session"

    assert report["canary_seen"], "the DNS recorder saw no canary lookup: the capture is broken"
    problems = []
    if report["queries"]:
        problems.append(f"{len(report['queries'])} DNS lookups at run time: {report['queries']}")
    if any(report["no_route_attempts"].values()):
        problems.append(f"packets addressed off the machine: {report['no_route_attempts']}")
    if left["home"]:
        problems.append(f"files written under HOME/XDG dirs: {left['home']}")
    if left["tmp"]:
        problems.append(f"files written under TMPDIR: {left['tmp']}")
    if not all(name.startswith(("memory.sqlite", "int8-scan.sqlite")) for name in left["db"]):
        problems.append(f"unexpected files beside the database: {left['db']}")
    assert not problems, "\n".join(problems)

if __name__ == "__main__":
    if sys.argv[1:2] == ["--inside"]:
        inside(Path(sys.argv[2]))
    elif sys.argv[1:2] == ["--report"]:  # print the figures: lookups, files, timings
        with tempfile.TemporaryDirectory() as folder:
            began = time.monotonic()
            result, files = run_in_namespace(Path(folder), int(sys.argv[2]) if len(sys.argv) > 2 else SERVE_ROUNDS)
            print(json.dumps({"report": result, "files_left": files,
                              "seconds": round(time.monotonic() - began, 1)}, indent=1))
    else:
        sys.exit("usage: test_network_silence.py --report [SERVE_ROUNDS]")
