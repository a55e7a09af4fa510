"""The evidence floor: a personal question is answered down to a low cosine, an impersonal one
needs the cosine floor and, when its cosine is weak, the memory holding most of its terms."""

from __future__ import annotations

import pytest

from diarist import Memory
from diarist.errors import ConfigError
from diarist.lexical import analyze, stem
from diarist.read.floor import Floor, coverage, holds_name, is_personal, speaks_in_person, verdict, whole_names

FLOOR = Floor(cosine=0.18, personal=0.10, weak_cosine=0.25, coverage=0.70)


def holding(*vocabulary: str):
    """A stand-in for the lexical index of these words: how many of the terms (stems) it holds."""
    held = {stem(word) for word in vocabulary}
    return lambda terms: sum(term in held for term in set(terms))


def no_index(terms):
    return None


def never_read(terms):
    raise AssertionError("the index was read though the cosine decided")


def test_person_and_names_are_read_from_the_question():
    assert speaks_in_person("Where do I live?") and speaks_in_person("What did you recommend?")
    assert speaks_in_person("I'm moving, where to?") and not speaks_in_person("What is the capital of Mongolia?")
    assert whole_names("Who was Ada Lovelace's father?") == [["ada", "lovelac"]]  # stems; not the "s" of "'s"
    assert is_personal("When did Caroline paint a sunrise?", holding("caroline", "sunrise"))
    assert not is_personal("Which river flows through Ljubljana?", holding("river"))
    assert coverage("Which river flows through Ljubljana?", holding("river")) == 0.25  # of 4 terms
    assert coverage("What is it?", holding()) == 0.0 and coverage("Which river?", no_index) is None


def test_every_personal_word_is_read_through_the_stemming_analyzer():
    # The analyzer stems ("yourselves" -> "yourselv"): the word list must meet its terms.
    for word in "I me my mine myself we us our ours ourselves you your yours yourself yourselves".split():
        assert speaks_in_person(f"Did {word} keep the receipt?"), word


def test_short_personal_fact_is_answered_where_the_cosine_floor_said_nothing():
    question = "Where do I live?"  # against "The user moved to Lisbon in March 2024.": 0.151
    assert verdict(FLOOR, 0.151, question, never_read) is None
    assert verdict(FLOOR.cosine_only(), 0.151, question, never_read) is not None


def test_personal_question_about_something_absent_is_emptied_only_under_the_personal_floor():
    assert verdict(FLOOR, 0.08, "What is my blood type?", never_read) is not None
    assert verdict(FLOOR, 0.12, "What is my blood type?", holding()) is None  # the measured cost


def test_impersonal_question_needs_the_cosine_floor_and_then_coverage():
    question = "What is the melting point of tungsten?"  # terms: melting, point, tungsten
    assert verdict(FLOOR, 0.15, question, holding("melting", "point", "tungsten")) is not None
    assert verdict(FLOOR, 0.22, question, holding("point")) is not None  # 1 of 3 held
    assert verdict(FLOOR, 0.22, question, holding("melting", "point", "tungsten")) is None
    assert verdict(FLOOR, 0.30, question, never_read) is None  # over both cosines: no index read


def test_a_name_the_memory_holds_makes_a_question_personal():
    question = "When did Tomasz move to Gdansk?"
    assert verdict(FLOOR, 0.15, question, holding("tomasz")) is None
    assert verdict(FLOOR, 0.15, question, holding("move")) is not None


def test_a_name_counts_only_when_the_memory_holds_every_word_of_it():
    """A memory that says "red" somewhere is not about the Great Red Spot: with any one word of
    a name enough, that off-topic question skipped the impersonal floors."""
    question = "Which planet has the Great Red Spot?"
    assert whole_names(question) == [["great", "red", "spot"]]
    assert not is_personal(question, holding("red"))
    assert not is_personal(question, holding("great", "red"))
    assert verdict(FLOOR, 0.22, question, holding("red", "planet")) is not None  # impersonal: 2 of 4 held
    assert is_personal(question, holding("great", "red", "spot"))
    assert verdict(FLOOR, 0.15, question, holding("great", "red", "spot")) is None


