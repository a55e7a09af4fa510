"""The inspector without a browser: who may see and change what (CSRF, one app per key, loopback
only for `diarist ui`), the security headers, browse filters, the Ask page's reading of a search
trace, curate's pairs and actions, and ``update``'s metadata merge (library and CLI)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from starlette.routing import Mount, Route

from diarist.cli import main
from diarist.errors import InvalidInput
from diarist.memory import Memory
from diarist.server.app import create_app
from diarist.ui import CSP, local_app
from diarist.ui import browse, curate, explain

LOCAL = "http://127.0.0.1"


def _seed(memory: Memory) -> None:
    memory.add_session([{"role": "user", "content": "My cat is called Admon."}], app="alice", session_id="cat",
                       date="2024-03-01", metadata={"title": "New cat", "source": "chat"})
    memory.add_session([{"role": "user", "content": "Flights to Lisbon on March 12th."}], app="alice",
                       session_id="trip", date="2024-02-10", metadata={"source": "email", "n": 1})
    memory.add_fact("Alice lives in Porto.", app="alice", fact_id="home", date="2023-06-01",
                    metadata={"source": "chat", "title": "Home"})
    memory.add_fact("Alice is allergic to peanuts.", app="alice", fact_id="old", date="2023-01-01",
                    metadata={"from": "doctor"})
    memory.add_fact("alice is allergic to  peanuts.", app="alice", fact_id="new", date="2024-04-01")
    memory.add_fact("Bob's note.", app="bob", fact_id="bobs")


@pytest.fixture
def seeded(memory):
    _seed(memory)
    return memory


def _csrf(page_text: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page_text)
    assert found, page_text[:500]
    return found.group(1)


def _login(client: TestClient, key: str) -> str:
    token = _csrf(client.get("/ui/login").text)
    answer = client.post("/ui/login", data={"csrf": token, "key": key}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    return _csrf(client.get(answer.headers["location"]).text)


def _snapshot(memory: Memory, app: str) -> list[dict]:
    return list(memory.export(app=app))


# -- Memory.update's metadata merge, and the CLI ---------------------------------------------------


def test_update_merges_metadata_when_asked_and_replaces_by_default(seeded):
    seeded.update("home", app="alice", metadata={"checked": True}, merge_metadata=True)
    assert seeded.get("home", app="alice")["metadata"] == {"source": "chat", "title": "Home", "checked": True}
    seeded.update("home", app="alice", metadata={"source": "import"}, merge_metadata=True)  # a key changed, others kept
    assert seeded.get("home", app="alice")["metadata"] == {"source": "import", "title": "Home", "checked": True}
    seeded.update("home", app="alice", metadata={"only": 1})
    assert seeded.get("home", app="alice")["metadata"] == {"only": 1}
    assert [v["metadata"] for v in seeded.history("home", app="alice")][0] == {"source": "chat", "title": "Home"}
    with pytest.raises(InvalidInput):
        seeded.update("home", app="alice", metadata={"x": 1}, merge_metadata="yes")


def test_cli_update_metadata_merges_and_replace_metadata_replaces(seeded):
    db = str(seeded.store.path)
    run = lambda *a: CliRunner().invoke(main, [*a, "--db", db, "--app", "alice"], env={"DIARIST_DB": ""})  # noqa: E731
    assert run("update", "cat", "--metadata", '{"mood": "good"}').exit_code == 0
    assert seeded.get("cat", app="alice")["metadata"] == {"title": "New cat", "source": "chat", "mood": "good"}
    assert run("update", "cat", "--metadata", '{"mood": "bad"}', "--replace-metadata").exit_code == 0
    assert seeded.get("cat", app="alice")["metadata"] == {"mood": "bad"}
    assert run("update", "cat", "--replace-metadata", "--date", "2024-01-01").exit_code == 2
    assert "--replace-metadata" in CliRunner().invoke(main, ["update", "--help"]).stdout
    assert "127.0.0.1" in CliRunner().invoke(main, ["ui", "--help"]).stdout


# -- who may see and change what -------------------------------------------------------------------


def _ui_routes(api) -> list[Route]:
    (mount,) = [r for r in api.routes if isinstance(r, Mount) and r.path == "/ui"]
    return [r for r in mount.app.routes if isinstance(r, Route)]


def test_a_key_for_app_b_gets_403_on_every_page_and_form_of_app_a(seeded):
    bob_key, _ = seeded.keys.create("bob")
    before = _snapshot(seeded, "alice")
    api = create_app(seeded)
    with TestClient(api) as client:
        token = _login(client, bob_key)
        assert "Bob&#39;s note." in client.get("/ui/apps/bob/items/fact/bobs").text  # bob's own is open to him
        fields = {"csrf": token, "text": "changed", "key": "source", "value": "x", "confirm": "alice", "app": "alice",
                  "action": "delete", "keep_kind": "fact", "keep_id": "home", "other_kind": "fact", "other_id": "old"}
        tried = 0
        for route in _ui_routes(api):
            if "{app}" not in route.path and route.path != "/import":
                continue
            url = "/ui" + route.path.replace(":path}", "}").format(app="alice", kind="fact", item_id="home")
            for method in route.methods - {"HEAD"}:
                if method == "GET":
                    answer = client.get(url, follow_redirects=False)
                else:
                    answer = client.post(url, data=fields, files={"file": ("x.jsonl", b'{"messages": [{"role": "user", "content": "hi"}]}')},
                                         follow_redirects=False)
                assert answer.status_code == 403, (method, url, answer.status_code)
                assert "Porto" not in answer.text and "Admon" not in answer.text
                tried += 1
        assert tried >= 15
        assert client.get("/ui/", follow_redirects=False).headers["location"].endswith("/ui/apps/bob")
    assert _snapshot(seeded, "alice") == before


def test_a_form_posted_without_its_token_is_refused(seeded):
    alice_key, _ = seeded.keys.create("alice")
    before = _snapshot(seeded, "alice")
    with TestClient(create_app(seeded)) as client:
        token = _login(client, alice_key)
        url = "/ui/apps/alice/items/fact/home/text"
        assert client.post(url, data={"text": "no token"}).status_code == 403
        assert client.post(url, data={"text": "wrong", "csrf": token[:-2] + "xx"}).status_code == 403
        other = TestClient(create_app(seeded))
        assert other.post(url, data={"text": "no cookie", "csrf": token}).status_code == 403  # a token without its session
        assert _snapshot(seeded, "alice") == before
        assert client.post(url, data={"text": "Alice lives in Faro.", "csrf": token}).status_code == 200
    assert seeded.get("home", app="alice")["text"] == "Alice lives in Faro."


def test_keyed_pages_ask_for_a_key_and_a_revoked_key_ends_the_session(seeded):
    alice_key, record = seeded.keys.create("alice")
    with TestClient(create_app(seeded)) as client:
        assert client.get("/ui/apps/alice", follow_redirects=False).headers["location"].endswith("/ui/login")
        token = _csrf(client.get("/ui/login").text)
        refused = client.post("/ui/login", data={"csrf": token, "key": "vst_nope"})
        assert refused.status_code == 401 and "unknown API key" in refused.text
        _login(client, alice_key)
        assert client.get("/ui/apps/alice").status_code == 200
        seeded.keys.revoke(str(record.id))
        assert client.get("/ui/apps/alice", follow_redirects=False).headers["location"].endswith("/ui/login")


def test_local_ui_answers_only_requests_addressed_to_this_machine(seeded):
    app = local_app(seeded)
    assert TestClient(app, base_url=LOCAL).get("/ui/").status_code == 200
    assert TestClient(app, base_url="http://localhost:8770").get("/ui/").status_code == 200
    rebound = TestClient(app, base_url="http://attacker.example").get("/ui/apps/alice")
    assert rebound.status_code == 403 and "Admon" not in rebound.text


def test_every_page_sends_a_restrictive_content_security_policy(seeded):
    client = TestClient(local_app(seeded), base_url=LOCAL)
    for url in ("/ui/", "/ui/apps/alice", "/ui/apps/alice/items/fact/home", "/ui/apps/alice/ask?q=cat",
                "/ui/apps/alice/curate", "/ui/apps/alice/delete", "/ui/apps/nope/items/fact/x"):
        answer = client.get(url)
        assert answer.headers["content-security-policy"] == CSP, url
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP and "default-src 'none'" in CSP
        assert answer.headers["x-frame-options"] == "DENY"
        assert "<script>" not in answer.text and " style=" not in answer.text  # no inline script or style
    with TestClient(create_app(seeded)) as api:
        docs = api.get("/docs")
        assert "script-src 'self'" in docs.headers["content-security-policy"]
        assert "swagger-ui-bundle.js" in docs.text and "<script>" not in docs.text


def test_memory_text_is_escaped_in_every_place_it_is_shown(memory):
    evil = '<script>alert(1)</script><img src=x onerror=alert(2)>'
    memory.add_fact(evil, app="a", fact_id=evil, metadata={"title": evil, evil: evil})
    memory.add_fact(evil + " again", app="a", fact_id="twin")
    client = TestClient(local_app(memory), base_url=LOCAL)
    from urllib.parse import quote

    for url in ("/ui/apps/a?kind=fact", f"/ui/apps/a/items/fact/{quote(evil, safe='')}", "/ui/apps/a/ask?q=" + quote(evil),
                "/ui/apps/a/curate?related=0.1&duplicate=0.2", f"/ui/apps/a/items/fact/{quote(evil, safe='')}/delete"):
        page = client.get(url).text
        assert "<script>alert" not in page and "<img src=x" not in page, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page, url


def test_an_import_that_is_not_valid_stores_nothing(seeded):
    client = TestClient(local_app(seeded), base_url=LOCAL)
    token = _csrf(client.get("/ui/apps/alice").text)
    before = _snapshot(seeded, "alice")
    bad = b'{"session_id": "a", "messages": [{"role": "user", "content": "ok"}]}\n{"session_id": "b", "messages": []}\n'
    answer = client.post("/ui/apps/alice/import", data={"csrf": token}, files={"file": ("bad.jsonl", bad)})
    assert answer.status_code == 422 and 'id="error"' in answer.text
    assert _snapshot(seeded, "alice") == before
    good = b'{"session_id": "new-one", "messages": [{"role": "user", "content": "I adopted a parrot."}]}\n'
    answer = client.post("/ui/import", data={"csrf": token, "app": "fresh"}, files={"file": ("good.jsonl", good)})
    assert answer.status_code == 200 and "1 sessions added" in answer.text
    assert seeded.get("new-one", app="fresh")["messages"][0]["content"] == "I adopted a parrot."


def test_a_read_only_database_is_browsed_and_a_change_is_refused_with_its_reason(seeded):
    seeded.store._db.conn.execute("PRAGMA query_only = 1")  # SQLITE_READONLY, as a 0444 file gives
    client = TestClient(local_app(seeded), base_url=LOCAL)
    page = client.get("/ui/apps/alice/items/fact/home")
    assert page.status_code == 200 and "Alice lives in Porto." in page.text
    answer = client.post("/ui/apps/alice/items/fact/home/text", data={"csrf": _csrf(page.text), "text": "Faro"})
    assert answer.status_code == 503 and "read-only" in answer.text
    assert str(seeded.store.location) not in answer.text


def test_a_delete_from_the_pages_leaves_no_byte_of_the_text_on_disk(seeded):
    from test_forgetting import SECRET, scan, total

    seeded.add_fact(f"The code word is {SECRET}.", app="alice", fact_id="secret")
    assert total(scan(Path(seeded.store.path))) > 0
    client = TestClient(local_app(seeded), base_url=LOCAL)
    token = _csrf(client.get("/ui/apps/alice/items/fact/secret/delete").text)
    assert client.post("/ui/apps/alice/items/fact/secret/delete", data={"csrf": token}).status_code == 200
    assert total(scan(Path(seeded.store.path))) == 0, scan(Path(seeded.store.path))  # RELIABILITY.md, "Forgetting"
    assert seeded.get("home", app="alice")["text"] == "Alice lives in Porto."


def test_counts_follow_every_write(seeded):
    client = TestClient(local_app(seeded), base_url=LOCAL)
    row = lambda: re.search(r'alice</a></td>\s*<td>(\d+)</td><td>(\d+)</td><td>(\d+)</td>', client.get("/ui/").text).groups()  # noqa: E731
    assert row() == ("2", "2", "3")  # sessions, messages, facts
    seeded.add_fact("Alice plays the cello.", app="alice")
    assert row() == ("2", "2", "4")
    seeded.delete("cat", app="alice")
    assert row() == ("1", "1", "4")


# -- browse -----------------------------------------------------------------------------------------


def test_browse_filters_by_kind_source_dates_and_metadata_and_pages(seeded):
    ids = lambda rows: [r["id"] for r in rows]  # noqa: E731
    page = lambda **f: browse.page(seeded, "alice", browse.Filters(**f), 0)  # noqa: E731
    assert ids(page()[0]) == ["trip", "cat"]  # most recently stored first
    assert ids(page(kind="fact")[0]) == ["new", "old", "home"]
    assert ids(page(kind="fact", source="chat")[0]) == ["home"]
    assert ids(page(metadata={"n": 1})[0]) == ["trip"]
    assert ids(page(since="2024-03-01")[0]) == ["cat"]
    assert ids(page(kind="fact", until="2023-12-31")[0]) == ["old", "home"]
    assert ids(page(kind="fact", source="chat", since="2024-01-01")[0]) == []
    first, more = browse.page(seeded, "alice", browse.Filters(kind="fact"), 0, limit=2)
    rest, done = browse.page(seeded, "alice", browse.Filters(kind="fact"), 2, limit=2)
    assert (ids(first), more, ids(rest), done) == (["new", "old"], True, ["home"], False)
    assert browse.parse_metadata_filter("source=chat; n=1") == {"source": "chat", "n": 1}
    with pytest.raises(InvalidInput):
        browse.parse_metadata_filter("no equals sign")
    with pytest.raises(InvalidInput):
        browse.check_day("2024-3-1", "from")
    client = TestClient(local_app(seeded), base_url=LOCAL)
    assert client.get("/ui/apps/alice?since=yesterday").status_code == 422


def test_memory_lists_by_metadata_and_dates_through_its_own_door(seeded):
    """What the browse page reads is ``Memory.list``'s (issue 44: the inspector never reaches the
    store): filters by metadata and days, both orders, paged, and bad filters refused by name."""
    ids = lambda rows: [r.get("fact_id") or r.get("session_id") for r in rows]  # noqa: E731
    assert ids(seeded.list(app="alice", kind="fact", where={"source": "chat"})) == ["home"]
    assert ids(seeded.list(app="alice", kind="fact", until="2023-12-31")) == ["old", "home"]
    assert ids(seeded.list(app="alice", kind="fact", until="2023-12-31", newest_first=False)) == ["home", "old"]
    assert ids(seeded.list(app="alice", kind="fact", limit=1, offset=1)) == ["old"]
    assert ids(seeded.list(app="alice", since="2024-03-01", where={"n": 1})) == []
    for bad in ({"where": {}}, {"where": "source=chat"}, {"since": "2024-3-1"}, {"until": 20240301}):
        with pytest.raises(InvalidInput):
            seeded.list(app="alice", **bad)


# -- ask --------------------------------------------------------------------------------------------


def test_ask_reads_the_trace_in_the_agreed_shape(seeded):
    from diarist.context import ContextBlock
    from diarist.read.trace import StageRecord

    hits = list(seeded.search("what is my cat called", app="alice", k=5))
    for hit in hits:
        hit.why = {"channels": {"dense": {"rank": 7, "score": 0.5}, "lexical": {"rank": None, "score": None}},
                   "matched_terms": ["Admon"], "fused": 0.875,
                   "second_stage": {"before": 3, "after": 1, "signals": {}}, "passages": ["Admon <b>purrs</b>."]}

    class Traced(list):  # a search's results with the trace's attributes (TRACE-INTERFACE.md)
        notes: list[str] = []
        trace = [SimpleNamespace(stage="fusion", kept=3, dropped=2, note="convex")]
        dropped = [SimpleNamespace(id="trip", stage="floor", reason="under the floor", score=0.01)]

    def memory_giving(block: ContextBlock) -> SimpleNamespace:
        return SimpleNamespace(search=lambda query, *, app, k, explain=False: Traced(hits),
                               context=lambda query, *, app, explain=False: block)

    view = explain.ask(memory_giving(ContextBlock("<memory>...</memory>", n_tokens=7)), "alice", "my cat", 5)
    assert view.traced and view.trace == [{"stage": "fusion", "kept": 3, "dropped": 2, "note": "convex"}]
    assert [(d.id, d.stage) for d in view.left_out] == [("trip", "floor")] and view.context_tokens == 7
    hit = view.hits[0]
    assert hit.fused == 0.875 and hit.channels["dense"] == {"rank": 7, "score": 0.5}
    assert hit.second_stage["after"] == 1
    assert str(hit.passages[0]) == "<mark>Admon</mark> &lt;b&gt;purrs&lt;/b&gt;."
    # the block's read ran every stage: its record and what it left out are the ones shown
    block = ContextBlock("<memory>...</memory>", n_tokens=7)
    block.trace = [StageRecord("budget", 1, 4, "800 tokens")]
    block.dropped = [SimpleNamespace(id="home", stage="cut", reason="under the cut", score=0.2)]
    view = explain.ask(memory_giving(block), "alice", "my cat", 5)
    assert view.trace == [{"stage": "budget", "kept": 1, "dropped": 4, "note": "800 tokens"}]
    assert [(d.id, d.stage, d.reason) for d in view.left_out] == [("home", "cut", "under the cut")]


def test_ask_shows_what_the_memory_explains(seeded):
    """The page asks ``Memory`` with ``explain`` (no probing of what it accepts): each hit's why."""
    view = explain.ask(seeded, "alice", "What is my cat called?", 5)
    assert view.traced and view.hits[0].id == "cat" and view.trace
    assert view.hits[0].channels["lexical"]["rank"] == 1 and "cat" in view.hits[0].matched_terms
    assert view.context_tokens > 0 and "Admon" in view.context
    assert {d.id for d in view.left_out} == {h.id for h in view.hits if not h.in_context}


