"""Taking it back out: JSONL export re-imports into identical items and identical rankings;
Markdown export is one readable file per session; the everyday verbs of the CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from diarist.cli import main
from diarist.memory import Memory

from conftest import LOCOMO_PATH, load_locomo


def _run(*args):
    result = CliRunner().invoke(main, list(map(str, args)), env={"DIARIST_DB": ""})
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    load_locomo()  # skips when the data is missing
    folder = tmp_path_factory.mktemp("export")
    source, copy, dump = folder / "source.sqlite", folder / "copy.sqlite", folder / "locomo.jsonl"
    _run("ingest", LOCOMO_PATH, "--db", source, "--app", "locomo", "--embedder", "hash")
    _run("export", "--db", source, "--app", "locomo", "--out", dump)
    _run("ingest", dump, "--db", copy, "--app", "locomo", "--embedder", "hash")
    return source, copy, dump


@pytest.mark.slow
def test_jsonl_round_trip_gives_identical_items(exported, tmp_path):
    source, copy, dump = exported
    again = tmp_path / "again.jsonl"
    _run("export", "--db", copy, "--app", "locomo", "--out", again)
    assert again.read_text() == dump.read_text()
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert len(lines) == sum(1 for c in load_locomo() for k, v in c["conversation"].items()
                             if k.startswith("session_") and isinstance(v, list) and v)
    assert all(line["kind"] == "session" and line["messages"] for line in lines)


@pytest.mark.slow
def test_jsonl_round_trip_gives_identical_rankings_for_every_locomo_question(exported):
    source, copy, _ = exported
    with Memory(source, create=False) as a, Memory(copy, create=False) as b:
        assert a.embedder.model_id == b.embedder.model_id and a.plan == b.plan
        questions = [q["question"] for c in load_locomo() for q in c["qa"]]
        for question in questions:
            ranked_a = [(h.session_id, h.text, h.score) for h in a.search(question, app="locomo", k=50, now="2024-01-01")]
            ranked_b = [(h.session_id, h.text, h.score) for h in b.search(question, app="locomo", k=50, now="2024-01-01")]
            assert ranked_a == ranked_b, question
    assert len(questions) > 1000


def test_markdown_export_is_one_readable_file_per_session(exported, tmp_path):
    source, _, _ = exported
    folder = tmp_path / "md"
    _run("export", "--db", source, "--app", "locomo", "--format", "markdown", "--out", folder)
    files = sorted(folder.glob("*.md"))
    with Memory(source, create=False) as memory:
        sessions = memory.stats("locomo")["apps"]["locomo"]["sessions"]
        first = memory.list(app="locomo", limit=1)[0]["session_id"]
        item = memory.get(first, app="locomo")
    assert len(files) == sessions
    text = (folder / (first.replace(":", "_") + ".md")).read_text()
    assert text.startswith(f"# Session {first}\n") and "## user" in text
    assert item["messages"][0]["content"].strip() in text
    result = CliRunner().invoke(main, ["export", "--db", str(source), "--app", "locomo", "--format", "markdown",
                                       "--out", str(folder)])
    assert result.exit_code == 1 and "not an empty folder" in result.output  # never overwrites


def test_add_list_show(tmp_path):
    db = tmp_path / "m.sqlite"
    fact_id = _run("add", "Alice is allergic to peanuts.", "--db", db, "--app", "a", "--embedder", "hash",
                   "--metadata", '{"source": "test"}').output.strip()
    listed = json.loads(_run("list", "--db", db, "--app", "a", "--kind", "fact", "--json").output)
    assert listed == [{"fact_id": fact_id, "date": listed[0]["date"]}]
    shown = json.loads(_run("show", fact_id, "--db", db, "--app", "a", "--json").output)
    assert shown["text"] == "Alice is allergic to peanuts." and shown["metadata"] == {"source": "test"}
    assert "# Note" in _run("show", fact_id, "--db", db, "--app", "a").output
    missing = CliRunner().invoke(main, ["show", "nope", "--db", str(db), "--app", "a"])
    assert missing.exit_code == 1 and "no session or fact 'nope'" in missing.output
    unknown = CliRunner().invoke(main, ["list", "--db", str(db), "--app", "zzz"])
    assert unknown.exit_code == 1 and "holds no memory" in unknown.output
    bad = CliRunner().invoke(main, ["add", "x", "--db", str(db), "--metadata", "[1]"])
    assert bad.exit_code == 2 and "JSON object" in bad.output


def test_facts_and_metadata_round_trip_too(tmp_path):
    from diarist.export import jsonl_lines

    source = tmp_path / "a.sqlite"
    with Memory(source, embedder="hash") as memory:
        memory.add_session([{"role": "user", "content": "My cat Admon hides bones.", "time": "2024-01-01T10:00"}],
                           app="a", session_id="s1", date="2024-01-01", metadata={"title": "cats"})
        memory.add_fact("Alice is allergic to peanuts.", app="a", fact_id="f1", metadata={"source": "chat"})
        memory.add_fact("Bob drinks green tea.", app="a", date="2024-02-02")
        dump = tmp_path / "a.jsonl"
        _run("export", "--db", source, "--app", "a", "--out", dump)
        before = list(jsonl_lines(memory, "a"))
    report = json.loads(_run("ingest", dump, "--db", tmp_path / "b.sqlite", "--app", "a", "--embedder", "hash",
                             "--json").stdout)
    assert report["added"] == ["s1"] and sorted(report["facts"]["added"]) == sorted(["f1", json.loads(before[2])["fact_id"]])
    with Memory(tmp_path / "b.sqlite") as copy:
        assert list(jsonl_lines(copy, "a")) == before
        assert copy.search("peanuts allergy", app="a", k=1)[0].fact_id == "f1"
