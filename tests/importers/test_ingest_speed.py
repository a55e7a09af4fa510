"""Ingest does no work beyond what embedding needs (issue 28 item 5): the tokenizer reads each text
of a note once (the chunker's counts are handed to the embedder, not counted again), the embedder
counts a call's texts in one batch and cuts only those over its window. Counted, never timed
(benchmarks/ingest_speed.py has the seconds)."""

from __future__ import annotations

from collections import Counter

from diarist.embed.hashing import HashEmbedder
from diarist.memory import Memory


class CountingEmbedder(HashEmbedder):
    """The hash embedder, recording every text its tokenizer reads and every call."""

    def __init__(self) -> None:
        super().__init__(dim=32, max_tokens=64)
        self.tokenized: Counter[str] = Counter()
        self.batch_counts: list[int] = []  # texts per count_tokens_many call
        self.cut: list[str] = []  # texts embed() had to cut into pieces

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        self.tokenized[text] += 1
        return super().token_spans(text)

    def count_tokens_many(self, texts):
        self.batch_counts.append(len(texts))
        return super().count_tokens_many(texts)

    def pieces(self, text, limit=None):
        self.cut.append(text)
        return super().pieces(text, limit)


def _paragraph(n: int) -> str:
    return f"Paragraph {n} about the glaze firing schedule of kiln number {n} and its cone."


def test_a_long_note_is_tokenized_once_per_stage(tmp_path):
    embedder = CountingEmbedder()
    paragraphs = [_paragraph(n) for n in range(30)]  # 14 tokens each: ~4 to a 64-token chunk
    note = "\n\n".join(paragraphs)  # one message far over the window: split by paragraph
    # The chunks' path alone: the lines' vectors (store_lines) read each line once more.
    memory = Memory(str(tmp_path / "m.sqlite"), embedder=embedder, store_lines=False)
    report = memory.add_sessions([{"session_id": "kiln", "messages": [{"role": "user", "content": note}]}])
    memory.close()
    assert embedder.tokenized[note] == 1  # the message, counted once to learn it must be split
    assert [embedder.tokenized[p] for p in paragraphs] == [1] * len(paragraphs)  # each piece once, not twice
    # the chunks' texts are not read again: the chunker's counts go to the embedder
    assert set(embedder.tokenized) == {note, *paragraphs}
    assert embedder.batch_counts == [1]  # the chunker's one call for the session's one message
    assert report.chunks > 1 and not embedder.cut  # every chunk fits the window: embed cut none


def test_counts_given_to_the_embedder_give_the_same_vectors():
    texts = [_paragraph(n) for n in range(5)] + [" ".join(_paragraph(n) for n in range(10))]
    counting = CountingEmbedder()
    counts = counting.count_tokens_many(texts)
    assert (counting.embed_passages(texts, counts=counts) == CountingEmbedder().embed_passages(texts)).all()


def test_embed_counts_a_call_in_one_batch_and_cuts_only_long_texts():
    embedder = CountingEmbedder()
    short = [f"note {n} on the kiln" for n in range(10)]
    long = " ".join(_paragraph(n) for n in range(10))  # ~140 tokens, over the 64-token window
    vectors = embedder.embed_passages([*short, long])
    assert vectors.shape == (11, 32)
    assert embedder.batch_counts == [11]  # one count for the whole call
    assert embedder.cut == [long]  # only the long text is cut into pieces
