"""The block's trimming (diarist.read.trim): each memory shown by the lines that speak of the question."""

from __future__ import annotations

from diarist.bench.context_bench import covered_turns
from diarist.context import build_context
from diarist.read.question import Question
from diarist.read.trace import Trace
from diarist.read.trim import TrimParams, selective_terms, held_by_line, trim_hits
from diarist.types import Hit, Message

CHAT = [
    "Melanie: Hey Caroline, how was your week?",
    "Caroline: Busy! I painted the fence.",
    "Melanie: I ran a charity race for mental health last Saturday.",
    "Caroline: That sounds great, Mel!",
    "Melanie: Thanks! My kids loved the pottery class.",
    "Caroline: I should try pottery too.",
]


def _hit(session_id: str, passages: list[str], score: float = 0.9, ranks: list[int] | None = None) -> Hit:
    return Hit(chunk_id=len(session_id), text="\n…\n".join(passages), score=score, session_id=session_id,
               fact_id=None, date="2024-01-01", roles=("user",), view="all", passages=passages,
               passage_ranks=ranks or list(range(len(passages))), first_turn=0, last_turn=len(CHAT) - 1)


def _terms(question: str) -> list[str]:
    return Question(question).own_terms


def test_a_passage_is_cut_to_its_matching_line_and_one_line_either_side():
    hit = _hit("s1", ["\n".join(CHAT)])
    [(shown, trimmed)] = trim_hits([hit], _terms("When did Melanie run a charity race?"), TrimParams(1, 0.4, False))
    assert trimmed and shown.passages == ["\n".join(CHAT[1:4])]
    [(alone, _)] = trim_hits([hit], _terms("When did Melanie run a charity race?"), TrimParams(0, 0.4, False))
    assert alone.passages == [CHAT[2]]


def test_a_term_most_lines_hold_selects_no_line():
    """The speaker's name is in half the lines: it says nothing of which turn answers."""
    def selective(question: str) -> set[str]:
        terms = set(_terms(question))
        return selective_terms([held_by_line(["\n".join(CHAT)], terms)], terms, 0.4)

    assert selective("What did Melanie say about pottery?") == {"potteri"}
    # every term held is common (a small block): every term held selects
    assert selective("What did Melanie say?") == {"melani"}


def test_runs_are_ranked_by_the_terms_they_hold_and_kept_in_original_order():
    text = "\n".join(CHAT + ["filler line one", "filler line two", "The charity race raised money."])
    [(shown, _)] = trim_hits([_hit("s1", [text])], _terms("charity race pottery"), TrimParams(0, 0.4, False))
    assert shown.passages == [CHAT[2], "\n".join(CHAT[4:6]), "The charity race raised money."]  # adjacent: one run
    assert shown.passage_ranks == [0, 2, 1]  # the two lines holding two terms first


def test_a_memory_with_no_matching_line():
    first = _hit("s1", ["nothing here", "nor here either"], ranks=[1, 0])
    second = _hit("s2", ["still nothing"])
    third = _hit("s3", ["a charity race"])
    terms = _terms("charity race")
    left_out = trim_hits([first, second, third], terms, TrimParams(1, 1.0, False, 0, -1.0))
    assert left_out[0][0].passages == ["nor here either"]  # the best memory stays, by its best passage
    assert left_out[1] is None and left_out[2] == (third, False)
    kept = trim_hits([first, second, third], terms, TrimParams(1, 1.0, True, 0, -1.0))
    assert kept[1] == (second, False)
    assert trim_hits([first, second], [], TrimParams()) == [(first, False), (second, False)]  # no terms


def test_the_block_shows_the_trimmed_lines_and_says_what_it_left_out():
    hit = _hit("s1", ["\n".join(CHAT)])
    other = _hit("s2", ["The weather was nice."], score=0.5)
    trace = Trace(explain=True)
    words = lambda text: len(text.split())  # noqa: E731
    block = build_context([hit, other], words, budget_tokens=400, terms=_terms("Melanie charity race"),
                          trace=trace, trim=TrimParams(0, 0.4, False))
    assert [s.hit.id for s in block.snippets] == ["s1"] and block.snippets[0].trimmed
    assert CHAT[2] in block and CHAT[4] not in block
    assert [(d.id, d.stage) for d in block.dropped] == [("s2", "trim")]
    assert any(r.stage == "trim" and r.dropped == 1 for r in block.trace)
    whole = build_context([hit, other], words, budget_tokens=400, terms=_terms("Melanie charity race"), trim=None)
    assert CHAT[4] in whole and len(whole.snippets) == 2


def test_the_bench_counts_only_the_turns_a_trimmed_snippet_shows():
    messages = [Message(role="user", content=line) for line in CHAT]
    hit = _hit("s1", [CHAT[2]])
    assert covered_turns(hit, messages, trimmed=True) == [2]
    assert covered_turns(hit, messages) == list(range(len(CHAT)))  # untrimmed: the span


def test_below_the_first_a_memory_shows_its_best_runs_only():
    text = "\n".join(["the charity race", "filler one", "filler two", "a race", "filler three", "a charity"])
    first, second = _hit("s1", [text]), _hit("s2", [text], score=0.5)
    [(top, _), (below, _)] = trim_hits([first, second], _terms("charity race"), TrimParams(0, 1.0, False, 1))
    assert top.passages == ["the charity race", "a race", "a charity"]
    assert below.passages == ["the charity race"]  # its best run (two terms) only


def test_the_first_memory_with_neither_the_words_nor_the_meaning_leaves_the_block_empty():
    far = _hit("s1", ["nothing of it here"])
    far.scores["dense"] = 0.05
    near = _hit("s2", ["nothing of it either"])
    near.scores["dense"] = 0.4
    params = TrimParams(1, 0.2, False, 0, 0.25)
    assert trim_hits([far], _terms("charity race"), params) == [None]
    assert trim_hits([near], _terms("charity race"), params) == [(near, False)]
    assert trim_hits([far], _terms("charity race"), TrimParams(1, 0.2, False, 0, -1.0)) == [(far, False)]
    block = build_context([far], lambda text: len(text.split()), terms=_terms("charity race"), trim=params)
    assert block == "" and not block.snippets


def test_memory_trims_where_its_cut_applies():
    """The trimming was fitted with the cut, for the model the cut is for: a memory without a
    cut (another embedder) shows passages whole unless asked; a bad value is refused."""
    import pytest

    from diarist.errors import InvalidInput
    from diarist.memory import Memory

    with Memory(":memory:", embedder="hash") as m:
        m.add_session([{"role": "user", "content": line} for line in CHAT], app="me", session_id="s1")
        assert m.cut is None
        whole = m.context("charity race", app="me")
        assert CHAT[0] in whole and not any(s.trimmed for s in whole.snippets)
        trimmed = m.context("charity race", app="me", trim=TrimParams(0, 0.4, False, 1, -1.0))
        assert CHAT[2] in trimmed and CHAT[0] not in trimmed and trimmed.snippets[0].trimmed
        with pytest.raises(InvalidInput, match="trim"):
            m.context("charity race", app="me", trim="yes")
