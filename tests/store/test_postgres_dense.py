"""Dense search inside PostgreSQL (store/postgres/dense.py): pgvector's HNSW index with iterative
scans, re-ranked exactly; isolation between apps, a small app among a large one, recall against
the exact scan, deletions, and the crossover to the exact scan."""

from __future__ import annotations

import numpy as np
import pytest

import pg_server as pg_module

pg_module.require()  # skips without the postgres extra (fails in CI)

from pg_server import PgServer  # noqa: E402
from diarist.embed.base import normalise, quantize  # noqa: E402
from diarist.lexical import analyze  # noqa: E402
from diarist.store.base import IndexedChunk, Item  # noqa: E402
from diarist.store.postgres import PostgresStore  # noqa: E402
from diarist.store.postgres import dense as pg_dense  # noqa: E402
from diarist.store.postgres.dense import PgvectorDenseIndex  # noqa: E402
from diarist.types import Chunk, Message  # noqa: E402
from diarist.vectors import ExactDenseIndex, dense_index  # noqa: E402

DIM = 48


def vectors(n: int, seed: int, centres: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = normalise(rng.normal(size=(centres, DIM)).astype(np.float32))
    return quantize(normalise(c[rng.integers(0, centres, n)] + rng.normal(0, 0.35, (n, DIM)).astype(np.float32)))


def queries(n: int, seed: int) -> np.ndarray:
    return normalise(vectors(n, seed).astype(np.float32))


def put(store: PostgresStore, app: str, vecs: np.ndarray, prefix: str, per_item: int = 100) -> None:
    """Sessions of ``per_item`` chunks, all in one write transaction."""
    items = []
    for start in range(0, len(vecs), per_item):
        ext = f"{prefix}{start}"
        chunks = []
        for j, v in enumerate(vecs[start : start + per_item]):
            text = f"{prefix} note {start + j}"
            chunks.append(IndexedChunk(Chunk(text, j, ("user",), j, j, n_tokens=3), v, analyze(text)))
        items.append((Item("session", ext, None, ext, {}, (Message("user", ext),)), chunks))
    store.put_items(app, items)


def app_ids(store: PostgresStore, app: str) -> set[int]:
    return {int(r[0]) for r in store._db.read(
        "SELECT c.id FROM chunks c JOIN apps a ON a.id = c.app_id WHERE a.name = %s", (app,))}


@pytest.fixture(scope="module")
def two_apps(pg_server: PgServer):
    """A large app (6,000 vectors) and a small one (60: 1% of the table), indexed."""
    store = PostgresStore(pg_server.new_url("dense"), max_size=4)
    put(store, "big", vectors(6000, 1), "b")
    put(store, "small", vectors(60, 2), "s")
    assert store.ensure_hnsw(DIM, concurrently=False)
    assert not store.ensure_hnsw(DIM)  # already there
    with store._db.single() as cur:
        cur.execute("ANALYZE chunks")
    yield store
    store.close()


@pytest.mark.slow
def test_isolation_and_exact_scores(two_apps: PostgresStore) -> None:
    store = two_apps
    index, exact = PgvectorDenseIndex(store, min_vectors=0), ExactDenseIndex(store)
    ids = {app: app_ids(store, app) for app in ("big", "small")}
    for app in ("big", "small"):
        for q in queries(5, 7):
            got = index.search(app, q, 50)
            assert len(got) == 50 and {c for c, _ in got} <= ids[app]
            truth = dict(exact.search(app, q, len(ids[app])))
            for chunk_id, score in got:  # the exact path's score of that chunk, to the bit
                assert score == truth[chunk_id]
            assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    assert index.search("nobody", queries(1, 3)[0], 10) == []


def test_iterative_scan_fills_the_depth_of_a_small_app(two_apps: PostgresStore) -> None:
    """With the HNSW plan forced (no sort allowed), a plain scan of a 1% app returns a few rows of
    the 50 asked; the iterative scan returns all 50, all the small app's."""
    store = two_apps
    small = app_ids(store, "small")
    app_id = int(store._db.read("SELECT id FROM apps WHERE name = 'small'")[0][0])
    counts = {}
    for iterative in (False, True):
        got = []
        for q in queries(10, 11):
            with store._db.snapshot() as cur:
                cur.execute("SET LOCAL enable_sort = off")  # only the HNSW scan can order the rows
                plan = "\n".join(r[0] for r in cur.execute(
                    f"EXPLAIN SELECT id FROM chunks WHERE app_id = {app_id} AND public.vector_dims(embedding) = 48 "
                    "ORDER BY (embedding::public.vector(48)) OPERATOR(public.<=>) %s::public.vector(48) LIMIT 50",
                    ("[" + ",".join(map(str, q.tolist())) + "]",)).fetchall())
                assert pg_dense.index_name(DIM) in plan
                ids, _ = pg_dense.candidates(cur, store._db.vector_type, app_id, q[None], 50, ef_search=40,
                                             max_scan_tuples=100_000, iterative=iterative)
            assert set(ids.tolist()) <= small
            got.append(len(ids))
        counts[iterative] = np.mean(got)
    print(f"rows of the 1% app, LIMIT 50, ef_search 40: plain {counts[False]:.1f}, iterative {counts[True]:.1f}")
    assert counts[False] < 10, counts
    assert counts[True] == 50, counts


def test_recall_against_exact(two_apps: PostgresStore) -> None:
    store = two_apps
    index, exact = PgvectorDenseIndex(store, min_vectors=0), ExactDenseIndex(store)
    recalls = []
    for q in queries(20, 5):
        truth = {c for c, _ in exact.search("big", q, 200)}
        got = {c for c, _ in index.search("big", q, 200)}
        recalls.append(len(truth & got) / 200)
    assert np.mean(recalls) >= 0.95, np.mean(recalls)


@pytest.mark.slow
def test_deletions_and_crossover(pg_server: PgServer) -> None:
    store = PostgresStore(pg_server.new_url("dense"), max_size=4)
    try:
        put(store, "a", vectors(1500, 21), "a")
        put(store, "b", vectors(500, 22), "b")
        store.ensure_hnsw(DIM, concurrently=False)
        index = dense_index(store, "hnsw")
        assert isinstance(index, PgvectorDenseIndex) and index.min_vectors == 0
        q = queries(1, 23)[0]
        app_ids_before = app_ids(store, "a")
        before = index.search("a", q, 20)
        gone = store.fetch_chunks("a", [c for c, _ in before[:3]])
        for session in {row.session_id for row in gone.values()}:
            assert store.delete_item("a", "session", session)
        gone = set(gone) | {c for c in app_ids_before if c not in app_ids(store, "a")}
        after = index.search("a", q, 20)
        assert len(gone) >= 100 and len(after) == 20 and not {c for c, _ in after} & gone
        assert {c for c, _ in after} <= app_ids(store, "a")
        # The app deleted: nothing, and the other app untouched.
        store.delete_app("a")
        assert index.search("a", q, 20) == []
        assert {c for c, _ in index.search("b", q, 20)} <= app_ids(store, "b")
        # auto: under the crossover the exact scan answers (the same list as ExactDenseIndex).
        auto = dense_index(store, "auto")
        assert isinstance(auto, PgvectorDenseIndex) and auto.min_vectors == pg_dense.CROSSOVER
        assert not auto.uses_index("b")
        assert auto.search("b", q, 30) == ExactDenseIndex(store).search("b", q, 30)
        with pytest.raises(Exception, match="dimensions"):
            index.search("b", np.ones(DIM + 1, np.float32), 5)
    finally:
        store.close()


def test_index_is_built_on_first_need(pg_server: PgServer) -> None:
    store = PostgresStore(pg_server.new_url("dense"), max_size=4)
    try:
        put(store, "a", vectors(300, 31), "a")
        with store._db.single() as cur:
            assert pg_dense.hnsw_state(cur, DIM) is None
        index = PgvectorDenseIndex(store, min_vectors=200)
        got = index.search("a", queries(1, 32)[0], 10)
        assert len(got) == 10
        with store._db.single() as cur:
            assert pg_dense.hnsw_state(cur, DIM) is True
        assert index.rebuild("a") == 300
    finally:
        store.close()
