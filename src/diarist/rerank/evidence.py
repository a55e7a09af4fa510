"""The default second stage: no extra model, only evidence a reader can check.

It re-orders the fused candidates by Reciprocal Rank Fusion of the fused order with a few
rankings of the same candidates, each built from one explainable signal (ranks, never scores):

- names: candidates that contain more of the question's proper nouns and quoted phrases first
  (a capital attests a name only away from the start of a sentence: see ``diarist.query``);
- time: when the question names a span ("last Sunday", "in May", "two weeks ago"), resolved
  against ``now``, candidates dated inside it first, then by distance to it;
- recency (off by default): when the question asks for the current state ("currently",
  "latest", "still"...), newer candidates first. Measured on LongMemEval dev it lost 9
  questions' MRR for 1 gained: the cue words do not single out knowledge updates, and newer is
  not better among unrelated sessions (BENCHMARKS.md).

A signal the question does not carry adds no ranking, so a plain question keeps its fused order.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..lexical import analyze
from ..read.fusion import RRF_K, rrf
from ..read.question import Question
from ..types import Hit
from .base import Reranker


def _date(hit: Hit) -> datetime | None:
    if not hit.date:
        return None
    try:
        return datetime.fromisoformat(hit.date).replace(tzinfo=None)
    except ValueError:
        return None


def _order(hits: Sequence[Hit], key) -> list[int]:
    """Candidate positions sorted by key (ascending), ties in fused order."""
    return sorted(range(len(hits)), key=lambda i: (key(i), i))


SIGNALS = ("names", "time", "recency")
DEFAULT_SIGNALS = ("names", "time")


class EvidenceReranker(Reranker):
    name = "evidence"

    def __init__(self, rrf_k: int = RRF_K, signals: Sequence[str] = DEFAULT_SIGNALS):
        self.rrf_k = rrf_k
        self.signals = tuple(signals)

    def rankings(self, query: str | Question, hits: Sequence[Hit], now: datetime | None = None) -> dict[str, list[int]]:
        """The fused order plus one ranking per signal the question carries (a parsed
        ``Question`` carries its own ``now``)."""
        question = query if isinstance(query, Question) else Question(query, now=now)
        out: dict[str, list[int]] = {"fused": list(range(len(hits)))}
        if "names" in self.signals and (question.proper_nouns or question.quoted):
            texts = [h.text.casefold() for h in hits]
            phrases = [q.casefold() for q in question.quoted]
            names = question.proper_nouns

            def matched(i: int) -> int:
                words = set(analyze(texts[i], keep_stopwords=True))  # stems, as the names are
                return sum(n in words for n in names) + sum(p in texts[i] for p in phrases)

            counts = [matched(i) for i in range(len(hits))]
            if len(set(counts)) > 1:
                out["names"] = _order(hits, lambda i: -counts[i])
        # Read only where a signal needs them (most questions name no time and ask no latest).
        dates = [_date(h) for h in hits] if (("time" in self.signals and question.now is not None and question.span is not None)
                                             or ("recency" in self.signals and question.asks_current_state)) else []
        if "time" in self.signals and question.now is not None:
            span = question.span
            if span is not None and any(dates):

                def distance(i: int) -> float:
                    d = dates[i]
                    if d is None:
                        return float("inf")
                    if span.contains(d):
                        return 0.0
                    gap = span.start - d if d < span.start else d - span.end
                    return abs(gap.total_seconds())

                out["time"] = _order(hits, distance)
        if "recency" in self.signals and question.asks_current_state and any(dates):
            out["recency"] = _order(hits, lambda i: -(dates[i].timestamp() if dates[i] else float("-inf")))
        return out

    def _fuse(self, query: str | Question, hits: Sequence[Hit], now: datetime | None) -> list[tuple[int, float]]:
        """(position, score) best first. A tie (a candidate one place down that a signal puts
        first ties the one it overtakes) goes to the candidate the signals rank higher."""
        rankings = self.rankings(query, hits, now)
        fused = rrf(rankings, self.rrf_k)
        signal_rank = {i: 0.0 for i in range(len(hits))}
        signals = [name for name in rankings if name != "fused"]
        for name in signals:
            for rank, i in enumerate(rankings[name], start=1):
                signal_rank[i] += rank / len(signals)
        order = sorted(fused, key=lambda t: (-t[1], signal_rank[t[0]], t[0]))
        return [(i, score) for i, score, _ in order]

    def scores(self, query: str, hits: Sequence[Hit], now: datetime | None = None) -> list[float]:
        by_position = dict(self._fuse(query, hits, now))
        return [by_position[i] for i in range(len(hits))]

    def rerank_question(self, question: Question, hits: Sequence[Hit]) -> list[Hit]:
        return self.rerank(question, hits, question.now)

    def rerank(self, query: str | Question, hits: Sequence[Hit], now: datetime | None = None) -> list[Hit]:
        out = []
        for i, score in self._fuse(query, hits, now):
            hit = hits[i]
            hit.scores[self.name] = score
            hit.stage = self.name
            out.append(hit)
        return out
