"""Query analysis (names, quoted phrases, time spans) and the model-free evidence reranker."""

from __future__ import annotations

from datetime import datetime

import pytest

from diarist import Memory
from diarist.read.query import analyze_query, proper_nouns, resolve_time
from diarist.rerank.evidence import EvidenceReranker
from diarist.types import Hit

NOW = datetime(2023, 4, 18, 3, 31)  # a Tuesday


def test_a_sentence_opening_capital_is_not_a_name() -> None:
    # The pitfall: "What" is capitalised by grammar; "Admon" is a name.
    assert proper_nouns("What shift was Admon working?") == ["admon"]
    assert proper_nouns("what shift was admon working?") == []
    assert proper_nouns("Where did I go in May?") == []
    assert proper_nouns("Tell me. Then Where is Lisbon?") == ["lisbon"]


def test_an_opening_word_counts_when_it_recurs_capitalised_or_is_an_acronym() -> None:
    assert proper_nouns("Anna called. Did Anna say when?") == ["anna"]
    assert proper_nouns("NASA launched what?") == ["nasa"]


def test_quoted_phrases_are_kept_verbatim() -> None:
    q = analyze_query('What did Caroline take away from the book "Becoming Nicole"?')
    assert q.quoted == ["Becoming Nicole"]
    assert "carolin" in q.proper_nouns and "nicol" in q.proper_nouns  # stems, as the index holds


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did I cook last Sunday?", datetime(2023, 4, 16), datetime(2023, 4, 17)),
        ("What did I buy yesterday?", datetime(2023, 4, 17), datetime(2023, 4, 18)),
        ("Which trips did I take in the past three months?", datetime(2023, 1, 18), datetime(2023, 4, 19)),
        ("Where did I go in May?", datetime(2022, 5, 1), datetime(2022, 6, 1)),
        ("What did I do in March 2023?", datetime(2023, 3, 1), datetime(2023, 4, 1)),
        ("What did I read two weeks ago?", datetime(2023, 3, 31), datetime(2023, 4, 9)),
        # Absolute days, month phrases, seasons and years (LoCoMo asks these)
        ("What painting did Melanie show on October 13, 2022?", datetime(2022, 10, 13), datetime(2022, 10, 14)),
        ("What happened on the 3rd of April?", datetime(2023, 4, 3), datetime(2023, 4, 4)),
        ("What did we plan for 20 May?", datetime(2022, 5, 20), datetime(2022, 5, 21)),
        ("What did she start at the beginning of November 2022?", datetime(2022, 11, 1), datetime(2022, 12, 1)),
        ("Where did we go last summer?", datetime(2022, 6, 1), datetime(2022, 9, 1)),
        ("What did I do in the winter of 2021?", datetime(2021, 12, 1), datetime(2022, 3, 1)),
        ("How many times did I go to the beach in 2022?", datetime(2022, 1, 1), datetime(2023, 1, 1)),
        # A part of a named month is that month, never the span before today that "the last two
        # weeks" alone would name (it once read "... of August 2023" as the last two weeks).
        ("Where was Dave in the last two weeks of August 2022?", datetime(2022, 8, 1), datetime(2022, 9, 1)),
        ("What was Dave doing in the first weekend of October 2022?", datetime(2022, 10, 1), datetime(2022, 11, 1)),
        ("What did I do the second week of March?", datetime(2023, 3, 1), datetime(2023, 4, 1)),
        ("What did I do last week of March?", datetime(2023, 3, 1), datetime(2023, 4, 1)),
        ("What did I do in the last two weeks?", datetime(2023, 4, 4), datetime(2023, 4, 19)),
    ],
)
def test_time_expressions_resolve_against_now(question, start, end) -> None:
    span = resolve_time(question, NOW)
    assert span is not None and (span.start, span.end) == (start, end)


