"""BM25 over posting blocks: every way of addressing the length array gives the textbook scores.

The channel maps chunk ids to positions three ways (contiguous ids, a position table, a binary
search) and caches the length norms per snapshot; each path is checked against BM25 written
out term by term, and against the others.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from diarist.lexical.bm25 import K1, B, Layout, score_blocks
from diarist.lexical.postings import BLOCK_BITS, BLOCK_SIZE, pack
from diarist.store.base import DocLengths


def corpus(ids: np.ndarray, seed: int) -> tuple[DocLengths, dict[int, list[tuple[int, bytes]]], dict[int, dict[int, int]]]:
    """Random documents over 6 terms: lengths, posting blocks, and the same postings as dicts."""
    rng = np.random.default_rng(seed)
    lengths = DocLengths(None, ids, rng.integers(1, 200, len(ids)).astype(np.float64))
    postings: dict[int, dict[int, int]] = {}
    for term in range(6):
        chosen = np.sort(rng.choice(ids, size=max(1, len(ids) // (term + 2)), replace=False))
        postings[term] = {int(c): int(rng.integers(1, 5)) for c in chosen}
    blocks: dict[int, list[tuple[int, bytes]]] = {}
    for term, docs in postings.items():
        by_block: dict[int, list[tuple[int, int]]] = {}
        for chunk, tf in docs.items():
            by_block.setdefault(chunk >> BLOCK_BITS, []).append((chunk & (BLOCK_SIZE - 1), tf))
        blocks[term] = [(number, pack(pairs)) for number, pairs in sorted(by_block.items())]
    return lengths, blocks, postings


def textbook(lengths: DocLengths, postings: dict[int, dict[int, int]], depth: int) -> list[tuple[int, float]]:
    n = len(lengths.ids)
    avgdl = float(lengths.lengths.sum()) / n
    length_of = dict(zip(lengths.ids.tolist(), lengths.lengths.tolist()))
    scores: dict[int, float] = {}
    for term in sorted(postings):
        df = len(postings[term])
        term_idf = math.log1p((n - df + 0.5) / (df + 0.5))
        for chunk, tf in postings[term].items():
            norm = K1 * (1 - B + B * length_of[chunk] / avgdl)
            scores[chunk] = scores.get(chunk, 0.0) + term_idf * tf * (K1 + 1) / (tf + norm)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:depth]


ADDRESSINGS = {
    "contiguous": lambda: np.arange(5_000, 9_000, dtype=np.int64),
    "table": lambda: np.arange(5_000, 17_000, 3, dtype=np.int64),
    "binary search": lambda: np.arange(5_000, 600_000, 150, dtype=np.int64),
}


@pytest.mark.parametrize("name", ADDRESSINGS)
def test_each_addressing_scores_like_the_textbook(name):
    ids = ADDRESSINGS[name]()
    lengths, blocks, postings = corpus(ids, seed=len(ids))
    layout = Layout.of(lengths)
    assert layout.contiguous == (name == "contiguous")
    assert (layout.table is not None) == (name == "table")
    got = score_blocks(blocks, layout, len(ids), int(lengths.lengths.sum()), 50, K1, B)
    want = textbook(lengths, postings, 50)
    assert [c for c, _ in got] == [c for c, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)


def test_postings_outside_the_snapshot_are_ignored_on_every_path():
    """A racing writer's postings (chunks the lengths snapshot does not hold) never rank."""
    for name, make in ADDRESSINGS.items():
        ids = make()
        lengths, blocks, _ = corpus(ids, seed=3)
        held = DocLengths(None, ids[5:-5], lengths.lengths[5:-5])
        outside = set(ids[:5].tolist()) | set(ids[-5:].tolist())
        got = score_blocks(blocks, Layout.of(held), len(held.ids), int(held.lengths.sum()), 10_000, K1, B)
        assert got and not {c for c, _ in got} & outside, name


def test_a_layout_and_plain_lengths_give_the_same_floats():
    lengths, blocks, _ = corpus(np.arange(1, 3_000, 2, dtype=np.int64), seed=9)
    total = int(lengths.lengths.sum())
    layout = Layout.of(lengths)
    first = score_blocks(blocks, layout, len(lengths.ids), total, 100, K1, B)
    assert score_blocks(blocks, layout, len(lengths.ids), total, 100, K1, B) == first  # cached norms
    assert score_blocks(blocks, lengths, len(lengths.ids), total, 100, K1, B) == first
    other = score_blocks(blocks, layout, len(lengths.ids), total, 100, 1.2, 0.5)  # other parameters
    assert other != first and score_blocks(blocks, layout, len(lengths.ids), total, 100, K1, B) == first


