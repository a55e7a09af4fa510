"""The search pipeline: dense rank + BM25 rank -> RRF -> hits that explain themselves."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from . import lexical
from .embed.base import Embedder
from .fusion import RRF_K, rrf
from .rerank.base import LazyReranker, Reranker
from .store.base import LexicalUnavailable, Store
from .types import Hit

log = logging.getLogger("vestige")


@dataclass(frozen=True)
class SearchSettings:
    depth: int = 200  # each channel ranks this deep, well beyond the budget
    rrf_k: int = RRF_K
    k1: float = lexical.K1
    b: float = lexical.B
    lexical: bool = True  # False: the vector-only ranking, byte for byte
    rerank_depth: int = 50  # the second stage re-reads this many fused candidates


class Results(list):
    """A list of hits, with notes on anything that degraded the search (a fallback, say)."""

    def __init__(self, hits: list[Hit] = (), notes: list[str] | None = None):
        super().__init__(hits)
        self.notes: list[str] = notes or []


def run_search(
    store: Store,
    embedder: Embedder,
    app: str,
    query: str,
    k: int,
    settings: SearchSettings,
    previous: str | None = None,
    reranker: Reranker | None = None,
) -> Results:
    if k <= 0:
        return Results()
    # A follow-up carries no topic of its own: embed it alone and with the previous turn, in
    # one call; each chunk keeps its best score, so the stand-alone result is never lost.
    texts = [query] if not previous else [query, f"{previous}\n{query}"]
    query_vectors = embedder.embed(texts)
    depth = max(settings.depth, k)
    # The second stage may lift any of the top rerank_depth candidates into the budget.
    pool = max(k, settings.rerank_depth) if reranker is not None else k
    dense = store.dense_search(app, query_vectors, depth)
    notes: list[str] = []
    lexical_ranking: list[tuple[int, float]] | None = None
    if settings.lexical:
        terms = lexical.analyze(query)
        if previous:
            terms += lexical.analyze(previous)
        try:
            lexical_ranking = store.lexical_search(app, terms, depth, settings.k1, settings.b)
        except LexicalUnavailable as exc:
            note = f"lexical channel off, searching by vectors only: {exc}"
            log.warning(note)
            notes.append(note)
    if lexical_ranking is None:
        chosen = [(cid, score, {"dense": rank, "lexical": None}) for rank, (cid, score) in enumerate(dense[:pool], 1)]
        stage = "dense"
    else:
        fused = rrf({"dense": [c for c, _ in dense], "lexical": [c for c, _ in lexical_ranking]}, settings.rrf_k)
        chosen = fused[:pool]
        stage = "fused"
    dense_scores = dict(dense)
    lexical_scores = dict(lexical_ranking or [])
    rows = store.fetch_chunks(app, [cid for cid, _, _ in chosen])
    hits = []
    for cid, score, ranks in chosen:
        row = rows[cid]
        hits.append(
            Hit(
                chunk_id=cid,
                text=row.text,
                score=score,
                session_id=row.session_id,
                fact_id=row.fact_id,
                date=row.date,
                roles=row.roles,
                view=row.view,
                ranks=ranks,
                scores={"dense": dense_scores.get(cid), "lexical": lexical_scores.get(cid)},
                stage=stage,
                app=app,
            )
        )
    if reranker is not None and hits:
        head = reranker.rerank(query, hits[: settings.rerank_depth])
        hits = head + hits[settings.rerank_depth :]
        if isinstance(reranker, LazyReranker) and reranker.error:
            notes.append(f"reranker {reranker.name} unavailable, fused order kept: {reranker.error}")
    return Results(hits[:k], notes)