# -- curate -----------------------------------------------------------------------------------------


def test_curate_finds_the_same_text_twice_and_changes_nothing_until_asked(seeded):
    before = _snapshot(seeded, "alice")
    found = seeded.similar_pairs("alice")
    pair = next(p for p in found.pairs if {p.a.id, p.b.id} == {"old", "new"})
    assert pair.reason == "same text" and pair.duplicate and (pair.a.id, pair.b.id) == ("old", "new")  # older first
    assert found.total == found.compared == seeded.app_stats("alice")["chunks"]
    client = TestClient(local_app(seeded), base_url=LOCAL)
    assert "same text" in client.get("/ui/apps/alice/curate").text
    assert _snapshot(seeded, "alice") == before


def test_curate_actions_supersede_merge_and_delete(seeded):
    done = curate.apply(seeded, "alice", "supersede", ("fact", "new"), ("fact", "old"))
    assert "superseded by new" in done
    old = seeded.get("old", app="alice")
    assert old["metadata"] == {"from": "doctor", "superseded_by": "new"}
    assert seeded.history("old", app="alice")[0]["metadata"] == {"from": "doctor"}
    exported = [r for r in seeded.export(app="alice") if r.get("fact_id") == "old"]
    assert exported[0]["metadata"]["superseded_by"] == "new"  # the mark is exported
    assert all({p.a.id, p.b.id} != {"old", "new"} for p in seeded.similar_pairs("alice").pairs)

    curate.apply(seeded, "alice", "merge", ("fact", "new"), ("fact", "old"))
    assert seeded.get("new", app="alice")["metadata"] == {"from": "doctor", "merged_from": "old"}
    assert all(h.id != "old" for h in seeded.search("allergic peanuts", app="alice"))
    curate.apply(seeded, "alice", "delete", ("fact", "home"), ("fact", "new"))
    assert [r["fact_id"] for r in seeded.list(app="alice", kind="fact")] == ["home"]
    with pytest.raises(InvalidInput):
        curate.apply(seeded, "alice", "explode", ("fact", "home"), ("session", "cat"))
    with pytest.raises(InvalidInput):
        curate.apply(seeded, "alice", "delete", ("fact", "home"), ("fact", "home"))
    with pytest.raises(InvalidInput):
        seeded.similar_pairs("alice", duplicate=0.5, related=0.9)


def test_export_download_and_delete_app_through_the_pages(seeded):
    client = TestClient(local_app(seeded), base_url=LOCAL)
    export = client.get("/ui/apps/alice/export.jsonl")
    assert export.headers["content-disposition"] == 'attachment; filename="alice.jsonl"'
    records = [json.loads(line) for line in io.StringIO(export.text)]
    assert {r.get("session_id") or r.get("fact_id") for r in records} == {"cat", "trip", "home", "old", "new"}
    token = _csrf(client.get("/ui/apps/alice/delete").text)
    wrong = client.post("/ui/apps/alice/delete", data={"csrf": token, "confirm": "alic"})
    assert wrong.status_code == 422 and "alice" in seeded.apps()
    gone = client.post("/ui/apps/alice/delete", data={"csrf": token, "confirm": "alice"})
    assert gone.status_code == 200 and "Deleted app alice" in gone.text
    assert seeded.apps() == ["bob"]
