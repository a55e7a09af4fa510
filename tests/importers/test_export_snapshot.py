"""An export is one snapshot (issue 31, item 1): items replaced, deleted or added by another
writer while ``diarist export`` runs change nothing in the file. Every item that existed when the
export began is written exactly once, as it was then, and the file re-imports.

Before, the export listed items page by page in storage order and read each one afterwards: a
replace moved an item to the end of that order, so the next page skipped one item and repeated
another (the file then failed to re-import: "session id ... appears twice in one batch"), and a
delete between listing and reading aborted with "no session ... in app". The fast tests interleave
the other writer at a fixed point of the export (deterministic); the heavy one runs two writer
threads against repeated exports (figures in RELIABILITY.md, "Export during writers").
"""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter
from collections.abc import Callable

import pytest
from click.testing import CliRunner

import pg_server as pg_module
from diarist import export
from diarist.cli import main
from diarist.memory import Memory

SESSIONS = 40
RUNS = 40  # exports in the heavy loop
HEAVY_SESSIONS = 400
PAGE = 10  # the export's page, small enough that 40 sessions take four pages


def _session(i: int, words: str = "") -> list[dict]:
    return [{"role": "user", "content": f"note {i} about the garden {words}".strip()}]


def _filled(location: str) -> Memory:
    memory = Memory(location, embedder="hash")
    memory.add_sessions([{"session_id": f"s{i}", "messages": _session(i)} for i in range(SESSIONS)], app="a")
    memory.add_fact("the gate code is in the drawer", app="a", fact_id="f1")
    return memory


@pytest.fixture(params=["sqlite", "postgres"])
def location(request, tmp_path) -> Callable[[], str]:
    if request.param == "sqlite":
        return str(tmp_path / "m.sqlite")
    pg_module.require()
    return request.getfixturevalue("pg_server").new_url("export")


def _ids(lines: list[str]) -> Counter:
    return Counter(json.loads(line).get("session_id") or json.loads(line)["fact_id"] for line in lines)


def _export_with(location: str, meddle: Callable[[Memory], None], after: int, monkeypatch) -> list[str]:
    """Export app "a" through one Memory; after ``after`` lines, another Memory (its own
    connection) writes ``meddle``; then the export runs to its end."""
    monkeypatch.setattr(export, "PAGE", PAGE)
    reader, writer = Memory(location, embedder="hash"), Memory(location, embedder="hash")
    try:
        lines = []
        for n, line in enumerate(export.jsonl_lines(reader, "a")):
            lines.append(line)
            if n + 1 == after:
                meddle(writer)
        return lines
    finally:
        writer.close()
        reader.close()


def _reimports(lines: list[str], tmp_path) -> None:
    dump = tmp_path / "dump.jsonl"
    dump.write_text("\n".join(lines) + "\n")
    again = tmp_path / "again.sqlite"
    result = CliRunner().invoke(main, ["ingest", str(dump), "--db", str(again), "--app", "a", "--embedder", "hash"],
                                env={"DIARIST_DB": ""})
    assert result.exit_code == 0, result.output
    with Memory(again, create=False, embedder="hash") as memory:
        assert memory.stats("a")["apps"]["a"]["sessions"] == SESSIONS


@pytest.mark.slow
def test_a_replace_during_the_export_neither_skips_nor_repeats(location, tmp_path, monkeypatch):
    _filled(location).close()

    def replace_an_exported_one(writer: Memory) -> None:
        writer.update("s2", app="a", messages=_session(2, "and the new fence"))

    lines = _export_with(location, replace_an_exported_one, after=5, monkeypatch=monkeypatch)
    counts = _ids(lines)
    assert counts == Counter({**{f"s{i}": 1 for i in range(SESSIONS)}, "f1": 1})
    # the export shows the snapshot it began with, not the replaced version
    s2 = next(json.loads(line) for line in lines if json.loads(line).get("session_id") == "s2")
    assert "fence" not in s2["messages"][0]["content"]
    _reimports(lines, tmp_path)


def test_a_delete_during_the_export_does_not_abort_it(location, tmp_path, monkeypatch):
    _filled(location).close()

    def delete_a_listed_one(writer: Memory) -> None:
        writer.delete("s7", app="a")  # listed with the first page, not read yet
        writer.add_sessions([{"session_id": "late", "messages": _session(99)}], app="a")

    lines = _export_with(location, delete_a_listed_one, after=1, monkeypatch=monkeypatch)
    counts = _ids(lines)
    assert counts == Counter({**{f"s{i}": 1 for i in range(SESSIONS)}, "f1": 1})  # as when it began
    _reimports(lines, tmp_path)


def _writer(location: str, seed: int, stop, writes) -> None:
    """Replace stable sessions, add and delete others, until ``stop`` (a process of its own)."""
    with Memory(location, embedder="hash") as mem:
        n = 0
        while not stop.is_set():
            n += 1
            mem.update(f"s{(2 * n + seed) % HEAVY_SESSIONS}", app="a", messages=_session(n, f"w{seed}"))
            mem.add_sessions([{"session_id": f"c{seed}-{n}", "messages": _session(n)}], app="a")
            if n > 1:
                mem.delete(f"c{seed}-{n - 1}", app="a")
            with writes.get_lock():
                writes.value += 3


@pytest.mark.heavy
def test_exports_during_two_writers_are_never_defective(tmp_path, monkeypatch):
    """Two writer processes replace the stable sessions and add and delete others while the
    export runs again and again: every export holds each stable session once, nothing twice,
    and ends without error."""
    location = str(tmp_path / "m.sqlite")
    with Memory(location, embedder="hash") as memory:
        memory.add_sessions([{"session_id": f"s{i}", "messages": _session(i)} for i in range(HEAVY_SESSIONS)],
                            app="a")
    monkeypatch.setattr(export, "PAGE", PAGE)
    ctx = multiprocessing.get_context("fork")
    stop, writes = ctx.Event(), ctx.Value("i", 0)
    writers = [ctx.Process(target=_writer, args=(location, s, stop, writes)) for s in (1, 2)]
    for w in writers:
        w.start()
    defective, errors = [], []
    try:
        with Memory(location, embedder="hash") as reader:
            for run in range(RUNS):
                try:
                    counts = _ids(list(export.jsonl_lines(reader, "a")))
                except Exception as exc:  # noqa: BLE001 - an aborted export is a defective one
                    errors.append(repr(exc))
                    continue
                if any(counts[f"s{i}"] != 1 for i in range(HEAVY_SESSIONS)) or max(counts.values()) > 1:
                    defective.append(run)
    finally:
        stop.set()
        for w in writers:
            w.join()
    print(f"{RUNS} exports during {writes.value} writes: {len(defective)} defective, {len(errors)} aborted")
    assert all(w.exitcode == 0 for w in writers)
    assert writes.value > 10  # the writers wrote while the exports ran
    assert defective == [] and errors == []
