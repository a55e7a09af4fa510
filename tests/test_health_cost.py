"""``/health`` answers in milliseconds at any size (issue 31, item 10).

At 1M chunks with the HNSW graph one ``GET /health`` took 88.6 s: for each of 20 samples the
graph's recall check ran an exact search, which read the app's whole matrix, and the graph
search then dropped it again. ``/health`` needs no key, so any client could keep a server busy.
Now ``/health`` runs no recall check and reads no app's vectors; ``vestige doctor`` keeps the
check, on 5 samples, reading the vectors once. The tests count the reads of the store's vectors
(what grows with an app's size) rather than time anything.
"""

from __future__ import annotations

import httpx
import pytest
from test_server_support import ServerThread

pytest.importorskip("usearch")

from vestige import health  # noqa: E402
from vestige.memory import Memory  # noqa: E402
from vestige.server.app import create_app  # noqa: E402
from vestige.vectors.hnsw import HnswDenseIndex  # noqa: E402


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
    report = health.check(memory)
    # (its value on 120 hash vectors full of ties varies with the graph's threads: not asserted)
    assert any("recall@50" in line and f"on {health.RECALL_SAMPLES} samples" in line for line in report.lines)
    assert reads.count("big") == 1  # one read for every sample's exact answer
    memory.close()
