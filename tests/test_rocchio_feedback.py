"""benchmarks/rocchio_feedback.py: the exploration searches twice, the second time with the dense
query moved toward the vectors of the first search's top hits (Rocchio, alpha 1)."""

from __future__ import annotations

import numpy as np

import diarist.memory as memory_module
from diarist.memory import Memory

from benchmark_scripts import load_benchmark_script


def test_the_second_search_reads_the_query_moved_toward_the_first_hits(monkeypatch):
    script = load_benchmark_script("rocchio_feedback.py")
    real = script._plain_search
    seen: list[tuple[np.ndarray, list[int]]] = []

    def spy(channels, app, query, k, settings, *rest):
        results = real(channels, app, query, k, settings, *rest)
        seen.append((channels.embedder.embed_query([query])[0].copy(), [h.chunk_id for h in results]))
        return results

    monkeypatch.setattr(script, "_plain_search", spy)
    monkeypatch.setattr(memory_module, "run_search", script.with_feedback(2, 0.75))
    with Memory(":memory:", embedder="hash") as memory:
        for i, text in enumerate(["The cat is called Admon.", "Admon likes tuna and naps.",
                                  "The user moved to Lisbon.", "A walk by the river on Sunday."]):
            memory.add_fact(text, app="me", fact_id=f"f{i}")
        memory.search("What does the cat Admon eat?", app="me", k=3)
        assert len(seen) == 2
        (query, first_hits), (moved, _) = seen
        batch = memory.store.read_vectors("me", 0)
        ids, rows = list(batch.ids), np.asarray(batch.vectors, np.float32)
        top = rows[[ids.index(c) for c in sorted(set(first_hits[:2]))]]
        top /= np.linalg.norm(top, axis=1, keepdims=True)
        expected = query + 0.75 * top.mean(axis=0)
        np.testing.assert_allclose(moved, expected / np.linalg.norm(expected), rtol=1e-5, atol=1e-6)
        assert not np.allclose(moved, query)
