"""Tests with the real default model (all-MiniLM-L6-v2 int8 ONNX, vendored vocabulary).

They run in CI too; they are marked so that ``-m "not model"`` can leave them out locally.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from diarist import lexical
from diarist.write.chunk import chunk_session
from diarist.embed import get_embedder
from diarist.importers.locomo import locomo_sessions
from diarist.memory import Memory
from diarist.types import Message

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def minilm():
    return get_embedder("minilm")


def test_tokenizer_from_vendored_vocab_gives_the_models_ids(minilm):
    assert minilm._tokenizer.encode("hello world").ids == [101, 7592, 2088, 102]  # [CLS] hello world [SEP]
    assert minilm._tokenizer.encode("Hello, World!").ids == [101, 7592, 1010, 2088, 999, 102]
    # WordPiece: a rare word becomes several pieces, each with its character span
    assert minilm.count_tokens("hello world") == 2
    assert minilm.token_spans("hello world") == [(0, 5), (6, 11)]
    spans = minilm.token_spans("Zebulon")
    assert len(spans) > 1 and spans[0][0] == 0 and spans[-1][1] == len("Zebulon")
    assert (minilm.dim, minilm.max_tokens, minilm.window) == (384, 256, 254)


def test_embeddings_are_normalised_and_semantically_sane(minilm):
    texts = [
        "The cat sat on the mat.",
        "A kitten is resting on a rug.",
        "Quarterly revenue grew because bond markets rallied.",
        "The company's profits increased this quarter.",
    ]
    vecs = minilm.embed(texts)
    assert vecs.shape == (4, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sim = vecs @ vecs.T
    assert sim[0, 1] > sim[0, 2] and sim[0, 1] > sim[0, 3]
    assert sim[2, 3] > sim[2, 0] and sim[2, 3] > sim[2, 1]
    # deterministic, and batching does not change a vector
    np.testing.assert_allclose(minilm.embed([texts[1]])[0], vecs[1], atol=1e-4)


@pytest.mark.slow
def test_long_text_is_read_whole_not_truncated(minilm):
    """A text over the window is embedded window by window: its tail changes the vector."""
    head = "We talked about the weather and the garden. " * 60
    assert minilm.count_tokens(head) > minilm.window
    a = minilm.embed([head + "Then we discussed quantum chromodynamics and gluon fields at length. " * 8])[0]
    b = minilm.embed([head])[0]
    assert float(a @ b) < 0.999


def test_chunks_fit_the_real_window(minilm, locomo):
    """A whole LoCoMo conversation as one long session, plus a long code block: every chunk
    fits the model's window by its own tokenizer, except a code block that alone exceeds it."""
    record = locomo[0]
    turns = [m for s in locomo_sessions(record) for m in s.messages]
    long_turn = " ".join(m["content"] for m in turns[:40])
    code = "```python\n" + "\n".join(f"value_{i} = compute({i}, 'x')" for i in range(120)) + "\n```"
    messages = [Message(m["role"], m["content"]) for m in turns] + [
        Message("user", long_turn),
        Message("assistant", "Here it is:\n\n" + code + "\n\nThat is all."),
    ]
    chunks = chunk_session(messages, minilm, "all")
    assert len(chunks) > 10
    oversize = [c for c in chunks if minilm.count_tokens(c.text) > minilm.window]
    assert [c.text for c in oversize] == [code]
    for c in chunks:
        assert c.n_tokens == minilm.count_tokens(c.text) or c.text == code
    text = "\n".join(c.text for c in chunks)
    for m in turns:
        assert m["content"].strip() in text  # nothing was dropped


@pytest.mark.slow
def test_text_cut_inside_a_word_still_fits_the_window(minilm, tmp_path):
    """Regression: a cut between two sub-word tokens re-tokenised one token longer, so a long
    run-on text made a 255-token chunk and embed() raised "257 tokens exceeds the window"."""
    import random

    rng = random.Random(0)
    text = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 14))) for _ in range(300))
    for piece, n in minilm.pieces(text):
        assert minilm.count_tokens(piece) == n <= minilm.window
    for chunk in chunk_session([Message("user", text)], minilm, "all"):
        assert minilm.count_tokens(chunk.text) == chunk.n_tokens <= minilm.window
    with Memory(tmp_path / "m.sqlite", embedder=minilm) as mem:
        mem.add_session([{"role": "user", "content": text}], app="a")
        assert mem.search(text, app="a", k=3)  # a long query is read whole too


