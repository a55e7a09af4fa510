"""A run's files as every benchmark writes them (``diarist.bench.report.write_run``): rows gzipped
to the same bytes for the same rows, read back (and an older run's plain rows.jsonl) by one path."""

from __future__ import annotations

import gzip
import json

from diarist.bench.report import CONTEXT_RUN_FILES, find_runs, read_rows, verify_run, write_run
from diarist.bench.rows import PLAIN_ROWS, ROWS, jsonl_gz, read_jsonl
from diarist.bench.xquad import question_row
from diarist.bench.xquad_summary import RUN_FILES as XQUAD_RUN_FILES

META = {"benchmark": "xquad", "dataset": "xquad", "config_name": "default", "description": "a test run",
        "command": "diarist bench xquad --out X", "code_version": "git:abc1234", "model_id": "hash"}


def _rows() -> list[dict]:
    return [question_row("en", "mono", "q1", "0-1", ["0-1", "0-2"], 3.0, "default"),
            question_row("de", "mono", "q2", "0-2", ["0-1", "0-2"], 4.0, "default"),
            question_row("de", "cross", "q2", "0-2", ["0-3"], 5.5, "default")]


def test_the_same_rows_give_the_same_bytes_wherever_and_whenever_written(tmp_path):
    rows = _rows()
    write_run(tmp_path / "a", rows, META)
    write_run(tmp_path / "b" / "elsewhere", rows, META)
    first, second = (tmp_path / "a" / ROWS).read_bytes(), (tmp_path / "b" / "elsewhere" / ROWS).read_bytes()
    assert first == second == jsonl_gz(rows)
    assert first[3] == 0, "no file name (or other optional field) in the gzip header"
    assert first[4:8] == b"\0\0\0\0", "no time in the gzip header"
    text = gzip.decompress(first).decode("utf-8")
    assert text == "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    assert read_rows(tmp_path / "a") == rows


def test_a_run_names_what_it_wrote_and_verifies(tmp_path):
    write_run(tmp_path / "x", _rows(), META)
    manifest = json.loads((tmp_path / "x" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["files"] == XQUAD_RUN_FILES and manifest["commit"] == "abc1234"
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == sorted([*XQUAD_RUN_FILES, "manifest.json"])
    assert verify_run(tmp_path / "x") == []
    candidates = [{"id": "q1", "hits": []}]
    write_run(tmp_path / "c", _rows(), META, candidates)
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["files"][-1] == CONTEXT_RUN_FILES[-1] and read_jsonl(tmp_path / "c" / CONTEXT_RUN_FILES[-1]) == candidates


def test_an_older_runs_plain_rows_are_read_and_verified_the_same_way(tmp_path):
    run = tmp_path / "old"
    write_run(run, _rows(), META)
    (run / PLAIN_ROWS).write_bytes(gzip.decompress((run / ROWS).read_bytes()))
    (run / ROWS).unlink()
    assert read_rows(run) == _rows()
    assert find_runs([tmp_path]) == [run] and verify_run(run) == []
    rows = _rows()
    rows[0]["r@1"] = not rows[0]["r@1"]
    (run / PLAIN_ROWS).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert any("summary.json" in p for p in verify_run(run)), "an edited row is caught in the plain file too"


def test_a_run_with_no_rows_or_an_unknown_benchmark_is_reported_not_raised(tmp_path):
    run = tmp_path / "r"
    write_run(run, _rows(), META)
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    (run / "config.json").write_text(json.dumps({**config, "benchmark": "nonesuch"}), encoding="utf-8")
    assert verify_run(run) == [f"{run}/config.json: benchmark 'nonesuch', which no summary knows"]
    (run / ROWS).unlink()
    assert verify_run(run) == [f"{run / ROWS}: missing"]


def test_gzip_rows_turns_an_older_run_into_the_run_todays_writer_writes(tmp_path):
    from benchmark_scripts import load_benchmark_script

    script = load_benchmark_script("gzip_rows.py")
    today, old = tmp_path / "today", tmp_path / "old" / "run"
    write_run(today, _rows(), META)
    write_run(old, _rows(), META)
    (old / PLAIN_ROWS).write_bytes(gzip.decompress((old / ROWS).read_bytes()))  # as the old writer left it
    (old / ROWS).unlink()
    manifest = (old / "manifest.json").read_text(encoding="utf-8")
    (old / "manifest.json").write_text(manifest.replace(f'"{ROWS}"', f'"{PLAIN_ROWS}"'), encoding="utf-8")
    other = tmp_path / "old" / "other"  # another tool's rows, not named so by a manifest: left alone
    other.mkdir()
    (other / PLAIN_ROWS).write_text('{"a": 1}\n', encoding="utf-8")
    assert script.main([str(tmp_path / "old")]) == 1
    assert (old / ROWS).read_bytes() == (today / ROWS).read_bytes() and not (old / PLAIN_ROWS).exists()
    assert (old / "manifest.json").read_text(encoding="utf-8") == manifest
    assert (other / PLAIN_ROWS).exists() and not (other / ROWS).exists()
    assert verify_run(old) == []
