"""The verbs people know from other memory libraries: list newest first, update with history,
metadata filters applied inside the store, and hits that carry one id, the metadata and a title."""

from __future__ import annotations

import pytest

from diarist.errors import ConcurrentUpdate, InvalidInput, NotFound
from diarist.memory import Memory


@pytest.fixture
def memory(tmp_path):
    with Memory(tmp_path / "m.sqlite", embedder="hash") as mem:
        mem.add_session([{"role": "user", "content": "We planned the Lisbon trip for March."}], app="me",
                        session_id="trip", date="2024-01-05", metadata={"source": "chat", "title": "Lisbon trip"})
        mem.add_session([{"role": "user", "content": "The Lisbon office moves in April."}], app="me",
                        session_id="work", date="2024-01-06", metadata={"source": "email"})
        mem.add_fact("Alice lives in Porto.", app="me", fact_id="home", date="2024-01-07", metadata={"source": "chat"})
        yield mem


def test_list_is_newest_first_and_pages(memory):
    assert [s["session_id"] for s in memory.list(app="me")] == ["work", "trip"]
    assert [s["session_id"] for s in memory.list(app="me", newest_first=False)] == ["trip", "work"]
    assert [s["session_id"] for s in memory.list(app="me", limit=1, offset=1)] == ["trip"]


def test_hits_carry_one_id_the_metadata_and_the_title(memory):
    hit = memory.search("Lisbon trip March", app="me", k=3)[0]
    assert hit.id == "trip" and hit.title == "Lisbon trip" and hit.metadata["source"] == "chat"
    fact = next(h for h in memory.search("Where does Alice live?", app="me", k=3) if h.fact_id)
    assert fact.id == "home" and fact.title is None and fact.to_dict()["metadata"] == {"source": "chat"}


def test_where_filters_inside_the_store_before_the_cut(memory):
    hits = memory.search("Lisbon", app="me", k=5, where={"source": "email"})
    assert [h.id for h in hits] == ["work"]
    assert {h.id for h in memory.search("Lisbon", app="me", k=5, where={"source": "chat"})} == {"trip", "home"}
    assert list(memory.search("Lisbon", app="me", k=5, where={"source": "fax"})) == []
    # k=1 still finds the one match even when unfiltered it would rank below others
    assert [h.id for h in memory.search("Lisbon trip March", app="me", k=1, where={"source": "email"})] == ["work"]
    with pytest.raises(InvalidInput):
        memory.search("Lisbon", app="me", where={})
    with pytest.raises(InvalidInput):
        memory.search("Lisbon", app="me", where={"k": float("nan")})


def test_update_keeps_the_previous_version(memory):
    report = memory.update("home", app="me", text="Alice lives in Lisbon now.")
    assert report.replaced == ["home"]
    assert memory.get("home", app="me")["text"] == "Alice lives in Lisbon now."
    history = memory.history("home", app="me")
    assert [v["text"] for v in history] == ["Alice lives in Porto."] and history[0]["replaced_at"]
    assert memory.get("home", app="me")["date"] == history[0]["date"]  # the date is kept unless given
    assert memory.search("Porto", app="me", k=3)[0].id != "home"  # the old text is no longer indexed
    memory.update("trip", app="me", metadata={"source": "chat", "title": "Trip to Lisbon"})
    assert memory.search("Lisbon trip March", app="me", k=1)[0].title == "Trip to Lisbon"
    assert memory.history("trip", app="me")[0]["metadata"]["title"] == "Lisbon trip"
    assert memory.update("trip", app="me", metadata={"source": "chat", "title": "Trip to Lisbon"}).unchanged == ["trip"]
    with pytest.raises(InvalidInput, match="messages="):
        memory.update("trip", app="me", text="a session is changed with messages")
    with pytest.raises(NotFound):
        memory.update("nope", app="me", text="x")
    memory.delete("home", app="me")  # forgetting takes the history with it
    with pytest.raises(NotFound):
        memory.history("home", app="me")
    memory.add_fact("Alice lives in Porto.", app="me", fact_id="home")
    assert memory.history("home", app="me") == []


def test_update_is_atomic_against_a_concurrent_writer(memory, tmp_path):
    real = memory.store.get_item
    raced = []

    def read_then_someone_else_writes(app, kind, item_id):
        found = real(app, kind, item_id)
        if found is not None and not raced:
            raced.append(True)
            with Memory(memory.store.path, embedder="hash") as other:
                other.add_fact("Alice moved to Faro.", app="me", fact_id="home")
        return found

    memory.store.get_item = read_then_someone_else_writes
    with pytest.raises(ConcurrentUpdate):
        memory.update("home", app="me", text="Alice lives in Braga.")
    memory.store.get_item = real
    assert memory.get("home", app="me")["text"] == "Alice moved to Faro."  # the other write stands


def test_the_verbs_over_http(memory):
    from fastapi.testclient import TestClient

    from diarist.server.app import create_app

    key, _ = memory.keys.create("me")
    auth = {"Authorization": f"Bearer {key}"}
    with TestClient(create_app(memory)) as c:
        again = c.post("/v1/apps/me/facts", headers=auth, json={"text": "Alice lives in Porto.", "fact_id": "home",
                                                                "date": "2024-01-07", "metadata": {"source": "chat"}})
        assert again.status_code == 201 and again.json()["status"] == "unchanged"
        r = c.patch("/v1/apps/me/facts/home", headers=auth, json={"text": "Alice lives in Lisbon."})
        assert r.status_code == 200 and r.json()["status"] == "replaced"
        versions = c.get("/v1/apps/me/facts/home/history", headers=auth).json()["versions"]
        assert [v["text"] for v in versions] == ["Alice lives in Porto."]
        hits = c.post("/v1/apps/me/search", headers=auth, json={"query": "Lisbon", "where": {"source": "email"}}).json()["hits"]
        assert [h["id"] for h in hits] == ["work"] and hits[0]["metadata"] == {"source": "email"}
        assert c.get("/v1/apps/me/facts/nope/history", headers=auth).status_code == 404
        assert c.post("/v1/apps/me/search", headers=auth, json={"query": "x", "where": "source=chat"}).status_code == 422


def test_the_verbs_in_the_cli(memory):
    import json

    from click.testing import CliRunner

    from diarist.cli import main

    db = memory.store.path
    run = lambda *a: CliRunner().invoke(main, [*a, "--db", db, "--app", "me"], env={"DIARIST_DB": ""})  # noqa: E731
    assert run("update", "home", "--text", "Alice lives in Coimbra.").exit_code == 0
    versions = json.loads(run("history", "home", "--json").stdout)
    assert [v["text"] for v in versions] == ["Alice lives in Porto."]
    hits = json.loads(run("search", "Lisbon", "--where", '{"source": "email"}', "--json").stdout)
    assert [h["id"] for h in hits] == ["work"]
    assert '"Lisbon trip"' in run("search", "Lisbon trip March").stdout  # the title is shown
    assert run("list").stdout.split()[0] == "work"  # newest first
    assert run("update", "home").exit_code == 2
