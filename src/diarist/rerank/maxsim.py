"""Late interaction (MaxSim, as in ColBERT) over MiniLM's own token vectors: no new weights.

For the top ``depth`` candidates of the fused ranking, each question token is matched with
its most similar token of the candidate (cosine of the default model's last hidden states,
the vectors it mean-pools into a chunk's embedding), and the candidate scores the mean of
those maxima. The fused order and this order are then blended (``blend_order``), and the
default's own second stage (``evidence:time``) runs over the result, so the option adds to
today's default rather than replacing part of it.

Which tokens count:
- [CLS] and [SEP] never: they summarise the whole text, which the dense channel already scores.
- On the question's side, stopwords (``diarist.lexical.STOPWORDS``: "what", "did", "the"...)
  and punctuation are dropped: MiniLM was not trained for late interaction, so such a token's
  best match is some other function word in every candidate, which adds the same noise to
  all of them. A question made only of them keeps all its tokens.
- On the candidate's side every token stays: a dropped question token never reads it.

Vectors are normalised per token and rounded to int8 (scale 127, as the index stores its
vectors), whether computed now or read from a ``TokenVectorCache``: one result either way.
Computed at query time this costs one model pass over each of the ``depth`` candidates (the
lab's measured cost: BENCHMARKS.md, "Embedders").

Spec: ``maxsim`` or ``maxsim:weight=W,depth=N,mode=M,cache=PATH`` (any subset).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..embed.base import quantize
from ..embed.cache import text_key
from ..errors import ConfigError
from ..lexical import STOPWORDS
from ..read.fusion import RRF_K
from ..read.question import Question
from ..types import Hit
from .base import Reranker

MODES = ("convex", "rank")
# Fitted by cross-validation across both dev sets and 5 folds (benchmarks/maxsim_cv.py,
# benchmarks/results/maxsim/): see BENCHMARKS.md, "Embedders".
DEFAULT_WEIGHT = 0.5
DEFAULT_DEPTH = 5
DEFAULT_MODE = "convex"


@dataclass(frozen=True)
class MaxSimParams:
    weight: float = DEFAULT_WEIGHT  # the MaxSim score's share of the blend, in [0, 1]
    depth: int = DEFAULT_DEPTH  # fused candidates re-read
    mode: str = DEFAULT_MODE  # convex: (1-w) fused score + w MaxSim; rank: 1/(k+fused rank) + w/(k+MaxSim rank)
    cache: str | None = None  # a TokenVectorCache file; None: computed at each search


def parse_spec(spec: str) -> MaxSimParams:
    """``maxsim[:key=value,...]`` with keys weight, depth, mode, cache."""
    _, _, rest = spec.partition(":")
    fields: dict[str, Any] = {}
    for part in filter(None, rest.split(",")):
        key, eq, value = part.partition("=")
        if not eq or key not in ("weight", "depth", "mode", "cache"):
            raise ConfigError(f"bad maxsim option {part!r}; use weight=W, depth=N, mode=convex|rank, cache=PATH")
        fields[key] = value
    try:
        params = MaxSimParams(
            weight=float(fields.get("weight", DEFAULT_WEIGHT)), depth=int(fields.get("depth", DEFAULT_DEPTH)),
            mode=fields.get("mode", DEFAULT_MODE), cache=fields.get("cache"),
        )
    except ValueError as exc:
        raise ConfigError(f"bad maxsim spec {spec!r}: {exc}") from exc
    if not 0.0 <= params.weight <= 1.0 or params.depth < 1 or params.mode not in MODES:
        raise ConfigError(f"maxsim needs 0 <= weight <= 1, depth >= 1 and mode in {MODES}: {spec!r}")
    return params


def content_tokens(text: str, encoding: Any) -> list[int]:
    """Positions of the question's tokens that count: neither special, nor punctuation, nor
    part of a stopword; all non-special ones if that leaves none."""
    special = encoding.special_tokens_mask
    words: dict[int, tuple[int, int]] = {}
    for i, (word, (start, end)) in enumerate(zip(encoding.word_ids, encoding.offsets)):
        if word is not None and not special[i]:
            lo, hi = words.get(word, (start, end))
            words[word] = (min(lo, start), max(hi, end))
    keep = []
    for i, word in enumerate(encoding.word_ids):
        if word is None or special[i]:
            continue
        surface = text[slice(*words[word])].casefold()
        if surface not in STOPWORDS and any(ch.isalnum() for ch in surface):
            keep.append(i)
    return keep or [i for i in range(len(special)) if not special[i]]


def unit_int8(vectors: np.ndarray) -> np.ndarray:
    """Rows normalised, then int8 (scale 127)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return quantize(vectors / norms)


