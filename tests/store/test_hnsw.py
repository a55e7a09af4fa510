"""The HNSW dense index: exact-path results, catch-up, deletions, isolation, persistence, epochs."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("usearch", reason="the hnsw dense index needs the 'ann' extra (pip install 'diarist[ann]')")

from diarist.embed.base import normalise, quantize  # noqa: E402
from diarist.store.base import IndexedChunk, Item  # noqa: E402
from diarist.store.sqlite import SQLiteStore  # noqa: E402
from diarist.types import Chunk, Message  # noqa: E402
from diarist.vectors import ExactDenseIndex, dense_index  # noqa: E402
from diarist.vectors.hnsw import HnswDenseIndex  # noqa: E402

DIM = 32


def vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = normalise(rng.normal(size=(20, DIM)).astype(np.float32))
    return quantize(normalise(centres[rng.integers(0, 20, n)] + rng.normal(0, 0.3, (n, DIM)).astype(np.float32)))


def put(store: SQLiteStore, app: str, vecs: np.ndarray, prefix: str, per_item: int = 50) -> None:
    items = []
    for start in range(0, len(vecs), per_item):
        ext = f"{prefix}{start}"
        chunks = [
            IndexedChunk(Chunk(f"{ext} chunk {j}", j, ("user",), j, j), v, [ext, "chunk", str(j)])
            for j, v in enumerate(vecs[start : start + per_item])
        ]
        items.append((Item("session", ext, None, ext, {}, (Message("user", ext),)), chunks))
    store.put_items(app, items)


def queries(n: int, seed: int) -> np.ndarray:
    return normalise(vectors(n, seed).astype(np.float32))


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "m.sqlite"
    store = SQLiteStore(path)
    put(store, "a", vectors(3000, 1), "s")
    yield store, path
    store.close()


def test_recall_and_scores_equal_exact(db):
    store, path = db
    exact, ann = ExactDenseIndex(store), HnswDenseIndex(store, f"{path}.hnsw", min_vectors=0)
    recalls = []
    for q in queries(20, 9):
        want, got = exact.search("a", q[None], 50), ann.search("a", q[None], 50)
        recalls.append(len({c for c, _ in want} & {c for c, _ in got}) / 50)
        truth = dict(exact.search("a", q[None], 3000))
        assert all(score == truth[c] for c, score in got)  # re-ranked exactly: same scores
        assert got == sorted(got, key=lambda x: (-x[1], x[0]))
    assert np.mean(recalls) >= 0.97, recalls
    # Several query vectors: each chunk keeps its best score, as in the exact path (a matrix
    # product of another shape: equal to the last bits of float32, not always bit for bit).
    two = queries(2, 3)
    truth = dict(exact.search("a", two, 3000))
    assert all(score == pytest.approx(truth[c], rel=1e-6) for c, score in ann.search("a", two, 20))


def test_catches_up_and_never_returns_deleted(db):
    store, path = db
    ann = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=0)
    ann.search("a", queries(1, 2), 10)
    fresh = vectors(50, 5)
    put(store, "a", fresh, "new")
    new_ids = store.read_vectors("a", 0).ids[-50:]
    hit = ann.search("a", normalise(fresh[:1].astype(np.float32)), 1)
    assert hit[0][0] == new_ids[0]
    gone = set(store.read_vectors("a", 0).ids[:50].tolist())  # item s0
    assert store.delete_item("a", "session", "s0")
    for q in normalise(vectors(50, 1)[:50].astype(np.float32))[:10]:  # the deleted chunks' own vectors
        assert not gone & {c for c, _ in ann.search("a", q[None], 100)}
    reopened = HnswDenseIndex(SQLiteStore(path), f"{path}.hnsw", min_vectors=0)
    for q in normalise(vectors(50, 1)[:50].astype(np.float32))[:10]:
        assert not gone & {c for c, _ in reopened.search("a", q[None], 100)}
    reopened.store.close()


def test_apps_are_isolated(db):
    store, path = db
    put(store, "b", vectors(200, 7), "b")
    ids_b = set(store.read_vectors("b", 0).ids.tolist())
    ann = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=0)
    for q in queries(5, 4):
        assert {c for c, _ in ann.search("b", q[None], 300)} <= ids_b
        assert not {c for c, _ in ann.search("a", q[None], 300)} & ids_b


@pytest.mark.slow
def test_survives_reopen_without_reading_all_vectors(db, monkeypatch):
    store, path = db
    ann = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=0)
    q = queries(1, 6)
    before = ann.search("a", q, 30)
    ann.close()
    assert list((path.parent / "m.sqlite.hnsw").glob("*.usearch"))
    other = SQLiteStore(path)
    reads = []
    real = other.read_vectors
    monkeypatch.setattr(other, "read_vectors", lambda app, after_id=0: reads.append(after_id) or real(app, after_id))
    again = HnswDenseIndex(other, f"{path}.hnsw", min_vectors=0)
    assert again.search("a", q, 30) == before
    assert reads == []  # the saved graph is current: no vector read at all
    put(other, "a", vectors(10, 13), "late")
    again.search("a", q, 30)
    assert reads and min(reads) > 0  # caught up from its last id, not rebuilt
    assert again.state("a")["persisted"]
    other.close()


@pytest.mark.slow
def test_new_epoch_rebuilds(db):
    store, path = db
    ann = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=0)
    old = {c for c, _ in ann.search("a", queries(1, 8), 3000)}
    writer = SQLiteStore(path)  # another memory on the same file deletes and re-creates the app
    assert writer.delete_app("a")
    put(writer, "a", vectors(100, 11), "x")
    fresh = set(writer.read_vectors("a", 0).ids.tolist())
    writer.close()
    got = {c for c, _ in ann.search("a", queries(1, 8), 3000)}
    assert got == fresh and not got & old


def test_asking_for_everything_returns_everything(db, monkeypatch):
    """A graph walk need not reach every node (CI once lost 2 of 100 after a rebuild): a
    depth that covers the whole app is answered from all its vectors, not from the walk."""
    store, path = db
    ann = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=0)
    ann.search("a", queries(1, 8), 5)  # the graph is built
    graph = ann._graphs["a"]
    monkeypatch.setattr(graph.index, "search", lambda *a, **k: (_ for _ in ()).throw(AssertionError("walked")))
    every = set(store.read_vectors("a", 0).ids.tolist())
    got = ann.search("a", queries(1, 8), len(every))
    assert {c for c, _ in got} == every
    exact = ExactDenseIndex(store).search("a", queries(1, 8), len(every))
    assert got == exact


def test_auto_keeps_small_apps_exact(db):
    store, path = db
    auto = dense_index(store, "auto")
    q = queries(3, 12)
    assert auto.search("a", q, 40) == ExactDenseIndex(store).search("a", q, 40)
    assert not (path.parent / "m.sqlite.hnsw").exists()
    assert isinstance(dense_index(store, "exact"), ExactDenseIndex)


def test_a_small_app_is_counted_once_per_write_not_per_query(db):
    """Under min_vectors the exact scan serves; the count that decides it is read again only
    after a write (it cost more than the scan itself at 10k chunks)."""
    store, path = db
    ann = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=10_000)
    calls = []
    counts = store.counts
    store.counts = lambda app: calls.append(app) or counts(app)  # type: ignore[method-assign]
    q = queries(1, 15)
    for _ in range(5):
        assert ann.search("a", q, 40) == ExactDenseIndex(store).search("a", q, 40)
    assert calls == ["a"]
    put(store, "a", vectors(50, 16), "more")
    ann.search("a", q, 40)
    assert calls == ["a", "a"]


@pytest.mark.slow
def test_large_app_built_in_background_exact_meanwhile(db):
    store, path = db
    ann = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=1000)
    q = queries(2, 14)
    assert ann.search("a", q[:1], 40) == ExactDenseIndex(store).search("a", q[:1], 40)
    ann.wait()
    assert ann.state("a")["loaded"] and ann.state("a")["persisted"]
    truth = dict(ExactDenseIndex(store).search("a", q[1:], 3000))
    assert all(score == truth[c] for c, score in ann.search("a", q[1:], 40))
    assert ann.recall("a") >= 0.9
    assert ann.rebuild("a") == 3000


def test_memory_option_doctor_reindex_and_delete(db_path):
    from conftest import add_all, make_sessions
    from diarist.errors import ConfigError
    from diarist.memory import Memory

    with pytest.raises(ConfigError):
        Memory(db_path, embedder="hash", dense="nearest")
    folder = db_path.parent / f"{db_path.name}.hnsw"
    with Memory(db_path, embedder="hash", dense="hnsw") as mem, Memory(db_path, embedder="hash", dense="exact") as exact:
        add_all(mem, make_sessions(30), app="one")
        hits = mem.search("garden river lantern", app="one", k=5, rerank=False)
        assert [h.chunk_id for h in hits] == [h.chunk_id for h in exact.search("garden river lantern", app="one", k=5, rerank=False)]
        assert list(folder.glob("*.usearch"))
        lines = [line for line in mem.health(["one"]).lines if "dense index" in str(line)]
        assert lines and "recall@50" in str(lines[0])
        assert mem.reindex("one") > 0 and list(folder.glob("*.usearch"))
        mem.delete_app("one")
        assert not list(folder.glob("*"))  # no vector of a deleted app is left beside the file


def test_vectors_are_kept_once_in_the_graph_file(db):
    """The exact re-rank reads the candidates' vectors back from the graph; no second copy is
    persisted (it doubled a large app's memory) and the scores still equal the exact path's."""
    store, path = db
    ann = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=0)
    ann.search("a", queries(1, 20), 30)
    ann.close()
    files = sorted(p.name.split(".", 1)[1] for p in (path.parent / "m.sqlite.hnsw").iterdir())
    assert files == ["ids.npy", "json", "usearch"]
    again = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=0)
    truth = dict(ExactDenseIndex(store).search("a", queries(1, 21), 3000))
    got = again.search("a", queries(1, 21), 30)
    assert got and all(score == truth[c] for c, score in got)


def test_the_public_lookup_gives_the_same_vectors(db, monkeypatch):
    """Without usearch's compiled batch lookup (another usearch version), the public ``get``
    answers, with the same rows."""
    from diarist.vectors import hnsw as hnsw_module

    store, path = db
    ann = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=0)
    ann.search("a", queries(1, 22), 10)
    graph = ann._graphs["a"]
    keys = graph.ids[[0, 7, 100, 2999]]
    fast = graph.vectors_of(keys)
    truth = store.read_vectors("a", 0)
    assert np.array_equal(fast, truth.vectors[np.searchsorted(truth.ids, keys)])

    class Public:
        def __init__(self, index):
            self.index = index
            self.ndim, self.dtype = index.ndim, index.dtype

        def get(self, k):
            return self.index.get(k)

    monkeypatch.setattr(graph, "index", Public(graph.index))
    assert not hasattr(graph.index, "_compiled")
    assert np.array_equal(hnsw_module._Graph.vectors_of(graph, keys), fast)


@pytest.mark.slow
def test_a_graph_file_replaced_under_a_reader_is_rebuilt_from_the_store(db):
    """A memory-mapped graph whose file another process replaced (or removed) is built again
    from the store's vectors before a write extends it: nothing lost, nothing deleted back."""
    store, path = db
    writer = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=0)
    writer.search("a", queries(1, 23), 10)
    writer.close()
    reader = HnswDenseIndex(store, f"{path}.hnsw", min_vectors=0)
    reader.search("a", queries(1, 23), 10)  # loaded as a memory map
    assert reader._graphs["a"].viewed is not None
    for file in (path.parent / "m.sqlite.hnsw").glob("*.usearch"):
        file.unlink()  # replaced / removed by someone else
    gone = store.read_vectors("a", 0).ids[:50]
    assert store.delete_item("a", "session", "s0")  # the first 50 chunks
    put(store, "a", vectors(40, 24), "late")
    got = {c for c, _ in reader.search("a", queries(1, 25), 3000)}
    assert got == set(store.read_vectors("a", 0).ids.tolist()) and not got & set(gone.tolist())
