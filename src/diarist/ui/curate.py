"""The inspector's curate page: pairs of memories a person may want to merge, delete or mark as
superseded (found by ``Memory.similar_pairs``, ``diarist.read.similar``), and the one place a
person's click on an action writes (``apply``).

The two thresholds are review thresholds, not fitted to any data: the page shows them and a
person can move them in its form.
"""

from __future__ import annotations

from ..errors import InvalidInput
from ..memory import Memory
from ..read.similar import DUPLICATE_COSINE, MAX_PAIRS, RELATED_COSINE, SUPERSEDED_BY

__all__ = ["ACTIONS", "DUPLICATE_COSINE", "MAX_PAIRS", "RELATED_COSINE", "SUPERSEDED_BY", "apply"]

ACTIONS = ("merge", "delete", "supersede")


def apply(memory: Memory, app: str, action: str, keep: tuple[str, str], other: tuple[str, str]) -> str:
    """Carry out a person's choice on a pair; returns what was done, in words.

    merge: ``keep`` gains the metadata keys only ``other`` had, then ``other`` is deleted.
    delete: ``other`` is deleted. supersede: ``other`` is marked ``superseded_by`` ``keep``
    (its other metadata kept; the previous version stays in its history)."""
    if action not in ACTIONS:
        raise InvalidInput(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")
    (keep_kind, keep_id), (other_kind, other_id) = keep, other
    if (keep_kind, keep_id) == (other_kind, other_id):
        raise InvalidInput("a pair needs two different memories")
    kept = memory.get(keep_id, app=app, kind=keep_kind)
    gone = memory.get(other_id, app=app, kind=other_kind)
    if action == "supersede":
        memory.update(other_id, app=app, kind=other_kind, metadata={SUPERSEDED_BY: keep_id}, merge_metadata=True)
        return f"{other_kind} {other_id} marked as superseded by {keep_id}"
    if action == "merge":
        extra = {k: v for k, v in gone["metadata"].items() if k not in kept["metadata"] and k != SUPERSEDED_BY}
        extra["merged_from"] = other_id
        memory.update(keep_id, app=app, kind=keep_kind, metadata=extra, merge_metadata=True)
    memory.delete(other_id, app=app, kind=other_kind)
    return f"{other_kind} {other_id} {'merged into ' + keep_id if action == 'merge' else 'deleted'}"
