"""Reading files (JSONL sessions, JSON lists, OpenAI message lists, LongMemEval, LoCoMo) and bad
input: a clear one-line error that names the record, and nothing stored half-way."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from diarist.cli import main
from diarist.errors import InvalidInput, UnknownApp
from diarist.importers import read_sessions
from diarist.memory import Memory
from diarist.write.validate import MAX_MESSAGE_CHARS, SessionInput

from conftest import LOCOMO_PATH, db_dump, make_sessions


def _write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _ingest(path, db, *extra, env=None):
    return CliRunner().invoke(main, ["ingest", str(path), "--db", str(db), "--embedder", "hash", *extra], env=env or {})


def _error_line(result) -> str:
    """The CLI's error: exactly one non-empty line on stderr, via click ("Error: ...")."""
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


# -- formats -------------------------------------------------------------------------------------


def test_jsonl_sessions_round_trip(tmp_path):
    sessions = make_sessions(5, seed=20)
    path = _write_jsonl(tmp_path / "s.jsonl", sessions)
    fmt, read = read_sessions(path)
    assert fmt == "sessions" and [s.session_id for s in read] == [f"s{i}" for i in range(5)]
    db = tmp_path / "m.sqlite"
    result = _ingest(path, db, "--app", "x")
    assert result.exit_code == 0, result.output
    assert "5 sessions added, 0 replaced, 0 unchanged" in result.stdout
    again = _ingest(path, db, "--app", "x")
    assert "0 sessions added, 0 replaced, 5 unchanged" in again.stdout
    with Memory(db, embedder="hash") as mem:
        assert mem.get("s3", app="x")["messages"][0]["content"] == sessions[3]["messages"][0]["content"]


def test_json_list_gzip_and_sessions_key(tmp_path):
    sessions = make_sessions(3, seed=21)
    gz = tmp_path / "s.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(sessions).encode()))
    assert [s.session_id for s in read_sessions(gz)[1]] == ["s0", "s1", "s2"]
    wrapped = tmp_path / "w.json"
    wrapped.write_text(json.dumps({"sessions": sessions}))
    assert len(read_sessions(wrapped)[1]) == 3
    single = tmp_path / "one.json"
    single.write_text(json.dumps(sessions[0], indent=2))
    assert [s.session_id for s in read_sessions(single)[1]] == ["s0"]


def test_openai_message_list_is_one_session(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "My dog is called Pixel."},
        {"role": "assistant", "content": "Nice name!"},
    ]))
    fmt, sessions = read_sessions(path)
    assert fmt == "openai" and len(sessions) == 1 and len(sessions[0].messages) == 3
    db = tmp_path / "m.sqlite"
    assert _ingest(path, db).exit_code == 0
    with Memory(db, embedder="hash") as mem:
        hits = mem.search("Pixel", k=1)
        # the system prompt is kept verbatim but not indexed: no hit shows it
        assert "Pixel" in hits[0].text and hits[0].roles == ("user", "assistant")
        assert "helpful" not in hits[0].text and mem.search("helpful", k=1)[0].ranks["lexical"] is None
        assert [m["role"] for m in mem.get(hits[0].session_id)["messages"]] == ["system", "user", "assistant"]


def test_longmemeval_format(tmp_path):
    records = [
        {
            "question_id": "q1", "question": "?", "answer": "!",
            "haystack_session_ids": ["a", "b"],
            "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00"],
            "haystack_sessions": [
                [{"role": "user", "content": "I adopted a cat named Miso."}, {"role": "assistant", "content": " "}],
                [{"role": "user", "content": "Travel plans for Lisbon.", "has_answer": True}],
            ],
        },
        {
            "question_id": "q2", "question": "?", "answer": "!",
            "haystack_session_ids": ["b"], "haystack_dates": ["2023/05/21 (Sun) 10:00"],
            "haystack_sessions": [[{"role": "user", "content": "Travel plans for Lisbon."}]],
        },
    ]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(records))
    fmt, sessions = read_sessions(path)
    assert fmt == "longmemeval"
    assert [s.session_id for s in sessions] == ["a", "b"], "each haystack session once"
    assert len(sessions[0].messages) == 1, "empty turns are skipped"
    db = tmp_path / "m.sqlite"
    assert _ingest(path, db).exit_code == 0
    with Memory(db, embedder="hash") as mem:
        assert mem.get("a")["date"] == "2023-05-20T02:21:00"


