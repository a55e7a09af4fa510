"""Candidate pools: every chunk of a haystack with its score in each channel, one row per question.

A fusion function only reads the two channels' scores, so once the pools are written every
fusion (RRF, convex, adaptive, a learned ranker) and every cross-validation fold is re-scored
in seconds, without the embedder. The pools are the training rows of ``diarist.read.ranker``:
``diarist bench pools`` writes them from the dev data, deterministically.

Row: {"id", "dataset", "unit", "type", "abstention", "gold": [session index], "n_sessions",
"question_date", "session_dates", "bm25": [[k1, b], ...], "chunks": [[session index, first turn,
n_words, cosine or null, bm25 or null, ...]]}. Every chunk of the haystack is listed: a chunk with
no vector (no user words in the split view) has cosine null; a chunk that matches no query term
has bm25 null. A chunk carries one BM25 score per (k1, b) of the row's "bm25", in that order (the
first is the one the search fused); rows without "bm25" were written with (1.5, 0.75).
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import lexical, settings
from .configs import get_config
from ..embed import Embedder
from .runner import APP, LOADERS, DEFAULT_CACHE, Runner

ALL = 10_000  # deeper than any haystack: each channel returns every chunk it scores


def write_pools(dataset: str, data: str | Path, out: str | Path, *, view: str = "split",
                limit: int | None = None, stride: int | None = None, cache_path: str | Path | None = DEFAULT_CACHE,
                threads: int | None = None, progress: bool = True, embedder: str | Embedder = settings.EMBEDDER,
                bm25: Sequence[tuple[float, float]] = ((settings.BM25_K1, settings.BM25_B),)) -> int:
    """Write the pools of every question of ``data`` to ``out`` (.jsonl.gz); returns the row count.

    ``bm25``: the (k1, b) pairs to score BM25 with, one column each; the search runs with the
    first, the others re-score the same index (one index build per haystack for them all).
    ``embedder``: a spec or an ``Embedder`` (an exploration's vectors)."""
    from tqdm import tqdm

    params = [(float(k1), float(b)) for k1, b in bm25]
    if not params:
        raise ValueError("bm25 needs at least one (k1, b)")
    config = replace(get_config("default"), view=view, depth=ALL, chunks_asked=ALL)
    runner = Runner(config, embedder, cache_path, progress, threads)
    haystacks = LOADERS[dataset](str(data), limit, stride)
    prepared = runner.prepare(haystacks)
    n = 0
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    try:
        with gzip.open(out, "wt", encoding="utf-8", compresslevel=9) as f, \
                tqdm(total=sum(len(h.questions) for h in haystacks), desc=f"pools {dataset}", unit="q",
                     disable=not progress) as bar:
            for hay in haystacks:
                items = prepared[hay.unit]
                memory = runner.index(items, "raw")
                (k1, b), others = params[0], params[1:]
                view_memory = memory.derive(depth=ALL, reranker=None, floor=None, k1=k1, b=b)
                index = {p.session_id: i for i, p in enumerate(items)}
                for q in hay.questions:
                    hits = view_memory.search(q.text, app=APP, k=ALL, rerank=False)
                    terms = lexical.analyze(q.text)  # as run_search analyses a question with no previous turn
                    extra = [dict(memory.lexical.search(APP, terms, ALL, k1, b)) for k1, b in others]
                    row = _row(dataset, hay.unit, q, items, index, hits, params, extra)
                    f.write(json.dumps(row, separators=(",", ":")) + "\n")
                    n += 1
                    bar.update(1)
                memory.close()
    finally:
        runner.close()
    return n


def _row(dataset: str, unit: str, q: Any, items: list, index: dict[str, int], hits: list,
         bm25: Sequence[tuple[float, float]] = ((settings.BM25_K1, settings.BM25_B),),
         extra: Sequence[dict[int, float]] = ()) -> dict[str, Any]:
    """``extra``: chunk id -> BM25 score under each (k1, b) of ``bm25`` after the first."""
    chunks = sorted((
        [index[h.session_id], int(h.first_turn or 0), len(h.text.split()),
         _round(h.scores.get("dense")), _round(h.scores.get("lexical")),
         *(_round(scores.get(h.chunk_id)) for scores in extra)]
        for h in hits
    ), key=_chunk_order)
    return {
        "id": q.qid, "dataset": dataset, "unit": unit, "type": q.qtype, "abstention": q.abstention,
        "gold": sorted(index[s] for s in q.gold if s in index), "n_sessions": len(items),
        "question_date": q.date, "session_dates": [p.date for p in items],
        "bm25": [[k1, b] for k1, b in bm25], "chunks": chunks,
    }


def _chunk_order(chunk: list) -> tuple:
    """Session, first turn, words, then the scores: a row's chunks are listed the same whatever
    order the search returned them in (chunks tied on the first three came in rank order)."""
    session, first_turn, words, *scores = chunk
    return (session, first_turn, words, *(-math.inf if s is None else s for s in scores))


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 5)


def read_pools(path: str | Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
