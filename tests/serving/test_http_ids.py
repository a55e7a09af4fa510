"""Ids with ``/`` over HTTP (issue 45): every note synced from a sub-folder has one (``d1/n1.md``).
Sent percent-encoded (``d1%2Fn1.md``), each is read, listed in history and deleted by the API; an
id ending in ``/`` is never redirected to another; the inspector's item routes take any id (one
ending in ``/delete`` opens its own page, not another item's delete page)."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from diarist.server.app import create_app
from diarist.ui import local_app

IDS = ["d1/n1.md", "abc/", "x/delete", "a%2Fb", "sp ace/ü"]


def _q(item_id: str) -> str:
    return quote(item_id, safe="")


@pytest.fixture
def served(memory):
    for item_id in [*IDS, "abc", "x"]:
        memory.add_session([{"role": "user", "content": f"the session called {item_id}"}], app="a", session_id=item_id)
        memory.add_fact(f"the fact called {item_id}", app="a", fact_id=item_id)
    key, _ = memory.keys.create("a")
    client = TestClient(create_app(memory), headers={"Authorization": f"Bearer {key}"})
    return memory, client


@pytest.mark.parametrize("item_id", IDS)
@pytest.mark.parametrize("kind", ["sessions", "facts"])
@pytest.mark.slow
def test_an_id_with_a_slash_is_read_listed_in_history_and_deleted_over_http(served, kind, item_id):
    memory, client = served
    url = f"/v1/apps/a/{kind}/{_q(item_id)}"
    got = client.get(url, follow_redirects=False)
    assert got.status_code == 200, (url, got.status_code, got.text[:200])
    singular = kind[:-1]
    assert got.json()[f"{singular}_id"] == item_id
    assert client.get(url + "/history", follow_redirects=False).status_code == 200
    deleted = client.delete(url, follow_redirects=False)
    assert deleted.status_code == 200 and deleted.json()["deleted"] == item_id
    assert client.get(url).status_code == 404
    survivors = {"abc", "x"} | (set(IDS) - {item_id})
    for other in survivors:
        assert memory.get(other, app="a", kind=singular)[f"{singular}_id"] == other, f"deleting {item_id!r} touched {other!r}"


def test_an_id_ending_in_a_slash_sent_raw_is_not_redirected_to_another(served):
    memory, client = served
    answer = client.delete("/v1/apps/a/sessions/abc/", follow_redirects=False)
    assert answer.status_code not in (301, 302, 307, 308), answer.headers
    assert memory.get("abc", app="a", kind="session")["session_id"] == "abc"


def test_the_inspector_opens_an_item_whose_id_ends_in_delete_not_another_items_delete_page(memory):
    memory.add_fact("the plain fact x", app="a", fact_id="x")
    memory.add_fact("the fact whose id ends in delete", app="a", fact_id="x/delete")
    client = TestClient(local_app(memory), base_url="http://127.0.0.1")
    page = client.get(f"/ui/apps/a/items/fact/{_q('x/delete')}")
    assert page.status_code == 200 and "the fact whose id ends in delete" in page.text
    assert "Delete fact x" not in page.text and "confirm" not in page.url.path
    nested = client.get(f"/ui/apps/a/items/fact/{_q('x/delete')}/delete")
    assert nested.status_code == 200 and "x/delete" in nested.text and "the fact whose id ends in delete" in nested.text
    plain = client.get(f"/ui/apps/a/items/fact/{_q('x')}")
    assert plain.status_code == 200 and "the plain fact x" in plain.text
