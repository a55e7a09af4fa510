"""Exploration (not shipped): pseudo-relevance feedback for the dense channel, from the fused list.

Rocchio (SMART; Manning, Raghavan & Schuetze, "Introduction to Information Retrieval", ch. 9:
alpha = 1, beta = 0.75): search runs as ``Memory()`` does by default; the vectors of its top
``N`` hits move the query, q' = q + beta * mean(hit vectors) (each normalised), and the whole
search (both channels, fusion, second stage) runs again with q' for the dense channel. The
lexical channel already decides the fused top on many questions, so the feedback carries its
evidence into the dense ranking (dense pseudo-relevance feedback: Li et al., "Pseudo Relevance
Feedback with Deep Language Models and Dense Retrievers: Successes and Pitfalls", TOIS 2023).

The feedback is wrapped around the search for this run only; the run's config is named for it,
so ``diarist bench verify`` and ``diarist bench compare`` read it like any other run.

    python benchmarks/rocchio_feedback.py --dataset locomo --data ../shared/data/locomo_dev.json.gz \\
        --out benchmarks/results/explore-feedback/locomo
    python benchmarks/rocchio_feedback.py --dataset longmemeval --data ../shared/data/longmemeval_s_dev.json.gz \\
        --out benchmarks/results/explore-feedback/longmemeval

``--keep``: the feedback hits keep their places, and the second search orders only what comes
after them (``.../explore-feedback/{locomo,longmemeval}-keep``).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

import diarist.memory as memory_module
from diarist.bench.configs import get_config
from diarist.bench.runner import DEFAULT_CACHE, run_benchmarks
from diarist.read.search import Results
from diarist.store.base import Store

_plain_search = memory_module.run_search


class _Vectors:
    """Each app's stored vectors, normalised, read once per app version."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._ids = np.zeros(0, np.int64)
        self._rows = np.zeros((0, 0), np.float32)

    def of(self, store: Store, app: str, ids: np.ndarray) -> np.ndarray:
        key = (id(store), app, store.app_version(app))
        if key != self._key:
            batch = store.read_vectors(app, 0)
            rows = np.asarray(batch.vectors, np.float32)
            self._rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)
            self._ids, self._key = np.asarray(batch.ids, np.int64), key
        where = np.searchsorted(self._ids, ids)
        found = (where < len(self._ids)) & (self._ids[np.minimum(where, len(self._ids) - 1)] == ids)
        return self._rows[where[found]]


class _QueryVector:
    """The search's embedder, except that the question's own vector is the moved one."""

    def __init__(self, inner, vector: np.ndarray):
        self._inner, self._vector = inner, vector

    def embed_query(self, texts):
        # The question is texts[0] (a follow-up's joined text, if any, follows): not embedded again.
        rest = self._inner.embed_query(list(texts[1:])) if len(texts) > 1 else np.zeros((0, len(self._vector)), np.float32)
        return np.vstack([self._vector[None, :], rest]).astype(np.float32)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def with_feedback(hits: int, beta: float, keep: bool = False):
    """A run_search that searches again with the query moved toward its first ``hits`` hits.
    ``keep``: those hits keep their places (PRF takes them as relevant); the second search
    orders only what comes after them."""
    vectors = _Vectors()

    def search(channels, app, query, k, settings, previous=None, reranker=None, now=None):
        first = _plain_search(channels, app, query, k, settings, previous, reranker, now)
        if not first or not settings.lexical:
            return first
        found = vectors.of(channels.store, app, np.array(sorted({h.chunk_id for h in first[:hits]}), np.int64))
        if not len(found):
            return first
        moved = channels.embedder.embed_query([query])[0] + beta * found.mean(axis=0)
        moved = (moved / np.linalg.norm(moved)).astype(np.float32)
        channels = dataclasses.replace(channels, embedder=_QueryVector(channels.embedder, moved))
        second = _plain_search(channels, app, query, k, settings, previous, reranker, now)
        if not keep:
            return second
        kept = first[:hits]
        taken = {h.chunk_id for h in kept}
        merged = kept + [h for h in second if h.chunk_id not in taken]
        return Results(merged[:k], first.notes, first.best_cosine, first.comparable)

    return search


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, choices=["locomo", "longmemeval"])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--hits", type=int, default=3, help="Feedback hits (default 3).")
    parser.add_argument("--beta", type=float, default=0.75, help="Rocchio's beta (default 0.75; alpha is 1).")
    parser.add_argument("--keep", action="store_true",
                        help="The feedback hits keep their places; the second search orders the rest.")
    args = parser.parse_args(argv)
    name = f"default+rocchio-{args.hits}-{args.beta:g}" + ("-keep" if args.keep else "")
    config = dataclasses.replace(
        get_config("default"), name=name,
        description=f"exploration: the default, searched again with the dense query moved toward the vectors of "
                    f"its first {args.hits} hits (Rocchio, alpha 1, beta {args.beta:g})"
                    + ("; those hits keep their places, the second search orders the rest" if args.keep else ""))
    memory_module.run_search = with_feedback(args.hits, args.beta, args.keep)
    summary = run_benchmarks(args.dataset, str(args.data), [config], [args.out], cache_path=DEFAULT_CACHE)[0]
    for group, cells in summary["overall"].items():
        print(name, group, {k: cells[k] for k in ("n", "r_any@1", "r_any@5", "r_any@10", "r_all@10", "ndcg@10")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
