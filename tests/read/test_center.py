"""The memories' mean taken off before the cosines (read.center, in the sentences stage): the
centered cosines are those of the centered vectors, the mean is the app's and follows its writes,
and only a listed model's searches move."""

from __future__ import annotations

import numpy as np
import pytest

from diarist import settings
from diarist.embed.base import dequantize
from diarist.memory import Memory
from diarist.read.center import app_mean, centered, centered_sentences

ENGLISH = [
    "The river flooded the old town in the spring of 1910 and destroyed the bridge near the market.",
    "The university library holds more than two million books and a large map collection.",
    "Our football club won the national cup twice, once in 1998 and again in 2004.",
    "The cathedral was built over three centuries and its tower is ninety metres tall.",
    "The city council approved a new tram line that will connect the airport to the centre.",
    "Farmers in the valley grow apples, pears and grapes for the local wine makers.",
]
GERMAN = "Wann hat der Fluss die alte Stadt überflutet und die Brücke zerstört?"


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_centered_cosines_are_those_of_the_centered_vectors():
    rng = np.random.default_rng(7)
    queries, items = _unit(rng.normal(size=(2, 16))), _unit(rng.normal(size=(5, 16)) + 1.0)
    mean, c = items.mean(axis=0), 0.75
    direct = _unit(queries - c * mean) @ _unit(items - c * mean).T
    from_products = centered(queries @ items.T, queries @ mean, items @ mean, float(mean @ mean), c)
    assert np.allclose(from_products, direct, atol=1e-6)
    assert np.allclose(centered_sentences(items, queries, mean, c), direct, atol=1e-6)


def test_the_mean_is_the_apps_and_follows_its_writes():
    with Memory(":memory:", embedder="hash") as memory:
        for n, text in enumerate(ENGLISH[:3]):
            memory.add_fact(text, fact_id=f"f{n}", app="a")
        store = memory.store  # the store's own read, to check the mean against
        first = app_mean(store, "a")
        assert np.allclose(first, dequantize(store.read_vectors("a").vectors).mean(axis=0), atol=1e-6)
        for n, text in enumerate(ENGLISH[3:], start=3):
            memory.add_fact(text, fact_id=f"f{n}", app="a")
        extended = app_mean(store, "a")
        assert np.allclose(extended, dequantize(store.read_vectors("a").vectors).mean(axis=0), atol=1e-6)
        memory.delete("f0", app="a", kind="fact")
        assert np.allclose(app_mean(store, "a"), dequantize(store.read_vectors("a").vectors).mean(axis=0), atol=1e-6)
        assert app_mean(store, "nothing") is None


def _search(memory: Memory, question: str) -> tuple[list[tuple[str, float]], str]:
    results = memory.search(question, app="a", k=6, explain=True)
    notes = [r.note for r in results.trace if r.stage == "sentences"]  # no record: the stage had nothing to do
    return [(hit.id, hit.score) for hit in results], " ".join(notes)


@pytest.fixture
def memory():
    with Memory(":memory:", embedder="hash") as m:
        for n, text in enumerate(ENGLISH):
            m.add_fact(text, fact_id=f"f{n}", app="a")
        yield m


def test_a_listed_models_search_is_centered(memory, monkeypatch):
    plain, detail = _search(memory, GERMAN)
    assert "mean taken off" not in detail  # the hash model is not listed: as before
    monkeypatch.setitem(settings.CENTER, memory.embedder.model_id, 0.75)
    moved, detail = _search(memory, GERMAN)
    assert "mean taken off (x0.75" in detail
    assert moved != plain  # the dense scores are the centered ones (fused scores differ)


def test_the_centered_dense_scores_are_the_centered_cosines(memory, monkeypatch):
    monkeypatch.setitem(settings.CENTER, memory.embedder.model_id, 0.75)
    results = memory.search("When did the river flood the old town?", app="a", k=6, explain=True)
    vectors = dequantize(memory.store.read_vectors("a").vectors)
    mean = vectors.mean(axis=0)
    query = _unit(np.asarray(memory.embedder.embed_query(["When did the river flood the old town?"]))[0])
    expected = _unit(query - 0.75 * mean) @ _unit(vectors - 0.75 * mean).T
    by_fact = {f"f{n}": float(v) for n, v in enumerate(expected)}
    for hit in results:
        assert hit.scores["dense"] == pytest.approx(by_fact[hit.id], abs=1e-5)


