"""Convex fusion of normalised scores (the default): what it computes, and the property it keeps.

The property: raising a chunk's score in one channel never lowers its fused rank (nor lowering
it ever raises the rank), whatever the other chunks score.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from diarist import settings
from diarist.errors import ConfigError
from diarist.ranking import Ranking, top
from diarist.read import search
from diarist.read import fusion
from diarist.read.fusion import (COSINE_FLOOR, LEAN, NO_LEAN, Lean, convex, convex_ranking, lean_on_meaning,
                                  normalise_dense, normalise_lexical)

from conftest import add_all, first_per_memory, make_sessions


def _place(fused, item):
    return [i for i, _, _ in fused].index(item)


def test_scores_are_the_weighted_sum_of_theoretical_min_max():
    dense = [(1, 0.8), (2, 0.2), (3, -0.5)]
    lexical = [(3, 12.0), (4, 3.0)]
    fused = {i: (s, r) for i, s, r in convex(dense, lexical, 0.4, depth=200)}
    d = lambda cos: (cos - COSINE_FLOOR) / (0.8 - COSINE_FLOOR)  # noqa: E731
    assert fused[1][0] == pytest.approx(0.4 * 1.0 + 0.6 * 0.0)
    assert fused[2][0] == pytest.approx(0.4 * d(0.2))
    assert fused[3][0] == pytest.approx(0.4 * d(-0.5) + 0.6 * 1.0)
    assert fused[4][0] == pytest.approx(0.6 * 3.0 / 12.0)
    assert fused[3][1] == {"dense": 3, "lexical": 1}
    assert fused[4][1] == {"dense": None, "lexical": 2}


def test_a_decisive_channel_keeps_its_margin():
    """BM25 ranks a chunk first by a wide margin, the dense channel ranks it 42nd: RRF lets any
    chunk both channels rank around 5th-10th beat it; the convex fusion keeps it first."""
    dense = [(i, 0.60 - i * 0.002) for i in range(100, 141)] + [(1, 0.52)]
    lexical = [(1, 20.0)] + [(i, 2.0 - (i - 100) * 0.01) for i in range(100, 110)]
    assert convex(dense, lexical, 0.5, depth=200)[0][0] == 1


def test_missing_from_a_cut_list_gets_its_last_score_and_from_a_whole_list_the_floor():
    dense = [(1, 0.9), (2, 0.5)]
    lexical = [(3, 4.0)]
    cut = {i: s for i, s, _ in convex(dense, lexical, 0.5, depth=2)}  # dense was cut at depth 2
    whole = {i: s for i, s, _ in convex(dense, lexical, 0.5, depth=200)}
    assert cut[3] == pytest.approx(0.5 * normalise_dense(dense)[2] + 0.5)
    assert whole[3] == pytest.approx(0.5)


def _scored(rng: random.Random, low: float, high: float) -> list[tuple[int, float]]:
    """A channel's answer: some of 40 ids with scores in [low, high], best first."""
    ids = rng.sample(range(40), rng.randint(1, 30))
    return sorted(((i, rng.uniform(low, high)) for i in ids), key=lambda t: -t[1])


@pytest.mark.parametrize("seed", range(60))
def test_raising_a_score_in_one_channel_never_lowers_the_fused_rank(seed):
    rng = random.Random(seed)
    dense, lexical = _scored(rng, -0.3, 0.9), _scored(rng, 0.0, 15.0)
    weight = rng.choice([0.0, 0.3, 0.5, 0.7, 1.0])
    before = convex(dense, lexical, weight, depth=200)
    channel = rng.choice(["dense", "lexical"])
    scored = dense if channel == "dense" else lexical
    item, score = rng.choice(scored)
    raised_score = score + rng.uniform(0.01, 5.0) * (0.2 if channel == "dense" else 3.0)
    raised = [(i, raised_score if i == item else s) for i, s in scored]
    raised.sort(key=lambda t: -t[1])
    after = convex(raised, lexical, weight, 200) if channel == "dense" else convex(dense, raised, weight, 200)
    assert _place(after, item) <= _place(before, item)


