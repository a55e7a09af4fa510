"""One import funnel (``diarist.importers.load``): ``diarist ingest``, the inspector's upload and
``diarist sync`` check, settle and store what they read the same way. The upload used to skip
the keep-the-newer-export rule: an older export uploaded after a newer one replaced it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from diarist.cli import main
from diarist.errors import InvalidInput
from diarist.importers import read_all
from diarist.importers.load import check_imported, settle, store_checked, store_imported
from diarist.memory import Memory
from diarist.ui import local_app

from export_shapes import chatgpt_conversation
from test_ui import _csrf

LOCAL = "http://127.0.0.1"
YEAR = 365 * 86400
OLD = [chatgpt_conversation("c1", ["plan the trip to Porto"], 1.70e9)]
NEW = [chatgpt_conversation("c1", ["plan the trip to Porto", "and the ferry to Madeira"], 1.70e9 + YEAR)]


def _upload(client: TestClient, name: str, body: bytes, app: str = "t"):
    token = _csrf(client.get("/ui/").text)
    return client.post("/ui/import", data={"csrf": token, "app": app}, files={"file": (name, body)},
                       follow_redirects=False)


def test_an_older_export_uploaded_after_a_newer_one_keeps_the_newer(tmp_path):
    with Memory(tmp_path / "x.sqlite", embedder="hash") as memory:
        client = TestClient(local_app(memory), base_url=LOCAL)
        assert _upload(client, "2025.json", json.dumps(NEW).encode()).status_code == 303
        answer = _upload(client, "2024.json", json.dumps(OLD).encode())
        assert answer.status_code == 303, answer.text[:300]
        assert "Madeira" in json.dumps(memory.get("c1", app="t")), "the newer version stays"
        # the other way round, the newer upload replaces the older one
        assert _upload(client, "2024.json", json.dumps(OLD).encode(), app="u").status_code == 303
        assert _upload(client, "2025.json", json.dumps(NEW).encode(), app="u").status_code == 303
        assert "Madeira" in json.dumps(memory.get("c1", app="u"))


def test_ingest_upload_and_sync_store_the_same(tmp_path):
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "a.json").write_text(json.dumps(NEW + [chatgpt_conversation("c2", ["fix the bike"], 1.7e9)]))
    (exports / "b.json").write_text(json.dumps(OLD + [chatgpt_conversation("c3", ["learn verbs"], 1.7e9)]))
    db = tmp_path / "x.sqlite"
    common = ["--db", str(db), "--embedder", "hash"]
    for name in ("a.json", "b.json"):
        result = CliRunner().invoke(main, ["ingest", str(exports / name), *common, "--app", "ingest"],
                                    env={"DIARIST_DB": ""})
        assert result.exit_code == 0, result.output
    with Memory(db, embedder="hash") as memory:
        client = TestClient(local_app(memory), base_url=LOCAL)
        for name in ("a.json", "b.json"):
            assert _upload(client, name, (exports / name).read_bytes(), app="upload").status_code == 303
        memory.sync(exports, app="sync")
        stored = {app: sorted((i["session_id"], i.get("date")) for i in memory.list(app=app))
                  for app in ("ingest", "upload", "sync")}
        assert stored["ingest"] == stored["upload"] == stored["sync"] and len(stored["sync"]) == 3
        for app in stored:
            assert "Madeira" in json.dumps(memory.get("c1", app=app)), app


def test_an_upload_with_a_bad_record_names_the_file_not_the_servers_temporary_path(tmp_path):
    with Memory(tmp_path / "x.sqlite", embedder="hash") as memory:
        client = TestClient(local_app(memory), base_url=LOCAL)
        bad = [{"session_id": "s1", "messages": [{"role": "bot", "content": "hi"}]}]
        answer = _upload(client, "mine.json", json.dumps(bad).encode())
        assert answer.status_code == 422 and "mine.json" in answer.text and "bot" in answer.text, answer.text[:300]
        assert not re.search(r"/tmp/|diarist-ui-", answer.text), answer.text[:600]
        assert "t" not in memory.apps(), "nothing stored"


def _sessions_file(path: Path, ids: list[str]) -> Path:
    path.write_text("\n".join(json.dumps({"session_id": i, "messages": [{"role": "user", "content": f"note {i}"}]})
                              for i in ids))
    return path


def test_the_funnel_checks_before_it_stores_and_stores_in_batches(tmp_path):
    imported = read_all(_sessions_file(tmp_path / "s.jsonl", [f"s{i}" for i in range(5)]))
    with Memory(tmp_path / "x.sqlite", embedder="hash") as memory:
        with pytest.raises(ValueError, match="check_imported first"):
            store_imported(memory, imported, app="t")
        check_imported(imported, "s.jsonl")
        assert [item.external_id for item in imported.items] == [f"s{i}" for i in range(5)]
        settle(imported, memory.store, "t")
        batches: list[int] = []
        report = store_checked(memory, imported, app="t", batch=2, progress=batches.append)
        assert batches == [2, 2, 1] and sorted(report.sessions.added) == [f"s{i}" for i in range(5)]
        assert report.facts is None


def test_an_id_twice_in_one_file_is_named_before_anything_is_stored(tmp_path):
    imported = read_all(_sessions_file(tmp_path / "s.jsonl", ["s1", "s2", "s1"]))
    with pytest.raises(InvalidInput, match="s.jsonl: session id 's1' appears twice"):
        check_imported(imported, "s.jsonl")


def test_add_items_takes_one_kind_of_checked_items(tmp_path):
    with Memory(tmp_path / "x.sqlite", embedder="hash") as memory:
        with pytest.raises(InvalidInput, match="checked items of one kind"):
            memory.add_items([{"session_id": "s", "messages": []}], app="t")  # type: ignore[list-item]
        imported = read_all(_sessions_file(tmp_path / "s.jsonl", ["s1"]))
        check_imported(imported, "s.jsonl")
        first = memory.add_items(imported.items, app="t")
        again = memory.add_items(imported.items, app="t")
        assert first.added == ["s1"] and again.unchanged == ["s1"] and again.chunks == 0
