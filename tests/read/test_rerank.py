"""The second stage: the reranker interface, lazy loading, fallback, and a real cross-encoder.

The cross-encoder test builds a tiny random-weight BERT cross-encoder inside the test (no
weights can be downloaded here); it needs the ``[st]`` extra and is skipped without it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from diarist import Memory
from diarist.rerank import LazyReranker, Reranker, get_reranker
from diarist.types import Hit


def _hit(i: int, text: str) -> Hit:
    return Hit(chunk_id=i, text=text, score=1.0 / (60 + i), session_id=f"s{i}", fact_id=None,
               date=None, roles=("user",), view="all")


class LengthReranker(Reranker):
    """Scores by text length: a transparent stand-in to test the interface."""

    name = "length"

    def scores(self, query: str, hits: Sequence[Hit], now=None) -> list[float]:
        return [float(len(h.text)) for h in hits]


def test_rerank_orders_by_score_and_marks_the_stage() -> None:
    hits = [_hit(1, "aa"), _hit(2, "aaaa"), _hit(3, "a"), _hit(4, "aaaa")]
    out = LengthReranker().rerank("q", hits)
    assert [h.chunk_id for h in out] == [2, 4, 1, 3]  # the tie keeps the fused order
    assert all(h.stage == "length" for h in out)
    assert out[0].scores["length"] == 4.0


def test_lazy_reranker_falls_back_to_fused_order_with_one_warning(caplog) -> None:
    calls = []

    def broken() -> Reranker:
        calls.append(1)
        raise OSError("no such model folder")

    lazy = LazyReranker(broken, name="cross-encoder")
    hits = [_hit(1, "x"), _hit(2, "yy")]
    with caplog.at_level(logging.WARNING, logger="diarist"):
        first = lazy.rerank("q", hits)
        second = lazy.rerank("q", hits)
    assert [h.chunk_id for h in first] == [h.chunk_id for h in second] == [1, 2]
    assert all(h.stage == "fused" for h in first)
    assert len(calls) == 1, "a failed load is not retried on every search"
    assert sum("could not load" in r.message for r in caplog.records) == 1
    assert "no such model folder" in lazy.error


def test_get_reranker_specs() -> None:
    assert get_reranker(None) is None and get_reranker("none") is None
    assert isinstance(get_reranker("cross-encoder:/nowhere"), LazyReranker)
    with pytest.raises(ValueError, match="unknown reranker"):
        get_reranker("magic")


@pytest.mark.slow
def test_search_with_a_reranker_that_cannot_load_keeps_fused_order(tmp_path) -> None:
    sessions = [
        ("s1", "I adopted a cat named Admon from the shelter."),
        ("s2", "We talked about tuna recipes for dinner."),
        ("s3", "My sister visited Lisbon in spring."),
    ]
    plain = Memory(tmp_path / "a.sqlite", embedder="hash")
    reranked = Memory(tmp_path / "b.sqlite", embedder="hash", reranker=get_reranker("cross-encoder:/nowhere"))
    for memory in (plain, reranked):
        for sid, text in sessions:
            memory.add_session([{"role": "user", "content": text}], session_id=sid, app="a")
    a = plain.search("cat Admon", app="a", k=3)
    b = reranked.search("cat Admon", app="a", k=3)
    assert [h.chunk_id for h in a] == [h.chunk_id for h in b]
    assert all(h.stage == "fused" for h in b)
    assert any("reranker" in note for note in b.notes)


def _tiny_cross_encoder(folder) -> str:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("sentence_transformers")
    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz",
             "cat", "admon", "tuna", "lisbon", "my", "the"]
    (folder / "vocab.txt").write_text("\n".join(vocab))
    tokenizer = transformers.BertTokenizerFast(str(folder / "vocab.txt"))
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=128, num_labels=1,
    )
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.mark.slow


def test_real_cross_encoder_reorders_by_its_own_scores(tmp_path) -> None:
    model_dir = _tiny_cross_encoder(tmp_path / "ce")
    from diarist.rerank.cross_encoder import CrossEncoderReranker

    reranker = CrossEncoderReranker(model_dir, max_length=64)
    hits = [_hit(i, text) for i, text in enumerate(["my cat admon", "tuna", "lisbon the cat", "the"], 1)]
    expected = reranker.scores("cat", hits)
    out = reranker.rerank("cat", list(hits))
    assert [h.scores["cross-encoder"] for h in out] == sorted(expected, reverse=True)
    assert all(h.stage == "cross-encoder" for h in out)

    memory = Memory(tmp_path / "m.sqlite", embedder="hash", reranker=get_reranker(f"cross-encoder:{model_dir}"))
    for i, text in enumerate(["my cat admon", "tuna", "lisbon the cat"]):
        memory.add_session([{"role": "user", "content": text}], session_id=f"s{i}", app="a")
    results = memory.search("cat", app="a", k=3)
    assert results and all(h.stage == "cross-encoder" for h in results)
    scores = [h.scores["cross-encoder"] for h in results]
    assert scores == sorted(scores, reverse=True)