def test_normalisers_map_into_zero_one():
    assert normalise_dense([]) == {} and normalise_lexical([]) == {}
    assert normalise_dense([(1, 0.3)]) == {1: 1.0}
    assert normalise_lexical([(1, 0.0)]) == {1: 0.0}  # all-zero BM25: nothing to prefer
    values = normalise_dense([(i, c) for i, c in enumerate([0.9, 0.1, -1.0])]).values()
    assert all(0.0 <= v <= 1.0 for v in values)


def test_weight_outside_zero_one_is_refused():
    with pytest.raises(ValueError, match="dense weight"):
        convex([(1, 0.5)], [], 1.5, 200)


def test_memory_default_is_convex_and_options_are_checked(memory):
    assert memory.settings.fusion == settings.FUSION == "convex"
    assert memory.settings.dense_weight == settings.FUSION_DENSE_WEIGHT
    with pytest.raises(ConfigError, match="unknown fusion"):
        memory.derive(fusion="sum")
    with pytest.raises(ConfigError, match="dense_weight"):
        memory.derive(dense_weight=2)
    with pytest.raises(ConfigError, match="dense_weight"):
        memory.derive(dense_weight=True)


def test_memory_hits_carry_the_convex_score(memory):
    memory.reranker = None
    add_all(memory, make_sessions(30, seed=3), app="a")
    hits = memory.search("copper falcon harbor", app="a", k=10)
    query_vec = memory.embedder.embed(["copper falcon harbor"])
    dense = memory.dense.search("a", query_vec, 200)
    lexical = memory.lexical.search("a", ["copper", "falcon", "harbor"], 200, 1.5, 0.75)
    weight = lean_on_meaning(settings.FUSION_DENSE_WEIGHT, lexical)  # the question's own weight
    expected = first_per_memory(memory, "a", convex(dense, lexical, weight, 200))[:10]
    assert [h.chunk_id for h in hits] == [i for i, _, _ in expected]  # each memory at its best chunk
    assert [h.score for h in hits] == pytest.approx([s for _, s, _ in expected])
    assert all(h.stage == "fused" for h in hits)


def test_weight_one_is_the_dense_order_and_zero_the_lexical_order(memory):
    memory.reranker = None
    add_all(memory, make_sessions(30, seed=5), app="a")
    query = "copper falcon harbor"
    dense_first = memory.derive(dense_weight=1.0, group=False).search(query, app="a", k=5)
    assert [h.ranks["dense"] for h in dense_first] == [1, 2, 3, 4, 5]
    lexical_first = memory.derive(dense_weight=0.0, group=False).search(query, app="a", k=3)
    assert [h.ranks["lexical"] for h in lexical_first] == [1, 2, 3]


def test_the_lab_default_is_what_memory_does_by_default():
    """Bench config "default" measures what ships: every search option of Memory()."""
    from diarist.bench.configs import get_config
    from diarist.read.search import SearchSettings

    c = get_config("default")
    shipped = SearchSettings()
    assert (c.fusion, c.dense_weight, c.rrf_k, c.k1, c.b, c.depth, c.rerank_depth) == (
        shipped.fusion, shipped.dense_weight, shipped.rrf_k, shipped.k1, shipped.b, shipped.depth, shipped.rerank_depth)
    assert c.reranker == settings.RERANKER and c.view == settings.PLAN
    assert c.floor is None  # the lab measures rankings; the floor is calibrated apart


