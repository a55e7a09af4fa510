"""Broken files at the CLI door: `diarist ingest` answers one line naming the file and the
record, exits 1, and stores nothing at all (every record is checked before anything is stored).

Findings this guards (the old build): a file whose record 151 had a lone-surrogate session id
stored 128 of its 200 sessions, then printed a traceback; 8 of 35 broken files ended in
tracebacks; a 100,000-deep JSON file was "not valid JSON" (or a RecursionError traceback).
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from diarist.cli import main
from diarist.memory import Memory

from conftest import db_dump, make_sessions

N = 200
BROKEN = 151  # the record (and line) that is broken


def _ingest(path: Path, db: Path):
    return CliRunner().invoke(main, ["ingest", str(path), "--db", str(db), "--embedder", "hash"])


def _error_line(result) -> str:
    assert result.exit_code == 1, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), f"a traceback: {result.exception!r}"
    return _last_line_is_the_error(result.stderr)


def _last_line_is_the_error(stderr: str) -> str:
    """One error line, last (a progress line may come before it), and no traceback."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0] and "Traceback" not in stderr, stderr
    errors[0].encode("utf-8")  # printable as it is
    return errors[0]


def _sessions_in(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    finally:
        conn.close()


def _good_lines() -> list[str]:
    return [json.dumps(s) for s in make_sessions(N, seed=151, turns=2)]


def _record(**changes) -> str:
    base = {"session_id": "broken", "date": "2024-05-01", "messages": [{"role": "user", "content": "fine words"}]}
    base.update(changes)
    return json.dumps(base)  # ensure_ascii: a lone surrogate is written as the escape \udXXX


def _nested(depth: int) -> dict:
    out: dict = {}
    for _ in range(depth):
        out = {"d": out}
    return out


#: record 151, broken in each of these ways (a JSON text line, or raw bytes).
LINE_151 = {
    "lone surrogate in the session id": _record(session_id="s\ud800"),
    "lone surrogate in a message": _record(messages=[{"role": "user", "content": "caf\udce9"}]),
    "lone surrogate in a metadata value": _record(metadata={"source": "x\udfff"}),
    "lone surrogate in a metadata key": _record(metadata={"\ud83d": 1}),
    "NaN in metadata": _record(metadata={"score": float("nan")}),
    "Infinity as a message time": _record(messages=[{"role": "user", "content": "hi", "time": float("inf")}]),
    "metadata nested 100 deep": _record(metadata=_nested(100)),
    "metadata that is a list": _record(metadata=[1, 2]),
    "a line nested 100,000 deep": '{"a": ' * 100_000 + "1" + "}" * 100_000,
    "an epoch date in year 3e12": _record(date=10**20),
    "an epoch date in milliseconds": _record(date=1_700_000_000_000),
    "a date that is not one": _record(date="the day after tomorrow-ish"),
    "a session id that is a list": _record(session_id=["a", "b"]),
    "a session id of 5,000 digits": '{"session_id": ' + "7" * 5000 + ', "messages": [{"role": "user", "content": "x"}]}',
    "a session id of 300 characters": _record(session_id="x" * 300),
    "an unknown role": _record(messages=[{"role": "robot", "content": "beep"}]),
    "content that is an object": _record(messages=[{"role": "user", "content": {"text": "hi"}}]),
    "invalid UTF-8": b'{"session_id": "x", "messages": [{"role": "user", "content": "caf\xe9"}]}',
    "invalid JSON": '{"session_id": "x", "messages": [',
    "an id used twice in the file": _record(session_id="s3"),
}


@pytest.mark.parametrize("how", list(LINE_151), ids=list(LINE_151))
def test_record_151_of_200_broken_stores_nothing(tmp_path, how):
    lines: list[bytes] = [line.encode() for line in _good_lines()]
    bad = LINE_151[how]
    lines[BROKEN - 1] = bad if isinstance(bad, bytes) else bad.encode()
    path = tmp_path / "conversations.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    db = tmp_path / "memory.sqlite"
    Memory(db, embedder="hash").close()  # an existing, empty database
    line = _error_line(_ingest(path, db))
    assert str(path) in line
    assert f"record {BROKEN}" in line or f"line {BROKEN}" in line or "'s3' appears twice" in line, line
    assert _sessions_in(db) == 0


def test_the_same_file_unbroken_is_stored_whole(tmp_path):
    path = tmp_path / "conversations.jsonl"
    path.write_text("\n".join(_good_lines()) + "\n")
    db = tmp_path / "memory.sqlite"
    result = _ingest(path, db)
    assert result.exit_code == 0, result.output
    assert _sessions_in(db) == N


# -- a catalogue of broken files --------------------------------------------------------------

GOOD = {"session_id": "g1", "messages": [{"role": "user", "content": "fine"}]}
LME = {"question_id": "q1", "haystack_session_ids": ["h1"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
       "haystack_sessions": [[{"role": "user", "content": "hello"}]]}
LOCOMO = {"sample_id": "c1", "qa": [], "conversation": {
    "speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [{"speaker": "Ann", "text": "hi", "dia_id": "D1:1"}]}}


def _jsonl(*records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _lme(**changes) -> bytes:
    return json.dumps([{**LME, **changes}]).encode()


def _locomo(**changes) -> bytes:
    conversation = {**LOCOMO["conversation"], **changes.pop("conversation", {})}
    return json.dumps([{**LOCOMO, "conversation": conversation, **changes}]).encode()


BROKEN_FILES: dict[str, tuple[str, bytes, str]] = {
    # name: (file name, bytes, what the message must say)
    "empty": ("a.jsonl", b"", "file is empty"),
    "blank lines": ("a.jsonl", b"\n \n\t\n", "file is empty"),
    "empty list": ("a.json", b"[]", "holds no records"),
    "a number": ("a.json", b"42", "expected a JSON object or list"),
    "null": ("a.json", b"null", "expected a JSON object or list"),
    "a string": ("a.json", b'"hello"', "expected a JSON object or list"),
    "NaN": ("a.json", b"NaN", "expected a JSON object or list"),
    "list of numbers": ("a.json", b"[1, 2]", "record 1"),
    "list of lists": ("a.json", b"[[]]", "record 1"),
    "empty object": ("a.json", b"{}", "missing field 'messages'"),
    "sessions not a list": ("a.json", b'{"sessions": 5}', "missing field 'messages'"),
    "messages without content": ("a.json", b'[{"role": "user"}]', "missing field 'messages'"),
    "truncated JSON": ("a.json", b'[{"session_id": "x", "messages": [', "invalid JSON"),
    "trailing garbage": ("a.jsonl", _jsonl(GOOD) + b"}{\n", "line 2: invalid JSON"),
    "latin-1": ("a.jsonl", b'{"session_id": "x", "messages": [{"role": "user", "content": "caf\xe9"}]}', "invalid UTF-8"),
    "deep list 100,000": ("a.json", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "deep object 100,000": ("a.json", b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "nested too deeply"),
    "deep line in JSONL": ("a.jsonl", _jsonl(GOOD) + b"[" * 100_000 + b"]" * 100_000 + b"\n", "line 2: JSON nested too deeply"),
    "5,000-digit number": ("a.json", b"[" + b"9" * 5000 + b"]", "too many digits"),
    "not gzip": ("a.jsonl.gz", b"this is not gzip", "not a valid gzip file"),
    "truncated gzip": ("a.jsonl.gz", gzip.compress(_jsonl(GOOD) * 50)[:40], "not a valid gzip file"),
    "corrupt gzip": ("a.jsonl.gz", gzip.compress(_jsonl(GOOD))[:12] + b"\x00" * 30, "not a valid gzip file"),
    "gzip of latin-1": ("a.jsonl.gz", gzip.compress(b'{"messages": [{"role": "user", "content": "\xe9"}]}'), "invalid UTF-8"),
    "surrogate id": ("a.jsonl", _jsonl({**GOOD, "session_id": "\udc00"}), "not valid Unicode"),
    "surrogate app-visible metadata": ("a.jsonl", _jsonl({**GOOD, "metadata": {"k": "\ud800"}}), "not valid Unicode"),
    "metadata a string": ("a.jsonl", _jsonl({**GOOD, "metadata": "tags"}), "metadata must be an object"),
    "float id": ("a.jsonl", _jsonl({**GOOD, "session_id": 1.5}), "session id must be a string"),
    "duplicate ids": ("a.jsonl", _jsonl(GOOD, GOOD), "appears twice"),
    "LongMemEval: sessions not a list": ("a.json", _lme(haystack_sessions=5), "not a valid LongMemEval record"),
    "LongMemEval: no dates": ("a.json", json.dumps([{k: v for k, v in LME.items() if k != "haystack_dates"}]).encode(),
                              "missing field 'haystack_dates'"),
    "LongMemEval: turn without content": ("a.json", _lme(haystack_sessions=[[{"role": "user"}]]), "missing field 'content'"),
    "LongMemEval: content a number": ("a.json", _lme(haystack_sessions=[[{"role": "user", "content": 5}]]),
                                      "not a valid LongMemEval record"),
    "LongMemEval: id a list": ("a.json", _lme(haystack_session_ids=[["h1"]]), "not a valid LongMemEval record"),
    "LongMemEval: bad date": ("a.json", _lme(haystack_dates=["someday"]), "not in a known format"),
    "LongMemEval: record not an object": ("a.json", json.dumps([LME, 5]).encode(), "record 2"),
    "LoCoMo: conversation a number": ("a.json", json.dumps([{**LOCOMO, "conversation": 5}]).encode(),
                                      "not a valid LoCoMo record"),
    "LoCoMo: no speaker_a": ("a.json", json.dumps([{**LOCOMO, "conversation": {"session_1": []}}]).encode(),
                             "missing field 'speaker_a'"),
    "LoCoMo: turn without speaker": ("a.json", _locomo(conversation={"session_1": [{"text": "hi", "dia_id": "D1:1"}]}),
                                     "missing field 'speaker'"),
    "LoCoMo: turn without dia_id": ("a.json", _locomo(conversation={"session_1": [{"speaker": "Ann", "text": "hi"}]}),
                                    "missing field 'dia_id'"),
    "LoCoMo: no sample_id": ("a.json", json.dumps([{k: v for k, v in LOCOMO.items() if k != "sample_id"}]).encode(),
                             "missing field 'sample_id'"),
    "LoCoMo: turn not an object": ("a.json", _locomo(conversation={"session_1": ["hi"]}), "not a valid LoCoMo record"),
}


@pytest.fixture
def seeded(tmp_path):
    db = tmp_path / "seeded.sqlite"
    with Memory(db, embedder="hash") as mem:
        mem.add_session([{"role": "user", "content": "Already stored."}], session_id="old")
    return db


@pytest.mark.parametrize("name", list(BROKEN_FILES), ids=list(BROKEN_FILES))
def test_broken_files_give_one_line_and_store_nothing(tmp_path, seeded, name):
    file_name, data, expected = BROKEN_FILES[name]
    path = tmp_path / file_name
    path.write_bytes(data)
    before = db_dump(seeded)
    line = _error_line(_ingest(path, seeded))
    assert str(path) in line, line
    assert expected in line, line
    assert db_dump(seeded) == before


def test_there_are_at_least_35_broken_files():
    assert len(BROKEN_FILES) >= 35


def test_odd_but_valid_files_are_read(tmp_path):
    """A byte-order mark, and U+2028 / U+0085 inside a JSONL string (str.splitlines() split there)."""
    db = tmp_path / "m.sqlite"
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + _jsonl(GOOD))
    assert _ingest(bom, db).exit_code == 0
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({"session_id": "ls", "messages": [{"role": "user", "content": "a\u2028b\u0085c"}]},
                              ensure_ascii=False) + "\n", encoding="utf-8")
    result = _ingest(odd, db)
    assert result.exit_code == 0, result.output
    with Memory(db, embedder="hash") as mem:
        assert mem.get("ls")["messages"][0]["content"] == "a\u2028b\u0085c"
        assert mem.get("g1")


# -- commands whose extra is not installed ------------------------------------------------------

_WITHOUT = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in {blocked!r}:
            raise ImportError(f"No module named {{name!r}} (blocked by the test)")
sys.meta_path.insert(0, Block())
for name in list(sys.modules):
    if name.split('.')[0] in {blocked!r}:
        del sys.modules[name]
from diarist.cli import main
sys.argv = ['diarist', *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("command", [
    ["serve"], ["mcp", "--app", "a"], ["mcp", "--app", "a", "--transport", "http"],
])
def test_server_commands_without_the_extra_name_the_install_command(tmp_path, command):
    """As if installed without [server]: fastapi, uvicorn, starlette and mcp cannot be imported."""
    import subprocess
    import sys

    blocked = {"fastapi", "uvicorn", "starlette", "mcp"}
    db = tmp_path / "m.sqlite"
    proc = subprocess.run([sys.executable, "-c", _WITHOUT.format(blocked=blocked), *command, "--db", str(db),
                           "--embedder", "hash"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    line = _last_line_is_the_error(proc.stderr)
    assert line == f"Error: diarist {command[0]} needs the server extra: pip install 'diarist[server]'"
    assert not db.exists()  # nothing was created before the check
