"""A write embeds each distinct text once: a short memory's line of one sentence is also one of
its stored sentences, and its sentence vector is the line's (the vectors stored are the same as
when it was embedded twice). Counted, never timed."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from diarist.embed.hashing import HashEmbedder
from diarist.memory import Memory
from diarist.read.lines import unit_rows
from diarist.write.validate import FactInput

FACTS = {
    "kiln": "The kiln reached 1200 degrees.\nWe opened it on Sunday. The glaze had run.",
    "lisbon": "Maria moved to Lisbon in May.\nShe works at the harbour office.",
    "shop": "Bought apples.\nBought pears. And grapes!",
}
#: The sentences stored per fact: every line's, a line of one sentence being that sentence.
SENTENCES = {
    "kiln": ["The kiln reached 1200 degrees.", "We opened it on Sunday.", "The glaze had run."],
    "lisbon": ["Maria moved to Lisbon in May.", "She works at the harbour office."],
    "shop": ["Bought apples.", "Bought pears.", "And grapes!"],
}


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it embeds as passages."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded: Counter[str] = Counter()

    def embed_passages(self, texts, progress=None, counts=None):
        self.embedded.update(texts)
        return super().embed_passages(texts, progress, counts=counts)


def test_a_write_embeds_each_distinct_text_once(tmp_path):
    embedder = CountingEmbedder()
    with Memory(tmp_path / "m.sqlite", embedder=embedder) as memory:
        memory.add_facts([FactInput(text=text, fact_id=fid) for fid, text in FACTS.items()], app="a")
        assert "The kiln reached 1200 degrees." in embedder.embedded  # a line, and a sentence
        assert set(embedder.embedded.values()) == {1}, embedder.embedded.most_common(3)
        for fid, sentences in SENTENCES.items():
            (chunk,) = memory.store.item_chunks("a", "fact", fid)
            stored = memory.store.sentence_vectors("a", [chunk.chunk_id])[chunk.chunk_id]
            # as each sentence embedded by itself (how the writer stored them before)
            assert np.array_equal(stored, unit_rows(HashEmbedder().embed_passages(sentences)))


# -- reindex reads the items a batch at a time ---------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path) -> str:
    if request.param == "postgres":
        return request.getfixturevalue("pg_server").new_url("batch")
    return str(tmp_path / "batch.sqlite")


def _sessions() -> list[dict]:
    return [{"session_id": f"s{n}", "messages": [
        {"role": "user", "content": f"Where did you put key {n}? It was on the hook."},
        {"role": "assistant", "content": f"Under mat {n}. Left side."}]} for n in range(4)]


def _all_sentences(memory: Memory) -> dict[int, np.ndarray]:
    ids = [c.chunk_id for kind, items in (("fact", FACTS), ("session", [s["session_id"] for s in _sessions()]))
           for e in items for c in memory.store.item_chunks("a", kind, e)]
    return memory.store.sentence_vectors("a", ids)


def _plain(read: list) -> list:
    """Items with their chunks, the vectors as bytes (comparable with ==)."""
    return [(item, [(c.chunk_id, c.chunk, None if c.vector is None else c.vector.tobytes()) for c in chunks])
            for item, chunks in read]


def test_items_with_chunks_reads_as_one_at_a_time(where):
    with Memory(where, embedder="hash") as memory:
        memory.add_facts([FactInput(text=text, fact_id=fid) for fid, text in FACTS.items()], app="a")
        memory.add_sessions(_sessions(), app="a")
        store = memory.store
        for kind, ids in (("fact", ["shop", "missing", "kiln", "lisbon", "kiln"]), ("session", ["s3", "s0", "nope", "s2"])):
            one_by_one = [(item, store.item_chunks("a", kind, e)) for e in dict.fromkeys(ids)
                          if (item := store.get_item("a", kind, e)) is not None]
            assert _plain(store.items_with_chunks("a", kind, ids)) == _plain(one_by_one)
        assert store.items_with_chunks("nobody", "fact", ["kiln"]) == []


def test_index_sentences_reads_items_in_batches_and_stores_the_same_vectors(where, monkeypatch):
    with Memory(where, embedder="hash") as memory:
        memory.add_facts([FactInput(text=text, fact_id=fid) for fid, text in FACTS.items()], app="a")
        memory.add_sessions(_sessions(), app="a")
        written = _all_sentences(memory)
        assert written
        memory.store.drop_sentence_vectors()
        memory.store.mark_sentences_indexed("a", False)  # as a database stored before they were kept
        calls: Counter[str] = Counter()
        for name in ("get_item", "item_chunks", "items_with_chunks"):
            method = getattr(memory.store, name)
            monkeypatch.setattr(memory.store, name, lambda *a, _m=method, _n=name, **k: calls.update([_n]) or _m(*a, **k))
        assert memory.index_sentences("a", batch=2) == len(written)
        # per kind, one read a batch of two: facts 3 (2 batches), sessions 4 (2 batches)
        assert calls == Counter({"items_with_chunks": 4})
        again = _all_sentences(memory)
        assert again.keys() == written.keys()
        assert all(np.array_equal(again[i], written[i]) for i in written)
