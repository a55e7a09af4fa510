"""The sentences stage (read.sentences): a short memory whose fact is one sentence of a long turn
is found by a question in other words; a database without sentence vectors reads as before, and
``reindex`` gives them to memories stored before."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from diarist import settings
from diarist.memory import Memory
from diarist.read.sentences import is_short_item, sentences_to_store

JOB = ("I work as a data analyst at Rota Freight, a logistics company. Can you suggest a clean way to show "
       "on-time delivery rates by depot in one chart?")
OTHERS = [
    "Can you recommend a good recipe for a vegetarian lasagne? I want something that freezes well.",
    "What is the best way to learn Spanish verbs quickly? I keep mixing up the tenses.",
    "My bike's rear brake squeaks when it rains. How can I fix it myself?",
    "Which houseplants survive in a dark flat? My last fern died in a month.",
    "How do I plan a budget for a week in Japan? I'd like to see Kyoto and Osaka.",
    "Could you explain how compound interest works with monthly deposits?",
    "I'm training for a half marathon in May. What should my long runs look like?",
    "What are some good board games for four adults who like strategy?",
]
QUESTION = "Where do I work?"


def _fill(memory: Memory) -> None:
    memory.add_session([{"role": "user", "content": JOB},
                        {"role": "assistant", "content": "A grouped bar chart by depot works well."}],
                       session_id="job", date="2025-01-02", app="me")
    for n, text in enumerate(OTHERS):
        memory.add_session([{"role": "user", "content": text}, {"role": "assistant", "content": "Sure, a few ideas."}],
                           session_id=f"o{n}", date=f"2025-02-0{n + 1}", app="me")


ON = 0.5  # the stage on (MiniLM's own weight is 0: settings.SENTENCE_WEIGHT)


def _ranked(memory: Memory, weight: float | None = ON) -> list[tuple[str, float]]:
    saved = memory.settings
    memory.settings = replace(saved, sentence_weight=weight)
    try:
        return [(hit.id, hit.score) for hit in memory.search(QUESTION, app="me", k=5)]
    finally:
        memory.settings = saved


def _sentence_rows(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM sentence_vectors").fetchone()[0]


def test_a_fact_stated_in_one_sentence_of_a_long_turn_is_found_by_it(tmp_path: Path):
    with Memory(tmp_path / "m.sqlite") as memory:
        _fill(memory)
        assert _ranked(memory)[0][0] == "job"
        assert _ranked(memory, 0.0)[0][0] != "job"  # the turn's vector reads mostly the chart
        memory.settings = replace(memory.settings, sentence_weight=ON)
        results = memory.search(QUESTION, app="me", k=5)
        (record,) = [r for r in results.trace if r.stage == "sentences"]
        assert record.ms is not None and "rescored by their best sentence" in record.note


def test_the_weight_is_the_embedding_model_s(tmp_path: Path):
    assert settings.sentence_weight("multilingual-e5-small") == settings.SENTENCE_WEIGHT["multilingual-e5-small"] > 0
    assert settings.sentence_weight("all-MiniLM-L6-v2") == 0.0
    with Memory(tmp_path / "m.sqlite") as memory:  # MiniLM: the chunk's cosine alone, no record
        _fill(memory)
        assert _ranked(memory, None) == _ranked(memory, 0.0)
        assert "sentences" not in [r.stage for r in memory.search(QUESTION, app="me", k=5).trace]


def test_only_the_user_sentences_of_short_memories_are_stored(tmp_path: Path):
    path = tmp_path / "m.sqlite"
    with Memory(path) as memory:
        _fill(memory)
        # Each short exchange: the two sentences of its user turn (the vector reads the user's words).
        assert _sentence_rows(path) == 2 * 7  # two turns are one sentence each: none (their own vector)
        memory.add_fact("The user drives a grey Skoda.", fact_id="car", app="me")  # one sentence: none
        long = [{"role": "user", "content": f"Line {n}. It has two sentences."} for n in range(4)]
        memory.add_session(long, session_id="long", date="2025-03-01", app="me")  # 4 lines: not short
        assert _sentence_rows(path) == 2 * 7
        memory.delete("job", app="me")  # a memory's sentences go with it
        assert _sentence_rows(path) == 2 * 6


def test_without_sentence_vectors_a_search_reads_as_before_and_reindex_adds_them(tmp_path: Path):
    path = tmp_path / "m.sqlite"
    with Memory(path) as memory:
        _fill(memory)
        with_them, cosine_only = _ranked(memory), _ranked(memory, 0.0)
        memory.store.drop_sentence_vectors()
        memory.store.mark_sentences_indexed("me", False)  # as a database stored before they were kept
        assert _ranked(memory) == cosine_only
        assert "sentences" not in [r.stage for r in memory.search(QUESTION, app="me", k=5).trace]
        memory.reindex("me")
        assert _sentence_rows(path) > 0 and memory.store.sentences_indexed("me")
        assert _ranked(memory) == with_them
        assert memory.index_sentences("me") == 0  # done once


def test_the_rule_of_what_is_stored():
    assert is_short_item("fact", {}, ["One. Two."])
    assert not is_short_item("session", {"source": "markdown"}, ["A note. Short."])
    assert not is_short_item("session", {}, ["a\nb", "c\nd"])  # four lines in all
    assert sentences_to_store("fact", {}, ["One. Two.", "x"], ["One. Two.", None]) == [["One.", "Two."], []]
    assert sentences_to_store("fact", {}, ["Only one."], ["Only one."]) == [[]]
    # The vector's text, not the chunk's: an assistant's reply is not the user's fact.
    assert sentences_to_store("session", {}, ["Hi there. I moved.\nGood. Well done."],
                              ["Hi there. I moved."]) == [["Hi there.", "I moved."]]


@pytest.mark.parametrize("weight", [0.0, 1.0])
def test_the_blend_at_its_ends(weight: float, tmp_path: Path):
    with Memory(tmp_path / "m.sqlite") as memory:
        _fill(memory)
        saved = memory.settings
        memory.settings = replace(saved, sentence_weight=weight)
        hit = next(h for h in memory.search(QUESTION, app="me", k=9) if h.id == "job")
        memory.settings = saved
        question = np.asarray(memory.embedder.embed_query([QUESTION])[0], dtype=np.float32)
        best = max(float(question @ v / np.linalg.norm(v)) / float(np.linalg.norm(question))
                   for v in memory.embedder.embed_passages(JOB.split(" Can", 1)[:1]))
        if weight == 1.0:
            assert hit.scores["dense"] == pytest.approx(best, abs=1e-4)
        else:
            assert hit.scores["dense"] < best - 0.1