def test_questions_without_a_time_name_no_span() -> None:
    assert resolve_time("How many weeks ago did I attend the sale?", NOW) is None
    assert resolve_time("What is my cat called?", NOW) is None
    assert resolve_time("May I ask what my cat is called?", NOW) is None
    assert resolve_time("What did I order on May 40?", NOW) is None  # no such day
    assert resolve_time("I have 2022 photos from the trip", NOW) is None  # a count, not a year


def _hit(i: int, text: str, date: str) -> Hit:
    return Hit(chunk_id=i, text=text, score=0.0, session_id=f"s{i}", fact_id=None, date=date,
               roles=("user",), view="all")


def test_evidence_reranker_keeps_the_fused_order_without_signals() -> None:
    hits = [_hit(i, f"text {i}", f"2023-0{i}-01T00:00:00") for i in range(1, 5)]
    out = EvidenceReranker().rerank("what is my favourite colour?", hits, NOW)
    assert [h.chunk_id for h in out] == [1, 2, 3, 4]


def test_evidence_reranker_promotes_names_time_and_recency() -> None:
    hits = [
        _hit(1, "we went hiking", "2023-01-10T00:00:00"),
        _hit(2, "yoga at Talkeetna", "2023-02-10T00:00:00"),
        _hit(3, "my best 5k time is 27 minutes", "2022-06-01T00:00:00"),
        _hit(4, "my best 5k time is now 25 minutes", "2023-04-01T00:00:00"),
    ]
    rr = EvidenceReranker(signals=("names", "time", "recency"))
    assert rr.rerank("When did I do yoga at Talkeetna?", list(hits), NOW)[0].chunk_id == 2
    names_only = EvidenceReranker(signals=("names",))
    assert set(names_only.rankings("what happened last Sunday?", hits, NOW)) == {"fused"}
    assert "time" in rr.rankings("what did I do in February?", hits, NOW)
    assert rr.rerank("what did I do in February?", list(hits), NOW)[0].chunk_id == 2
    newest_first = rr.rerank("What is my current best 5k time?", list(hits), NOW)
    assert [h.chunk_id for h in newest_first].index(4) < 3  # moved up from 4th: ranks, not a veto


def test_search_passes_now_to_the_second_stage(tmp_path) -> None:
    memory = Memory(tmp_path / "m.sqlite", embedder="hash", reranker="evidence")
    memory.add_session([{"role": "user", "content": "I baked bread"}], session_id="jan", date="2023-01-15", app="a")
    memory.add_session([{"role": "user", "content": "I baked bread again"}], session_id="mar", date="2023-03-15", app="a")
    march = memory.search("What did I bake in March?", app="a", k=2, now="2023-04-18")
    january = memory.search("What did I bake in January?", app="a", k=2, now="2023-04-18")
    assert march[0].session_id == "mar" and january[0].session_id == "jan"
    assert all(h.stage == "evidence" for h in march)


def test_proper_noun_phrases_keep_each_name_whole():
    from diarist.read.query import proper_noun_phrases

    assert proper_noun_phrases("Which planet has the Great Red Spot?") == [["great", "red", "spot"]]
    assert proper_noun_phrases("When did Caroline and Melanie paint?") == [["carolin"], ["melani"]]
    assert proper_noun_phrases("What did Caroline take from \"Becoming Nicole\"?") == [["carolin"], ["becom", "nicol"]]
    assert proper_noun_phrases("what shift was admon working?") == []
    # A name does not run on across a sentence break.
    assert proper_noun_phrases("We flew to Rome. Paris was next, then Paris again.") == [["rome"], ["pari"], ["pari"]]
    assert proper_noun_phrases("We met New York. Times Square was next.") == [["new", "york"], ["squar"]]
    # The flat list is unchanged: the same terms, each once.
    text = "How many days between Holi and the Sunday mass at St. Mary's Church?"
    flat = [t for phrase in proper_noun_phrases(text) for t in phrase]
    assert proper_nouns(text) == list(dict.fromkeys(flat))
