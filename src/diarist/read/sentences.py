"""Sentences: a short memory's cosine blended with its best sentence's, before the floor and fusion.

A short memory (a saved fact, a short exchange: at most ``block.SAME_SUBJECT_MAX_LINES`` lines,
not a note) often states a fact in one sentence of a turn that goes on to ask something else: "I
work as a data analyst at Rota Freight, a logistics company. Can you suggest a clean way to show
on-time delivery rates by depot in one chart?". Its vector reads the whole turn, mostly the chart,
so "What's my job?" scores it 0.04 while the first sentence alone scores 0.43.

So the writer stores one vector per sentence of each short memory's chunks (the sentences of the
lines the chunk's vector reads: in the default "split" view, the user's words; ``sentences_to_store``),
and this stage, after the channels, rescores the dense score of every candidate the dense channel
returned that has them: (1 - w) x its cosine + w x its best sentence's cosine (w:
``SearchSettings.sentence_weight``; by default ``settings.SENTENCE_WEIGHT``'s value for the
embedding model), then re-sorts the dense ranking. One query reads the
candidates' sentence vectors; a long memory, or a chunk stored before (until ``diarist reindex``), keeps its cosine,
so a database without sentence vectors reads exactly as before. The floor still reads the best
chunk cosine (``Search.best_cosine``, set by the channels): it was calibrated on it.
w is chosen by cross-validation on the everyday set's dev folds and XQuAD's languages
(``benchmarks/sentences_cv.py``).

Under a model that ``settings.CENTER`` lists (multilingual-e5-small), the question is compared
with its candidates after the memories' mean vector is taken off (``read.center``): the candidates'
cosines and their sentences' are the centered ones, then blended as above. Chosen leaving one
XQuAD language out, questions over English memories and over their own language's
(``benchmarks/xling_study.py``); every other model reads exactly as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import settings
from .block import SAME_SUBJECT_MAX_LINES, sentences_of
from .center import app_mean, centered_scores, centered_sentences, exact_index
from .trim import lines_of

#: The study's switch (benchmarks/sentences_cv.py): the floor reads the best blended score
#: instead of the best chunk cosine.
FLOOR_READS_BLEND = False


def is_short_item(kind: str, metadata: Mapping[str, Any], texts: Sequence[str]) -> bool:
    """What ``read.follow.is_short`` reads on a hit, judged on an item's chunks when it is written:
    at most ``SAME_SUBJECT_MAX_LINES`` lines in all, not a note of a vault."""
    if metadata.get("source") == "markdown":  # read.block.is_note
        return False
    n_lines = sum(len(lines_of(text)) for text in texts)
    return 0 < n_lines <= SAME_SUBJECT_MAX_LINES


def sentences_to_store(kind: str, metadata: Mapping[str, Any], texts: Sequence[str],
                       dense_texts: Sequence[str | None]) -> list[list[str]]:
    """Per chunk of an item (its ``texts``; ``dense_texts``: what each one's vector reads, None
    for a chunk without a vector), the sentences whose vectors are stored: the sentences of the
    lines its vector reads, when the item is short and it has more than one; else none."""
    if not is_short_item(kind, metadata, texts):
        return [[] for _ in texts]
    out = []
    for dense in dense_texts:
        found = [] if dense is None else list(dict.fromkeys(s for line in lines_of(dense) for s in sentences_of(line)))
        # One sentence is the chunk's own text: its cosine would only be blended with itself.
        out.append(found if len(found) > 1 else [])
    return out


def best_sentences(found: Mapping[int, np.ndarray], queries: np.ndarray,
                   center: tuple[np.ndarray, float] | None = None) -> dict[int, float]:
    """Per chunk, the best cosine of any of its sentences to any query vector: one product for all
    (``center``: the memories' mean and its share, taken off first: ``read.center``)."""
    ids = list(found)
    counts = [len(found[cid]) for cid in ids]
    stacked = np.concatenate([found[cid] for cid in ids])
    products = queries @ stacked.T if center is None else centered_sentences(stacked, queries, *center)
    per_sentence = np.max(products, axis=0)
    starts = np.cumsum([0, *counts[:-1]])
    return dict(zip(ids, np.maximum.reduceat(per_sentence, starts).tolist()))


def centering(search: Any) -> tuple[Any, np.ndarray, float] | None:
    """(the exact scan, the memories' mean, its share) when the model is listed in
    ``settings.CENTER``; else None (read as before)."""
    share = center_share(search.channels.embedder.model_id)
    if not share:
        return None
    channels = search.channels
    mean = app_mean(channels.store, search.app)
    return None if mean is None else (exact_index(channels.store, channels.dense, channels.filtered_dense), mean, share)


def center_share(model_id: str) -> float:
    """``settings.CENTER`` for a model (0: none); read at call time, so a study can set it."""
    return settings.center_share(model_id)


def rescore_by_sentences(search: Any) -> None:
    """The sentences stage: the dense ranking's short memories rescored by their best sentence,
    after the memories' mean is taken off under a model that asks for it (``centering``)."""
    weight, store, dense = search.settings.sentence_weight, search.channels.store, search.dense
    if weight is None:
        weight = settings.sentence_weight(search.channels.embedder.model_id)
    if not dense or search.query_vectors is None:
        return
    center = centering(search)
    if center is None and (not weight or not store.keeps_sentences):
        return
    found = store.sentence_vectors(search.app, [cid for cid, _ in dense]) if weight and store.keeps_sentences else {}
    if not found and center is None:  # no record: a database without sentence vectors reads, and traces, as before
        return
    queries = np.asarray(search.query_vectors, dtype=np.float32)
    queries = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
    cosines = [cosine for _, cosine in dense]
    if center is not None:
        exact, mean, share = center
        cosines = centered_scores(exact, search.app, [cid for cid, _ in dense], queries, mean, share).tolist()
    best = best_sentences(found, queries, None if center is None else (center[1], center[2])) if found else {}
    rescored = [(cid, (1.0 - weight) * cosine + weight * best[cid] if cid in best else cosine)
                for (cid, _), cosine in zip(dense, cosines)]
    search.dense = sorted(rescored, key=lambda pair: -pair[1])  # stable: ties keep the channel's order
    if FLOOR_READS_BLEND:
        search.best_cosine = search.dense[0][1]
    moved = sum(a != b for (a, _), (b, _) in zip(dense, search.dense))
    centered = "" if center is None else f"the memories' mean taken off (x{center[2]:g}); "
    search.trace.record("sentences", len(dense), 0,
                        f"{centered}{len(found)} short memories rescored by their best sentence (w {weight:g}); "
                        f"{moved} places changed")
