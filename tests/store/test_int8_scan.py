"""The exact scan's int8 first pass: exact integer products, and a top equal to the float32 scan's."""

from __future__ import annotations

import numpy as np
import pytest

from diarist.embed.base import dequantize, normalise, quantize
from diarist.ranking import top
from diarist.store.base import IndexedChunk, Item
from diarist.store.sqlite import SQLiteStore
from diarist.types import Chunk, Message
from diarist.vectors import ExactDenseIndex, exact, int8_scan

DIM = 48


def int8_rows(n: int, dim: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-127, 128, (n, dim)).astype(np.int8)


def query_rows(m: int, dim: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-64, 65, (m, dim)).astype(np.int8)


def test_queries_are_quantised_into_the_range_no_kernel_saturates():
    queries = np.random.default_rng(0).normal(size=(5, 384)).astype(np.float32)
    quantised, scales = int8_scan.quantise(queries)
    assert quantised.dtype == np.int8 and np.abs(quantised).max() == int8_scan.QUERY_LIMIT == 64
    assert np.allclose(quantised / scales[:, None], queries, atol=0.5 / scales.min())


@pytest.mark.parametrize("dim", [384, 17])
@pytest.mark.parametrize("m", [1, 3])
def test_products_are_the_exact_integers(dim, m):
    vectors, queries = int8_rows(9000, dim, 1), query_rows(m, dim, 2)
    vectors[:3] = 127  # the extremes: the largest sums
    vectors[3:5] = -127
    queries[0, :] = 64
    truth = (vectors.astype(np.int64) @ queries.astype(np.int64).T).T
    assert int8_scan._broken is None  # the kernel runs here (else the numpy path is tested twice)
    codes = int8_scan.codes_of(vectors)
    assert np.array_equal(int8_scan.int8_of(codes), vectors)
    for got in (int8_scan.PackedProducts(vectors)(queries), int8_scan.products(codes, queries),
                int8_scan.numpy_products(vectors, queries)):
        assert got.dtype == np.int32 and got.shape == (m, 9000)
        assert np.array_equal(got, truth)


def test_the_unpacked_rows_go_through_onnxruntime_from_the_first_call(monkeypatch):
    monkeypatch.setattr(int8_scan, "_checked", False)
    monkeypatch.setattr(int8_scan, "_unpacked", None)
    vectors, queries = int8_rows(500, DIM, 7), query_rows(1, DIM, 8)
    calls = []
    real = int8_scan.numpy_products
    monkeypatch.setattr(int8_scan, "numpy_products", lambda v, q: calls.append(len(v)) or real(v, q))
    got = int8_scan.products(int8_scan.codes_of(vectors), queries)  # before any packed matrix exists
    assert np.array_equal(got, real(vectors, queries))
    assert int8_scan._unpacked is not None and calls == [64]  # numpy ran only for the kernel's check


def test_without_onnxruntime_numpy_gives_the_same_integers(monkeypatch):
    vectors, queries = int8_rows(5000, DIM, 3), query_rows(2, DIM, 4)
    codes = int8_scan.codes_of(vectors)
    want = int8_scan.products(codes, queries)
    monkeypatch.setattr(int8_scan, "_broken", "no kernel in this test")
    monkeypatch.setattr(int8_scan, "_unpacked", None)
    packed = int8_scan.PackedProducts(vectors)
    assert packed._session is None
    assert np.array_equal(packed(queries), want) and np.array_equal(int8_scan.products(codes, queries), want)


