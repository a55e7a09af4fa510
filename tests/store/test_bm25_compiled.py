"""The compiled BM25 pass (lexical/_accumulate.c) gives numpy's rankings to the bit.

setup.py builds it wherever a C compiler is present; score_blocks then scores in one compiled
pass (a block of chunk ids at a time, keeping only what can still rank), and falls back to
numpy when the extension is missing, when the ids are not contiguous, or when a posting lies
outside the lengths snapshot (a racing writer). Every case compares the two paths float for float.
"""

from __future__ import annotations

import shutil
import threading

import numpy as np
import pytest

import diarist.lexical.bm25 as bm25
from diarist.lexical.bm25 import K1, B, Layout, score_blocks
from diarist.lexical.postings import BLOCK_BITS, BLOCK_SIZE, pack
from diarist.store.base import DocLengths

needs_kernel = pytest.mark.skipif(bm25.kernel is None, reason="the C extension is not built")


def test_the_extension_is_built_where_a_compiler_is():
    """The test command installs the package with a C compiler at hand: the compiled path is
    what these tests exercise, so its absence there is a failure, not a skip."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: the numpy path serves")
    assert bm25.kernel is not None


def blocks_of(rng: np.random.Generator, ids: np.ndarray, terms: int, tf_high: int = 4) -> dict[int, list[tuple[int, bytes]]]:
    blocks: dict[int, list[tuple[int, bytes]]] = {}
    for term in range(terms):
        size = int(rng.integers(1, len(ids)))
        chosen = np.sort(rng.choice(ids, size=size, replace=False))
        by_block: dict[int, list[tuple[int, int]]] = {}
        for chunk in chosen.tolist():
            by_block.setdefault(chunk >> BLOCK_BITS, []).append((chunk & (BLOCK_SIZE - 1), int(rng.integers(1, tf_high))))
        blocks[term * 7 + 3] = [(number, pack(pairs)) for number, pairs in sorted(by_block.items())]
    return blocks


def random_app(seed: int, size: int, terms: int) -> tuple[np.ndarray, DocLengths, dict[int, list[tuple[int, bytes]]]]:
    """Contiguous chunk ids from 1, random lengths, postings of ``terms`` terms."""
    rng = np.random.default_rng(seed)
    ids = np.arange(1, size, dtype=np.int64)
    lengths = DocLengths(None, ids, rng.integers(1, 90, len(ids)).astype(np.float64))
    return ids, lengths, blocks_of(rng, ids, terms)


def both(blocks, layout, n_docs, total, depth, k1=K1, b=B, allowed=None):
    compiled = score_blocks(blocks, layout, n_docs, total, depth, k1, b, allowed, compiled=True)
    plain = score_blocks(blocks, layout, n_docs, total, depth, k1, b, allowed, compiled=False)
    return compiled, plain


@needs_kernel
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("depth", [1, 10, 200, 50_000])
@pytest.mark.parametrize("addressing", ["contiguous", "table"])
def test_compiled_sums_are_numpys_floats(seed, depth, addressing, monkeypatch):
    rng = np.random.default_rng(seed)
    first = int(rng.integers(1, 3 * BLOCK_SIZE))
    step = 1 if addressing == "contiguous" else 3  # another app's chunks between this one's
    ids = np.arange(first, first + step * int(rng.integers(50, 3 * BLOCK_SIZE)), step, dtype=np.int64)
    # Few distinct lengths and frequencies: many exact ties, at the cut too.
    lengths = DocLengths(None, ids, rng.choice([3.0, 17.0, 40.0, 41.0, 300.0], len(ids)))
    blocks = blocks_of(rng, ids, int(rng.integers(1, 7)))
    layout = Layout.of(lengths)
    assert layout.contiguous == (addressing == "contiguous")
    ran = []
    real = bm25.kernel.score
    monkeypatch.setattr(bm25.kernel, "score", lambda *args: ran.append(1) or real(*args))
    total = int(lengths.lengths.sum())
    compiled, plain = both(blocks, layout, len(ids), total, depth)
    assert compiled and compiled == plain
    assert [s.hex() for _, s in compiled] == [s.hex() for _, s in plain]
    assert ran  # the compiled path ran (not a fallback)
    other_parameters = both(blocks, layout, len(ids), total, depth, 1.2, 0.4)
    assert other_parameters[0] == other_parameters[1]


@needs_kernel
def test_compiled_path_filters_by_allowed_like_numpy():
    ids, lengths, blocks = random_app(5, 20_000, 4)
    allowed = np.sort(np.random.default_rng(0).choice(ids, 3_000, replace=False))
    compiled, plain = both(blocks, Layout.of(lengths), len(ids), int(lengths.lengths.sum()), 100, allowed=allowed)
    assert compiled == plain and set(c for c, _ in compiled) <= set(allowed.tolist())


@needs_kernel
@pytest.mark.parametrize("step", [1, 3])
def test_postings_outside_the_snapshot_fall_back_to_numpy(monkeypatch, step):
    """A racing writer's postings (chunks the lengths snapshot does not hold, at its ends or,
    with a position table, between its chunks) make the kernel report them; numpy then drops
    them and counts each term's df without them."""
    rng = np.random.default_rng(8)
    ids = np.arange(100, 100 + 9_000 * step, step, dtype=np.int64)
    lengths = DocLengths(None, ids, rng.integers(1, 90, len(ids)).astype(np.float64))
    blocks = blocks_of(rng, ids, 3)
    keep = np.ones(len(ids), bool)
    keep[:5] = keep[-5:] = False
    if step > 1:
        keep[4_000:4_010] = False
    held = DocLengths(None, ids[keep], lengths.lengths[keep])
    layout = Layout.of(held)
    assert layout.contiguous == (step == 1)
    calls = []
    real = bm25.kernel.score

    def spy(*args):
        out = real(*args)
        calls.append(out)
        return out

    monkeypatch.setattr(bm25.kernel, "score", spy)
    compiled, plain = both(blocks, layout, len(held.ids), int(held.lengths.sum()), 10_000)
    assert calls and calls[0][1] == 1  # the kernel saw them
    assert compiled == plain
    assert not {c for c, _ in compiled} & set(ids[~keep].tolist())


