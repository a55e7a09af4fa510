"""Reciprocal Rank Fusion (a named option): ranks, never scores; k = 60; a one-channel item can at best tie.

The default, convex fusion, is tested in test_convex_fusion.py."""

from __future__ import annotations

import inspect
import random

import pytest

from diarist.read.fusion import RRF_K, rrf
from diarist.read.search import SearchSettings

from conftest import add_all, make_sessions


def test_default_k_is_60():
    assert RRF_K == 60
    assert inspect.signature(rrf).parameters["k"].default == 60
    assert SearchSettings().rrf_k == 60
    (item, score, ranks), = rrf({"dense": [7]})
    assert (item, ranks) == (7, {"dense": 1})
    assert score == pytest.approx(1 / 61)


def test_score_is_the_sum_of_reciprocal_ranks():
    fused = {item: (score, ranks) for item, score, ranks in rrf({"dense": [1, 2, 3], "lexical": [3, 4, 1]}, k=10)}
    assert fused[1][0] == pytest.approx(1 / 11 + 1 / 13)
    assert fused[3][0] == pytest.approx(1 / 13 + 1 / 11)
    assert fused[2][0] == pytest.approx(1 / 12)
    assert fused[4][0] == pytest.approx(1 / 12)
    assert fused[1][1] == {"dense": 1, "lexical": 3}
    assert fused[2][1] == {"dense": 2, "lexical": None}
    assert fused[4][1] == {"dense": None, "lexical": 2}


def test_one_channel_item_ties_the_other_channels_first_at_best():
    fused = rrf({"dense": [1, 2, 3], "lexical": [9, 8]})
    score = {item: s for item, s, _ in fused}
    assert score[9] == score[1], "the lexical #1 ties the dense #1, it cannot beat it"
    assert fused[0][0] == 1 and fused[1][0] == 9  # the tie is broken by id, deterministically


@pytest.mark.parametrize("seed", range(30))
def test_one_channel_items_never_beat_either_channels_first(seed):
    rng = random.Random(seed)
    universe = list(range(60))
    dense = rng.sample(universe, rng.randint(1, 40))
    lexical = rng.sample(universe, rng.randint(1, 40))
    k = rng.choice([0, 1, 10, 60])
    fused = rrf({"dense": dense, "lexical": lexical}, k=k)
    score = {item: s for item, s, _ in fused}
    for item, s, ranks in fused:
        if ranks["lexical"] is None:
            assert s <= score[lexical[0]]
        if ranks["dense"] is None:
            assert s <= score[dense[0]]
    assert {item for item, _, _ in fused} == set(dense) | set(lexical)
    assert [s for _, s, _ in fused] == sorted((s for _, s, _ in fused), reverse=True)


def test_ranks_not_scores():
    """The fused order depends only on each channel's order, never on its raw scores."""
    dense_scores = {1: 0.91, 2: 0.90, 3: 0.10}
    bm25_scores = {3: 1e6, 4: 1e5, 2: 0.001}  # unbounded, wildly different scale
    order = lambda scores: sorted(scores, key=lambda i: -scores[i])  # noqa: E731
    a = rrf({"dense": order(dense_scores), "lexical": order(bm25_scores)})
    squashed = {i: s / 1e9 for i, s in bm25_scores.items()}
    b = rrf({"dense": order(dense_scores), "lexical": order(squashed)})
    assert a == b
    # an enormous BM25 score buys no more than rank 1 does
    assert dict((i, s) for i, s, _ in a)[3] == pytest.approx(1 / 63 + 1 / 61)


def test_deterministic_tie_breaking():
    rankings = {"dense": [5, 3, 8], "lexical": [3, 5, 2]}
    first = rrf(rankings)
    # 5 and 3 tie on score (ranks 1+2 each); then best single rank (both 1); then by id
    assert [i for i, _, _ in first[:2]] == [3, 5]
    # 8 and 2 tie (one channel, rank 3 each): broken by id
    assert [i for i, _, _ in first[2:]] == [2, 8]
    assert rrf({"lexical": rankings["lexical"], "dense": rankings["dense"]}) == first
    assert all(rrf(rankings) == first for _ in range(5))


def test_best_single_rank_breaks_ties_before_id():
    # with k = 0, ranks (1, -), (-, 1) and (2, 2) all score exactly 1.0
    fused = rrf({"a": [9, 4], "b": [3, 4]}, k=0)
    scores = {i: s for i, s, _ in fused}
    assert scores[4] == pytest.approx(scores[9]) == pytest.approx(scores[3])
    # 9 and 3 have a best rank of 1, item 4 only 2: 4 comes last even though its id is between
    assert [i for i, _, _ in fused] == [3, 9, 4]


def test_each_channel_counts_an_item_once_and_hits_report_every_channel():
    fused = rrf({"dense": [1, 1, 2], "lexical": []})
    scores = {i: (s, r) for i, s, r in fused}
    assert scores[1] == (pytest.approx(1 / 61), {"dense": 1, "lexical": None})
    assert scores[2][1] == {"dense": 3, "lexical": None}
    assert rrf({}) == []
    with pytest.raises(ValueError, match="k must be >= 0"):
        rrf({"dense": [1]}, k=-1)


def test_memory_hits_explain_their_ranks(memory):
    memory.reranker = None  # the fused order itself, without the second stage
    add_all(memory, make_sessions(30, seed=3), app="a")
    hits = memory.derive(fusion="rrf").search("copper falcon harbor", app="a", k=10)
    assert len(hits) == 10 and not hits.notes
    query_vec = memory.embedder.embed(["copper falcon harbor"])
    dense = [c for c, _ in memory.dense.search("a", query_vec, 200)]
    lexical = [c for c, _ in memory.lexical.search("a", ["copper", "falcon", "harbor"], 200, 1.5, 0.75)]
    for hit in hits:
        assert set(hit.ranks) == {"dense", "lexical"}
        assert hit.stage == "fused"
        expect_dense = dense.index(hit.chunk_id) + 1 if hit.chunk_id in dense else None
        expect_lex = lexical.index(hit.chunk_id) + 1 if hit.chunk_id in lexical else None
        assert hit.ranks == {"dense": expect_dense, "lexical": expect_lex}
        # the fused score is computed from the ranks alone
        assert hit.score == pytest.approx(sum(1 / (60 + r) for r in hit.ranks.values() if r))
        assert hit.session_id and hit.date and hit.app == "a"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert [h.chunk_id for h in hits] == [i for i, _, _ in rrf({"dense": dense, "lexical": lexical})[:10]]


def test_one_ranking_fuses_to_its_own_order_each_item_at_its_first_place():
    """The one-ranking shortcut (the evidence second stage's usual call) gives what the sum over
    channels gives: 1 / (k + first rank), best first, a repeated item once at its first place."""
    fused = rrf({"fused": [5, 2, 5, 9, 2, 7]}, k=3)
    assert fused == [(5, 1 / 4, {"fused": 1}), (2, 1 / 5, {"fused": 2}), (9, 1 / 7, {"fused": 4}),
                     (7, 1 / 9, {"fused": 6})]
    assert rrf({"fused": []}) == []
