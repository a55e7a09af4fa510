"""Everyday recall (issue 41): a fact the user stated is never lost to a filler word, the block
keeps the memories closest in meaning, and an answerable question is never answered with nothing.

The cases are written for these tests (``tests/support/everyday_case.py``): a Claude.ai export of one
person's long, unrelated conversations, the facts they stated, and a notes vault, asked the way a
person asks. They run the default model (MiniLM), as a person's memory does.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import everyday_case as case
from diarist import Memory
from diarist.importers import read_all
from diarist.lexical import analyze, analyze_question
from diarist.read.block import FOOTER, HEADER, format_snippet
from diarist.read.budget import BlockOptions, Draft, fill_budget
from diarist.read.cut import CutParams, cut_memories
from diarist.read.lines import POINTERS, trim_block
from diarist.read.trace import Trace
from diarist.types import Hit

NOW = "2025-10-01"


def _memory(tmp_path, conversations, facts) -> Memory:
    memory = Memory(":memory:")
    memory.add_sessions(read_all(case.write_export(tmp_path, conversations)).sessions, app="me")
    for fact_id, text, date in facts:
        memory.add_fact(text, app="me", fact_id=fact_id, date=date)
    return memory


@pytest.fixture(scope="module")
def first_case(tmp_path_factory):
    """Issue 41's case: three unrelated conversations and the Porto fact."""
    with _memory(tmp_path_factory.mktemp("first"), case.FIRST_CONVERSATIONS, [case.PORTO]) as memory:
        yield memory


@pytest.fixture(scope="module")
def more_case(tmp_path_factory):
    """Then more conversations (a flat with "thick stone walls" among them) and more facts."""
    with _memory(tmp_path_factory.mktemp("more"), case.FIRST_CONVERSATIONS + case.MORE_CONVERSATIONS,
                 [case.PORTO, *case.MORE_FACTS]) as memory:
        yield memory


def _held(memory: Memory) -> list[str]:
    """The phrasings whose block holds the Porto fact."""
    return [q for q in case.PORTO_PHRASINGS if "Porto" in memory.context(q, app="me", now=NOW)]


# Measured on this commit (26 phrasings: 24 held in each case; main held 7 in each): every phrasing
# but two. "Where's home now?": the floor empties it (no person, no word the memory holds, cosine
# 0.21: an impersonal question to the floor). "Where do I stay at the moment?": the fact is third by
# meaning at cosine 0.09, under the cut's floor (0.10), behind two conversations the block shows. A
# change that loses one more fails here.
KNOWN_MISSES_FIRST = {"Where's home now?", "Where do I stay at the moment?"}
KNOWN_MISSES_MORE = {"Where's home now?", "Where do I stay at the moment?"}


@pytest.mark.slow
def test_the_porto_fact_asked_every_way_is_in_the_block(first_case):
    assert len(case.PORTO_PHRASINGS) >= 20
    missed = set(case.PORTO_PHRASINGS) - set(_held(first_case))
    assert missed <= KNOWN_MISSES_FIRST, f"the fact left the block for {sorted(missed - KNOWN_MISSES_FIRST)}"


@pytest.mark.slow
def test_the_porto_fact_among_more_conversations_and_facts(more_case):
    missed = set(case.PORTO_PHRASINGS) - set(_held(more_case))
    assert missed <= KNOWN_MISSES_MORE, f"the fact left the block for {sorted(missed - KNOWN_MISSES_MORE)}"


def test_a_filler_word_does_not_decide_the_lexical_channel(first_case):
    """"now" is in the pandas conversation ("But now sum() also drops my 'date' column"): as a
    term it made that conversation the lexical channel's first, and the block's, for "Where do I
    live now?" (issue 41). The question's fillers are not searched; the memory side is unchanged."""
    assert analyze_question("Where do I live now?") == ["live"]
    assert analyze_question("Which city am I living in these days?") == ["citi", "live"]
    assert analyze_question("Can you tell me what's my home city at the moment?") == ["home", "citi"]
    assert analyze_question("What now?") == ["now"]  # nothing else to search for: the plain terms
    assert "now" in analyze("But now sum() also drops my 'date' column")  # memories keep their words
    for question in ("Where do I live now?", "Which city am I living in now?", "Tell me where I live now."):
        hits = first_case.search(question, app="me", k=4, explain=True)
        assert all(h.ranks.get("lexical") is None for h in hits), question  # no memory holds "live"
        block = first_case.context(question, app="me", now=NOW)
        assert "Porto" in block and "sum()" not in block, question


def _vault(tmp_path, notes: dict[str, str]):
    vault = tmp_path / "vault"
    for name, body in notes.items():
        (vault / name).parent.mkdir(parents=True, exist_ok=True)
        (vault / name).write_text(body)
    return vault


NOTES = {
    "Games/Catan.md": "- Longest road is worth two victory points.\n- Trade wheat for ore early; cities need three ore.\n"
                      "- The robber blocks a hex until moved.\n- Ports trade two for one.\n",
    "Books/The Machine Stops.md": "- E. M. Forster, 1909.\n- Everyone lives alone underground and talks through "
                                  "screens.\n- Vashti and her son Kuno.\n",
    "Home/Readme.md": "This vault holds my notes. Folders by subject; daily notes in Journal.\n",
    "Recipes/Shakshuka.md": "- Two onions, four eggs, a tin of tomatoes.\n- Cumin and paprika; simmer ten minutes.\n",
    "Trips/Fushimi Inari.md": "- Go at dawn, before the crowds.\n- The full loop of the mountain takes two to three "
                              "hours.\n- Thousands of orange torii gates.\n",
}


