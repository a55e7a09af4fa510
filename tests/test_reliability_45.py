"""The smaller doors of issue 45: ``--db ""``, a min_score beyond a float, the inspector's headers on
every answer, an upload's error naming no server path, a file of NUL bytes named ``.md``."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from diarist.cli import main
from diarist.errors import InvalidInput
from diarist.importers import read_all
from diarist.server.app import create_app
from diarist.ui import local_app

from test_ui import _csrf

LOCAL = "http://127.0.0.1"


@pytest.mark.parametrize("command", [["stats"], ["search", "x"], ["restore", "backup.sqlite", "--force"]])
def test_db_empty_is_refused_never_the_default_database(tmp_path, monkeypatch, command):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    result = CliRunner().invoke(main, [*command, "--db", ""], env={"DIARIST_DB": ""})
    assert result.exit_code == 2, result.output
    assert "--db" in result.output and "empty" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "data" / "diarist").exists(), "no default database was touched"


def test_a_min_score_beyond_a_float_is_our_own_clear_error(memory):
    memory.add_fact("a fact", app="a", fact_id="f")
    for bad in (10**5000, -(10**400)):
        with pytest.raises(InvalidInput, match="min_score must be a finite number"):
            memory.context("a fact", app="a", min_score=bad)


HEADERS = ("content-security-policy", "x-content-type-options", "referrer-policy", "x-frame-options")


def test_the_inspector_sends_its_security_headers_on_every_answer(memory):
    memory.add_fact("a fact", app="a", fact_id="f")
    for client in (TestClient(local_app(memory), base_url=LOCAL), TestClient(create_app(memory))):
        answers = {
            "static": client.get("/ui/static/ui.css"),
            "404": client.get("/ui/no/such/page"),
            "405": client.put("/ui/login"),
        }
        for what, answer in answers.items():
            missing = [h for h in HEADERS if h not in answer.headers]
            assert not missing, (what, answer.status_code, missing)
        assert answers["static"].status_code == 200 and answers["404"].status_code == 404
        assert answers["405"].status_code == 405


def test_an_upload_error_names_the_file_not_the_servers_temporary_path(memory):
    client = TestClient(local_app(memory), base_url=LOCAL)
    token = _csrf(client.get("/ui/").text)
    answer = client.post("/ui/import", data={"csrf": token, "app": "a"},
                         files={"file": ("broken.json", b'[{"messages": [ not json')})
    assert answer.status_code == 422, answer.text[:300]
    assert "broken.json" in answer.text
    assert not re.search(r"/tmp/|diarist-ui-|\\\\Temp\\\\", answer.text), answer.text[:600]


def test_a_file_of_nul_bytes_named_md_is_refused_not_stored(memory, tmp_path):
    client = TestClient(local_app(memory), base_url=LOCAL)
    token = _csrf(client.get("/ui/").text)
    answer = client.post("/ui/import", data={"csrf": token, "app": "a"}, files={"file": ("note.md", b"\x00" * 4096)})
    assert answer.status_code == 422 and "NUL" in answer.text, answer.text[:300]
    assert "a" not in memory.apps()
    path = tmp_path / "zeros.md"
    path.write_bytes(b"# Title\n\n" + b"\x00" * 100)
    with pytest.raises(InvalidInput, match="NUL"):
        read_all(path)