def test_locomo_format_from_the_real_file(tmp_path, locomo):
    fmt, sessions = read_sessions(LOCOMO_PATH, limit=1)
    assert fmt == "locomo"
    conversation = locomo[0]["conversation"]
    n_sessions = sum(1 for k, v in conversation.items() if k.startswith("session_") and isinstance(v, list) and v)
    assert len(sessions) == n_sessions
    first = sessions[0]
    assert first.session_id == f"{locomo[0]['sample_id']}:session_1"
    assert first.messages[0]["content"].startswith(conversation["speaker_a"] + ": ")
    # Two people talking: both are users (no assistant), each turn keeps its speaker's name.
    assert {m["role"] for m in first.messages} == {"user"}
    speakers = {m["content"].split(": ", 1)[0] for m in first.messages}
    assert speakers == {conversation["speaker_a"], conversation["speaker_b"]}
    db = tmp_path / "m.sqlite"
    result = _ingest(LOCOMO_PATH, db, "--limit", "1", "--app", "locomo")
    assert result.exit_code == 0, result.output
    with Memory(db, embedder="hash") as mem:
        stored = mem.get(first.session_id, app="locomo")
        assert stored["date"] == "2023-05-08T13:56:00"  # "1:56 pm on 8 May, 2023"
        assert stored["metadata"]["dia_ids"][0] == "D1:1"
        assert mem.stats("locomo")["apps"]["locomo"]["sessions"] == n_sessions


# -- bad input ------------------------------------------------------------------------------------


@pytest.fixture
def seeded_db(tmp_path):
    """A database that already holds good data: bad input must leave it exactly as it was."""
    db = tmp_path / "m.sqlite"
    with Memory(db, embedder="hash") as mem:
        from conftest import add_all

        add_all(mem, make_sessions(3, seed=22), app="default")
    return db


GOOD = {"session_id": "good1", "date": "2024-01-01", "messages": [{"role": "user", "content": "fine words"}]}
GOOD2 = {"session_id": "good2", "messages": [{"role": "assistant", "content": "more fine words"}]}

BAD_RECORDS = [
    ({"session_id": "bad", "messages": [{"role": "user", "content": ""}]}, "record 2 (session 'bad') message 0: message content is empty"),
    ({"session_id": "bad", "messages": [{"role": "user", "content": "   \n"}]}, "message content is empty"),
    ({"session_id": "bad", "messages": [{"role": "robot", "content": "hi"}]}, "record 2 (session 'bad') message 0: unknown role 'robot'"),
    ({"session_id": "bad", "messages": [{"content": "hi"}]}, "record 2 (session 'bad') message 0: message has no 'role'"),
    ({"session_id": "bad", "messages": [{"role": "user"}]}, "record 2 (session 'bad') message 0: message has no 'content'"),
    ({"session_id": "bad", "messages": [{"role": "user", "content": 42}]}, "'content' must be a string, got int"),
    ({"session_id": "bad"}, "record 2: missing field 'messages'"),
    ({"session_id": "bad", "messages": []}, "record 2 (session 'bad'): session has no messages"),
    ({"session_id": "bad", "messages": "hello"}, "'messages' must be a list"),
    ({"session_id": "bad", "date": "yesterday-ish", "messages": [{"role": "user", "content": "x"}]}, "record 2 (session 'bad'): date 'yesterday-ish' is not in a known format"),
    ({"session_id": "", "messages": [{"role": "user", "content": "x"}]}, "session id must be 1 to 256 characters"),
    ({"session_id": "good1", "messages": [{"role": "user", "content": "x"}]}, "session id 'good1' appears twice"),
]


@pytest.mark.parametrize("bad,message", BAD_RECORDS, ids=[m[:30] for _, m in BAD_RECORDS])
def test_one_bad_record_among_good_ones_stores_nothing(tmp_path, seeded_db, bad, message):
    path = _write_jsonl(tmp_path / "in.jsonl", [GOOD, bad, GOOD2])
    before = db_dump(seeded_db)
    result = _ingest(path, seeded_db)
    assert result.exit_code == 1
    line = _error_line(result)
    assert message in line
    assert db_dump(seeded_db) == before
    # the API says the same, naming the record, and stores nothing either
    with Memory(seeded_db, embedder="hash") as mem:
        items = [SessionInput(r.get("messages"), r.get("session_id"), r.get("date")) for r in (GOOD, bad, GOOD2)]
        with pytest.raises(InvalidInput, match="session"):
            mem.add_sessions(items)
    assert db_dump(seeded_db) == before


