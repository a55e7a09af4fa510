"""The MaxSim second stage (diarist.rerank.maxsim) without the model: the real WordPiece
tokenizer of the default model and a stand-in graph whose token vector depends only on the
token id, so that a candidate sharing a question's word matches it exactly (cosine 1)."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest
from tokenizers import BertWordPieceTokenizer

from diarist.embed.onnx_base import OnnxTransformerEmbedder
from diarist.embed.onnx_minilm import VOCAB_PATH
from diarist.errors import ConfigError
from diarist.memory import Memory
from diarist.read.question import Question
from diarist.rerank import RERANKERS, LazyReranker, get_reranker
from diarist.rerank.base import Reranker
from diarist.rerank.maxsim import MaxSimParams, MaxSimReranker, blend_order, content_tokens, maxsim, parse_spec
from diarist.types import Hit

DIM = 32


class TokenIdGraph:
    """Stands in for the ONNX session: each token's vector is a fixed random vector of its id."""

    def __init__(self) -> None:
        self.calls = 0
        self.table = np.random.default_rng(0).standard_normal((31_000, DIM)).astype(np.float32)

    def run(self, _outputs, feed):
        self.calls += 1
        assert set(feed) == {"input_ids", "attention_mask", "token_type_ids"}
        return [self.table[feed["input_ids"]] * feed["attention_mask"][:, :, None]]


class FakeMiniLM(OnnxTransformerEmbedder):
    model_id = "fake-token-ids"
    dim = DIM
    max_tokens = 16
    batch_size = 2

    def __init__(self) -> None:
        self._tokenizer = BertWordPieceTokenizer(str(VOCAB_PATH), lowercase=True)
        self._session = TokenIdGraph()
        self._input_names = {"input_ids", "attention_mask", "token_type_ids"}


class KeepOrder(Reranker):
    name = "keep"

    def scores(self, query, hits, now=None):
        return [-float(i) for i in range(len(hits))]

    def rerank_question(self, question, hits):
        return list(hits)


def hits_of(texts: list[str]) -> list[Hit]:
    """Hits in fused order, scores falling from 1."""
    return [Hit(chunk_id=i, text=t, score=1.0 - 0.01 * i, session_id=f"s{i}", fact_id=None, date=None,
                roles=("user",), view="split") for i, t in enumerate(texts)]


def test_spec_parses_and_bad_specs_fail_when_built():
    assert parse_spec("maxsim") == MaxSimParams()
    assert parse_spec("maxsim:weight=0.5,depth=7,mode=rank,cache=/tmp/x.sqlite") == MaxSimParams(0.5, 7, "rank", "/tmp/x.sqlite")
    for bad in ("maxsim:weight=2", "maxsim:depth=0", "maxsim:mode=best", "maxsim:colour=red", "maxsim:weight=x", "maxsim:7"):
        with pytest.raises(ConfigError):
            get_reranker(bad)
    built = RERANKERS.build("maxsim:depth=3")
    assert isinstance(built, LazyReranker) and built.name == "maxsim" and built.error is None  # nothing loaded yet


def test_question_tokens_drop_specials_stopwords_and_punctuation():
    tokenizer = BertWordPieceTokenizer(str(VOCAB_PATH), lowercase=True)
    text = "What did Caroline paint, in May?"
    enc = tokenizer.encode(text)
    kept = [enc.tokens[i] for i in content_tokens(text, enc)]
    assert kept[0] == "caroline" and "paint" in kept and "may" in kept
    assert not {"[CLS]", "[SEP]", "what", "did", "in", ",", "?"} & set(kept)
    only_stop = "What is it?"  # nothing left: every non-special token counts
    enc = tokenizer.encode(only_stop)
    assert [enc.tokens[i] for i in content_tokens(only_stop, enc)] == ["what", "is", "it", "?"]


