"""Search as explicit stages: channels -> fusion -> hits -> second stage -> floor.

The two channels rank independently (``vestige.vectors`` and ``vestige.lexical``); fusion
combines their ranks; the hits explain their place in each; a second stage may re-read the
top candidates; the absolute floor may answer "nothing relevant".
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from .. import lexical, settings
from ..embed.base import Embedder
from ..lexical import LexicalChannel
from ..rerank.base import LazyReranker, Reranker
from ..store.base import ChunkRow, LexicalUnavailable, Store
from ..types import Hit
from ..vectors import DenseIndex, ExactDenseIndex
from ..errors import ConfigError
from .floor import Floor, verdict
from .fusion import FUSIONS, Fused, convex, rrf

log = logging.getLogger("vestige")


@dataclass(frozen=True)
class SearchSettings:
    depth: int = settings.DEPTH  # each channel ranks this deep, well beyond the budget
    fusion: str = settings.FUSION  # "convex" | "rrf"
    dense_weight: float = settings.FUSION_DENSE_WEIGHT  # convex: the dense channel's share
    rrf_k: int = settings.FUSION_RRF_K
    k1: float = settings.BM25_K1
    b: float = settings.BM25_B
    lexical: bool = True  # False: the vector-only ranking, byte for byte
    rerank_depth: int = settings.RERANK_DEPTH  # the second stage re-reads this many fused candidates
    floor: Floor | None = None  # the relevance floor (vestige.read.floor): may answer nothing
    # The plan indexes some text twice (views "both", "split-apart", "...+turns"): every
    # candidate of the pool is fetched at once, so a hit merges the best ranks of all its copies
    # there. Otherwise rows are fetched only as far as the hits need (most searches read k rows).
    fetch_whole_pool: bool = False


def check_fusion(fusion: object) -> str:
    if fusion not in FUSIONS:
        raise ConfigError(f"unknown fusion {fusion!r}; use one of {', '.join(FUSIONS)}")
    return str(fusion)


def check_dense_weight(weight: object) -> float:
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 <= weight <= 1.0:
        raise ConfigError(f"dense_weight must be a number from 0 to 1, got {weight!r}")
    return float(weight)


class Results(list):
    """A list of hits, with notes on anything that degraded the search (a fallback, say)."""

    def __init__(self, hits: list[Hit] = (), notes: list[str] | None = None, best_cosine: float | None = None,
                 comparable: bool = False):
        super().__init__(hits)
        self.notes: list[str] = notes or []
        # True when every hit's score is on one scale a ratio can be read on (the convex
        # fusion's [0, 1]); RRF and cosine-only scores are not.
        self.comparable = comparable
        # The best dense cosine of any chunk: the absolute score the relevance floor reads.
        self.best_cosine = best_cosine


@dataclass(frozen=True)
class Channels:
    """What a search reads: the store (for chunk text), both channels, and the embedder."""

    store: Store
    dense: DenseIndex
    lexical: LexicalChannel
    embedder: Embedder
    # The chunks a metadata filter allows (ascending ids), or None for all. A filtered search
    # scans exactly (``filtered_dense``): an approximate graph cannot promise depth rows of a
    # filter it was not built for.
    allowed: np.ndarray | None = None
    filtered_dense: ExactDenseIndex | None = None


def run_search(
    channels: Channels,
    app: str,
    query: str,
    k: int,
    settings: SearchSettings,
    previous: str | None = None,
    reranker: Reranker | None = None,
    now: datetime | None = None,
) -> Results:
    if k <= 0:
        return Results()
    # A follow-up carries no topic of its own: embed it alone and with the previous turn, in
    # one call; each chunk keeps its best score, so the stand-alone result is never lost.
    texts = [query] if not previous else [query, f"{previous}\n{query}"]
    query_vectors = channels.embedder.embed_query(texts)
    depth = max(settings.depth, k)
    # The second stage may lift any of the top rerank_depth candidates into the budget.
    pool = max(k, settings.rerank_depth) if reranker is not None and settings.lexical else k
    pool *= 2  # room for the duplicates merged below (fetched only as far as they are needed)
    # The lexical channel starts first, in its worker thread, and runs while the dense one does.
    lexical_job = None
    if settings.lexical:
        terms = lexical.analyze(query)
        if previous:
            terms += lexical.analyze(previous)
        lexical_job = channels.lexical.submit(app, terms, depth, settings.k1, settings.b, allowed=channels.allowed)
    try:
        if channels.allowed is None:
            dense = channels.dense.search(app, query_vectors, depth)
        else:
            assert channels.filtered_dense is not None
            dense = channels.filtered_dense.search(app, query_vectors, depth, allowed=channels.allowed)
    except BaseException:
        _abandon(lexical_job)
        raise
    notes: list[str] = []
    best_cosine = dense[0][1] if dense else None
    # An absolute floor can say "nothing": fused scores are normalised per query, so it reads
    # the cosine, the question's form and the lexical index's vocabulary (vestige.read.floor).
    # With no vectors at all (nothing dense stored) there is no evidence either way: no floor.
    if settings.floor is not None and best_cosine is not None:
        # The lexical kill switch leaves the index unread here too: the floor reads no coverage.
        # Terms are looked up in the whole app, a metadata filter's part or not.
        held = (lambda terms: channels.lexical.held(app, terms)) if settings.lexical else (lambda terms: None)
        # A follow-up is judged with its previous turn, as both channels read it.
        why = verdict(settings.floor, best_cosine, texts[-1], held)
        if why is not None:
            _abandon(lexical_job)
            notes.append(f"nothing relevant: {why}")
            return Results([], notes, best_cosine)
    lexical_ranking: list[tuple[int, float]] | None = None
    if lexical_job is not None:
        try:
            lexical_ranking = lexical_job.result()
        except LexicalUnavailable as exc:
            note = f"lexical channel off, searching by vectors only: {exc}"
            log.warning(note)
            notes.append(note)
    if lexical_ranking is None:
        chosen = [(cid, score, {"dense": rank, "lexical": None}) for rank, (cid, score) in enumerate(dense[:pool], 1)]
        stage = "dense"
    else:
        chosen = _fuse(dense, lexical_ranking, settings, depth, pool)
        stage = "fused"
    wanted = len(chosen) if settings.fetch_whole_pool else pool // 2
    hits = _fetch_hits(channels.store, app, chosen, wanted, dense, lexical_ranking or [], stage)
    # The second stage re-reads fused candidates. Without the lexical channel (the kill switch,
    # or an index that cannot be trusted) search is the vector-only ranking, byte for byte.
    if reranker is not None and hits and lexical_ranking is not None:
        head = reranker.rerank(query, hits[: settings.rerank_depth], now)
        hits = head + hits[settings.rerank_depth :]
        if isinstance(reranker, LazyReranker) and reranker.error:
            notes.append(f"reranker {reranker.name} unavailable, fused order kept: {reranker.error}")
    comparable = lexical_ranking is not None and settings.fusion == "convex"
    return Results(hits[:k], notes, best_cosine, comparable)


def _fetch_hits(store: Store, app: str, chosen: Fused, wanted: int, dense: list[tuple[int, float]],
                lexical_ranking: list[tuple[int, float]], stage: str) -> list[Hit]:
    """The first ``wanted`` distinct hits of the candidates, fetching their rows in order and
    only as many as that takes: most searches read ``wanted`` rows, not the whole pool.

    A chunk ranked a moment ago may have been deleted by another writer since: it is left out
    (the result is what the memory held at some instant of the search), never a crash.
    """
    fetched: list[Hit] = []
    hits: list[Hit] = []
    taken = 0
    while taken < len(chosen) and len(hits) < wanted:
        step = chosen[taken : taken + wanted - len(hits)]
        taken += len(step)
        rows = store.fetch_chunks(app, [cid for cid, _, _ in step])
        fetched += [_hit(rows[cid], score, ranks, dense, lexical_ranking, stage, app)
                    for cid, score, ranks in step if cid in rows]
        hits = _merge_duplicates(fetched)
    return hits


def _abandon(job: Future | None) -> None:
    """The lexical half is no longer needed: cancel it if it has not started; if it has, let it
    finish unobserved (its exception, if any, is dropped: the search answered without it)."""
    if job is not None and not job.cancel():
        job.add_done_callback(lambda done: done.exception())


def _fuse(dense: list[tuple[int, float]], lexical_ranking: list[tuple[int, float]], settings: SearchSettings,
          depth: int, pool: int) -> list[tuple[int, float, dict[str, int | None]]]:
    """The first ``pool`` of the fused ranking."""
    if settings.fusion == "rrf":
        return rrf({"dense": [c for c, _ in dense], "lexical": [c for c, _ in lexical_ranking]}, settings.rrf_k)[:pool]
    return convex(dense, lexical_ranking, settings.dense_weight, depth, limit=pool)


def _hit(
    row: ChunkRow,
    score: float,
    ranks: dict[str, int | None],
    dense: list[tuple[int, float]],
    lexical_ranking: list[tuple[int, float]],
    stage: str,
    app: str,
) -> Hit:
    cid = row.chunk_id
    return Hit(
        chunk_id=cid,
        text=row.text,
        score=score,
        session_id=row.session_id,
        fact_id=row.fact_id,
        date=row.date,
        roles=row.roles,
        view=row.view,
        ranks=ranks,
        scores={"dense": _score_at(dense, ranks.get("dense"), cid),
                "lexical": _score_at(lexical_ranking, ranks.get("lexical"), cid)},
        stage=stage,
        app=app,
        first_turn=row.first_turn,
        last_turn=row.last_turn,
        metadata=dict(row.metadata),
    )


def _score_at(ranking: list[tuple[int, float]], rank: int | None, cid: int) -> float | None:
    """The chunk's score in a channel's ranking, read at its rank there (no lookup table of the
    whole ranking for the k hits); None when the channel did not rank it."""
    if rank is None or not 0 < rank <= len(ranking):
        return None
    item, score = ranking[rank - 1]
    return score if item == cid else dict(ranking).get(cid)  # ranks always index the list itself


def _merge_duplicates(hits: list[Hit]) -> list[Hit]:
    """One hit per distinct text of a session: views "both" and "split-apart" index some text
    twice (once per view or channel). The first keeps its place and the best rank per channel
    of the copies fetched (idempotent: merging a longer list again gives the same ranks)."""
    kept: dict[tuple[str | None, str | None, str], Hit] = {}
    out = []
    for hit in hits:
        key = (hit.session_id, hit.fact_id, hit.text)
        first = kept.get(key)
        if first is None:
            kept[key] = hit
            out.append(hit)
            continue
        for channel, rank in hit.ranks.items():
            if rank is not None and (first.ranks.get(channel) is None or rank < first.ranks[channel]):
                first.ranks[channel] = rank
                first.scores[channel] = hit.scores.get(channel)
    return out
