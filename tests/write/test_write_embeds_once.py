"""A write embeds each distinct text once: a short memory's line of one sentence is also one of
its stored sentences, and its sentence vector is the line's (the vectors stored are the same as
when it was embedded twice). Counted, never timed."""

from __future__ import annotations

from collections import Counter

import numpy as np

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