def as_unit(vectors: np.ndarray) -> np.ndarray:
    out = vectors.astype(np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


def maxsim(question: np.ndarray, candidate: np.ndarray) -> float:
    """Mean over question tokens of the best cosine with any candidate token (unit rows)."""
    if len(question) == 0 or len(candidate) == 0:
        return 0.0
    return float((question @ candidate.T).max(axis=1).mean())


def blend_order(fused: Sequence[float], late: Sequence[float], weight: float, mode: str, k: int = RRF_K) -> list[int]:
    """Positions of candidates (given in fused order, with their fused and MaxSim scores) in
    blended order; ties keep the fused order."""
    n = len(fused)
    if mode == "convex":
        score = [(1 - weight) * fused[i] + weight * late[i] for i in range(n)]
    elif mode == "rank":
        late_rank = {i: r for r, i in enumerate(sorted(range(n), key=lambda i: (-late[i], i)), 1)}
        score = [1 / (k + i + 1) + weight / (k + late_rank[i]) for i in range(n)]
    else:
        raise ConfigError(f"unknown maxsim mode {mode!r}; use one of {MODES}")
    return sorted(range(n), key=lambda i: (-score[i], i))


class TokenVectorCache:
    """A candidate's int8 unit token vectors (special tokens dropped) by (model, text), in SQLite."""

    def __init__(self, path: str | Path, dim: int):
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self._conn = sqlite3.connect(str(Path(path).expanduser()), isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA busy_timeout = 30000")
        self._conn.execute("CREATE TABLE IF NOT EXISTS tokens (key BLOB PRIMARY KEY, vectors BLOB NOT NULL) WITHOUT ROWID")

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        out: dict[bytes, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = list(keys[start : start + 500])
                rows = self._conn.execute(
                    f"SELECT key, vectors FROM tokens WHERE key IN ({','.join('?' * len(part))})", part).fetchall()
                out.update((k, np.frombuffer(v, np.int8).reshape(-1, self.dim)) for k, v in rows)
        return out

    def put(self, items: dict[bytes, np.ndarray]) -> None:
        with self._lock:
            self._conn.executemany("INSERT OR REPLACE INTO tokens VALUES (?, ?)",
                                   [(k, np.ascontiguousarray(v, np.int8).tobytes()) for k, v in items.items()])

    def close(self) -> None:
        self._conn.close()


class MaxSimReranker(Reranker):
    name = "maxsim"

    def __init__(self, params: MaxSimParams = MaxSimParams(), embedder: Any = None, then: Reranker | None = None):
        """``embedder``: an ONNX transformer embedder with ``token_vectors`` (default: MiniLM, the
        default model); ``then``: the stage run after the blend (default: the default's own,
        ``evidence:time``; pass one that keeps the order to measure MaxSim alone)."""
        if embedder is None:
            from ..embed.onnx_minilm import MiniLMOnnxEmbedder

            embedder = MiniLMOnnxEmbedder()
        if then is None:
            from .evidence import EvidenceReranker

            then = EvidenceReranker(signals=("time",))
        self.params, self.embedder, self.then = params, embedder, then
        self.cache = TokenVectorCache(params.cache, embedder.dim) if params.cache else None
        self._key_model = f"{embedder.model_id}#tokens"

    def question_vectors(self, text: str) -> np.ndarray:
        """The question's unit token vectors (int8-rounded), content tokens only."""
        rows = []
        for piece, _ in self.embedder.pieces(text):
            ((encoding, hidden),) = self.embedder.token_vectors([piece])
            rows.append(hidden[content_tokens(piece, encoding)])
        return as_unit(unit_int8(np.concatenate(rows)))

    def candidate_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's unit token vectors (int8-rounded); a text over the window in pieces."""
        keys = [text_key(self._key_model, t) for t in texts]
        found = self.cache.get(keys) if self.cache is not None else {}
        todo = {k: t for k, t in zip(keys, texts) if k not in found}
        if todo:
            computed = dict(zip(todo, self.compute(list(todo.values()))))
            if self.cache is not None:
                self.cache.put(computed)
            found.update(computed)
        return [as_unit(found[k]) for k in keys]

    def compute(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's int8 unit token vectors, special tokens dropped; a text over the window is
        read in pieces (``Embedder.pieces``), batched by length as ``Embedder.embed`` does."""
        owners, pieces = [], []
        for i, text in enumerate(texts):
            for piece, _ in self.embedder.pieces(text):
                owners.append(i)
                pieces.append(piece)
        rows: list[np.ndarray] = [np.zeros((0, self.embedder.dim), np.float32)] * len(pieces)
        order = sorted(range(len(pieces)), key=lambda j: len(pieces[j]))
        step = self.embedder.batch_size
        for b in range(0, len(order), step):
            idx = order[b : b + step]
            for j, (encoding, hidden) in zip(idx, self.embedder.token_vectors([pieces[j] for j in idx])):
                rows[j] = hidden[[i for i, s in enumerate(encoding.special_tokens_mask) if not s]]
        per_text: list[list[np.ndarray]] = [[] for _ in texts]
        for j, i in enumerate(owners):
            per_text[i].append(rows[j])
        return [unit_int8(np.concatenate(parts)) if parts else np.zeros((0, self.embedder.dim), np.int8)
                for parts in per_text]

    def scores(self, query: str, hits: Sequence[Hit], now: datetime | None = None) -> list[float]:
        """The MaxSim score of each hit (no blend)."""
        question = self.question_vectors(query)
        return [maxsim(question, c) for c in self.candidate_vectors([h.text for h in hits])]

    def rerank(self, query: str, hits: Sequence[Hit], now: datetime | None = None) -> list[Hit]:
        return self.rerank_question(Question(query, now=now), hits)

    def rerank_question(self, question: Question, hits: Sequence[Hit]) -> list[Hit]:
        """The top ``depth`` blended with their MaxSim order, then the ``then`` stage."""
        head, rest = list(hits[: self.params.depth]), list(hits[self.params.depth :])
        late = self.scores(question.text, head) if head else []
        for hit, value in zip(head, late):
            hit.scores[self.name] = value
        order = blend_order([h.score for h in head], late, self.params.weight, self.params.mode)
        out = self.then.rerank_question(question, [head[i] for i in order] + rest)
        for hit in out:
            if self.name in hit.scores:
                hit.stage = self.name
        return out