# -- the proper-noun case --------------------------------------------------------------------

# Questions from LoCoMo whose answer hinges on a rare proper noun found in one session only.
# Verified against the data: each name appears in exactly one of the 194 sessions, the evidence one.
PROPER_NOUN_QUESTIONS = [
    ('What did Caroline take away from the book "Becoming Nicole"?', "nicole", "conv-26:session_7"),
    ("Where did Oscar hide his bone once?", "oscar", None),
    ("Who is Anthony?", "anthony", None),
]


@pytest.fixture(scope="module")
def locomo_memory(tmp_path_factory, locomo, minilm):
    """Every session of the 7 LoCoMo conversations (194) in one app. View "split": every turn in
    the lexical channel and, both speakers being users, in the dense one too. Without the lines'
    vectors (store_lines=False): only the context block's trim reads them, never search, and they
    were half the tokens it embedded (149k of 298k; the embedding is the fixture's whole cost)."""
    sessions = [s for record in locomo for s in locomo_sessions(record)]
    mem = Memory(tmp_path_factory.mktemp("locomo") / "locomo.sqlite", embedder=minilm, plan="split",
                 store_lines=False)
    mem.add_sessions(sessions, app="locomo")
    yield mem, sessions
    mem.close()


def _evidence_session(locomo, question: str) -> str:
    for record in locomo:
        for qa in record["qa"]:
            if qa["question"] == question:
                (number,) = set(re.findall(r"D(\d+):\d+", " ".join(qa["evidence"])))
                return f"{record['sample_id']}:session_{number}"
    raise AssertionError(f"question not in the data: {question}")


def _rank(hits, session_id: str) -> int | None:
    return next((n for n, h in enumerate(hits, 1) if h.session_id == session_id), None)


@pytest.mark.parametrize("question,name,expected", PROPER_NOUN_QUESTIONS, ids=lambda v: str(v)[:24])
@pytest.mark.slow
def test_rare_proper_noun_is_found_with_fusion(locomo_memory, locomo, question, name, expected):
    mem, sessions = locomo_memory
    gold = _evidence_session(locomo, question)
    if expected:
        assert gold == expected
    holders = [s.session_id for s in sessions if any(lexical.stem(name) in lexical.analyze(m["content"]) for m in s.messages)]
    assert holders == [gold], f"{name!r} should occur in the evidence session only, found in {holders}"
    assert len(sessions) >= 150
    fused = mem.search(question, app="locomo", k=200)
    dense_only = Memory(mem.store, embedder=mem.embedder, plan="split", lexical_fusion=False).search(question, app="locomo", k=200)
    fused_rank, dense_rank = _rank(fused, gold), _rank(dense_only, gold)
    assert not fused.notes
    assert fused_rank is not None and fused_rank <= 5, (
        f"{question!r}: evidence {gold} at fused rank {fused_rank} (dense-only rank {dense_rank}) "
        f"among {len(sessions)} sessions"
    )
    print(f"{question!r}: dense-only rank {dense_rank}, fused rank {fused_rank}, channels {fused[fused_rank - 1].ranks}")


def test_maxsim_second_stage_reads_the_models_token_vectors(minilm):
    """MaxSim over MiniLM's own token vectors (diarist.rerank.maxsim): the shared base hands out
    the very hidden states it mean-pools, and the candidate holding the question's words wins."""
    from types import SimpleNamespace

    from diarist.rerank.maxsim import MaxSimParams, MaxSimReranker

    text = "I adopted a cat named Whiskers last Sunday."
    ((encoding, tokens),) = minilm.token_vectors([text])
    np.testing.assert_allclose(tokens.mean(axis=0), minilm.embed_batch([text])[0], atol=1e-5)
    assert len(tokens) == len(encoding.ids) == minilm.count_tokens(text) + 2
    stage = MaxSimReranker(MaxSimParams(weight=1.0, depth=3), embedder=minilm)
    candidates = ("My sister plays the violin.", text, "It rained in Lisbon.")
    late = stage.scores("What is my cat's name?", [SimpleNamespace(text=t) for t in candidates])
    assert late[1] > max(late[0], late[2])