def test_a_note_the_question_names_is_never_answered_with_nothing(tmp_path):
    """A note asked for by its name (its file name: its title in Obsidian) is a short question of
    low cosine to the note's bullets: the floor answered "nothing" (issue 41: "Readme", "Catan").
    A memory named by the question, or holding every word of it, is answered; an off-topic
    question still gets an empty block. (Found by the name when titles are indexed, everywhere;
    here, where they are not, among either channel's best chunks.)"""
    with Memory(":memory:") as memory:
        memory.add_sessions(read_all(_vault(tmp_path, NOTES)).sessions, app="notes")
        for name in ("Readme", "Shakshuka"):
            block = memory.context(name, app="notes", now=NOW)
            assert name in [s.hit.title for s in block.snippets], (name, block.notes)
        for question in ("What is the melting point of tungsten?", "Which river flows through Ljubljana?"):
            assert memory.context(question, app="notes", now=NOW) == "", question


def test_a_long_note_answers_a_question_about_one_bullet(tmp_path):
    """The answer is one bullet of a long note, asked in a sentence and by its keywords."""
    bullets = [f"Item {n}: the box on shelf {n} of the hall cupboard." for n in range(1, 25)]
    bullets.insert(9, "A lost object is usually within arm's reach of where it was last used: look there first.")
    notes = {"Home/Where things hide.md": "---\ntags: [home]\n---\n" + "\n".join(f"- {b}" for b in bullets) + "\n",
             **NOTES}
    with Memory(":memory:") as memory:
        memory.add_sessions(read_all(_vault(tmp_path, notes)).sessions, app="notes")
        for question in ("Where is a lost object usually hiding?", "lost object arm's reach"):
            block = memory.context(question, app="notes", now=NOW)
            assert "arm's reach" in block, (question, block.notes)


# -- the rule, stage by stage, on hits whose signals are given ---------------------------------------


def _hit(item: str, cosine: float, text: str, fused: float) -> Hit:
    return Hit(chunk_id=hash(item) % 10_000, text=text, score=fused, session_id=item, fact_id=None, date="2025-01-01",
               roles=("user",), view="split", scores={"dense": cosine, "lexical": None}, passages=[text],
               passage_ranks=[0])


def test_the_cut_keeps_the_memories_closest_in_meaning_as_pointers():
    """A memory first by fused score, the next ones under the cut's cosine floor: the two closest
    in meaning stay (the second as a pointer), the rest go as before."""
    hits = [_hit("chat-japan", 0.18, "Two weeks in Japan.", 0.8), _hit("chat-pandas", 0.01, "pandas KeyError", 0.7),
            _hit("fact-porto", 0.14, "The user moved to Porto.", 0.6), _hit("chat-bread", 0.04, "Sourdough.", 0.5)]
    trace = Trace(explain=True)
    kept, rescued = cut_memories(hits, ["live"], CutParams(0.2, 0.07, 0.34), trace, keep={0, 2})
    assert [h.session_id for h in kept] == ["chat-japan", "fact-porto"] and rescued == [hits[2]]
    assert "kept as a pointer, by meaning" in trace.records[-1].note
    before, _ = cut_memories(hits, ["live"], CutParams(0.2, 0.07, 0.34), Trace())  # without the rule
    assert [h.session_id for h in before] == ["chat-japan"]


def test_the_trim_never_drops_the_memory_closest_in_meaning():
    lines = {"Two weeks in Japan.": 0.31, "pandas KeyError": 0.05, "The user moved to Porto.": 0.14}
    cosines = lambda texts: [lines[t] for t in texts]  # noqa: E731
    hits = [_hit("chat-japan", 0.31, "Two weeks in Japan.", 0.8), _hit("chat-pandas", 0.05, "pandas KeyError", 0.7),
            _hit("fact-porto", 0.14, "The user moved to Porto.", 0.6)]
    strict = replace(POINTERS, whole=1, min_line_cosine=0.3, gate=-1.0)
    shown, _ = trim_block(hits, strict, [], cosines, Trace())
    assert [h.session_id for h in shown] == ["chat-japan"]  # the line floor drops the fact
    shown, _ = trim_block(hits, strict, [], cosines, Trace(), keep=[2])
    assert [h.session_id for h in shown] == ["chat-japan", "fact-porto"]


def test_the_budget_shows_the_memory_closest_in_meaning_by_its_closest_line_when_it_does_not_fit():
    words = lambda text: len(text.split())  # noqa: E731
    long = " ".join(["word"] * 120)
    fact = "The user moved to Porto.\n" + " ".join(["filler"] * 120)
    hits = [_hit("a", 0.3, long, 0.9), _hit("b", 0.1, long, 0.8), _hit("c", 0.2, fact, 0.7)]
    frame = words(HEADER) + words(FOOTER)
    budget = frame + sum(words(format_snippet(999, h)) for h in hits[:2]) + 12  # a and b fit, then not c whole
    cosines = lambda lines: [0.5 if "Porto" in line else 0.0 for line in lines]  # noqa: E731
    plain = Draft(BlockOptions(words, budget, line_cosines=cosines))
    fill_budget(hits, plain, Trace())
    assert [h.session_id for h, _, _ in plain.chosen] == ["a", "b"]  # the fact did not fit in rank order
    ruled = Draft(BlockOptions(words, budget, line_cosines=cosines), by_meaning=[("a", None), ("c", None)])
    fill_budget(hits, ruled, Trace())
    assert [h.session_id for h, _, _ in ruled.chosen] == ["a", "b", "c"]  # the others keep their passages
    assert ruled.chosen[2][1] == "The user moved to Porto."
