"""``/health`` answers in milliseconds at any size (issue 31, item 10).

At 1M chunks with the HNSW graph one ``GET /health`` took 88.6 s: for each of 20 samples the
graph's recall check ran an exact search, which read the app's whole matrix, and the graph
search then dropped it again. ``/health`` needs no key, so any client could keep a server busy.
Now ``/health`` runs no recall check and reads no app's vectors; ``diarist doctor`` keeps the
check, on 5 samples, reading the vectors once. The tests count the reads of the store's vectors
(what grows with an app's size) rather than time anything.
"""

from __future__ import annotations

import httpx
import pytest
from test_server_support import ServerThread

pytest.importorskip("usearch")

from diarist import health  # noqa: E402
from diarist.memory import Memory  # noqa: E402
from diarist.server.app import create_app  # noqa: E402
from diarist.vectors.hnsw import HnswDenseIndex  # noqa: E402


def _graph_app(db) -> Memory:
    memory = Memory(db, embedder="hash", dense="hnsw")
    for i in range(120):
        memory.add_fact(f"fact {i} about the lantern{i} by the river", app="big", fact_id=f"f{i}")
    memory.search("lantern river", app="big", k=3, rerank=False)  # the graph serves the app
    return memory


def _count_vector_reads(memory: Memory, monkeypatch) -> list[str]:
    reads: list[str] = []
    real = memory.store.read_vectors

    def counted(app, after_id=0):
        reads.append(app)
        return real(app, after_id)

    monkeypatch.setattr(memory.store, "read_vectors", counted)
    return reads


def test_health_reads_no_app_vectors_and_runs_no_recall_check(tmp_path, monkeypatch):
    memory = _graph_app(tmp_path / "m.sqlite")
    recalls: list[str] = []
    real_recall = HnswDenseIndex.recall
    monkeypatch.setattr(HnswDenseIndex, "recall", lambda self, app, **kw: recalls.append(app) or real_recall(self, app, **kw))
    reads = _count_vector_reads(memory, monkeypatch)
    with ServerThread(create_app(memory)) as srv:
        for _ in range(3):
            r = httpx.get(f"{srv.url}/health", timeout=30)
            assert r.status_code == 200, r.text
    assert recalls == [] and reads == []  # nothing read whose size grows with the app
    memory.close()


def test_doctor_keeps_the_recall_check_reading_the_vectors_once(tmp_path, monkeypatch):
    memory = _graph_app(tmp_path / "m.sqlite")
    reads = _count_vector_reads(memory, monkeypatch)
    report = memory.health()
    # (its value on 120 hash vectors full of ties varies with the graph's threads: not asserted)
    assert any("recall@50" in line and f"on {health.RECALL_SAMPLES} samples" in line for line in report.lines)
    assert reads.count("big") == 1  # one read for every sample's exact answer
    memory.close()


def test_health_runs_no_search_and_touches_no_graph(tmp_path, monkeypatch):
    """/health's per-app check costs the same at any size: the sample's vector against the
    embedder, the lexical index's state, and at most POSTING_TERMS posting blocks. Before, each
    call searched the graph and ran a BM25 search over the sample's words (whose posting lists
    grow with the app)."""
    memory = _graph_app(tmp_path / "m.sqlite")
    searched: list[str] = []
    for channel in (memory.dense, memory.lexical):
        real = channel.search
        monkeypatch.setattr(channel, "search", lambda app, *a, _real=real, **kw: searched.append(app) or _real(app, *a, **kw))
    blocks: list[str] = []
    real_block = getattr(memory.store, "read_posting_block", None)
    monkeypatch.setattr(memory.store, "read_posting_block",
                        lambda app, term, block: blocks.append(term) or real_block(app, term, block), raising=False)
    lists: list[str] = []  # whole posting lists read (the index's state is read with no term)
    real_lists = memory.store.read_postings
    monkeypatch.setattr(memory.store, "read_postings", lambda app, terms: lists.extend(terms) or real_lists(app, terms))
    with ServerThread(create_app(memory)) as srv:
        r = httpx.get(f"{srv.url}/health", timeout=30)
    assert r.status_code == 200, r.text
    assert searched == [] and lists == []  # the probe searches its own scratch store, not the app's index
    assert 0 < len(blocks) <= health.POSTING_TERMS
    memory.close()


def test_doctor_still_catches_a_broken_graph(tmp_path):
    """A graph that lost most of its nodes: /health cannot see it (it searches nothing), doctor's
    recall check and its search for the newest chunk must."""
    memory = _graph_app(tmp_path / "m.sqlite")
    graph = memory.dense._graphs["big"]
    graph.index.remove([int(i) for i in graph.ids[20:]])  # the newest 100 chunks gone from the graph
    report = memory.health()
    failing = [line for line in report.lines if line.startswith("FAIL")]
    assert not report.ok, report.lines
    assert any("dense index" in line for line in failing) and any("not in the dense top" in line for line in failing), failing
    memory.close()