def test_maxsim_and_blend():
    q = np.eye(3, dtype=np.float32)[:2]
    assert maxsim(q, np.eye(3, dtype=np.float32)) == pytest.approx(1.0)
    assert maxsim(q, np.eye(3, dtype=np.float32)[2:]) == pytest.approx(0.0)
    assert maxsim(q, np.zeros((0, 3), np.float32)) == 0.0
    fused, late = [0.9, 0.8, 0.7], [0.1, 0.5, 0.9]
    assert blend_order(fused, late, 0.0, "convex") == [0, 1, 2]
    assert blend_order(fused, late, 1.0, "convex") == [2, 1, 0]
    assert blend_order(fused, late, 0.1, "convex") == [0, 1, 2]  # 0.82, 0.77, 0.72
    assert blend_order(fused, [0.1, 0.9, 0.5], 0.3, "convex") == [1, 0, 2]  # 0.66, 0.83, 0.64
    assert blend_order([0.5, 0.5], [0.2, 0.2], 0.5, "convex") == [0, 1]
    assert blend_order(fused, late, 4.0, "rank") == [2, 1, 0]
    assert blend_order(fused, late, 0.0, "rank") == [0, 1, 2]
    with pytest.raises(ConfigError):
        blend_order(fused, late, 0.5, "other")


def test_rerank_lifts_the_candidate_holding_the_questions_words_within_depth_only():
    stage = MaxSimReranker(MaxSimParams(weight=1.0, depth=3), embedder=FakeMiniLM(), then=KeepOrder())
    texts = ["the weather was rainy", "my sister plays violin", "whiskers is my cat", "whiskers the cat again"]
    out = stage.rerank_question(Question("What is my cat Whiskers?"), hits_of(texts))
    assert out[0].chunk_id == 2 and out[3].chunk_id == 3  # the 4th is past depth: its place is kept
    assert out[0].stage == "maxsim" and out[0].scores["maxsim"] == pytest.approx(1.0, abs=0.02)
    assert "maxsim" not in out[3].scores and out[3].stage == "fused"
    assert stage.rerank("anything", []) == []


def test_long_candidates_are_read_in_pieces_not_truncated():
    stage = MaxSimReranker(MaxSimParams(weight=1.0, depth=2), embedder=FakeMiniLM(), then=KeepOrder())
    filler = " ".join(["weather"] * 40)  # far over the 16-token window
    out = stage.rerank_question(Question("violin"), hits_of([filler + " violin", filler]))
    assert [h.chunk_id for h in out] == [0, 1]
    assert out[0].scores["maxsim"] == pytest.approx(1.0, abs=0.02) and out[1].scores["maxsim"] < 0.9


def test_the_default_stage_runs_after_the_blend(tmp_path):
    """Without ``then`` the default's evidence:time stage reorders the blended candidates."""
    stage = MaxSimReranker(MaxSimParams(weight=0.0, depth=2), embedder=FakeMiniLM())
    hits = hits_of(["we went hiking", "we went hiking too"])
    hits[0].date, hits[1].date = "2023-01-02T00:00:00", "2023-05-13T00:00:00"
    question = Question("What did we do last Saturday?", now=datetime(2023, 5, 17))
    assert [h.chunk_id for h in stage.rerank_question(question, hits)] == [1, 0]


def test_token_cache_serves_a_second_reranker_without_a_model_pass(tmp_path):
    cache = str(tmp_path / "tokens.sqlite")
    texts = ["whiskers is my cat", "my sister plays violin", "a long walk " * 10]
    first = MaxSimReranker(MaxSimParams(weight=1.0, depth=3, cache=cache), embedder=FakeMiniLM(), then=KeepOrder())
    a = first.scores("my cat whiskers", hits_of(texts))
    second_model = FakeMiniLM()
    second = MaxSimReranker(MaxSimParams(weight=1.0, depth=3, cache=cache), embedder=second_model, then=KeepOrder())
    b = second.scores("my cat whiskers", hits_of(texts))
    assert a == b and second_model._session.calls == 1  # the question only
    uncached = MaxSimReranker(MaxSimParams(weight=1.0, depth=3), embedder=FakeMiniLM(), then=KeepOrder())
    assert uncached.scores("my cat whiskers", hits_of(texts)) == a  # int8 either way: one result


def test_memory_takes_the_stage_by_instance_and_keeps_working():
    stage = MaxSimReranker(MaxSimParams(weight=1.0, depth=5), embedder=FakeMiniLM(), then=KeepOrder())
    memory = Memory(":memory:", embedder="hash", reranker=stage)
    for text in ("The weather in Lisbon was rainy.", "My cat is called Whiskers.", "My sister plays violin."):
        memory.add_fact(text)
    hits = memory.search("Whiskers cat", k=3)
    assert hits[0].text == "My cat is called Whiskers." and hits[0].stage == "maxsim"
    memory.close()