# -- the same on PostgreSQL ---------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path) -> str:
    """A fresh place for a store: a SQLite file, or a fresh schema of the test PostgreSQL server."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_server").new_url("center")
    return str(tmp_path / "center.sqlite")


def _filled(where: str) -> Memory:
    memory = Memory(where, embedder="hash")
    for n, text in enumerate(ENGLISH):
        memory.add_fact(text, fact_id=f"f{n}", app="a")
    return memory


def _stored_mean(memory: Memory) -> np.ndarray:
    return dequantize(memory.store.read_vectors("a").vectors).mean(axis=0)


def test_postgresql_ranks_the_centered_search_as_sqlite(pg_server, tmp_path, monkeypatch):
    questions = [GERMAN, "When did the river flood the old town?", "Which club won the cup?", "apples and pears"]
    with _filled(str(tmp_path / "a.sqlite")) as lite, _filled(pg_server.new_url("center")) as pg:
        monkeypatch.setitem(settings.CENTER, lite.embedder.model_id, 0.75)
        assert np.allclose(app_mean(pg.store, "a"), app_mean(lite.store, "a"), atol=1e-6)
        for question in questions:
            (on_sqlite, detail), (on_pg, pg_detail) = _search(lite, question), _search(pg, question)
            assert "mean taken off (x0.75" in detail and "mean taken off (x0.75" in pg_detail
            assert [i for i, _ in on_pg] == [i for i, _ in on_sqlite]
            assert [s for _, s in on_pg] == pytest.approx([s for _, s in on_sqlite], abs=1e-6)


def test_the_cached_mean_follows_deletes_and_writes_on_both_stores(where):
    with _filled(where) as memory:
        store = memory.store
        assert np.allclose(app_mean(store, "a"), _stored_mean(memory), atol=1e-6)
        memory.delete("f2", app="a", kind="fact")  # a purge: the cache is read again, not extended
        assert np.allclose(app_mean(store, "a"), _stored_mean(memory), atol=1e-6)
        memory.add_fact("The harbour was rebuilt after the storm of 1953.", fact_id="g0", app="a")
        memory.add_fact("The museum opens its new wing for modern art in May.", fact_id="g1", app="a")
        assert np.allclose(app_mean(store, "a"), _stored_mean(memory), atol=1e-6)  # extended by the two
        memory.delete("f0", app="a", kind="fact")
        memory.add_fact("The old mill by the river now houses a bakery.", fact_id="g2", app="a")
        assert np.allclose(app_mean(store, "a"), _stored_mean(memory), atol=1e-6)  # a delete, then a write
        memory.add_fact("The harbour was rebuilt after the flood of 1953.", fact_id="g0", app="a")  # a replace
        assert np.allclose(app_mean(store, "a"), _stored_mean(memory), atol=1e-6)
        for item in [f"f{n}" for n in (1, 3, 4, 5)] + ["g0", "g1", "g2"]:
            memory.delete(item, app="a", kind="fact")
        assert app_mean(store, "a") is None  # every item deleted: the app is empty
        memory.add_fact(ENGLISH[1], fact_id="h0", app="a")
        assert np.allclose(app_mean(store, "a"), _stored_mean(memory), atol=1e-6)
        memory.delete_app("a")
        assert app_mean(store, "a") is None
        memory.add_fact(ENGLISH[4], fact_id="h1", app="a")  # the app created again: a new epoch
        assert np.allclose(app_mean(store, "a"), _stored_mean(memory), atol=1e-6)


def _centered_dense_scores_match(memory: Memory, question: str) -> None:
    results = memory.search(question, app="a", k=10, explain=True)
    batch = memory.store.read_vectors("a")
    vectors = dequantize(batch.vectors)
    query = _unit(np.asarray(memory.embedder.embed_query([question]))[0])
    mean = vectors.mean(axis=0)
    expected = dict(zip(batch.ids.tolist(), _unit(query - 0.75 * mean) @ _unit(vectors - 0.75 * mean).T))
    assert len(results) == len(batch.ids)
    for hit in results:
        assert hit.scores["dense"] == pytest.approx(float(expected[hit.chunk_id]), abs=1e-5)


def test_a_warm_centered_search_follows_deletes_and_writes_on_both_stores(where, monkeypatch):
    with _filled(where) as memory:
        monkeypatch.setitem(settings.CENTER, memory.embedder.model_id, 0.75)
        question = "When did the river flood the old town?"
        _centered_dense_scores_match(memory, question)  # the mean and the exact scan now kept
        memory.delete("f0", app="a", kind="fact")
        _centered_dense_scores_match(memory, question)
        memory.add_fact("The river flooded again in 1953 and the old town was rebuilt.", fact_id="g0", app="a")
        _centered_dense_scores_match(memory, question)
        memory.add_fact("The river never flooded the new town.", fact_id="f3", app="a")  # a replace
        _centered_dense_scores_match(memory, question)