def test_each_name_is_read_whole_and_one_held_name_is_enough():
    question = "When did Caroline and Melanie see Ada Lovelace's portrait?"
    assert whole_names(question) == [["carolin"], ["melani"], ["ada", "lovelac"]]
    assert is_personal(question, holding("melanie"))  # a person the memory knows
    assert is_personal(question, holding("ada", "lovelace"))
    assert not is_personal(question, holding("ada"))  # a first name alone is not Ada Lovelace
    # A name does not run on into the next sentence.
    assert whole_names("I met Tomasz. Tomasz Gdansk left?") == [["tomasz"], ["tomasz", "gdansk"]]


def test_a_name_is_not_held_without_a_usable_index():
    assert not holds_name(["carolin"], no_index) and not holds_name([], holding())
    assert not is_personal("When did Caroline paint?", no_index)


def test_without_a_lexical_index_an_impersonal_question_gets_the_cosine_floor():
    question = "Which river flows through Ljubljana?"
    assert verdict(FLOOR, 0.15, question, no_index) is not None
    assert verdict(FLOOR, 0.20, question, no_index) is None


def test_search_reads_the_memorys_own_index(tmp_path):
    memory = Memory(tmp_path / "m.sqlite", embedder="hash", floor=Floor(0.99, personal=-1.0, weak_cosine=1.0,
                                                                          coverage=0.5))
    memory.add_session([{"role": "user", "content": "Caroline adopted a greyhound called Pixel."}], app="a")
    assert memory.lexical.held("a", analyze("caroline pixel tungsten")) == 2
    assert memory.search("When did Caroline adopt the dog?", app="a")  # a name the memory holds
    empty = memory.search("Which element is tungsten?", app="a")
    assert list(empty) == [] and "impersonal" in empty.notes[0]
    # One word of a name held ("Pixel"), not all of it: not a name the memory holds.
    empty = memory.search("Who designed the Pixel Watch?", app="a")
    assert list(empty) == [] and "impersonal" in empty.notes[0]
    assert memory.search("Who designed Pixel?", app="a")  # the name the memory holds, whole
    # The lexical kill switch: no index read, so a name cannot make the question personal.
    assert list(memory.derive(lexical_fusion=False).search("When did Caroline adopt the dog?", app="a")) == []


def test_floor_options(tmp_path):
    memory = Memory(tmp_path / "h.sqlite", embedder="hash")
    assert memory.settings.floor is None  # the hash embedder has no calibrated floor
    assert memory.derive(floor=0.3).settings.floor == Floor(0.3)
    assert memory.derive(floor=FLOOR).settings.floor == FLOOR
    with pytest.raises(ConfigError):
        memory.derive(floor="cosines")


@pytest.fixture(scope="module")
def lisbon():
    """The README/serving example's memory, with the real model."""
    memory = Memory(":memory:", embedder="minilm")
    memory.add_fact("The user moved to Lisbon in March 2024.", app="me", date="2024-03-15")
    memory.add_session([{"role": "user", "content": "My cat is called Admon."},
                        {"role": "assistant", "content": "Nice name!"}], app="me")
    yield memory
    memory.close()


def test_minilm_answers_the_short_fact_case_and_the_cosine_switch_does_not(lisbon):
    assert lisbon.settings.floor == lisbon.embedder.calibration.evidence_floor
    hits = lisbon.search("Where do I live?", app="me")
    assert hits and "Lisbon" in hits[0].text
    assert list(lisbon.derive(floor="cosine").search("Where do I live?", app="me")) == []
    assert lisbon.derive(floor="cosine").settings.floor == Floor(lisbon.embedder.calibration.relevance_floor)


def test_minilm_answers_an_impersonal_off_topic_question_with_nothing(lisbon):
    assert lisbon.context("What is the melting point of tungsten?", app="me") == ""


def test_us_in_capitals_is_the_country_not_the_pronoun():
    """The analyzer folds case, so "the US" read as "us" made a question about the country
    personal (answered down to the personal floor)."""
    assert not speaks_in_person("What is the population of the US?")
    assert not speaks_in_person("Which US state has the most lakes?")
    assert speaks_in_person("Did you tell us about it?") and speaks_in_person("Can Maria join us?")
    assert speaks_in_person("How long have my parents been staying with me in the US?")  # "my", "me"
    assert speaks_in_person("TELL US MORE")  # all in capitals: the pronoun, as before