def _reference_convex(dense, lexical, w, depth):
    """The per-item formula, item by item in Python floats (the first implementation)."""
    dense_n, lexical_n = normalise_dense(dense), normalise_lexical(lexical)
    dense_missing = dense_n[dense[-1][0]] if dense and len(dense) >= depth else 0.0
    lexical_missing = lexical_n[lexical[-1][0]] if lexical and len(lexical) >= depth else 0.0
    ranks: dict = {}
    for channel, scored in (("dense", dense), ("lexical", lexical)):
        for rank, (item, _) in enumerate(scored, start=1):
            ranks.setdefault(item, {}).setdefault(channel, rank)
    for item_ranks in ranks.values():
        for channel in ("dense", "lexical"):
            item_ranks.setdefault(channel, None)
    scores = {item: w * dense_n.get(item, dense_missing) + (1.0 - w) * lexical_n.get(item, lexical_missing)
              for item in ranks}
    return sorted(((item, scores[item], ranks[item]) for item in scores),
                  key=lambda t: (-t[1], min(r for r in t[2].values() if r is not None), t[0]))


@pytest.mark.parametrize("seed", range(40))
def test_the_vectorised_fusion_is_the_per_item_formula_to_the_bit(seed):
    rng = random.Random(seed)
    depth = rng.choice([3, 10, 50])
    pool = rng.sample(range(1, 400), 120)
    coarse = rng.random() < 0.5  # few distinct scores: many exact ties to break
    def channel(lo, hi):
        n = rng.randint(0, depth)
        items = rng.sample(pool, n)
        scores = sorted((round(rng.uniform(lo, hi), 1 if coarse else 12) for _ in items), reverse=True)
        return list(zip(items, scores))
    dense, lexical = channel(-0.3, 0.9), channel(0.0, 25.0)
    if rng.random() < 0.1:
        lexical = [(item, 0.0) for item, _ in lexical]  # nothing matched any better
    w = rng.choice([0.0, 0.3, 0.5, 0.71, 1.0])
    got = convex(dense, lexical, w, depth)
    want = _reference_convex(dense, lexical, w, depth)
    assert [(i, s) for i, s, _ in got] == [(i, s) for i, s, _ in want]  # floats compared exactly
    assert [list(r.items()) for _, _, r in got] == [list(r.items()) for _, _, r in want]  # key order too
    limit = rng.randint(0, len(want) + 2)
    assert convex(dense, lexical, w, depth, limit=limit) == got[:limit]  # a limit only cuts the list
    # Channels hand their rankings over with arrays attached: read as such, the same fusion.
    as_ranking = [Ranking(np.array([i for i, _ in c], np.int64), np.array([x for _, x in c], dtype))
                  for c, dtype in ((dense, np.float32), (lexical, np.float64))]
    as_lists = [list(as_ranking[0]), lexical]
    assert convex(*as_ranking, w, depth) == convex(*as_lists, w, depth)
    # Read lazily as the read path reads it (slices in steps, then an entry, then its length):
    # the same entries as the list.
    lazy, start = convex_ranking(dense, lexical, w, depth), 0
    while start < len(got):
        step = rng.randint(1, 40)
        assert lazy[start : start + step] == got[start : start + step]
        start += step
    assert len(lazy) == len(got) and (not got or (lazy[-1] == got[-1] and lazy[0] == got[0]))


def test_top_hands_over_the_pairs_and_their_arrays():
    ids, scores = np.array([5, 9, 2, 7], np.int64), np.array([0.5, 0.9, 0.9, 0.1], np.float32)
    ranked = top(ids, scores, 3)
    assert isinstance(ranked, Ranking) and ranked == [(2, float(np.float32(0.9))), (9, float(np.float32(0.9))), (5, 0.5)]
    assert ranked.ids.tolist() == [2, 9, 5] and ranked.scores.tolist() == [s for _, s in ranked]
    assert top(ids[:0], scores[:0], 3) == [] and top(ids, scores, 0) == []


def test_a_hit_reads_each_channel_score_at_its_rank():
    row = (6, "text", "s1", None, None, "user", "all", 0, 0, None)  # a HitRow

    def scores(ranks, dense, lexical):
        return search._hit(row, 0.5, ranks, dense, lexical, "fused", "app").scores

    ranking = [(4, 0.8), (6, 0.5)]
    assert scores({"dense": 2, "lexical": None}, ranking, []) == {"dense": 0.5, "lexical": None}
    assert scores({"dense": 3, "lexical": 1}, ranking, [(6, 7.0)]) == {"dense": None, "lexical": 7.0}  # past the end
    # a rank not of this id: looked up
    assert scores({"dense": 2, "lexical": 2}, [(6, 0.5), (4, 0.8)], [(6, 2.0), (4, 1.0)]) == {"dense": 0.5, "lexical": 2.0}


