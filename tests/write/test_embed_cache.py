"""The embedding cache: re-runs never re-embed, and a shared cache outlives the memories using it."""

from __future__ import annotations

from diarist import Memory
from diarist.embed import get_embedder
from diarist.embed.cache import EmbeddingCache


class Counting:
    """Wraps the hash embedder and counts the texts it is asked to embed."""

    def __init__(self) -> None:
        self.inner = get_embedder("hash")
        self.model_id, self.dim = self.inner.model_id, self.inner.dim
        self.texts: list[str] = []

    def embed_passages(self, texts, progress=None):
        self.texts += list(texts)
        return self.inner.embed(texts, progress)


def test_cache_embeds_each_distinct_text_once(tmp_path) -> None:
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    counting = Counting()
    first = cache.embed_int8(counting, ["a cat", "a dog", "a cat"])
    again = cache.embed_int8(counting, ["a dog", "a cat"])
    assert counting.texts == ["a cat", "a dog"]
    assert (first[0] == again[1]).all() and (first[1] == again[0]).all()
    assert len(cache) == 2


def test_a_shared_cache_stays_open_when_a_memory_closes(tmp_path) -> None:
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    for name in ("one", "two"):  # the second memory would fail on a closed cache
        memory = Memory(tmp_path / f"{name}.sqlite", embedder="hash", embed_cache=cache)
        memory.add_session([{"role": "user", "content": f"session {name}"}], app="a")
        memory.close()
    assert len(cache) == 4  # each session: its chunk's int8 vector and its one line's float32 vector
    owned = Memory(tmp_path / "three.sqlite", embedder="hash", embed_cache=tmp_path / "own.sqlite")
    owned.add_session([{"role": "user", "content": "mine"}], app="a")
    owned.close()
    assert len(EmbeddingCache(tmp_path / "own.sqlite")) == 2  # the chunk's vector and its line's