@needs_kernel
def test_lengths_beyond_the_norm_table_are_reported_not_read():
    """A length past the table (a snapshot changed under the caller) is never read out of bounds."""
    positions, sums = np.empty(8, np.int64), np.empty(8, np.float64)
    lengths = np.array([1, 2, 9, 1], np.uint16)
    table = np.array([1.0, 1.1, 1.2], np.float64)
    rows = [[(0, pack([(0, 1), (2, 1), (3, 2)]))]]
    k, bad = bm25.kernel.score(rows, [2.0], 0, BLOCK_BITS, None, lengths, table, K1 + 1, 0, positions, sums)
    assert bad == 1
    with pytest.raises(ValueError):  # no room for every posting
        bm25.kernel.score(rows, [2.0], 0, BLOCK_BITS, None, lengths, table, K1 + 1, 0, positions[:1], sums)
    with pytest.raises(TypeError):
        bm25.kernel.score([[(0, "text")]], [2.0], 0, BLOCK_BITS, None, lengths, table, K1 + 1, 0, positions, sums)


@needs_kernel
def test_blocks_out_of_order_are_reported():
    """Blocks are merged across terms in ascending number: rows out of order are refused
    (numpy, which needs no order, scores them instead)."""
    positions, sums = np.empty(8, np.int64), np.empty(8, np.float64)
    lengths = np.ones(3 * BLOCK_SIZE, np.uint16)
    table = np.array([1.0, 1.1], np.float64)
    rows = [[(2, pack([(0, 1)])), (1, pack([(5, 1)]))]]
    assert bm25.kernel.score(rows, [2.0], 0, BLOCK_BITS, None, lengths, table, K1 + 1, 0, positions, sums)[1] == 1


@needs_kernel
@pytest.mark.parametrize("depth", [1, 3, 40, 0])
def test_with_a_depth_only_chunks_that_can_still_rank_are_written(depth):
    """A superset of the depth best, every chunk tied with the depth-th included; all of them
    without a depth."""
    rng = np.random.default_rng(depth)
    n = 3 * BLOCK_SIZE
    lengths = rng.choice([5, 9], n).astype(np.uint16)
    table = np.array([1.0 + i / 10 for i in range(10)], np.float64)
    rows = []
    for _ in range(3):
        chosen = np.sort(rng.choice(n, 4_000, replace=False))
        rows.append([(int(b), pack([(int(c) & (BLOCK_SIZE - 1), int(rng.integers(1, 3))) for c in chosen if c >> BLOCK_BITS == b]))
                     for b in range(3)])
    positions, sums = np.empty(12_000, np.int64), np.empty(12_000, np.float64)
    k, bad = bm25.kernel.score(rows, [1.0, 2.0, 3.0], 0, BLOCK_BITS, None, lengths, table, K1 + 1, depth, positions, sums)
    every, every_sums = np.empty(12_000, np.int64), np.empty(12_000, np.float64)
    k_all, _ = bm25.kernel.score(rows, [1.0, 2.0, 3.0], 0, BLOCK_BITS, None, lengths, table, K1 + 1, 0, every, every_sums)
    assert not bad and len(set(every[:k_all].tolist())) == k_all
    if depth == 0:
        assert k == k_all
        return
    assert k < k_all
    cutoff = np.sort(every_sums[:k_all])[::-1][depth - 1]
    want = set(every[:k_all][every_sums[:k_all] >= cutoff].tolist())
    assert want <= set(positions[:k].tolist())


