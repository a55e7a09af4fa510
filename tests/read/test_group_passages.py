"""Grouping by memory (``diarist.read.group``): a memory's best passages, at most
``GROUP_PASSAGES``, in their original order; a passage of another view that covers turns a
better one covers is left out; pieces of one view never overlap."""

from __future__ import annotations

from diarist.read.group import PASSAGE_GAP, group_by_item
from diarist.read.trace import Trace
from diarist.types import Hit


def _hit(cid: int, session: str, view: str, turns: tuple[int, int], text: str | None = None) -> Hit:
    return Hit(cid, text or f"text {cid}", 1.0 / cid, session, None, None, ("user",), view,
               first_turn=turns[0], last_turn=turns[1])


def test_overlapping_views_keep_the_better_passage_and_a_memory_shows_at_most_its_passages():
    hits = [
        _hit(1, "s1", "all", (4, 5)),
        _hit(2, "s1", "user", (5, 5)),  # another view over turn 5: covered by chunk 1
        _hit(3, "s1", "all", (4, 5), text="a piece of the same turns"),  # same view: its own passage
        _hit(4, "s2", "all", (0, 1)),
        _hit(5, "s1", "user", (0, 0)),  # another view, other turns: a passage
        _hit(6, "s1", "all", (8, 9)),  # a fourth passage: left out
    ]
    trace = Trace(explain=True)
    grouped = group_by_item(hits, trace, passages=3)
    assert [h.chunk_id for h in grouped] == [1, 4]
    first = grouped[0]
    # In original order (by first turn, then id): chunk 5 (turn 0), then 1 and 3 (turns 4-5).
    assert first.passages == ["text 5", "text 1", "a piece of the same turns"]
    assert first.text == PASSAGE_GAP.join(first.passages) and first.passage_ranks == [1, 2, 0]
    assert (first.first_turn, first.last_turn) == (0, 5)
    assert len(trace.dropped) == 2  # chunk 2 (covered) and chunk 6 (a fourth passage)
