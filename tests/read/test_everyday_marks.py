"""Marks by meaning (issue 41): of two memories in the block that speak of the same subject, the
newer is ranked first and the older marked earlier, whether or not they share a word with each
other or with the question ("The user drives a grey Skoda" then "I sold the Skoda and bought a
Kia", asked "What car do I drive now?")."""

from __future__ import annotations

import numpy as np

import everyday_case as case
from diarist import Memory
from diarist.importers import read_all
from diarist.read.block import layout, newer_first, same_subject_by_meaning
from diarist.types import Hit

NOW = "2026-03-02"


def _vectors(table: dict[str, list[float]]):
    def vectors(lines):
        rows = np.asarray([table[line] for line in lines], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return vectors


TABLE = {"grey Skoda": [1, 0.2, 0], "sold the Skoda, a Kia now": [0.9, 0.4, 0], "a pandas KeyError": [0, 0, 1]}


def test_same_subject_by_the_cosine_of_lines_not_by_words():
    vectors = _vectors(TABLE)
    texts = ["grey Skoda", "a pandas KeyError", "sold the Skoda, a Kia now"]
    dates = ["2024-01-20", "2025-03-14", "2025-10-05"]
    assert same_subject_by_meaning(texts, dates, vectors, min_cosine=0.9) == {0: 2}
    assert same_subject_by_meaning(texts, dates, vectors, min_cosine=0.999) == {}
    # Entries of one day, or undated, are not marked: which came first is unknown.
    assert same_subject_by_meaning(texts, ["2025-10-05", "2025-03-14", "2025-10-05T18:00"], vectors, min_cosine=0.9) == {}
    assert same_subject_by_meaning(texts, [None, "2025-03-14", "2025-10-05"], vectors, min_cosine=0.9) == {}
    # A line far from the question is not what the entry says of it: not compared.
    far = lambda lines: [0.05 if "Skoda" in line else 0.5 for line in lines]  # noqa: E731
    assert same_subject_by_meaning(texts, dates, vectors, far, min_cosine=0.9, min_relevance=0.1) == {}
    assert same_subject_by_meaning(texts, dates, vectors, far, min_cosine=0.9, min_relevance=0.01) == {0: 2}


def test_the_newer_takes_the_older_ones_place():
    assert newer_first(3, {0: 2}, ["2024", "2025", "2026"]) == [1, 2, 0]  # entry 2 first, then 0, then 1
    assert newer_first(3, {}, ["2024", "2025", "2026"]) == [0, 1, 2]
    assert newer_first(3, {1: 0}, ["2026", "2024", "2025"]) == [0, 1, 2]  # already above: unchanged
    # A chain: each newer entry ahead of the older, the newest first.
    assert newer_first(3, {0: 2, 1: 2}, ["2024", "2025", "2026"]) == [1, 2, 0]


def _hit(n: int, text: str, date: str, score: float) -> Hit:
    return Hit(n, text, score, f"s{n}", None, date, ("user",), "turns")


def test_layout_marks_and_ranks_in_both_orders():
    chosen = [(_hit(1, "grey Skoda", "2024-01-20", 0.9), "grey Skoda", 10),
              (_hit(2, "a pandas KeyError", "2025-03-14", 0.8), "a pandas KeyError", 10),
              (_hit(3, "sold the Skoda, a Kia now", "2025-10-05", 0.7), "sold the Skoda, a Kia now", 10)]
    by_date = layout(chosen, "date", set(), set(), _vectors(TABLE))
    assert [s.hit.session_id for s in by_date] == ["s1", "s2", "s3"]
    assert [s.earlier_than for s in by_date] == [3, None, None]
    assert "earlier than [3] on the same subject" in by_date[0].text
    assert [s.rank for s in by_date] == [1, 2, 0]
    by_rank = layout(chosen, "relevance", set(), set(), _vectors(TABLE))
    assert [s.hit.session_id for s in by_rank] == ["s3", "s1", "s2"]
    assert [s.earlier_than for s in by_rank] == [None, 1, None]


SKODA = ("f-skoda", "The user drives a grey 2014 Skoda Octavia estate.", "2024-01-20")
KIA = ("EV charging habits", "2025-10-05", [
    ("I sold the Skoda and bought a white Kia Niro EV last week. How often should I charge it to 100 percent?",
     "For daily driving keep it between 20 and 80 percent and charge to 100 only before a long trip; the battery "
     "lasts longer when it rarely sits full."),
])


def test_a_changed_fact_newer_first_and_the_older_marked(tmp_path):
    """Before: the marks needed words of the question in both entries, and "I sold the Skoda and
    bought a Kia" holds neither "car" nor "drive": the Skoda was shown unmarked, ranked first."""
    with Memory(":memory:") as memory:
        memory.add_sessions(read_all(case.write_export(tmp_path, [*case.FIRST_CONVERSATIONS, KIA])).sessions, app="me")
        memory.add_fact(SKODA[1], app="me", fact_id=SKODA[0], date=SKODA[2])
        for question in ("What car do I drive now?", "Which car do I have?"):
            block = memory.context(question, app="me", now=NOW)
            by_id = {s.hit.id: s for s in block.snippets}
            kia = next(s for s in block.snippets if "Kia" in s.text)
            assert by_id["f-skoda"].earlier_than is not None, (question, str(block))
            assert kia.earlier_than is None and kia.rank < by_id["f-skoda"].rank, question


def test_marks_that_do_not_fit_leave_no_memory_out():
    """Before: a block filled to its budget lost its weakest memory to the marks' tokens (LoCoMo
    evidence in the block 0.9411 -> 0.9359 with marks by meaning). The budget is filled again with
    the marks' cost set aside; failing that, the weakest entries' marks are left out, not a memory."""
    from diarist.read.block import FOOTER, HEADER
    from diarist.read.budget import BlockOptions, Draft, fill_budget, finish
    from diarist.read.trace import Trace

    count = lambda text: len(text.split())  # noqa: E731
    hits = [_hit(1, "grey Skoda", "2024-01-20", 0.9), _hit(2, "a pandas KeyError", "2025-03-14", 0.8),
            _hit(3, "sold the Skoda, a Kia now", "2025-10-05", 0.7)]
    cosines = lambda lines: [0.5 for _ in lines]  # noqa: E731
    unmarked_cost = count(HEADER) + count(FOOTER) + sum(count(f"[999] {h.date} · conversation {h.session_id} (user)\n{h.text}")
                                                        for h in hits)
    for budget in (unmarked_cost, unmarked_cost + 20):
        draft = Draft(BlockOptions(count, budget, "date", line_cosines=cosines), line_vectors=_vectors(TABLE))
        trace = Trace()
        fill_budget(hits, draft, trace)
        block = finish(draft, trace)
        assert [s.hit.session_id for s in block.snippets] == ["s1", "s2", "s3"], budget
        assert block.n_tokens <= budget
        marked = [s.earlier_than for s in block.snippets]
        assert marked == ([None, None, None] if budget == unmarked_cost else [3, None, None]), budget


def test_a_stated_fact_is_not_made_stale_by_a_long_chat_sharing_a_word():
    """Before: "The user's birthday is on 14 August" was marked earlier than a later long chat
    about a child's birthday party, by the question's word alone (the answer marked stale in 11
    held-out blocks of the everyday set). Two long conversations are still marked by words."""
    from diarist.lexical import analyze

    party = "\n".join(["Birthday party for a seven-year-old", "I'm organising a birthday party.", "Games?",
                       "Musical chairs.", "Food?", "Pizza."])
    chosen = [(_hit(1, "The user's birthday is on 14 August.", "2024-03-01", 0.9), "The user's birthday is on 14 August.", 10),
              (_hit(2, party, "2025-04-07", 0.8), party, 10),
              (_hit(3, party.replace("seven", "six"), "2023-04-07", 0.7), party.replace("seven", "six"), 10)]
    far = _vectors({"The user's birthday is on 14 August.": [1, 0, 0], **{line: [0, 1, 0] for line in party.split("\n")},
                    **{line.replace("seven", "six"): [0, 1, 0] for line in party.split("\n")}})
    terms = set(analyze("When is my birthday?"))
    snippets = layout(chosen, "relevance", terms, set(), far, lambda lines: [0.5 for _ in lines])
    marks = {s.hit.session_id: s.earlier_than for s in snippets}
    number = {s.hit.session_id: n for n, s in enumerate(snippets, 1)}
    assert marks["s1"] is None  # the stated fact: not marked by the chat's word
    assert marks["s3"] == number["s2"]  # the older long chat: marked earlier than the newer, by words