def test_a_kernel_wrong_on_the_extremes_is_never_used(monkeypatch):
    """As MLAS's saturating u8 x s8 kernels (CPUs without VNNI) would be for wider operands."""
    real = int8_scan._session

    class Saturating:
        def __init__(self, session):
            self.session = session

        def run(self, outputs, feed):
            return [np.clip(self.session.run(outputs, feed)[0], -30000, 30000)]

    monkeypatch.setattr(int8_scan, "_checked", False)
    monkeypatch.setattr(int8_scan, "_broken", None)
    monkeypatch.setattr(int8_scan, "_unpacked", None)
    monkeypatch.setattr(int8_scan, "_session", lambda vectors: Saturating(real(vectors)))
    vectors, queries = int8_rows(3000, 384, 5), query_rows(1, 384, 6)
    vectors[0], queries[0] = 127, 64  # a product over every clip
    truth = (vectors.astype(np.int64) @ queries.astype(np.int64).T).T
    assert np.array_equal(int8_scan.products(int8_scan.codes_of(vectors), queries), truth)
    assert int8_scan._broken and "not exact" in int8_scan._broken
    packed = int8_scan.PackedProducts(vectors)
    assert packed._session is None and np.array_equal(packed(queries), truth)


def clustered(n: int, seed: int, spread: float = 0.3) -> np.ndarray:
    """Unit vectors around a few centres, quantised as stored; some rows repeated (exact ties)."""
    rng = np.random.default_rng(seed)
    centres = normalise(rng.normal(size=(6, DIM)).astype(np.float32))
    rows = normalise(centres[rng.integers(0, 6, n)] + rng.normal(0, spread, (n, DIM)).astype(np.float32))
    rows[1::97] = rows[::97][: len(rows[1::97])]
    return quantize(rows)


def put(store: SQLiteStore, app: str, vecs: np.ndarray, prefix: str, per_item: int = 500) -> None:
    items = []
    for start in range(0, len(vecs), per_item):
        ext = f"{prefix}{start}"
        chunks = [IndexedChunk(Chunk(f"{ext} {j}", j, ("user",), j, j), v, [ext, str(j)])
                  for j, v in enumerate(vecs[start : start + per_item])]
        items.append((Item("session", ext, None, ext, {}, (Message("user", ext),)), chunks))
    store.put_items(app, items)


