"""Lines by meaning (diarist.read.lines): each memory shown by its lines closest to the question."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest

from diarist import Memory
from diarist.bench.context_bench import covered_turns
from diarist.context import build_context
from diarist.errors import InvalidInput
from diarist.read.lines import LinesParams, LineVectors, by_meaning
from diarist.types import Hit, Message

CHAT = [
    "Melanie: Hey Caroline, how was your week?",
    "Caroline: Busy! I painted the fence.",
    "Melanie: I did a 5k for mental health last Saturday.",
    "Caroline: That sounds great, Mel!",
    "Melanie: Thanks! My kids loved the pottery class.",
]
# A stand-in for the embedder: each line's cosine to the question, by the line.
COSINE = {CHAT[0]: 0.1, CHAT[1]: 0.2, CHAT[2]: 0.6, CHAT[3]: 0.35, CHAT[4]: 0.25}


def cosines(lines):
    return [COSINE.get(line, 0.0) for line in lines]


def _hit(session_id: str, passages: list[str], dense: float) -> Hit:
    return Hit(chunk_id=len(session_id), text="\n…\n".join(passages), score=0.9, session_id=session_id,
               fact_id=None, date="2024-01-01", roles=("user",), view="all", passages=passages,
               passage_ranks=list(range(len(passages))), first_turn=0, last_turn=len(CHAT) - 1,
               scores={"dense": dense})


def test_a_memory_below_the_first_is_shown_by_its_closest_line_not_the_one_holding_the_words():
    first = _hit("s1", ["The user moved to Porto."], dense=0.5)
    second = _hit("s2", ["\n".join(CHAT[:2]), "\n".join(CHAT[2:])], dense=0.3)
    params = LinesParams(first_whole_cosine=0.4, first_lines=3, rest_lines=1, max_rest=4, min_line_cosine=0.3)
    [(kept_first, trimmed_first), (shown, trimmed)] = by_meaning([first, second], cosines, params)
    assert kept_first is first and not trimmed_first  # clearly about the question: whole
    assert trimmed and shown.passages == [CHAT[2]]
    with_context = by_meaning([first, second], cosines, LinesParams(0.4, 3, 1, 4, 0.3, context=1))[1][0]
    assert with_context.passages == ["\n".join(CHAT[2:4])]  # context stays within the line's passage
    ranked = by_meaning([first, _hit("s3", [CHAT[4], CHAT[0], CHAT[2]], 0.3)], cosines, LinesParams(0.4, 3, 2, 4, -1.0))
    assert ranked[1][0].passages == [CHAT[4], CHAT[2]] and ranked[1][0].passage_ranks == [1, 0]  # best line first


def test_the_first_memory_is_trimmed_when_its_cosine_is_low_but_never_emptied():
    first = _hit("s1", ["\n".join(CHAT)], dense=0.2)
    [(shown, trimmed)] = by_meaning([first], cosines, LinesParams(0.4, 2, 1, 4, 0.3))
    assert trimmed and shown.passages == ["\n".join(CHAT[2:4])]
    # no line reaches the floor: the first keeps its best line all the same
    [(alone, _)] = by_meaning([first], cosines, LinesParams(0.4, 2, 1, 4, 0.9))
    assert alone.passages == [CHAT[2]]
    [(whole, trimmed)] = by_meaning([first], cosines, LinesParams(first_whole_cosine=-1.0))
    assert whole is first and not trimmed


def test_runners_up_past_max_rest_or_without_a_close_line_are_left_out():
    hits = [_hit("s1", ["\n".join(CHAT)], dense=0.5)] + [_hit(f"s{n}", [CHAT[n % 5]], dense=0.3) for n in range(2, 6)]
    shown = by_meaning(hits, cosines, LinesParams(0.4, 3, 1, max_rest=2, min_line_cosine=0.3))
    assert [s is not None for s in shown] == [True, True, True, False, False]
    assert shown[1][0] is hits[1] and not shown[1][1]  # its one line is the whole memory: not trimmed
    shown = by_meaning(hits, cosines, LinesParams(0.4, 3, 1, max_rest=0, min_line_cosine=0.3))
    assert [s is not None for s in shown] == [True, True, True, False, False]  # CHAT[4], CHAT[0]: under 0.3


def test_the_block_records_the_stage_and_counts_only_the_lines_shown():
    hits = [_hit("s1", ["The user moved to Porto."], dense=0.5), _hit("s2", ["\n".join(CHAT)], dense=0.3)]
    block = build_context(hits, lambda text: len(text.split()), trim=LinesParams(0.4, 3, 1, 4, 0.3),
                          line_cosines=cosines)
    assert [r.stage for r in block.trace][-2:] == ["trim", "budget"]
    assert "1 memory cut to its lines closest in meaning" in block.trace[-2].note
    snippet = next(s for s in block.snippets if s.hit.session_id == "s2")
    assert snippet.trimmed and CHAT[2] in str(block) and CHAT[0] not in str(block)
    messages = [Message(role="user", content=line) for line in CHAT]
    assert covered_turns(snippet.hit, messages, snippet.trimmed) == [2]
    with pytest.raises(ValueError, match="line_cosines"):
        build_context(hits, lambda text: len(text.split()), trim=LinesParams())


def test_memory_context_by_meaning_end_to_end():
    m = Memory(":memory:")
    m.add_sessions([
        {"messages": [{"role": "user", "content": "I repaired the garden fence with new cedar boards.\n"
                       "My cat Miso hid under the porch all day.\nThe hardware store closes at six."}],
         "date": "2025-01-01"},
        {"messages": [{"role": "user", "content": "What is a good name for a grey kitten?"}], "date": "2025-02-01"},
    ])
    plain = m.context("Where did my cat hide?", trim=None)
    lines = m.context("Where did my cat hide?", trim=LinesParams(first_whole_cosine=2.0, first_lines=1, rest_lines=1,
                                                                  max_rest=4, min_line_cosine=-1.0))
    assert "cedar boards" in str(plain) and "Miso hid under the porch" in str(lines)
    assert "cedar boards" not in str(lines)
    assert str(m.context("Where did my cat hide?", trim="none")) == str(plain)  # the name for None
    pointers = m.context("Where did my cat hide?", trim="pointers")
    assert "Miso hid under the porch" in str(pointers) and "trim" in [r.stage for r in pointers.trace]
    # the default serves the pointers, where the cut fitted with them applies (the default model)
    untimed = lambda trace: [{**r.to_dict(), "ms": None} for r in trace]  # noqa: E731 - times differ by run
    assert m.cut is not None and untimed(m.context("Where did my cat hide?").trace) == untimed(pointers.trace)
    uncut = m.derive(cut=None)
    assert "trim" not in [r.stage for r in uncut.context("Where did my cat hide?").trace]
    uncut.close()
    with pytest.raises(InvalidInput, match="trim must be"):
        m.context("Where did my cat hide?", trim="meaning")
    with pytest.raises(ValueError, match="at least 1"):
        LinesParams(rest_lines=0)
    m.close()


def test_a_line_that_asks_brings_its_reply_and_a_statement_does_not():
    asks = ["Melanie: What did you do on Saturday?", "Caroline: I ran a charity 5k.", "Melanie: Lovely."]
    score = {asks[0]: 0.6, asks[1]: 0.2, asks[2]: 0.1, CHAT[2]: 0.6}
    first = _hit("s1", ["The user moved to Porto."], dense=0.5)
    params = LinesParams(0.4, 3, 1, 4, 0.3, after=1)
    line_cosines = lambda lines: [score.get(line, 0.0) for line in lines]  # noqa: E731
    shown = by_meaning([first, _hit("s2", ["\n".join(asks)], 0.3)], line_cosines, params)[1][0]
    assert shown.passages == ["\n".join(asks[:2])]  # the question and the answer after it
    shown = by_meaning([first, _hit("s3", ["\n".join(CHAT)], 0.3)], line_cosines, params)[1][0]
    assert shown.passages == [CHAT[2]]  # a statement stands alone
    with pytest.raises(ValueError, match="after"):
        LinesParams(after=-1)


class CountingEmbed:
    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        return np.array([[len(t), 1.0 + t.count("a")] for t in texts], dtype=np.float32)


def test_line_vectors_embed_each_line_once_and_forget_the_least_recently_used():
    embed = CountingEmbed()
    vectors = LineVectors(embed, capacity=3)
    first = vectors(["a", "bb", "a"])
    assert embed.calls == [["a", "bb"]] and first.shape == (3, 2) and np.allclose(first[0], first[2])
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0)  # unit vectors: a dot product is a cosine
    vectors(["bb", "ccc"])
    assert embed.calls[-1] == ["ccc"] and vectors.embedded == 3 and len(vectors) == 3
    vectors(["dddd"])  # past capacity: "a", the least recently used, is forgotten
    vectors(["bb", "a"])
    assert embed.calls[-1] == ["a"] and len(vectors) == 3
    assert vectors([]).shape[0] == 0
    with pytest.raises(ValueError, match="capacity"):
        LineVectors(embed, capacity=-1)


def test_a_memory_embeds_a_line_once_across_questions():
    m = Memory(":memory:", store_lines=False)  # stored lines: tests/store/test_line_vectors.py
    m.add_sessions([{"messages": [{"role": "user", "content": "I repaired the garden fence.\nMy cat Miso hid under the porch."}],
                     "date": "2025-01-01"}])
    params = LinesParams(first_whole_cosine=2.0, first_lines=1, rest_lines=1, max_rest=4, min_line_cosine=-1.0)
    first = m.context("Where did my cat hide?", trim=params)
    embedded = m._line_vectors.embedded
    again = m.context("Where is the cat usually?", trim=params)
    assert embedded == 2 and m._line_vectors.embedded == embedded  # the second question embeds no line
    assert "Miso" in str(first) and "Miso" in str(again)
    m.close()


def test_the_best_memories_keep_their_passages_and_the_rest_become_pointers():
    hits = [_hit(f"s{n}", ["\n".join(CHAT)], dense=0.5) for n in range(4)]
    shown = by_meaning(hits, cosines, LinesParams(0.4, 3, 1, max_rest=3, min_line_cosine=0.3, whole=2))
    assert [s[0] is h and not s[1] for s, h in zip(shown[:2], hits)] == [True, True]  # passages, as given
    assert all(s[1] and s[0].passages == [CHAT[2]] for s in shown[2:])  # each by its closest line
    low = [_hit("s0", ["\n".join(CHAT)], dense=0.1)] + hits[1:]
    first = by_meaning(low, cosines, LinesParams(0.4, 2, 1, max_rest=3, min_line_cosine=0.3, whole=2))[0]
    assert first[1] and first[0].passages == ["\n".join(CHAT[2:4])]  # the first still needs its cosine
    with pytest.raises(ValueError, match="whole"):
        LinesParams(whole=-1)


def test_a_context_run_records_the_lines_it_was_served_by():
    from diarist.bench.context_bench import _trim_meta
    from diarist.read.lines import POINTERS

    assert _trim_meta("lines") == {"by": "lines", **asdict(LinesParams())}
    assert _trim_meta("pointers")["by"] == "pointers" and _trim_meta("pointers")["whole"] == POINTERS.whole > 1
    assert _trim_meta("none") is None


def test_a_block_whose_best_memory_has_no_close_line_shows_no_memory_whole():
    from diarist.read.lines import gated

    hits = [_hit(f"s{n}", ["\n".join(CHAT)], dense=0.5) for n in range(3)]
    params = LinesParams(-1.0, 2, 1, max_rest=3, min_line_cosine=0.3, whole=3, gate=0.5)
    assert gated(hits, cosines, params) == (params, None)  # its closest line (0.6) reaches the gate
    assert all(s[0] is h and not s[1] for s, h in zip(by_meaning(hits, cosines, params), hits))
    strict = LinesParams(-1.0, 2, 1, max_rest=3, min_line_cosine=0.3, whole=3, gate=0.7)
    shown_with, why = gated(hits, cosines, strict)
    assert why == "none shown whole: the best memory's closest line has cosine 0.60, under 0.7"
    shown = by_meaning(hits, cosines, shown_with)
    assert shown[0][1] and shown[0][0].passages == ["\n".join(CHAT[2:4])]  # the first by its 2 closest lines
    assert all(s[1] and s[0].passages == [CHAT[2]] for s in shown[1:])  # the rest by their closest line
    block = build_context(hits, lambda text: len(text.split()), trim=strict, line_cosines=cosines)
    [trim] = [r for r in block.trace if r.stage == "trim"]
    assert why in trim.note and block.snippets and all(s.trimmed for s in block.snippets)
    assert gated([], cosines, strict) == (strict, None)


def test_lines_are_embedded_as_passages_and_the_question_only_when_a_line_is_scored():
    """Lines are stored text: an asymmetric model (e5's "passage:" / "query:") embeds them as it
    embeds chunks. The question's vector for the lines is made on first use, so a block with no
    line to score (nothing recalled) does not embed the question a second time."""
    from diarist.embed.hashing import HashEmbedder

    class Counting(HashEmbedder):
        def __init__(self):
            super().__init__()
            self.calls: list[tuple[str, list[str]]] = []

        def embed_passages(self, texts, progress=None, counts=None):
            self.calls.append(("passages", list(texts)))
            return super().embed_passages(texts, progress, counts)

        def embed_query(self, texts):
            self.calls.append(("query", list(texts)))
            return super().embed_query(texts)

    embedder = Counting()
    with Memory(":memory:", embedder=embedder) as m:
        cosines = m._line_cosines("Where did my cat hide?")
        assert len(cosines([])) == 0 and embedder.calls == []
        lines = ["My cat Miso hid under the porch.", "The store closes at six."]
        cosines(lines)
        cosines(lines[:1])
        assert embedder.calls == [("query", ["Where did my cat hide?"]), ("passages", lines)]


def test_the_block_scores_lines_against_the_vector_search_made_of_the_question():
    """The question is embedded once per block: the lines are scored against the vector the
    dense channel made of it, and the cosines are those of a vector embedded again."""
    from diarist.embed.hashing import HashEmbedder

    class Counting(HashEmbedder):
        def __init__(self):
            super().__init__()
            self.queries: list[list[str]] = []

        def embed_query(self, texts):
            self.queries.append(list(texts))
            return super().embed_query(texts)

    embedder = Counting()
    question = "Where did my cat hide?"
    with Memory(":memory:", embedder=embedder) as m:
        m.add_session([{"role": "user", "content": "I repaired the garden fence.\nMy cat Miso hid under the porch."}],
                      session_id="s1")
        m.add_session([{"role": "user", "content": "The store closes at six.\nMy cat sleeps a lot."}], session_id="s2")
        embedder.queries.clear()
        block = m.context(question, trim="lines")
        assert block.snippets and embedder.queries == [[question]]
        results = m.search(question)
        lines = ["My cat Miso hid under the porch.", "The store closes at six."]
        reused = m._line_cosines(question, results.question_vector)(lines)
        assert np.allclose(reused, m._line_cosines(question)(lines), atol=1e-6)
