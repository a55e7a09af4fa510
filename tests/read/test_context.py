"""The context block: format, budget, emptiness, and placement in a chat."""

from __future__ import annotations

import pytest

from diarist.context import FOOTER, HEADER, ContextBlock, place_context
from diarist.errors import InvalidInput
from diarist.memory import Memory


@pytest.fixture()
def memory():
    m = Memory(":memory:", embedder="hash")
    m.add_session(
        [{"role": "user", "content": "My cat is called Admon and she loves tuna."},
         {"role": "assistant", "content": "Admon is a lovely name for a cat."}],
        app="me", session_id="s-cat", date="2024-05-01",
    )
    m.add_fact("The user moved to Lisbon in March.", app="me", fact_id="f-move", date="2024-03-10T14:30")
    m.add_fact("The user's cat Admon is allergic to chicken.", app="me", fact_id="f-allergy", date="2024-06-02")
    m.add_fact("Another app's secret: the cat is called Zorro.", app="other", fact_id="f-other")
    yield m
    m.close()


def test_block_has_dates_sources_and_the_rule(memory):
    block = memory.context("What is my cat called?", app="me", budget_tokens=500, relative_cut=None, trim=None)
    assert isinstance(block, ContextBlock) and isinstance(block, str)
    assert block.startswith(HEADER) and block.endswith(FOOTER)
    assert "2024-05-01 · conversation s-cat (user, assistant)" in block
    assert "2024-03-10 14:30 · note f-move" in block
    assert "past records" in block and "current state wins" in block
    assert "Zorro" not in block  # another app's memory never leaks in
    # date order: a timeline, oldest first, numbered in that order
    assert block.index("[1] 2024-03-10") < block.index("[2] 2024-05-01") < block.index("[3] 2024-06-02")
    assert {s.hit.fact_id or s.hit.session_id for s in block.snippets} == {"s-cat", "f-move", "f-allergy"}


def test_hits_far_below_the_best_are_left_out(memory):
    """The share-of-best cut (no longer the default: diarist.read.cut replaced it) still drops
    memories far weaker than the best (the move to Lisbon, for a question about the cat) when
    asked; with RRF, whose scores are ranks, it is not applied."""
    everything = memory.context("What is my cat called?", app="me", budget_tokens=500, relative_cut=None, trim=None)
    cut = memory.context("What is my cat called?", app="me", budget_tokens=500, relative_cut=0.65, trim=None)
    ids = lambda block: {s.hit.fact_id or s.hit.session_id for s in block.snippets}  # noqa: E731
    assert "f-move" in ids(everything) and "f-move" not in ids(cut)
    assert "s-cat" in ids(cut) and any("of the best hit's score left out" in n for n in cut.notes)
    best = max(s.hit.score for s in cut.snippets)
    assert all(s.hit.score >= 0.65 * best for s in cut.snippets)
    rrf = memory.derive(fusion="rrf").context("What is my cat called?", app="me", budget_tokens=500, relative_cut=0.65,
                                              trim=None)
    assert ids(rrf) == ids(everything)
    with pytest.raises(InvalidInput, match="relative_cut"):
        memory.context("cat", app="me", relative_cut=1.5)


def test_block_is_stable(memory):
    a = memory.context("cat", app="me", budget_tokens=400)
    b = memory.context("cat", app="me", budget_tokens=400)
    assert str(a) == str(b)


def test_relevance_order(memory):
    block = memory.context("Admon allergic chicken", app="me", budget_tokens=500, order="relevance")
    assert block.snippets[0].hit.fact_id == "f-allergy"
    assert block.index("[1]") < block.index("allergic")


def test_budget_is_respected_and_nothing_is_cut(memory):
    full = memory.context("cat", app="me", budget_tokens=1000)
    count = memory.embedder.count_tokens
    small_budget = count(HEADER) + count(FOOTER) + max(s.n_tokens for s in full.snippets)
    small = memory.context("cat", app="me", budget_tokens=small_budget)
    assert 0 < len(small.snippets) < len(full.snippets)
    assert small.n_tokens <= small_budget
    assert any("did not fit" in n for n in small.notes)
    for s in small.snippets:  # every kept snippet is whole
        assert s.hit.text.strip() in small


def test_empty_when_nothing_is_found_or_budget_holds_no_snippet(memory):
    assert memory.context("cat", app="nobody-here", budget_tokens=500) == ""
    tiny = memory.context("cat", app="me", budget_tokens=5)
    assert tiny == "" and tiny.notes


def test_min_score_floor_hook_can_empty_the_block(memory):
    assert memory.context("cat", app="me", budget_tokens=500, min_score=0.0) != ""
    block = memory.context("cat", app="me", budget_tokens=500, min_score=1e9)
    assert block == "" and any("floor" in n for n in block.notes)


@pytest.mark.parametrize("budget", [0, -1, "10", 10**9, True])
def test_bad_budget_is_refused(memory, budget):
    with pytest.raises(InvalidInput):
        memory.context("cat", app="me", budget_tokens=budget)


def test_place_context_in_last_user_turn():
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "What is my cat called?"},
    ]
    placed = place_context(messages, "<memory>X</memory>")
    assert placed[-1]["content"] == "<memory>X</memory>\n\nWhat is my cat called?"
    assert placed[:-1] == messages[:-1]
    assert [m["role"] for m in placed].count("system") == 1  # never a second system message
    assert messages[-1]["content"] == "What is my cat called?"  # input untouched
    assert place_context(messages, "") == messages


def test_place_context_with_content_parts_and_no_user_turn():
    parts = [{"role": "user", "content": [{"type": "text", "text": "Q?"}]}]
    placed = place_context(parts, "BLOCK")
    assert placed[0]["content"][0] == {"type": "text", "text": "BLOCK"}
    assert placed[0]["content"][1] == {"type": "text", "text": "Q?"}
    with pytest.raises(InvalidInput):
        place_context([{"role": "system", "content": "x"}], "BLOCK")


def test_with_context_uses_the_last_user_turn(memory):
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Where did I move to?"}]
    placed, block = memory.with_context(messages, app="me", budget_tokens=500)
    assert "Lisbon" in block
    assert placed[-1]["content"].startswith(HEADER) and placed[-1]["content"].endswith("Where did I move to?")
