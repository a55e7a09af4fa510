"""The lexical channel ranks in the caller's thread when fusion first reads it
(``LexicalChannel.defer``); a channel without ``defer`` ranks in a worker thread
(``LexicalChannel.submit``, the order before). Both give the same answers, failures are reported
as before, a few shared threads whatever the number of memories."""

from __future__ import annotations

import threading

import pytest
from conftest import add_all, make_sessions

from diarist.lexical import LexicalChannel
from diarist.memory import Memory
from diarist.read.search import Channels, run_search
from diarist.store.base import LexicalUnavailable

QUERIES = ["garden river lantern", "copper falcon", "zephyr wharf yarrow", "quartz lighthouse"]


@pytest.fixture
def mem(db_path):
    memory = Memory(db_path, embedder="hash", floor=None)
    add_all(memory, make_sessions(40, seed=5), app="a")
    memory.add_fact("The quartz lighthouse is in Aberdeen.", app="a", fact_id="lighthouse", date="2024-02-02")
    yield memory
    memory.close()


@pytest.fixture(autouse=True)
def no_embedding_history(monkeypatch):
    """No question embedded yet: the lexical half is deferred (a loaded machine's slow lookups
    in earlier tests would otherwise send it to a worker: ``read_channels``)."""
    from diarist.read import search

    monkeypatch.setattr(search, "_embedding_s", {})


class ThreadedLexical:
    """The lexical channel whose deferred ranking is its worker thread's (``submit``): the same
    job shape (result, cancel, add_done_callback), run beside the dense channel."""

    def __init__(self, channel: LexicalChannel):
        self.channel = channel
        self.submitted = 0

    def defer(self, *args, **kwargs):
        self.submitted += 1
        return self.channel.submit(*args, **kwargs)


def _keys(results):
    return [(h.chunk_id, h.score, h.ranks, h.scores) for h in results]


def test_same_hits_in_the_callers_thread_as_in_a_worker(mem):
    threaded = ThreadedLexical(mem.lexical)
    worker = Channels(mem.store, mem.dense, threaded, mem.embedder)
    for query in QUERIES:
        deferred = run_search(mem._channels(app="a"), "a", query, 10, mem.settings)
        assert deferred and _keys(deferred) == _keys(run_search(worker, "a", query, 10, mem.settings))
    assert threaded.submitted == len(QUERIES)


def test_the_lexical_half_runs_in_the_callers_thread(mem, monkeypatch):
    ran_in = []
    real = mem.lexical.search
    monkeypatch.setattr(mem.lexical, "search", lambda *a, **k: ran_in.append(threading.get_ident()) or real(*a, **k))
    mem.search("copper falcon", app="a", k=5)
    assert ran_in == [threading.get_ident()]


def test_many_threads_at_once_agree_with_one(mem):
    want = {q: _keys(mem.search(q, app="a", k=10)) for q in QUERIES}
    errors, got = [], []

    def worker(n: int) -> None:
        try:
            for i in range(5):
                q = QUERIES[(n + i) % len(QUERIES)]
                got.append(_keys(mem.search(q, app="a", k=10)) == want[q])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(got) == 40 and all(got)


def test_an_unusable_lexical_index_still_falls_back_to_vectors(mem, monkeypatch):
    def unavailable(*args, **kwargs):
        raise LexicalUnavailable("index incomplete (test)")

    monkeypatch.setattr(mem.lexical, "search", unavailable)
    results = mem.search("copper falcon", app="a", k=5)
    assert results and {h.stage for h in results} == {"dense"}
    assert any("lexical channel off" in note for note in results.notes)


