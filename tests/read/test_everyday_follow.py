"""Following a subject forward (issue 41, ``diarist.read.follow``): the newer of a changed fact,
found memory to memory from the older one the block keeps, is brought in just above it and the
older is marked earlier; and a memory paired by meaning is marked earlier than its partner, not
than a newer long conversation that shares a word of the question with it."""

from __future__ import annotations

import numpy as np

from diarist.read import block
from diarist.read.block import layout
from diarist.read.follow import follow_forward, is_short
from diarist.types import Hit


def _vectors(table: dict[str, list[float]]):
    def vectors(lines):
        rows = np.asarray([table[line] for line in lines], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return vectors


NURSE = "The user works as a staff nurse on the ward."
EDUCATOR = "I left the ward and started as a clinical educator."
BAND = "I play bass in a covers band."
LONG = "\n".join(f"line {n} of a long chat about the ward." for n in range(8))
TABLE = {NURSE: [1, 0.3, 0], EDUCATOR: [0.8, 0.6, 0], BAND: [0, 0.2, 1],
         **{f"line {n} of a long chat about the ward.": [1, 0.3, 0] for n in range(8)}}


def _hit(n: int, text: str, date: str, score: float = 0.5) -> Hit:
    return Hit(n, text, score, f"s{n}", None, date, ("user",), "turns")


def test_the_newer_of_a_changed_fact_is_brought_in_above_the_older():
    nurse, band, educator = _hit(1, NURSE, "2024-03-15"), _hit(2, BAND, "2025-04-03"), _hit(3, EDUCATOR, "2025-12-01")
    followed = follow_forward([nurse, band], [nurse, band, educator], _vectors(TABLE), min_cosine=0.9, depth=1)
    assert [h.session_id for h in followed.hits] == ["s3", "s1", "s2"]
    assert followed.pairs == {("s1", None): ("s3", None)}
    # Held lower in the block already: moved up, not doubled.
    followed = follow_forward([nurse, band, educator], [nurse, band, educator], _vectors(TABLE), min_cosine=0.9, depth=1)
    assert [h.session_id for h in followed.hits] == ["s3", "s1", "s2"]
    # Not close enough, or not later, or off: nothing moves.
    assert follow_forward([nurse, band], [nurse, band, educator], _vectors(TABLE), min_cosine=0.99, depth=1).pairs == {}
    older = _hit(3, EDUCATOR, "2023-01-01")
    assert follow_forward([nurse, band], [nurse, band, older], _vectors(TABLE), min_cosine=0.9, depth=1).pairs == {}


def test_a_long_conversation_is_neither_followed_nor_brought_in():
    nurse, chat = _hit(1, NURSE, "2024-03-15"), _hit(4, LONG, "2025-12-01")
    assert is_short(nurse) and not is_short(chat)
    assert follow_forward([nurse], [nurse, chat], _vectors(TABLE), min_cosine=0.5, depth=1).pairs == {}
    assert follow_forward([chat], [chat, _hit(3, EDUCATOR, "2026-01-01")], _vectors(TABLE), min_cosine=0.5,
                          depth=1).pairs == {}


def test_the_layout_ranks_a_followed_newer_first_and_marks_the_older():
    nurse, band, educator = _hit(1, NURSE, "2024-03-15", 0.9), _hit(2, BAND, "2025-04-03", 0.8), _hit(3, EDUCATOR, "2025-12-01", 0.7)
    chosen = [(nurse, NURSE, 10), (band, BAND, 10), (educator, EDUCATOR, 10)]
    far = _vectors({NURSE: [1, 0, 0], BAND: [0, 1, 0], EDUCATOR: [0, 0, 1]})  # the layout's own pairing finds nothing
    plain = layout(chosen, "date", set(), set(), far)
    assert all(s.earlier_than is None for s in plain)
    marked = layout(chosen, "date", set(), set(), far, followed={("s1", None): ("s3", None)})
    by_id = {s.hit.session_id: s for s in marked}
    assert by_id["s1"].earlier_than == 3 and by_id["s3"].earlier_than is None
    assert by_id["s3"].rank == 0 and by_id["s1"].rank == 1


def test_a_pair_by_meaning_is_marked_before_a_pair_by_words(monkeypatch):
    """Denver, then Fort Collins (by meaning), then a long chat that says "lives" (by the question's
    word): Denver is earlier than Fort Collins, which takes its place first."""
    denver, fort = "The user lives in Denver.", "The user moved to Fort Collins."
    table = {denver: [1, 0.2, 0], fort: [0.9, 0.4, 0], **{f"he lives in a house, line {n}": [0, 0, 1] for n in range(6)}}
    long = "\n".join(f"he lives in a house, line {n}" for n in range(6))
    chosen = [(_hit(1, denver, "2024-01-08", 0.9), denver, 10), (_hit(2, long, "2026-02-20", 0.8), long, 10),
              (_hit(3, fort, "2025-10-27", 0.7), fort, 10)]
    snippets = {s.hit.session_id: s for s in layout(chosen, "date", {"live"}, set(), _vectors(table))}
    assert snippets["s1"].earlier_than == 2 and snippets["s3"].rank == 0  # numbered by date: Fort Collins is [2]
    monkeypatch.setattr(block, "MEANING_FIRST", False)  # before: the newest of either, the long chat
    monkeypatch.setattr(block, "STATED_NOT_STALE_BY_WORDS", False)  # (a stated fact is not marked by words since)
    snippets = {s.hit.session_id: s for s in layout(chosen, "date", {"live"}, set(), _vectors(table))}
    assert snippets["s1"].earlier_than == 3 and snippets["s1"].rank == 0


def _scored(n: int, text: str, cosine: float, fact: bool = False) -> tuple[Hit, str, int]:
    hit = Hit(n, text, 0.5, None if fact else f"s{n}", f"f{n}" if fact else None, "2025-01-01", ("user",), "turns",
              scores={"dense": cosine})
    return hit, text, 10


def test_a_short_memory_closer_in_meaning_comes_before_a_long_conversation():
    """"What car do I drive?": a long chat about a brother's car (cosine 0.33) is ranked first by its
    words; the saved fact (0.42) comes before it, and a long chat closer than the fact stays above."""
    long = "\n".join(f"line {n} of a chat" for n in range(6))
    chosen = [_scored(1, long, 0.33), _scored(2, "The user drives a Mazda 3.", 0.42, fact=True),
              _scored(3, "A chat of a line.", 0.10)]
    assert block.short_before_long(chosen) == [1, 0, 2]
    closer = [_scored(1, long, 0.50), _scored(2, "The user drives a Mazda 3.", 0.42, fact=True)]
    assert block.short_before_long(closer) == [0, 1]
    # Two long chats: past the one just above it that it beats, not past the closer one above that.
    chosen = [_scored(1, long, 0.50), _scored(4, long + "\nmore", 0.20), _scored(2, "The user drives a Mazda 3.", 0.42,
                                                                                 fact=True)]
    assert block.short_before_long(chosen) == [0, 2, 1]
