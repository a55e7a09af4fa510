"""Pairs of memories a person may want to merge, delete or mark as superseded (``Memory.similar_pairs``;
the inspector's curate page, ``diarist.ui.curate``, offers the actions).

Two kinds: duplicates (the same text under two ids, or vectors nearly identical: a note imported
twice, a fact restated) and pairs that may disagree (close in meaning, different dates: the older
may be out of date). Found by comparing the stored int8 vectors of the app's newest chunks
(exact cosines, in blocks, the candidates kept in numpy and cut to a bound after each block: at
100k chunks a page compares the newest 4,000 in about a second, RELIABILITY.md). Nothing here
changes anything: only a person's click on an action (``ui.curate.apply``) writes.

The two thresholds are review thresholds, not fitted to any data: the page shows them and a
person can move them in its form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..store.base import Store

DUPLICATE_COSINE = 0.97  # at or above: shown as a duplicate
RELATED_COSINE = 0.85  # at or above, with different dates: shown as a pair that may disagree
MAX_CHUNKS = 4000  # the newest chunks compared (a 4000 x 4000 product, in blocks)
MAX_PAIRS = 50
#: Pairs of items kept as candidates per pair shown (some are passed over: same day, already marked).
CANDIDATES_PER_PAIR = 20
BLOCK = 256
SUPERSEDED_BY = "superseded_by"  # the metadata key a mark is stored under


@dataclass(frozen=True)
class ItemRef:
    kind: str
    id: str
    date: str | None
    text: str  # the chunk that matched
    superseded_by: str | None = None


@dataclass(frozen=True)
class Pair:
    a: ItemRef  # the older (by date) of the two
    b: ItemRef
    cosine: float
    reason: str  # "same text", "near-duplicate", "may disagree"

    @property
    def duplicate(self) -> bool:
        return self.reason != "may disagree"


@dataclass(frozen=True)
class Found:
    pairs: list[Pair]
    compared: int  # chunks compared
    total: int  # chunks the app holds


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def find_pairs(store: Store, app: str, *, duplicate: float = DUPLICATE_COSINE, related: float = RELATED_COSINE,
               max_chunks: int = MAX_CHUNKS, limit: int = MAX_PAIRS) -> Found:
    """The most similar pairs of distinct items among the app's newest ``max_chunks`` chunks."""
    if not 0.0 < related <= duplicate <= 1.0:
        raise InvalidInput(f"thresholds must satisfy 0 < related <= duplicate <= 1, got {related} and {duplicate}")
    batch = store.read_vectors(app)
    ids, vectors = batch.ids[-max_chunks:], batch.vectors[-max_chunks:]
    if len(ids) < 2:
        return Found([], len(ids), len(batch.ids))
    rows = store.fetch_chunks(app, [int(i) for i in ids])
    keep = [n for n, i in enumerate(ids) if int(i) in rows]
    ids, unit = ids[keep], vectors[keep].astype(np.float32)
    unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    owner = [_item_of(rows[int(i)]) for i in ids]
    pairs = []
    for cosine, i, c in _best_pairs(unit, owner, related, CANDIDATES_PER_PAIR * limit):
        ra, rc = rows[int(ids[i])], rows[int(ids[c])]
        same = _normal(ra.text) == _normal(rc.text)
        reason = "same text" if same else "near-duplicate" if cosine >= duplicate else "may disagree"
        if reason == "may disagree" and (ra.date or "")[:10] == (rc.date or "")[:10]:
            continue  # close in meaning on the same day: a continuation, not a change
        a, b = _ref(ra), _ref(rc)
        if (a.date or "") > (b.date or ""):
            a, b = b, a
        if a.superseded_by == b.id or b.superseded_by == a.id:
            continue  # already marked by a person
        pairs.append(Pair(a, b, min(cosine, 1.0), reason))
    pairs.sort(key=lambda p: (not p.duplicate, -p.cosine, p.a.id, p.b.id))
    return Found(pairs[:limit], len(ids), len(batch.ids))


def _best_pairs(unit: np.ndarray, owner: list[tuple[str, str]], related: float,
                keep: int) -> list[tuple[float, int, int]]:
    """(cosine, row, row) of the ``keep`` most similar pairs of rows of distinct items at or above
    ``related``, the best pair of chunks per pair of items, most similar first. In numpy, block
    by block, the candidates cut back to ``keep`` after each block: memory and time stay bounded
    however many of the 8M pairs of 4,000 chunks pass the threshold."""
    codes = np.unique(np.array([f"{k}\x00{i}" for k, i in owner], dtype=object), return_inverse=True)[1].astype(np.int64)
    span = int(codes.max()) + 1
    cos_all, i_all, c_all = np.empty(0, np.float32), np.empty(0, np.int64), np.empty(0, np.int64)
    for start in range(0, len(codes), BLOCK):
        sims = unit[start : start + BLOCK] @ unit.T
        # Once ``keep`` pairs are held, only a pair more similar than the least of them can enter.
        floor = related if len(cos_all) < keep else max(related, float(cos_all[-1]))
        r, c = np.nonzero(sims > floor if floor > related else sims >= related)
        i = r + start
        mask = (c > i) & (codes[i] != codes[c])
        r, c, i = r[mask], c[mask], i[mask]
        cos_all = np.concatenate([cos_all, sims[r, c]])
        i_all, c_all = np.concatenate([i_all, i]), np.concatenate([c_all, c])
        cos_all, i_all, c_all = _best_per_item_pair(cos_all, i_all, c_all, codes, span, keep)
    return list(zip(cos_all.tolist(), i_all.tolist(), c_all.tolist()))


def _best_per_item_pair(cos: np.ndarray, i: np.ndarray, c: np.ndarray, codes: np.ndarray, span: int,
                        keep: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The best candidate per pair of items, the ``keep`` best of them, most similar first."""
    order = np.argsort(-cos, kind="stable")
    cos, i, c = cos[order], i[order], c[order]
    a, b = codes[i], codes[c]
    pair = np.minimum(a, b) * span + np.maximum(a, b)
    _, first = np.unique(pair, return_index=True)
    first = np.sort(first)[:keep]  # in order of similarity
    return cos[first], i[first], c[first]


def _item_of(row: Any) -> tuple[str, str]:
    return ("fact", row.fact_id) if row.fact_id is not None else ("session", row.session_id)


def _ref(row: Any) -> ItemRef:
    kind, item_id = _item_of(row)
    mark = (row.metadata or {}).get(SUPERSEDED_BY)
    return ItemRef(kind, item_id, row.date, row.text, mark if isinstance(mark, str) else None)