def test_any_other_lexical_failure_reaches_the_caller(mem, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("disk gone (test)")

    monkeypatch.setattr(mem.lexical, "search", broken)
    with pytest.raises(RuntimeError, match="disk gone"):
        mem.search("copper falcon", app="a", k=5)


def test_the_floor_answers_nothing_without_waiting_on_bm25(mem, monkeypatch):
    release = threading.Event()

    def slow(*args, **kwargs):
        release.wait(10)
        raise RuntimeError("never observed")

    monkeypatch.setattr(mem.lexical, "search", slow)
    floored = mem.derive(floor=1.0)  # the highest floor there is: only an identical text reaches it
    results = floored.search("copper falcon", app="a", k=5)
    assert list(results) == [] and "nothing relevant" in results.notes[0]
    release.set()  # the abandoned half (if it started) ends; its exception is dropped, not raised


def test_a_floor_that_answers_nothing_never_ranks_bm25(mem, monkeypatch):
    calls = []
    monkeypatch.setattr(mem.lexical, "search", lambda *a, **k: calls.append(a) or [])
    results = mem.derive(floor=1.0).search("copper falcon", app="a", k=5)
    assert list(results) == [] and calls == []


def test_many_memories_share_a_few_worker_threads(tmp_path):
    """Memories that are never closed must not each keep threads: the workers are one pool per
    process, as many as cores, whatever the number of memories."""
    import os

    before = {t for t in threading.enumerate() if t.name.startswith("diarist-bm25")}
    memories = []
    for n in range(12):
        memory = Memory(tmp_path / f"m{n}.sqlite", embedder="hash")
        add_all(memory, make_sessions(3, seed=n), app="a")
        memory.lexical.submit("a", ["garden", "river"], 10).result()  # the worker path
        memories.append(memory)
    workers = {t for t in threading.enumerate() if t.name.startswith("diarist-bm25")}
    assert len(workers) <= (os.cpu_count() or 1) and len(workers) >= len(before)
    for memory in memories:
        memory.close()


def test_without_worker_threads_the_lexical_half_runs_inline(mem, monkeypatch):
    """At interpreter shutdown a pool takes no new work: search still answers, inline."""
    from concurrent.futures import ThreadPoolExecutor

    from diarist.lexical import bm25

    want = _keys(run_search(mem._channels(app="a"), "a", "copper falcon", 5, mem.settings))
    closed = ThreadPoolExecutor(max_workers=1)
    closed.shutdown()
    monkeypatch.setattr(bm25, "_workers", lambda: closed)
    threaded = ThreadedLexical(mem.lexical)
    worker = Channels(mem.store, mem.dense, threaded, mem.embedder)
    assert _keys(run_search(worker, "a", "copper falcon", 5, mem.settings)) == want and threaded.submitted == 1


def test_a_slow_model_embeds_while_a_worker_ranks_bm25(mem, monkeypatch):
    """Where embedding each of the last two questions kept the caller's thread busy (a model
    ran), the lexical half is ranked in a worker thread while the next is embedded (its terms
    analysed there too); the hits are the deferred ranking's. One slow question does not switch it."""
    import time

    from diarist.read import search

    want = {q: _keys(mem.search(q, app="a", k=10)) for q in QUERIES}
    search._embedding_s.clear()
    ran_in = []
    real_search, real_embed = mem.lexical.search, mem.embedder.embed_query
    monkeypatch.setattr(mem.lexical, "search", lambda *a, **k: ran_in.append(threading.get_ident()) or real_search(*a, **k))
    slow = [True]

    def embed_query(texts):
        if slow[0]:  # the caller's thread busy, as a model keeps it (waiting would not count)
            until = time.thread_time() + 2 * search.OVERLAP_EMBEDDING_S
            while time.thread_time() < until:
                pass
        return real_embed(texts)

    monkeypatch.setattr(mem.embedder, "embed_query", embed_query)
    got = {q: _keys(mem.search(q, app="a", k=10)) for q in QUERIES}  # two slow ones, then in a worker
    assert got == want
    here = threading.get_ident()
    assert ran_in[:2] == [here, here] and all(thread != here for thread in ran_in[2:])
    trace = mem.search("copper falcon", app="a", k=5).trace
    assert "ranked while the question was embedded" in trace[0].note
    slow[0] = False
    ran_in.clear()
    for query in QUERIES[:2]:  # one quick embedding: still the worker; two: the caller's thread
        mem.search(query, app="a", k=10)
    mem.search(QUERIES[2], app="a", k=10)
    assert ran_in[0] != here and ran_in[1:] == [here, here]