@needs_kernel
def test_rows_of_another_shape_are_scored_by_numpy():
    ids, lengths, blocks = random_app(2, 5_000, 3)
    as_lists = {t: [[number, bytearray(data)] for number, data in rows] for t, rows in blocks.items()}
    layout = Layout.of(lengths)
    total = int(lengths.lengths.sum())
    assert score_blocks(as_lists, layout, len(ids), total, 50, K1, B) == score_blocks(blocks, layout, len(ids), total, 50, K1, B)


@needs_kernel
def test_concurrent_searches_on_one_layout_agree_with_numpy():
    """The kernel runs outside the GIL: searches in several threads at once each get their own."""
    rng = np.random.default_rng(4)
    ids = np.arange(1, 60_000, dtype=np.int64)
    lengths = DocLengths(None, ids, rng.integers(1, 90, len(ids)).astype(np.float64))
    layout = Layout.of(lengths)
    total = int(lengths.lengths.sum())
    queries = [blocks_of(np.random.default_rng(10 + i), ids, 4) for i in range(6)]
    want = [score_blocks(q, layout, len(ids), total, 100, K1, B, compiled=False) for q in queries]
    errors: list[str] = []

    def run(i: int) -> None:
        for _ in range(15):
            if score_blocks(queries[i], layout, len(ids), total, 100, K1, B) != want[i]:
                errors.append(f"query {i}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(queries))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors


@needs_kernel
def test_the_binary_search_addressing_stays_with_numpy(monkeypatch):
    """Ids too sparse for a table: numpy serves (the kernel is never asked)."""
    rng = np.random.default_rng(1)
    ids = np.arange(5_000, 600_000, 150, dtype=np.int64)
    lengths = DocLengths(None, ids, rng.integers(1, 90, len(ids)).astype(np.float64))
    layout = Layout.of(lengths)
    assert not layout.contiguous and layout.table is None
    monkeypatch.setattr(bm25.kernel, "score", lambda *args: pytest.fail("kernel used"))
    assert score_blocks(blocks_of(rng, ids, 3), layout, len(ids), int(lengths.lengths.sum()), 50, K1, B)


def test_doctor_says_what_scores_bm25(tmp_path, monkeypatch):
    from diarist import Memory

    mem = Memory(tmp_path / "d.sqlite", embedder="hash")
    line = next(line for line in mem.health().lines if "BM25 scoring" in line)
    assert ("compiled" in line) == (bm25.kernel is not None)
    monkeypatch.setattr(bm25, "kernel", None)
    line = next(line for line in mem.health().lines if "BM25 scoring" in line)
    assert "numpy" in line and "C compiler" in line
    mem.close()


def test_without_the_extension_numpy_gives_the_same_search(tmp_path, monkeypatch):
    """The install without a C compiler: every search answers as with the extension."""
    from diarist import Memory, SessionInput

    mem = Memory(tmp_path / "m.sqlite", embedder="hash")
    mem.add_sessions([SessionInput([{"role": "user", "content": f"note {i}: the heron flew over lighthouse {i % 7}"}],
                                   f"s{i}") for i in range(300)], app="a")
    with_kernel = mem.search("heron lighthouse 3", app="a", k=10)
    monkeypatch.setattr(bm25, "kernel", None)
    without = mem.search("heron lighthouse 3", app="a", k=10)
    assert with_kernel and [(h.chunk_id, h.scores) for h in with_kernel] == [(h.chunk_id, h.scores) for h in without]
    mem.close()


@needs_kernel
def test_a_depth_beyond_the_postings_allocates_nothing_for_it():
    """k is the caller's: a depth of a billion must not ask for a heap of a billion floats (nor
    one whose size in bytes overflows)."""
    ids, lengths, blocks = random_app(3, 2_000, 3)
    layout = Layout.of(lengths)
    for depth in (10**9, 2**62):
        compiled, plain = both(blocks, layout, len(ids), int(lengths.lengths.sum()), depth)
        assert compiled and compiled == plain


def test_an_empty_lengths_snapshot_scores_nothing_on_either_path():
    """Postings read while the lengths snapshot holds no chunk (a racing delete of the app)."""
    rng = np.random.default_rng(0)
    ids = np.arange(1, 500, dtype=np.int64)
    blocks = blocks_of(rng, ids, 2)
    empty = DocLengths(None, np.zeros(0, np.int64), np.zeros(0, np.float64))
    for compiled in (True, False):
        assert score_blocks(blocks, Layout.of(empty), 10, 100, 20, K1, B, compiled=compiled) == []
