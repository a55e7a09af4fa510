"""Search fetches the text of its candidates in rank order, only as many as its hits need,
and merges the copies that views "both" and "split-apart" index twice."""

from __future__ import annotations

import random

import pytest

from conftest import WORDS, add_all, make_sessions
from diarist import Memory
from diarist.read import search


def counting(mem: Memory) -> list[int]:
    """Wrap the store's fetch: the number of rows asked for, per call."""
    asked: list[int] = []
    real = mem.store.hit_rows
    mem.store.hit_rows = lambda app, ids: asked.append(len(ids)) or real(app, ids)
    return asked


def user_only_sessions(n: int, seed: int) -> list[dict]:
    """Sessions of one user turn: the views that index user turns twice make exact copies."""
    rng = random.Random(seed)
    return [{"session_id": f"u{i}", "messages": [{"role": "user", "content": " ".join(rng.choices(WORDS, k=9))}]}
            for i in range(n)]


def whole_pool(store, app, chosen, wanted, dense_scores, lexical_scores, stage, items=0):
    """The fetch before: every candidate of the pool at once, then merged (and counted as
    ``_fetch_hits`` counts: rows asked for, rows gone)."""
    rows = store.hit_rows(app, [cid for cid, _, _ in chosen])
    hits = search._merge_duplicates([search._hit(rows[cid], score, ranks, dense_scores, lexical_scores, stage, app)
                                     for cid, score, ranks in chosen if cid in rows])
    return hits, len(chosen), len(chosen) - len(rows)


def test_a_search_without_copies_reads_k_rows(tmp_path):
    mem = Memory(tmp_path / "m.sqlite", embedder="hash", reranker=None, group=False)
    add_all(mem, make_sessions(40, seed=1))
    asked = counting(mem)
    hits = mem.search("garden lantern harbor", k=8, rerank=False)
    assert len(hits) == 8 and asked == [8]  # was 16: twice k, room for copies this view never makes
    # Grouped by memory (the default), rows are read on until k memories: from the fifth read on
    # the n-th takes at least 2**(n-4) rows, so no further than twice what the 8th distinct
    # memory of the chunk ranking needs.
    order = [h.id for h in mem.search("garden lantern harbor", k=40, rerank=False)]
    needed = next(i for i in range(len(order)) if len(set(order[: i + 1])) == 8) + 1
    asked.clear()
    grouped = mem.derive(group=True).search("garden lantern harbor", k=8, rerank=False)
    assert [h.id for h in grouped] == list(dict.fromkeys(order))[:8]
    assert asked[0] == 8 and needed <= sum(asked) <= 2 * needed
    mem.close()


def test_an_app_with_fewer_memories_than_k_is_read_in_a_few_statements(tmp_path, monkeypatch):
    """k one over the memories there are: every step asks for one more memory than the pool holds,
    and used to read the rest of the pool a row per statement (about 180 statements a search in
    the LoCoMo tests on PostgreSQL). From the fifth read on the n-th takes at least 2**(n-4)
    rows: a dozen do; the hits are the same as reading the whole pool at once."""
    mem = Memory(tmp_path / "m.sqlite", embedder="hash", reranker=None)
    add_all(mem, make_sessions(6, seed=3, turns=40))
    asked = counting(mem)
    hits = mem.search("garden lantern harbor", k=7, rerank=False)
    assert len({h.id for h in hits}) == 6
    assert sum(asked) > 60 and len(asked) <= 12, asked  # the whole pool read, in a few statements
    monkeypatch.setattr(search, "_fetch_hits", whole_pool)
    whole = mem.search("garden lantern harbor", k=7, rerank=False)
    assert [(h.id, h.chunk_id, round(h.score, 12)) for h in hits] == \
        [(h.id, h.chunk_id, round(h.score, 12)) for h in whole]
    mem.close()


@pytest.mark.parametrize("view", ["both", "split-apart"])
def test_copies_are_merged_and_the_budget_still_filled(tmp_path, view, monkeypatch):
    mem = Memory(tmp_path / "m.sqlite", embedder="hash", reranker=None, plan=view, group=False)
    sessions = user_only_sessions(40, seed=2)
    add_all(mem, sessions)
    queries = [s["messages"][0]["content"] for s in sessions[:12]]
    assert mem.settings.fetch_whole_pool  # this plan makes copies: the whole pool, as ever
    asked = counting(mem)
    lazy = [mem.search(q, k=10, rerank=False) for q in queries]
    assert set(asked) == {20}
    for hits in lazy:
        keys = [(h.session_id, h.fact_id, h.text) for h in hits]
        assert len(hits) == 10 and len(set(keys)) == 10
    mem.close()


def test_rows_fetched_in_steps_give_the_whole_pools_hits(tmp_path, monkeypatch):
    """Exact copies within one plan (the same user line twice in a session, say): the steps
    read on until k distinct hits, and return what fetching the whole pool returned."""
    mem = Memory(tmp_path / "m.sqlite", embedder="hash", reranker=None, chunk_tokens=16, group=False)
    sessions = user_only_sessions(40, seed=3)
    for s in sessions[::2]:
        s["messages"] = s["messages"] * 3  # the same turn three times, a chunk each: copies
    add_all(mem, sessions)
    queries = [" ".join(random.Random(s).choices(WORDS, k=3)) for s in range(12)]
    asked = counting(mem)
    lazy = [mem.search(q, k=10, rerank=False) for q in queries]
    assert len(asked) > len(queries) and max(asked) <= 10  # some searches read a second step
    monkeypatch.setattr(search, "_fetch_hits", whole_pool)
    whole = [mem.search(q, k=10, rerank=False) for q in queries]
    assert [[h.chunk_id for h in hits] for hits in lazy] == [[h.chunk_id for h in hits] for hits in whole]
    assert all(len({(h.session_id, h.text) for h in hits}) == len(hits) for hits in lazy)
    mem.close()


def test_a_hit_is_built_field_by_field_as_the_keywords_say():
    """``_hit`` builds hits positionally (one a row read) from the store's ``HitRow``: the same
    hit as by keyword, so a field added to or moved in ``Hit`` or the row cannot shift the others
    unseen."""
    from diarist.store.base import HIT_ROW_FIELDS
    from diarist.types import Hit

    fields = {"chunk_id": 7, "text": "text", "session_id": "s1", "fact_id": None, "date": "2024-01-02",
              "roles": "user,assistant", "view": "all", "first_turn": 4, "last_turn": 5, "metadata": '{"title": "t"}'}
    row = tuple(fields[name] for name in HIT_ROW_FIELDS)
    dense, lexical = [(9, 0.9), (7, 0.8)], [(7, 12.5)]
    got = search._hit(row, 0.75, {"dense": 2, "lexical": 1}, dense, lexical, "fused", "app")
    want = Hit(chunk_id=7, text="text", score=0.75, session_id="s1", fact_id=None, date="2024-01-02",
               roles=("user", "assistant"), view="all", ranks={"dense": 2, "lexical": 1},
               scores={"dense": 0.8, "lexical": 12.5}, stage="fused", app="app", first_turn=4, last_turn=5,
               metadata={"title": "t"})
    assert got == want and vars(got) == vars(want)
    again = search._hit(row, 0.75, {"dense": 2, "lexical": 1}, dense, lexical, "fused", "app")
    assert again.metadata is not got.metadata  # each hit its own
    for stored in (None, ""):  # no roles, no metadata
        bare = search._hit((7, "t", "s1", None, None, stored, "all", None, None, stored), 0.5, {}, [], [], "dense", "a")
        assert bare.roles == () and bare.metadata == {}