# -- a question naming no rare word leans on meaning (issue 41) -----------------------------------


def test_a_question_whose_best_bm25_is_low_leans_on_meaning():
    lean = Lean(((3.0, 0.95), (5.0, 0.85)))
    assert lean_on_meaning(0.75, [(1, 2.9), (2, 1.0)], lean) == 0.95
    assert lean_on_meaning(0.75, [(1, 3.0), (2, 1.0)], lean) == 0.85  # the second step
    assert lean_on_meaning(0.75, [(1, 4.99)], lean) == 0.85
    assert lean_on_meaning(0.75, [(1, 5.0), (2, 1.0)], lean) == 0.75  # a rare word: the shipped weight
    assert lean_on_meaning(0.75, [(1, 1.0), (2, 7.5)], lean) == 0.75  # the best score, wherever listed
    assert lean_on_meaning(0.75, [], lean) == 0.75  # no lexical candidate: nothing to lean from
    assert lean_on_meaning(0.75, Ranking(np.array([4, 5]), np.array([2.0, 1.0], dtype=np.float32)), lean) == 0.95


def test_a_weight_chosen_for_one_channel_or_above_the_lean_is_kept():
    lean = Lean(((3.0, 0.95),))
    for weight in (0.0, 0.97, 1.0):
        assert lean_on_meaning(weight, [(1, 0.5)], lean) == weight
    assert lean_on_meaning(0.75, [(1, 0.5)], NO_LEAN) == 0.75


def test_the_shipped_lean_is_read_at_call_time(monkeypatch):
    monkeypatch.setattr(fusion, "LEAN", Lean(((100.0, 0.9),)))
    assert lean_on_meaning(0.75, [(1, 50.0)]) == 0.9
    monkeypatch.setattr(fusion, "LEAN", NO_LEAN)
    assert lean_on_meaning(0.75, [(1, 0.1)]) == 0.75
    belows = [below for below, _ in LEAN.steps]
    assert belows == sorted(belows) and all(settings.FUSION_DENSE_WEIGHT < w <= 1.0 for _, w in LEAN.steps)


def test_a_fact_sharing_no_word_outranks_a_chat_sharing_one_common_word():
    """Issue 41's diagnosis: the chat (cosine 0.028, the only lexical match, on "now") fused above
    the fact (cosine 0.419, no shared word) at the shipped weight; leaning on meaning, the fact is first."""
    dense = [(1, 0.419), (2, 0.028)]  # 1: "The user moved to Porto", 2: the pandas chat
    lexical = [(2, 1.7)]  # one common word: a low best BM25
    shipped = convex(dense, lexical, settings.FUSION_DENSE_WEIGHT, depth=200)
    assert [i for i, _, _ in shipped] == [2, 1]
    leaned = convex(dense, lexical, lean_on_meaning(settings.FUSION_DENSE_WEIGHT, lexical, LEAN), depth=200)
    assert [i for i, _, _ in leaned] == [1, 2]


def test_memory_search_leans_only_where_the_best_bm25_is_low(memory, monkeypatch):
    memory.reranker = None
    add_all(memory, make_sessions(30, seed=3), app="a")
    asked = []
    original = fusion.lean_on_meaning

    def spy(weight, lexical, lean=None):
        asked.append((weight, fusion.best_score(lexical), original(weight, lexical, lean)))
        return asked[-1][2]

    monkeypatch.setattr(fusion, "lean_on_meaning", spy)  # question_dense_weight's second step
    memory.search("copper falcon harbor", app="a", k=5)
    (weight, best, used), = asked
    assert weight == settings.FUSION_DENSE_WEIGHT
    assert used == LEAN.weight(best, weight)
    assert used == next((w for below, w in LEAN.steps if best < below), weight)