@pytest.mark.parametrize("depth", [1, 7, 50, 400, 5_000])
@pytest.mark.parametrize("seed", range(4))
def test_the_bound_on_the_cut_changes_no_ranking(depth, seed, monkeypatch):
    """score_blocks keeps only chunks at or over a lower bound on the depth-th best score; with
    the bound switched off (every chunk reached competes) the ranking is the same, ties at the
    cut included (few distinct term frequencies and lengths give many exact ties)."""
    import diarist.lexical.bm25 as bm25

    rng = np.random.default_rng(seed)
    ids = np.arange(1, 6_000, dtype=np.int64)
    lengths = DocLengths(None, ids, rng.choice([10.0, 20.0], len(ids)))
    blocks: dict[int, list[tuple[int, bytes]]] = {}
    for term in range(5):
        chosen = np.sort(rng.choice(ids, size=int(rng.integers(1, 3_000)), replace=False))
        by_block: dict[int, list[tuple[int, int]]] = {}
        for chunk in chosen.tolist():
            by_block.setdefault(chunk >> BLOCK_BITS, []).append((chunk & (BLOCK_SIZE - 1), int(rng.integers(1, 3))))
        blocks[term] = [(number, pack(pairs)) for number, pairs in sorted(by_block.items())]
    args = (blocks, Layout.of(lengths), len(ids), int(lengths.lengths.sum()), depth, K1, B)
    bounded = score_blocks(*args)
    monkeypatch.setattr(bm25, "_cut_at_most", lambda *a: None)
    assert bounded == score_blocks(*args)
    assert len(bounded) == min(depth, len({c for term in blocks.values() for number, data in term
                                           for c in ((number << BLOCK_BITS) + np.frombuffer(data, "<u2")[0::2]).tolist()}))


def test_norms_looked_up_by_length_are_the_floats_of_the_norm_per_chunk():
    """Whole lengths are read as uint16 and their norms looked up in a table of one entry per
    length: the scores are the same floats as with a norm gathered per chunk."""
    import dataclasses

    for name, make in ADDRESSINGS.items():
        lengths, blocks, _ = corpus(make(), seed=11)
        layout = Layout.of(lengths)
        assert layout.short_lengths is not None, name
        per_chunk = dataclasses.replace(layout, short_lengths=None, norms={})
        total = int(lengths.lengths.sum())
        for k1, b in ((K1, B), (1.2, 0.4)):
            tabled = score_blocks(blocks, layout, len(lengths.ids), total, 300, k1, b)
            assert tabled == score_blocks(blocks, per_chunk, len(lengths.ids), total, 300, k1, b), name
            assert len(tabled) == 300


@pytest.mark.parametrize("lengths", [[3.0, 1.5, 7.0], [3.0, 70_000.0, 2.0], [3.0, -1.0, 2.0]])
def test_lengths_a_table_cannot_hold_are_gathered_per_chunk(lengths):
    """A fractional, negative or over-uint16 length: no table; the scores are still BM25's."""
    ids = np.arange(1, len(lengths) + 1, dtype=np.int64)
    held = DocLengths(None, ids, np.asarray(lengths))
    layout = Layout.of(held)
    assert layout.short_lengths is None
    postings = {0: {1: 2, 2: 1}, 1: {2: 3, 3: 1}}
    blocks = {term: [(0, pack(sorted(docs.items())))] for term, docs in postings.items()}
    total = float(sum(lengths))
    got = score_blocks(blocks, layout, len(ids), total, 10, K1, B)
    n, avgdl = len(ids), total / len(ids)
    want: dict[int, float] = {}
    for term in sorted(postings):
        term_idf = math.log1p((n - len(postings[term]) + 0.5) / (len(postings[term]) + 0.5))
        for chunk, tf in postings[term].items():
            norm = K1 * (1 - B + B * lengths[chunk - 1] / avgdl)
            want[chunk] = want.get(chunk, 0.0) + term_idf * tf * (K1 + 1) / (tf + norm)
    assert [c for c, _ in got] == sorted(want, key=lambda c: (-want[c], c))
    assert [s for _, s in got] == pytest.approx(sorted(want.values(), reverse=True), rel=1e-12)
