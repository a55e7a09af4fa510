"""A store written only against the contract (``DictStore``) serves the whole product: search,
reindex, API keys, health and the HTTP server, exactly as the SQLite store does."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from memory_store import DictStore

from diarist.memory import Memory
from diarist.server.app import create_app

from conftest import make_sessions


@pytest.fixture
def served():
    memory = Memory(DictStore(), embedder="hash")
    memory.add_sessions(make_sessions(12, seed=3), app="alpha")
    memory.add_fact("The quartz lighthouse keeper is called Ilse.", app="alpha", fact_id="f1")
    yield memory
    memory.close()


def test_search_and_reindex(served):
    before = served.search("quartz lighthouse keeper", app="alpha", k=5)
    assert before[0].fact_id == "f1" and before[0].ranks["lexical"] == 1
    served.store.mark_lexical_stale("alpha")
    degraded = served.search("quartz lighthouse keeper", app="alpha", k=5)
    assert any("lexical channel off" in n for n in degraded.notes)
    assert served.reindex("alpha") == served.store.counts("alpha").chunks
    again = served.search("quartz lighthouse keeper", app="alpha", k=5)
    assert not again.notes and [h.chunk_id for h in again] == [h.chunk_id for h in before]


def test_keys_and_health(served):
    key, info = served.keys.create("alpha", "test")
    assert served.keys.app_for(key) == "alpha"
    served.keys.revoke(str(info.id))
    with pytest.raises(Exception, match="revoked"):
        served.keys.app_for(key)
    report = served.health()
    assert report.ok, report.lines
    assert report.apps["alpha"]["dense"]["ok"] and report.apps["alpha"]["lexical"]["ok"]


def test_the_http_server(served):
    key, _ = served.keys.create("alpha")
    other, _ = served.keys.create("beta")
    auth = {"Authorization": f"Bearer {key}"}
    with TestClient(create_app(served)) as c:
        assert c.get("/health").status_code == 200
        r = c.post("/v1/apps/alpha/sessions", headers=auth,
                   json={"session_id": "s-new", "messages": [{"role": "user", "content": "My cat Admon hides bones."}]})
        assert r.status_code == 201 and r.json()["status"] == "added"
        r = c.post("/v1/apps/alpha/sessions/s-new/messages", headers=auth,
                   json={"messages": [{"role": "assistant", "content": "Admon sounds clever."}]})
        assert r.status_code == 201 and r.json()["status"] == "replaced"
        hits = c.post("/v1/apps/alpha/search", headers=auth, json={"query": "Admon bones", "k": 3}).json()["hits"]
        assert hits[0]["session_id"] == "s-new"
        assert len(c.get("/v1/apps/alpha/sessions/s-new", headers=auth).json()["messages"]) == 2
        assert c.get("/v1/apps/alpha/stats", headers=auth).json()["sessions"] == 13
        assert c.get("/v1/apps/alpha/sessions", headers=auth, params={"limit": 5}).json()["next_offset"] == 5
        assert c.delete("/v1/apps/alpha/facts/f1", headers=auth).status_code == 200
        assert c.get("/v1/apps/alpha/facts/f1", headers=auth).status_code == 404
        # 401 and 403 come from the error classes, not from matching message text
        assert c.get("/v1/apps/alpha/stats").status_code == 401
        forbidden = c.get("/v1/apps/alpha/stats", headers={"Authorization": f"Bearer {other}"})
        assert forbidden.status_code == 403 and forbidden.json()["error"]["code"] == "forbidden"
