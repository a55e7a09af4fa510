"""Importers: the exports people have (ChatGPT, Claude.ai, Claude Code, OpenAI logs, Markdown
notes), read through ``diarist ingest`` from the sample files in tests/data/importers/, and found
again; detection, --format, standard input, folders, and errors that name the file."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from diarist.cli import main
from diarist.dates import normalise_date
from diarist.importers import FORMATS, IMPORTERS, Importer, Source, detect, read_all, read_sessions
from diarist.memory import Memory
from export_shapes import chatgpt_conversation

DATA = Path(__file__).resolve().parents[1] / "data" / "importers"
CHATGPT = DATA / "chatgpt" / "conversations.json"
CLAUDE_AI = DATA / "claude_ai" / "conversations.json"
CLAUDE_CODE = DATA / "claude_code"
CLAUDE_CODE_FILE = CLAUDE_CODE / "-home-ana-src-tidewater" / "5f0c2a1e-9d3b-4c6a-8e2f-7a1b3c5d7e9f.jsonl"
OPENAI = DATA / "openai" / "support_log.json"
NOTES = DATA / "notes"


def _ingest(path, db, *extra, input=None):
    return CliRunner().invoke(
        main, ["ingest", str(path), "--db", str(db), "--embedder", "hash", "--app", "t", *extra],
        input=input, env={"DIARIST_DB": ""},
    )


def _ok(result):
    assert result.exit_code == 0, result.output
    return result


def _error(result) -> str:
    assert result.exit_code != 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


def _search(db, query, k=3):
    with Memory(db, embedder="hash") as mem:
        return list(mem.search(query, app="t", k=k, rerank=False))


def _session(db, sid):
    with Memory(db, embedder="hash") as mem:
        return mem.get(sid, app="t")


def _all_text(db) -> str:
    with Memory(db, embedder="hash") as mem:
        ids = [s["session_id"] for s in mem.list(app="t", kind="session", limit=1000)]
        return "\n".join(m["content"] for sid in ids for m in mem.get(sid, app="t")["messages"])


# -- the registry -----------------------------------------------------------------------------------


def test_registry_each_importer_implements_the_interface():
    assert FORMATS == tuple(IMPORTERS) and len(set(FORMATS)) == len(FORMATS) == 8
    assert FORMATS[-1] == "markdown", "Markdown reads any text: it is tried last"
    for name, imp in IMPORTERS.items():
        assert isinstance(imp, Importer) and imp.name == name and imp.title and imp.suffixes and imp.unit


@pytest.mark.parametrize("path,name", [
    (CHATGPT, "chatgpt"), (CLAUDE_AI, "claude-ai"), (CLAUDE_CODE_FILE, "claude-code"), (OPENAI, "openai"),
    (NOTES / "garden.md", "markdown"), (NOTES / "todo.txt", "markdown"),
])
def test_each_sample_is_detected(path, name):
    assert detect(Source(path)).name == name
    assert read_sessions(path)[0] == name


# -- ChatGPT ----------------------------------------------------------------------------------------


def test_chatgpt_export_imports_only_the_current_branch(tmp_path):
    db = tmp_path / "x.sqlite"
    result = _ok(_ingest(CHATGPT, db))
    assert "2 sessions added" in result.stdout

    hits = _search(db, "What is my sourdough starter called?")
    assert "Bubbles" in hits[0].text and hits[0].session_id == "6632a1f0-1b2c-8000-9d3e-4f5a6b7c8d9e"

    stored = _session(db, "6632a1f0-1b2c-8000-9d3e-4f5a6b7c8d9e")
    assert stored["date"] == "2024-05-01T08:00:00+00:00"
    assert stored["metadata"]["title"] == "Sourdough starter feeding"
    assert stored["metadata"]["source"] == "chatgpt"
    messages = stored["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "tool", "tool", "assistant"]
    assert messages[0]["time"] == "2024-05-01T08:00:10+00:00"
    assert messages[2]["content"].startswith("[image]") and "75% hydration" in messages[2]["content"]
    assert messages[3]["content"].startswith("called tool python(flour = 500")
    assert messages[4]["content"] == "python returned: 375.0"

    everything = _all_text(db)
    # the regenerated answer and the edited question are on branches the user left
    assert "Zanzibar" not in everything and "Kamut" not in everything
    assert not [h for h in _search(db, "Zanzibar rye Kamut flour", k=10) if "Zanzibar" in h.text or "Kamut" in h.text]
    # hidden messages (system prompt, custom instructions) and reasoning are not imported
    assert "metric units" not in everything and "water over flour" not in everything
    # an assistant turn addressed to a tool ("bio": a memory update) is a tool message
    trip = _session(db, "665a6b80-0000-8000-aaaa-000000000002")["messages"]
    assert trip[-1] == {"role": "tool", "content": "called tool bio(Is travelling to Osaka on 14 March with her sister Ines.)",
                        "time": "2024-06-01T00:00:16+00:00"}
    assert len(trip) == 3, "the empty assistant message is skipped"


def test_chatgpt_without_current_node_follows_the_latest_branch(tmp_path):
    def node(i, parent, children, role, text):
        msg = {"author": {"role": role}, "content": {"content_type": "text", "parts": [text]}, "create_time": None}
        return {"id": i, "message": msg, "parent": parent, "children": children}

    conv = {"id": "c1", "title": "t", "create_time": 1700000000, "mapping": {
        "r": {"id": "r", "message": None, "parent": None, "children": ["u"]},
        "u": node("u", "r", ["old", "new"], "user", "Pick a colour for the shed."),
        "old": node("old", "u", [], "assistant", "Ochre."),
        "new": node("new", "u", [], "assistant", "Sage green."),
    }}
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([conv]))
    (session,) = read_sessions(path)[1]
    assert [m["content"] for m in session.messages] == ["Pick a colour for the shed.", "Sage green."]
    assert "time" not in session.messages[0]

    conv["current_node"] = "gone"
    path.write_text(json.dumps([conv]))
    line = _error(_ingest(path, tmp_path / "x.sqlite"))
    assert f"{path} conversation 1: current_node 'gone' is not in its mapping" in line
    assert not (tmp_path / "x.sqlite").exists()


# -- Claude.ai --------------------------------------------------------------------------------------


def test_claude_ai_export(tmp_path):
    db = tmp_path / "x.sqlite"
    result = _ok(_ingest(CLAUDE_AI, db))
    assert "2 sessions added" in result.stdout, "the empty third conversation is skipped"

    hits = _search(db, "What does my niece Marta love?")
    assert "origami" in hits[0].text and hits[0].session_id == "8a9b0c1d-2e3f-4a5b-8c7d-9e0f1a2b3c4d"
    hits = _search(db, "Which cargo bike did we pick for Noor?")
    assert "Babboe Curve" in hits[0].text

    bike = _session(db, "3f6d2c1a-7b8e-4e0f-9a1b-2c3d4e5f6a7b")
    assert bike["date"] == "2024-09-03T07:12:44.215843+00:00"
    assert bike["metadata"] == {"source": "claude.ai", "title": "Cargo bike for the commute",
                                "updated": "2024-09-03T07:20:01.004512+00:00"}
    roles = [m["role"] for m in bike["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]
    assert bike["messages"][0]["content"].endswith("[attached file commute-route.txt]")
    assert bike["messages"][2]["content"] == 'called tool web_search(query="electric cargo bike price Netherlands 2024")'
    assert bike["messages"][3]["content"].startswith("web_search returned: Urban Arrow Family")
    assert "check prices first" not in _all_text(db), "thinking is not imported"


# -- Claude Code ------------------------------------------------------------------------------------


def test_claude_code_projects_folder(tmp_path):
    db = tmp_path / "x.sqlite"
    result = _ok(_ingest(CLAUDE_CODE, db))
    assert "1 sessions added" in result.stdout

    hits = _search(db, "Which rounding mode did we use in tide_height?", k=2)
    assert any("ROUND_HALF_EVEN" in h.text for h in hits), "found (BM25 first; the hash embedder is noise)"
    assert next(h for h in hits if "ROUND_HALF_EVEN" in h.text).ranks["lexical"] == 1

    stored = _session(db, "5f0c2a1e-9d3b-4c6a-8e2f-7a1b3c5d7e9f")
    assert stored["date"] == "2025-03-10T09:14:02.200000+00:00"
    assert stored["metadata"] == {"source": "claude-code", "title": "Fix flaky tide table test",
                                  "cwd": "/home/ana/src/tidewater", "git_branch": "fix-rounding",
                                  "session": "5f0c2a1e-9d3b-4c6a-8e2f-7a1b3c5d7e9f"}
    messages = stored["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant", "user"]
    assert messages[2]["content"] == 'called tool Bash(command="pytest tests/test_tides.py -q", description="Run the tide tests")'
    assert messages[3]["content"].startswith("Bash failed: F.\nFAILED tests/test_tides.py::test_tide_table")
    assert messages[0]["time"] == "2025-03-10T09:14:10.512000+00:00"
    everything = _all_text(db)
    for absent in ("Caveat", "<command-name>", "Sub-agent", "Request interrupted", "Probably float rounding"):
        assert absent not in everything


def test_long_tool_output_is_shortened(tmp_path):
    lines = [
        {"type": "user", "sessionId": "s", "uuid": "1", "message": {"role": "user", "content": "Read the log."}},
        {"type": "assistant", "sessionId": "s", "uuid": "2", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/var/log/" + "x" * 500}}]}},
        {"type": "user", "sessionId": "s", "uuid": "3", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "line\n" * 5000}]}]}},
        {"type": "assistant", "sessionId": "s", "uuid": "2", "message": {"role": "assistant", "content": "a repeated line"}},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (session,) = read_sessions(path)[1]
    call, output = session.messages[1]["content"], session.messages[2]["content"]
    assert call.startswith('called tool Read(file_path="/var/log/xxx') and call.endswith("...)") and len(call) < 240
    assert output.startswith("Read returned: line") and output.endswith("more characters]") and len(output) < 2100
    assert len(session.messages) == 3, "a line seen twice (same uuid) counts once"
    assert session.session_id == "s"


# -- OpenAI -----------------------------------------------------------------------------------------


def test_openai_log_with_developer_tool_calls_and_parts(tmp_path):
    db = tmp_path / "x.sqlite"
    _ok(_ingest(OPENAI, db))
    hits = _search(db, "Which carrier sends the replacement wheel?")
    assert "PostNL" in hits[0].text
    with Memory(db, embedder="hash") as mem:
        (summary,) = mem.list(app="t", kind="session")
        messages = mem.get(summary["session_id"], app="t")["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "tool", "tool", "assistant", "user", "assistant"]
    assert messages[0]["content"] == "You are the support agent for Larkspur Bikes. Be brief."
    assert messages[1]["content"] == "Priya: My order LB-20931 arrived with a bent front wheel.\n\n[image]"
    assert messages[2]["content"] == 'called tool lookup_order(order_id="LB-20931")'
    assert messages[3]["content"].startswith('lookup_order returned: {"order_id": "LB-20931"')
    assert messages[4]["content"].startswith("Sorry about that, Priya!")


def test_openai_records_and_diarist_sessions_are_told_apart(tmp_path):
    tuned = tmp_path / "finetune.jsonl"
    tuned.write_text("".join(json.dumps(r) + "\n" for r in [
        {"messages": [{"role": "developer", "content": "Answer as a travel agent."},
                      {"role": "user", "content": [{"type": "input_text", "text": "Trains from Porto to Lisbon?"}]},
                      {"role": "assistant", "content": "The Alfa Pendular takes about 3 hours."}]},
        {"session_id": "named", "date": "2024-02-02",
         "messages": [{"role": "user", "content": "Is the Alfa Pendular bookable online?"},
                      {"role": "function", "name": "cp_search", "content": "yes, cp.pt"}]},
    ]))
    fmt, found = read_sessions(tuned)
    assert fmt == "openai"
    assert [m["role"] for m in found[0].messages] == ["system", "user", "assistant"]
    assert found[0].messages[1]["content"] == "Trains from Porto to Lisbon?"
    assert found[1].session_id == "named" and found[1].date == "2024-02-02"
    assert found[1].messages[1] == {"role": "tool", "content": "cp_search returned: yes, cp.pt"}

    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"session_id": "p", "messages": [{"role": "user", "content": "hello there"}]}) + "\n")
    assert read_sessions(plain)[0] == "sessions"
    assert read_sessions(plain, format="openai")[0] == "openai", "--format openai reads it too"


# -- Markdown ---------------------------------------------------------------------------------------


def test_markdown_folder(tmp_path):
    db = tmp_path / "x.sqlite"
    result = _ok(_ingest(NOTES, db))
    assert "3 sessions added" in result.stdout
    assert "workspace.json" not in result.output, "hidden folders (.obsidian) are not walked"

    hits = _search(db, "Who is allergic to pine nuts?")
    assert hits[0].session_id == "recipes/pesto.md" and "allergic to pine nuts" in hits[0].text
    hits = _search(db, "What worked against the slugs?")
    assert hits[0].session_id == "garden.md" and "Beer traps" in hits[0].text

    garden = _session(db, "garden.md")
    assert garden["date"] == "2024-04-14T00:00:00", "front matter date:"
    assert garden["metadata"]["title"] == "Allotment plan" and garden["metadata"]["path"] == "garden.md"
    contents = [m["content"] for m in garden["messages"]]
    assert [c.splitlines()[0] for c in contents] == [
        "title: Allotment plan", "Plot 17 at the Westerpark allotments, rented since 2021.", "# Spring sowing",
        "## Tomatoes", "# Pests"]
    assert {m["role"] for m in garden["messages"]} == {"user"}
    assert garden["metadata"]["front_matter"]["title"] == "Allotment plan", "front matter: a message, and metadata"

    pesto = _session(db, "recipes/pesto.md")
    assert len(pesto["messages"]) == 3, "a '#' line inside a code fence is not a heading"
    assert pesto["metadata"]["title"] == "pesto", "no title: the file name, never a heading (issue 41)"
    todo = _session(db, "todo.txt")
    mtime = (NOTES / "todo.txt").stat().st_mtime
    assert todo["date"] == normalise_date(mtime), "no front matter: the file's modification time"


def test_markdown_single_file_and_headingless_text(tmp_path):
    note = tmp_path / "Trip ideas.md"
    note.write_text("---\ncreated: '2023-11-05 09:30'\n---\n# Lisbon\n\n## Food\n\nPasteis at Manteigaria.\n")
    (session,) = read_sessions(note)[1]
    assert session.session_id == "Trip ideas.md" and session.date == "2023-11-05 09:30"
    assert [m["content"] for m in session.messages] == ["created: '2023-11-05 09:30'",
                                                        "# Lisbon\n\n## Food\n\nPasteis at Manteigaria."], \
        "a heading with nothing under it is joined to the next section"


# -- standard input, folders, --format, errors ------------------------------------------------------


def test_stdin_json_and_markdown(tmp_path):
    db = tmp_path / "x.sqlite"
    result = _ok(_ingest("-", db, input=CHATGPT.read_text()))
    assert result.stdout.startswith("<stdin>: 2 sessions added")
    result = _ok(_ingest("-", db, input="# Groceries\n\nOat milk, capers and a lemon for the risotto.\n"))
    assert "1 sessions added" in result.stdout
    hits = _search(db, "what do I need for the risotto")
    assert "capers" in hits[0].text
    line = _error(_ingest("-", db, input='{"session_id": "x", "messages": [\n'))
    assert "<stdin> line 1: invalid JSON" in line


def test_folder_of_mixed_exports_skips_what_it_cannot_read(tmp_path):
    export = tmp_path / "export"
    (export / "chatgpt").mkdir(parents=True)
    shutil.copy(CHATGPT, export / "chatgpt" / "conversations.json")
    (export / "chatgpt" / "user.json").write_text(json.dumps({"id": "user-1", "email": "a@example.org"}))
    (export / "chatgpt" / "chat.html").write_text("<html></html>")
    shutil.copy(NOTES / "garden.md", export / "garden.md")
    (export / "empty.md").write_text("")
    db = tmp_path / "x.sqlite"
    result = _ok(_ingest(export, db))
    assert "3 sessions added" in result.stdout
    assert f"skipped {export / 'chatgpt' / 'user.json'}: not a format diarist reads" in result.stderr
    assert f"skipped {export / 'empty.md'}: file is empty" in result.stderr
    imported = read_all(export)
    assert imported.format == "chatgpt+markdown"
    assert imported.where[0] == f"{export / 'chatgpt' / 'conversations.json'} session 1"

    # a file that is in a format but breaks it stops everything: nothing is stored
    (export / "zz.jsonl").write_text('{"session_id": "ok", "messages": [{"role": "user", "content": "fine"}]}\n{"oops"\n')
    fresh = tmp_path / "fresh.sqlite"
    assert f"{export / 'zz.jsonl'} line 2: invalid JSON" in _error(_ingest(export, fresh))
    assert not fresh.exists()
    # the same export twice in one folder: each conversation stored once, the other named
    (export / "zz.jsonl").unlink()
    shutil.copy(CHATGPT, export / "again.json")
    result = _ok(_ingest(export, fresh))
    assert "3 sessions added" in result.stdout and "2 sessions met twice" in result.stderr


def test_a_file_in_no_format_names_the_file_the_formats_and_why(tmp_path):
    wrong = tmp_path / "settings.json"
    wrong.write_text(json.dumps({"theme": "dark", "fontSize": 14}))
    db = tmp_path / "x.sqlite"
    line = _error(_ingest(wrong, db))
    assert f"{wrong}: not a format diarist reads" in line
    for clause in ("chatgpt: no 'mapping' in record 1", "claude-ai: no 'chat_messages' in record 1",
                   "sessions: missing field 'messages' in record 1", "markdown: a .json file, not a note",
                   "longmemeval: no 'haystack_sessions' in record 1"):
        assert clause in line
    assert all(name in line for name in FORMATS)
    assert not db.exists()


def test_format_forces_one_and_a_mismatch_says_why(tmp_path):
    db = tmp_path / "x.sqlite"
    line = _error(_ingest(CLAUDE_AI, db, "--format", "chatgpt"))
    assert f"{CLAUDE_AI} does not match --format chatgpt" in line and "no 'mapping' in record 1" in line
    line = _error(_ingest(CHATGPT, db, "--format", "claude-code"))
    assert "does not match --format claude-code" in line and "no line with a 'type', a 'message' and a 'sessionId'" in line
    assert not db.exists()
    # forcing Markdown reads any text file as a note
    result = _ok(_ingest(OPENAI, db, "--format", "markdown"))
    assert "1 sessions added" in result.stdout
    assert _session(db, "support_log.json")["metadata"]["source"] == "markdown"
    bad = CliRunner().invoke(main, ["ingest", str(OPENAI), "--format", "word"])
    assert bad.exit_code == 2 and "'word' is not one of" in bad.output


def test_malformed_benchmark_record_is_named(tmp_path):
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([{"haystack_sessions": [[]], "haystack_dates": ["2023/05/20 (Sat) 02:21"]}]))
    line = _error(_ingest(path, tmp_path / "x.sqlite"))
    assert f"{path} record 1: not a valid LongMemEval record (missing field 'haystack_session_ids')" in line


def test_the_importing_page_documents_every_format():
    page = (Path(__file__).resolve().parents[2] / "docs" / "importing.md").read_text()
    section = page.split("# Importing your history", 1)[1].split("\n## ", 1)[0]
    for name in FORMATS:
        assert f"--format {name}" in section or f"`{name}`" in section, name


def test_stdin_claude_code_gzip_limit_and_empty(tmp_path):
    db = tmp_path / "x.sqlite"
    _ok(_ingest("-", db, input=CLAUDE_CODE_FILE.read_text()))
    assert _session(db, "5f0c2a1e-9d3b-4c6a-8e2f-7a1b3c5d7e9f")["metadata"]["source"] == "claude-code", \
        "from standard input the id is the sessionId"
    gz = tmp_path / "conversations.json.gz"
    gz.write_bytes(gzip.compress(CHATGPT.read_bytes()))
    fmt, found = read_sessions(gz, limit=1)
    assert fmt == "chatgpt" and [s.metadata["title"] for s in found] == ["Sourdough starter feeding"]
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert f"{empty}: the file holds no records" in _error(_ingest(empty, db))
    blank = tmp_path / "blank.md"
    blank.write_text("\n\n")
    assert f"{blank}: file is empty" in _error(_ingest(blank, db))
    assert f"{tmp_path / 'nope.json'}: no such file" in _error(_ingest(tmp_path / "nope.json", db))


def test_markdown_template_date_falls_back_to_the_file_time(tmp_path):
    note = tmp_path / "daily.md"
    note.write_text("---\ndate: {{date}}\n---\nCall the plumber about the boiler.\n")
    (session,) = read_sessions(note)[1]
    assert session.date == note.stat().st_mtime and session.metadata["front_matter"] == {"date": "{{date}}"}


# -- reading with a bound (issue 31 item 3) and nothing dropped without a word (issue 28) ----------


def _good_line(sid: str) -> str:
    return json.dumps({"session_id": sid, "messages": [{"role": "user", "content": f"note {sid}"}]}) + "\n"


def test_special_files_and_links_out_are_refused_with_one_line(tmp_path):
    import os

    db = tmp_path / "x.sqlite"
    assert "a character device, not a file" in _error(_ingest("/dev/zero", db))
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "ok.jsonl").write_text(_good_line("a"))
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    (folder / "random.md").symlink_to("/dev/urandom")
    os.mkfifo(folder / "pipe.md")  # must not hang
    outside = tmp_path / "secret.md"
    outside.write_text("outside the folder")
    (folder / "link.md").symlink_to(outside)
    result = _ok(_ingest(folder, db))
    assert "1 sessions added" in result.stdout
    for name, why in (("zero.jsonl", "a character device"), ("random.md", "a character device"),
                      ("pipe.md", "a FIFO"), ("link.md", "outside the folder imported")):
        assert f"skipped {folder / name}: " in result.stderr and why in result.stderr, name
    assert not _search(db, "outside the folder") or "outside" not in _search(db, "outside the folder")[0].text


def test_compression_bomb_and_huge_line_stop_at_max_bytes(tmp_path):
    db = tmp_path / "x.sqlite"
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(_good_line("a").encode() + b" " * 2_000_000))  # 2 MB from a few KB
    assert bomb.stat().st_size < 20_000
    line = _error(_ingest(bomb, db, "--max-bytes", "100000"))
    assert "decompresses to more than 100,000 bytes" in line and "--max-bytes" in line
    long_line = tmp_path / "line.md.gz"
    long_line.write_bytes(gzip.compress(b"x" * 3_000_000))
    assert "decompresses to more than" in _error(_ingest(long_line, db, "--max-bytes", "1000000"))
    big = tmp_path / "big.jsonl"
    big.write_text(_good_line("a") * 1)
    assert "holds more than 10 bytes" in _error(_ingest(big, db, "--max-bytes", "10"))
    assert "holds more than 10 bytes" in _error(_ingest("-", db, "--max-bytes", "10", input=_good_line("b")))
    assert not db.exists()


def test_limit_parses_only_the_first_records(tmp_path):
    """A list whose 4th record is broken still reads with --limit 3: the rest is never parsed."""
    listing = tmp_path / "many.json"
    records = [json.loads(_good_line(f"s{i}")) for i in range(3)]
    listing.write_text("[" + ",".join(json.dumps(r) for r in records) + ", {broken" + " " * 100_000 + "]")
    fmt, found = read_sessions(listing, limit=3)
    assert [s.session_id for s in found] == ["s0", "s1", "s2"]
    with pytest.raises(Exception, match="invalid JSON"):
        read_sessions(listing)


def test_front_matter_only_notes_templates_and_exclude(tmp_path):
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / ".obsidian" / "templates.json").write_text('{"folder": "Meta/Tpl"}')
    (vault / "Meta" / "Tpl").mkdir(parents=True)
    (vault / "Meta" / "Tpl" / "daily.md").write_text("---\ndate: {{date}}\n---\n")
    (vault / "Archive").mkdir()
    (vault / "Archive" / "old.md").write_text("old stuff")
    (vault / "tart.md").write_text("---\ntitle: Plum tart\nservings: 8\ntags:\n  - baking\n---\n")
    (vault / "empty-front.md").write_text("---\n---\n")
    db = tmp_path / "x.sqlite"
    result = _ok(_ingest(vault, db, "--exclude", "Archive"))
    assert "1 sessions added" in result.stdout
    assert f"{vault / 'Meta' / 'Tpl'}: the vault's templates folder" in result.stderr
    assert f"{vault / 'Archive'}: excluded by --exclude Archive" in result.stderr
    assert f"{vault / 'empty-front.md'}: a note with no text" in result.stderr
    assert f"{vault / '.obsidian'}: hidden folder" in result.stderr
    hit = _search(db, "how many servings does the plum tart make?")[0]
    assert hit.session_id == "tart.md" and "servings: 8" in hit.text
    report = json.loads(_ok(_ingest(vault, tmp_path / "y.sqlite", "--json", "--exclude", "Archive")).stdout)
    assert report["files_read"] == 2 and len(report["skipped"]) == 4  # .obsidian, empty note, Meta/Tpl, Archive


def test_two_exports_a_year_apart_leave_one_copy_each(tmp_path):
    year = 365 * 86400
    first = [chatgpt_conversation("c1", ["plan the trip to Porto", "book the train"], 1.70e9),
             chatgpt_conversation("c2", ["fix the bike brakes"], 1.70e9)]
    grown = chatgpt_conversation("c1", ["plan the trip to Porto", "book the train", "and the ferry to Madeira"],
                                  1.70e9 + year)
    second = [grown, first[1], chatgpt_conversation("c3", ["learn Portuguese verbs"], 1.70e9 + year)]
    folder = tmp_path / "exports"
    folder.mkdir()
    # the later export sorts first: the update time decides, not the file order
    (folder / "a-2025.json").write_text(json.dumps(second))
    (folder / "b-2024.json").write_text(json.dumps(first))
    db = tmp_path / "x.sqlite"
    result = _ok(_ingest(folder, db))
    assert "3 sessions added" in result.stdout and "2 sessions met twice" in result.stderr
    assert "Madeira" in json.dumps(_session(db, "c1")), "the grown version is kept"
    # one export, then the later one: one copy of each, the grown one updated
    db2 = tmp_path / "y.sqlite"
    _ok(_ingest(folder / "b-2024.json", db2))
    report = json.loads(_ok(_ingest(folder / "a-2025.json", db2, "--json")).stdout)
    assert report["added"] == ["c3"] and report["replaced"] == ["c1"] and report["unchanged"] == ["c2"]
    with Memory(db2, embedder="hash") as mem:
        assert len(mem.list(app="t")) == 3


def test_wrapped_claude_ai_and_two_session_ids_in_one_claude_code_file(tmp_path):
    wrapped = tmp_path / "conversations.json"
    wrapped.write_text(json.dumps({"conversations": json.loads(CLAUDE_AI.read_text())}))
    assert read_sessions(wrapped)[0] == "claude-ai"
    lines = []
    for sid, text in (("aaa", "first session about the boiler"), ("bbb", "resumed session about the roof")):
        lines.append(json.dumps({"type": "user", "sessionId": sid, "uuid": f"{sid}-1", "timestamp": "2025-01-02T10:00:00Z",
                                 "message": {"role": "user", "content": text}}))
    log = tmp_path / "bbb.jsonl"
    log.write_text("\n".join(lines) + "\n")
    fmt, found = read_sessions(log)
    assert fmt == "claude-code" and [s.session_id for s in found] == ["aaa", "bbb"]
    assert "roof" in found[1].messages[0]["content"]


def test_identical_texts_are_embedded_once(tmp_path):
    from diarist.embed.hashing import HashEmbedder
    from diarist.write.validate import SessionInput

    class Counting(HashEmbedder):
        embedded: list[str] = []

        def embed_batch(self, texts):
            self.embedded.extend(texts)
            return super().embed_batch(texts)

    embedder = Counting()
    same = "The weekly review: inbox zero, calendar, next actions."
    with Memory(tmp_path / "x.sqlite", embedder=embedder) as mem:
        mem.add_sessions([SessionInput([{"role": "user", "content": same}], f"s{i}") for i in range(5)], app="t")
        assert len(mem.list(app="t")) == 5
    assert len(embedder.embedded) == 1, "five sessions of one text: one embedding"
