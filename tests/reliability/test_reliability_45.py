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


# -- the curate page's cost is bounded however many pairs pass its threshold -------------------------


@pytest.mark.slow
def test_curate_holds_a_bounded_candidate_set_when_every_pair_passes(memory):
    import tracemalloc

    from diarist.ui import curate
    from diarist.write.validate import FactInput

    n = 3000  # 4.5M pairs of distinct facts, every one above related=0.05 (hash vectors of near-same text)
    memory.add_facts([FactInput(f"the same fact again, number {i}", f"f{i}", f"2024-01-{1 + i % 28:02d}")
                      for i in range(n)], app="a")
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    found = memory.similar_pairs("a", related=0.05, duplicate=0.97)
    peak_mb = (tracemalloc.get_traced_memory()[1] - base) / 2**20
    tracemalloc.stop()
    assert found.compared == n and len(found.pairs) == curate.MAX_PAIRS
    print(f"curate peak {peak_mb:.0f} MB")
    assert peak_mb < 200, f"{peak_mb:.0f} MB held for {n} chunks"
    cosines = [p.cosine for p in found.pairs if p.duplicate]
    assert cosines == sorted(cosines, reverse=True)
    # The most similar pair is found: the brute-force best of the same vectors.
    import numpy as np

    batch = memory.store.read_vectors("a")
    unit = batch.vectors.astype(np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -1)
    assert abs(max(p.cosine for p in found.pairs) - min(float(sims.max()), 1.0)) < 1e-5


# -- /health polled by many clients runs one check per window ----------------------------------------


def test_health_polled_by_8_clients_runs_one_check_per_window(memory, monkeypatch):
    import threading

    import diarist.server.routes.health as health_route

    memory.add_fact("a fact", app="a", fact_id="f")
    monkeypatch.setattr(health_route, "HEALTH_CACHE_SECONDS", 3600.0, raising=False)  # one window for the whole test
    runs = []
    real = memory.health
    monkeypatch.setattr(memory, "health", lambda *a, **k: runs.append(1) or real(*a, **k))
    client = TestClient(create_app(memory))
    statuses = []

    def poll() -> None:
        for _ in range(5):
            statuses.append(client.get("/health").status_code)

    pollers = [threading.Thread(target=poll) for _ in range(8)]
    for t in pollers:
        t.start()
    for t in pollers:
        t.join()
    assert statuses == [200] * 40
    assert len(runs) == 1, f"{len(runs)} checks for 40 polls"


def test_a_date_filter_at_the_largest_offset_reads_the_summaries_in_few_queries(memory, monkeypatch):
    from diarist.read.listing import SCAN_PAGE
    from diarist.ui import browse
    from diarist.write.validate import FactInput

    memory.add_facts([FactInput(f"fact {i}", f"f{i}", f"2024-{1 + i % 12:02d}-01") for i in range(3000)], app="a")
    offsets: list[int] = []
    real = memory.store.list_items
    monkeypatch.setattr(memory.store, "list_items", lambda app, kind, limit, offset, **k:
                        offsets.append(offset) or real(app, kind, limit, offset, **k))
    rows, more = browse.page(memory, "a", browse.Filters(kind="fact", since="2024-01-01", until="2024-12-31"), 10**9)
    assert rows == [] and not more
    assert len(offsets) == 1, f"{len(offsets)} queries for 3,000 summaries (read {SCAN_PAGE:,} at a time)"
    rows, _ = browse.page(memory, "a", browse.Filters(kind="fact", since="2024-03-01", until="2024-03-01"), 0)
    assert len(rows) == browse.PAGE_SIZE and all(r["date"].startswith("2024-03-01") for r in rows)