def float32_scan(store: SQLiteStore, app: str, queries: np.ndarray, depth: int,
                 allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
    """The reference: every row dequantised and scored in float32 (the scan before the kernel)."""
    batch = store.read_vectors(app, 0)
    scores = (dequantize(batch.vectors) @ np.atleast_2d(queries).T).max(axis=1)
    keep = np.ones(len(batch.ids), bool) if allowed is None else np.isin(batch.ids, allowed)
    return top(batch.ids[keep], scores[keep], depth)


def assert_same_top(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    """The same rows; the same order but for rows whose scores agree to float rounding."""
    assert {c for c, _ in got} == {c for c, _ in want}
    assert len(got) == len(want)
    for (gid, gscore), (wid, wscore) in zip(got, want):
        assert abs(gscore - wscore) < 1e-6
        if gid != wid:
            assert abs(dict(want)[gid] - wscore) < 1e-6


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "m.sqlite")
    put(s, "a", clustered(12_000, 1), "s")
    yield s
    s.close()


@pytest.mark.slow
def test_the_int8_path_serves_large_apps_with_the_float32_top(store):
    index = ExactDenseIndex(store)
    queries = normalise(dequantize(clustered(40, 2)) + 0.05)
    for q in queries[:20]:
        assert_same_top(index.search("a", q[None], 200), float32_scan(store, "a", q[None], 200))
    for pair in queries[20:].reshape(10, 2, DIM):  # a follow-up: two vectors, each row's best
        assert_same_top(index.search("a", pair, 50), float32_scan(store, "a", pair, 50))
    assert index._cache["a"].packed is not None and len(index._cache["a"].packed) == 12_000


@pytest.mark.slow
def test_the_bound_holds_where_every_score_is_close(tmp_path, monkeypatch):
    """Rows all near one direction, and only depth candidates at first: the integer products
    alone cannot order them, so the bound must send the search on to more rows."""
    s = SQLiteStore(tmp_path / "t.sqlite")
    rng = np.random.default_rng(5)
    base = normalise(rng.normal(size=(1, DIM)).astype(np.float32))
    put(s, "a", quantize(normalise(base + rng.normal(0, 0.02, (8000, DIM)).astype(np.float32))), "t")
    monkeypatch.setattr(exact, "CANDIDATES_PER_DEPTH", 1)
    calls = []
    real = exact.cosines
    monkeypatch.setattr(exact, "cosines", lambda rows, q, norms=None: calls.append(len(rows)) or real(rows, q, norms))
    index = ExactDenseIndex(s)
    for q in normalise(base + rng.normal(0, 0.05, (10, DIM)).astype(np.float32)):
        assert_same_top(index.search("a", q[None], 100), float32_scan(s, "a", q[None], 100))
    assert max(calls) > 100  # some search scored more than its first 100 rows
    s.close()


@pytest.mark.slow
def test_appended_rows_and_repacks_keep_the_float32_top(store):
    index = ExactDenseIndex(store)
    q = normalise(dequantize(clustered(1, 3)))
    index.search("a", q, 100)
    packed = index._cache["a"].packed
    put(store, "a", clustered(300, 4), "u")  # a small tail: scanned unpacked
    assert_same_top(index.search("a", q, 100), float32_scan(store, "a", q, 100))
    cache = index._cache["a"]
    assert cache.packed is packed and len(cache.tail) == 300
    put(store, "a", clustered(5000, 5), "v")  # a large one: packed again with the rest
    assert_same_top(index.search("a", q, 100), float32_scan(store, "a", q, 100))
    assert len(index._cache["a"].packed) == 17_300 and len(index._cache["a"].tail) == 0


def test_deleted_rows_never_come_back(store):
    index = ExactDenseIndex(store)
    q = normalise(dequantize(clustered(1, 6)))
    best = index.search("a", q, 10)[0][0]
    assert store.delete_item("a", "session", store.fetch_chunks("a", [best])[best].session_id)
    got = index.search("a", q, 300)
    assert best not in {c for c, _ in got}
    assert_same_top(got, float32_scan(store, "a", q, 300))


@pytest.mark.slow
def test_a_filter_over_a_large_app_ranks_only_allowed_rows(store):
    index = ExactDenseIndex(store)
    ids = store.read_vectors("a", 0).ids
    allowed = ids[::2].copy()  # 6,000 rows: over FULL_SCAN_MAX, so the int8 path filters
    q = normalise(dequantize(clustered(1, 7)))
    got = index.search("a", q, 200, allowed=allowed)
    assert set(c for c, _ in got) <= set(allowed.tolist())
    assert_same_top(got, float32_scan(store, "a", q, 200, allowed))


def test_small_apps_are_scored_whole_as_before(tmp_path):
    s = SQLiteStore(tmp_path / "small.sqlite")
    put(s, "a", clustered(900, 8), "w")
    q = normalise(dequantize(clustered(2, 9)))
    assert ExactDenseIndex(s).search("a", q, 50) == float32_scan(s, "a", q, 50)  # to the bit
    s.close()


@pytest.mark.slow
def test_searches_beside_appends_answer_the_top_of_a_state_no_older_than_they_saw(tmp_path):
    """Readers search a large app while a writer appends (the tail grows, then is packed): each
    answer is exactly the float32 top of a state the writer left, never older than the one the
    reader saw before it asked."""
    import threading

    path = tmp_path / "c.sqlite"
    writer = SQLiteStore(path)
    put(writer, "a", clustered(6000, 11), "base")
    batches = [clustered(700, 20 + i) for i in range(8)]  # 5,600 rows: the tail passes 1/32, packs
    q = normalise(dequantize(batches[2][:1]))  # near rows that arrive in the tail, then are packed
    states = [(writer.app_version("a").generation, writer.read_vectors("a", 0))]
    answers: list[tuple[int, list[tuple[int, float]]]] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        store = SQLiteStore(path)
        index = ExactDenseIndex(store)
        try:
            while not done.is_set():
                seen = store.app_version("a").generation
                answers.append((seen, index.search("a", q, 50)))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            store.close()

    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in readers:
        thread.start()
    for i, batch in enumerate(batches):
        put(writer, "a", batch, f"more{i}-")
        states.append((writer.app_version("a").generation, writer.read_vectors("a", 0)))
    done.set()
    for thread in readers:
        thread.join()
    assert not errors
    generations = [generation for generation, _ in states]
    tops = [{c for c, _ in top(batch.ids, (dequantize(batch.vectors) @ q.T)[:, 0], 50)} for _, batch in states]
    assert len({frozenset(t) for t in tops}) > 3  # the appends do move this query's top
    assert len(answers) > 10
    for seen, answer in answers:
        oldest = generations.index(seen)
        assert {c for c, _ in answer} in tops[oldest:]
    writer.close()


def test_doctor_says_what_computes_the_products(tmp_path, monkeypatch):
    from diarist import Memory

    mem = Memory(tmp_path / "d.sqlite", embedder="hash")
    lines = mem.health().lines
    assert any("exact dense scan" in line and "onnxruntime's int8 kernel" in line for line in lines)
    monkeypatch.setattr(int8_scan, "_broken", "a test says so")
    lines = mem.health().lines
    assert any("exact dense scan" in line and "numpy" in line and "a test says so" in line for line in lines)
    mem.close()


def test_cached_norms_give_the_very_floats_of_dequantize():
    """The scan divides by norms cached per app: the same floats as dequantizing each time."""
    vectors = int8_rows(3000, 384, 11)
    vectors[7] = 0  # a zero row keeps norm 1, as dequantize has it
    queries = np.random.default_rng(12).normal(size=(2, 384)).astype(np.float32)
    for q in (queries[:1], queries):
        assert np.array_equal(exact.cosines(vectors, q, exact.row_norms(vectors)), exact.cosines(vectors, q))
    picked = np.array([5, 7, 2999, 0])
    norms = exact.row_norms(vectors)
    assert np.array_equal(exact.cosines(vectors[picked], queries[:1], norms[picked]),
                          exact.cosines(vectors[picked], queries[:1]))


def test_dequantize_divides_each_row_by_its_own_norm_across_blocks():
    """dequantize and the scan's cached norms share row_norms: per row, whatever block it is in."""
    vectors = int8_rows(9000, 64, 13)  # past one block of 8,192 rows
    vectors[8191:8194] = 0
    floats = vectors.astype(np.float32)
    norms = np.linalg.norm(floats, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    assert np.array_equal(dequantize(vectors), floats / norms)


@pytest.mark.parametrize("case", ["random", "ascending", "ties", "strided", "sampled", "few"])
def test_best_keys_picks_the_largest_keys(case):
    """Exactly ``wanted`` positions, and no key left out above the smallest picked: whether the
    sampled threshold holds, misleads (the best keys between the sampled positions, or many
    keys tied), or there are too few keys to sample."""
    rng = np.random.default_rng(3)
    n, wanted = (100_000, 400) if case != "few" else (900, 400)
    keys = rng.normal(size=n).astype(np.float32)
    if case == "ascending":
        keys.sort()
    elif case == "ties":
        keys = np.round(keys, 1)
    elif case == "strided":  # the sample (every 16th key) sees none of the best keys
        keys[np.arange(n) % exact.SAMPLE_STRIDE != 0] += 10.0
        keys[np.arange(n) % exact.SAMPLE_STRIDE == 0] -= 10.0
    elif case == "sampled":  # the sample holds the best keys: few keys are above its threshold
        keys[::exact.SAMPLE_STRIDE] += 10.0
    picked = exact.best_keys(keys, wanted)
    assert len(picked) == len(set(picked.tolist())) == wanted
    left_out = np.ones(n, bool)
    left_out[picked] = False
    assert keys[left_out].max() <= keys[picked].min()
    assert np.array_equal(np.sort(keys[picked]), np.sort(keys)[-wanted:])
    assert len(exact.best_keys(keys, n + 5)) == n