def test_huge_message(tmp_path, seeded_db):
    huge = "word " * (MAX_MESSAGE_CHARS // 5) + "overflow"
    assert len(huge) > 1_000_000
    path = _write_jsonl(tmp_path / "huge.jsonl", [GOOD, {"session_id": "huge", "messages": [{"role": "user", "content": huge}]}])
    before = db_dump(seeded_db)
    result = _ingest(path, seeded_db)
    assert result.exit_code == 1
    assert "record 2 (session 'huge') message 0: message is 1,000,008 characters, over the 1,000,000 limit" in _error_line(result)
    assert db_dump(seeded_db) == before
    with Memory(seeded_db, embedder="hash") as mem:
        with pytest.raises(InvalidInput, match="over the 1,000,000 limit"):
            mem.add_session([{"role": "user", "content": huge}], session_id="huge")
        with pytest.raises(InvalidInput, match="message content is empty"):
            mem.add_session([{"role": "user", "content": ""}])
        with pytest.raises(InvalidInput, match="fact must be a non-empty string"):
            mem.add_fact("  ")
    assert db_dump(seeded_db) == before


def test_invalid_utf8(tmp_path, seeded_db):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n" + '{"session_id": "x", "messages": [{"role": "user", "content": "caf\u00e9"}]}'.encode("latin-1") + b"\n")
    before = db_dump(seeded_db)
    result = _ingest(path, seeded_db)
    assert result.exit_code == 1
    line = _error_line(result)
    assert str(path) in line and "invalid UTF-8 at byte" in line
    assert db_dump(seeded_db) == before


def test_invalid_json_names_the_line(tmp_path, seeded_db):
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD2) + "\n" + '{"session_id": "x", "messages": [\n')
    before = db_dump(seeded_db)
    result = _ingest(path, seeded_db)
    assert result.exit_code == 1
    assert f"{path} line 3: invalid JSON" in _error_line(result)
    # a JSON document (not JSONL) reports the line of the error inside it
    doc = tmp_path / "broken.json"
    doc.write_text("[\n" + json.dumps(GOOD) + ",\n" + json.dumps(GOOD2) + ",\n{oops}\n]\n")
    result = _ingest(doc, seeded_db)
    assert result.exit_code == 1
    assert f"{doc} line 4: invalid JSON" in _error_line(result)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert "file is empty" in _error_line(_ingest(empty, seeded_db))
    missing = tmp_path / "missing.jsonl"
    assert "no such file" in _error_line(_ingest(missing, seeded_db))
    scalar = tmp_path / "scalar.json"
    scalar.write_text("42")
    assert "expected a JSON object or list, got int" in _error_line(_ingest(scalar, seeded_db))
    assert db_dump(seeded_db) == before


def test_unknown_app_on_search(seeded_db):
    with Memory(seeded_db, embedder="hash") as mem:
        with pytest.raises(UnknownApp, match="'nobody' holds no memory"):
            mem.search("fine", app="nobody")
        with pytest.raises(InvalidInput, match="query is empty"):
            mem.search("   ")
        with pytest.raises(InvalidInput, match="k must be a positive integer"):
            mem.search("fine", k=0)
        with pytest.raises(InvalidInput, match="app name"):
            mem.search("fine", app="")
    before = db_dump(seeded_db)
    result = CliRunner().invoke(main, ["search", "fine", "--db", str(seeded_db), "--embedder", "hash", "--app", "nobody"])
    assert result.exit_code == 1
    assert "app 'nobody' holds no memory" in _error_line(result)
    assert db_dump(seeded_db) == before


def test_duplicate_ids_across_batches_are_refused(tmp_path, seeded_db):
    """Regression: with ids repeated beyond one batch, the later record silently replaced the
    earlier one; the whole file is now checked before anything is stored."""
    path = _write_jsonl(tmp_path / "dup.jsonl", [GOOD, GOOD2, {**GOOD, "messages": [{"role": "user", "content": "other"}]}])
    before = db_dump(seeded_db)
    result = _ingest(path, seeded_db, "--batch", "1")
    assert result.exit_code == 1
    assert "session id 'good1' appears twice" in _error_line(result)
    assert db_dump(seeded_db) == before


def test_bad_input_creates_no_database(tmp_path):
    path = _write_jsonl(tmp_path / "bad.jsonl", [GOOD, {"session_id": "bad", "messages": [{"role": "robot", "content": "x"}]}])
    db = tmp_path / "never.sqlite"
    result = _ingest(path, db)
    assert result.exit_code == 1 and "unknown role 'robot'" in _error_line(result)
    assert not db.exists()
