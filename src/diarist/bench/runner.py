"""The benchmark runner: index each haystack with ``Memory``, ask its questions, write one row each.

Each haystack gets a fresh in-memory ``Memory`` that shares one persistent ``EmbeddingCache``.
Before any question is asked, every distinct text the run will embed is collected and the ones
the cache lacks are embedded in one pass (progress bar with an ETA); the questions then read
their vectors from the cache. Chunk hits (k well beyond 10) are turned into a session ranking:
a session scores its best chunk ("max": the order in which sessions first appear in the chunk
ranking) or the mean of its top-3 chunk scores ("mean3": RRF scores when fused, cosines when
vectors only, BM25 scores when BM25 only; a session with fewer than 3 chunks in that channel is
averaged over the chunks it has). Sessions that no retrieved chunk reaches are ranked last, in
haystack order, and counted.
"""

from __future__ import annotations

import hashlib
import platform
import resource
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import lexical, settings
from ..embed import Embedder, get_embedder
from ..embed.cache import EmbeddingCache, text_key
from ..memory import Memory
from ..read.fusion import rrf
from ..rerank import get_reranker
from ..types import Chunk, Hit, Message
from ..write.chunk import chunk_session
from ..write.validate import check_session
from .configs import BenchConfig
from .data import Haystack, Question, load_locomo, load_longmemeval
from .metrics import first_rank, session_metrics

APP = "bench"
DEFAULT_CACHE = Path("benchmarks/.cache/embeddings.sqlite")


_BASE: dict[tuple[str, str], dict[tuple[Message, ...], list[Chunk]]] = {}


def base_chunks(embedder: Embedder, messages: Sequence[Message], view: str) -> list[Chunk]:
    """chunk_session, computed once per process for each (model, view, session)."""
    memo = _BASE.setdefault((embedder.model_id, view), {})
    key = tuple(messages)
    if key not in memo:
        memo[key] = chunk_session(messages, embedder, view)  # the view names a library index plan
    return memo[key]


class Chunker:
    """Chunks of a session for a config, computed once per distinct session."""

    def __init__(self, embedder: Embedder, view: str, doc: str, lexical_only: bool = False):
        if doc not in ("chunks", "session", "session-lexical"):
            raise ValueError(f"unknown doc mode {doc!r}; use chunks, session or session-lexical")
        if doc != "chunks" and view == "both":
            raise ValueError("one document per session is defined for views all, user and split")
        self.embedder, self.view, self.doc, self.lexical_only = embedder, view, doc, lexical_only
        self._memo: dict[tuple[Message, ...], list[Chunk]] = {}

    def __call__(self, messages: Sequence[Message]) -> list[Chunk]:
        key = tuple(messages)
        if key not in self._memo:
            self._memo[key] = self._make(messages)
        return self._memo[key]

    def _make(self, messages: Sequence[Message]) -> list[Chunk]:
        if self.doc != "chunks":
            chunks = self._session_doc(messages)
        else:
            chunks = base_chunks(self.embedder, messages, self.view)
        if self.lexical_only:  # BM25 alone: nothing to embed, the dense channel stays empty
            chunks = [replace(c, dense=False) for c in chunks if c.lexical]
        return chunks

    def _session_doc(self, messages: Sequence[Message]) -> list[Chunk]:
        """One lexical document per session (the whole session under the view) and vectors.

        doc "session": one vector, of what a 256-token embedder reads of the session: its first
        chunk of view "user" (views user and split: the user's turns packed up to the 254-token
        window; a longer first turn is cut at a paragraph, sentence or token boundary) or of view
        "all". doc "session-lexical": the vectors of the view's own chunks, every one of them.
        """
        user = [i for i, m in enumerate(messages) if m.role == "user"]
        lexical_turns = user if self.view == "user" else list(range(len(messages)))
        chunks: list[Chunk] = []
        if lexical_turns:
            text = "\n".join(messages[i].content for i in lexical_turns)
            chunks.append(Chunk(text, 0, tuple(dict.fromkeys(messages[i].role for i in lexical_turns)),
                                lexical_turns[0], lexical_turns[-1], "user" if self.view == "user" else "all",
                                0, dense=False, lexical=True))
        if self.doc == "session-lexical":
            dense = [c for c in base_chunks(self.embedder, messages, self.view) if c.dense]
            return chunks + [replace(c, position=len(chunks) + i, lexical=False) for i, c in enumerate(dense)]
        dense = [c for c in base_chunks(self.embedder, messages, "all" if self.view == "all" else "user") if c.dense]
        if dense:
            first = dense[0]
            chunks.append(replace(first, position=len(chunks), lexical=False))
        return chunks


_CHUNKERS: dict[tuple[str, str, str, bool], Chunker] = {}


def shared_chunker(embedder: Embedder, view: str, doc: str, lexical_only: bool = False) -> Chunker:
    """One chunker (and its memo) per process for each (model, view, doc): configs share it."""
    key = (embedder.model_id, view, doc, lexical_only)
    if key not in _CHUNKERS:
        _CHUNKERS[key] = Chunker(embedder, view, doc, lexical_only)
    return _CHUNKERS[key]


#: What a study plugs into the runner (``benchmarks/studies/ablations.py``, not the library): under
#: "condense", a session's rule-based extract, ``(messages, limit) -> text``, for the configs with
#: ``extract``; under "followup", a question's follow-up form, ``question -> (previous, bare)``,
#: for the configs with ``followup``.
STUDY_HOOKS: dict[str, Callable[..., Any]] = {}


def study_hook(name: str, config: BenchConfig) -> Callable[..., Any]:
    if name not in STUDY_HOOKS:
        raise ValueError(f"config {config.name!r} needs the {name!r} of a study: run it with "
                         "python -m benchmarks.studies.ablations (from the repository)")
    return STUDY_HOOKS[name]


_EXTRACTORS: dict[int, "ExtractChunker"] = {}


def shared_extractor(limit: int) -> "ExtractChunker":
    if limit not in _EXTRACTORS:
        _EXTRACTORS[limit] = ExtractChunker(limit)
    return _EXTRACTORS[limit]


class ExtractChunker:
    """One document per session: its rule-based extract, in both channels."""

    def __init__(self, limit: int):
        self.limit = limit
        self._memo: dict[tuple[Message, ...], list[Chunk]] = {}

    def __call__(self, messages: Sequence[Message]) -> list[Chunk]:
        key = tuple(messages)
        if key not in self._memo:
            text = STUDY_HOOKS["condense"](messages, self.limit)
            # The extract covers no particular turn: turn-level ranks come from the raw index.
            self._memo[key] = [Chunk(text, 0, ("user",), 0, -1, "extract", 0)]
        return self._memo[key]


@dataclass
class Prepared:
    session_id: str
    date: str | None
    messages: list[Message]


def _sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def code_version() -> str:
    """git describe of the checkout the package runs from, else the package version."""
    root = Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=root, capture_output=True, text=True, timeout=10,
        )
        if out.returncode == 0 and out.stdout.strip():
            return f"git:{out.stdout.strip()}"
    except (OSError, subprocess.SubprocessError):
        pass
    from importlib.metadata import version

    return f"diarist {version('diarist')}"


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


class Runner:
    def __init__(
        self,
        config: BenchConfig,
        embedder: str | Embedder = settings.EMBEDDER,
        cache_path: str | Path | None = DEFAULT_CACHE,
        progress: bool = True,
        threads: int | None = None,
    ):
        self.config = config
        if embedder == settings.EMBEDDER and threads:
            from ..embed.onnx_minilm import MiniLMOnnxEmbedder

            self.embedder: Embedder = MiniLMOnnxEmbedder(threads=threads)
        else:
            self.embedder = get_embedder(embedder) if isinstance(embedder, str) else embedder
        self.cache_path = Path(cache_path) if cache_path else None
        self.cache = EmbeddingCache(self.cache_path) if self.cache_path else None
        self.progress = progress
        self.raw = shared_chunker(self.embedder, config.view, config.doc, config.channel == "lexical") if config.extract != "alone" else None
        self._reranker = get_reranker(config.reranker)  # builds shared across configs get this config's
        self.extract = None
        if config.extract != "none":
            study_hook("condense", config)
            self.extract = shared_extractor(config.extract_chars)
        self._followup = study_hook("followup", config) if config.followup != "none" else None
        self.embedded: dict[str, float] = {"texts": 0, "tokens": 0, "seconds": 0.0}

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    # -- preparation: every distinct text embedded once, before any question ------------------

    def prepare(self, haystacks: list[Haystack], *, embed: bool = True) -> dict[str, list[Prepared]]:
        """Each haystack's sessions checked once (by unit), and with ``embed`` every dense text of
        this config's chunks that the embedding cache lacks embedded into it (``embed_missing``)."""
        prepared: dict[str, list[Prepared]] = {}
        for hay in haystacks:
            items = []
            for i, s in enumerate(hay.sessions):
                sid, date, messages, _, _ = check_session(s, f"{hay.unit} session #{i}")
                items.append(Prepared(sid, date, messages))
            prepared[hay.unit] = items
        if embed:
            self.embed_missing(prepared)
        return prepared

    def embed_missing(self, prepared: dict[str, list[Prepared]]) -> None:
        """Embed into the cache every dense text of this config's chunks of ``prepared`` that it lacks."""
        from tqdm import tqdm

        texts: dict[str, int] = {}
        seen: set[tuple[Message, ...]] = set()
        sessions = [p for items in prepared.values() for p in items]
        for p in tqdm(sessions, desc="chunk sessions", unit="session", disable=not self.progress):
            key = tuple(p.messages)
            if key in seen:
                continue
            seen.add(key)
            for chunker in (self.raw, self.extract):
                if chunker is None:
                    continue
                for c in chunker(p.messages):
                    if c.dense and c.dense_text not in texts:
                        texts[c.dense_text] = c.n_tokens if c.embed_text is None else 0
        if self.cache is None or self.cache_path is None:
            return
        keys = {text_key(self.embedder.model_id, t): t for t in texts}
        have = self.cache.cached(list(keys))
        # Newest-first: another process filling the same cache in the run's natural order (a
        # warm-up job, say) and this one meet in the middle; each batch is re-checked first.
        missing = [t for k, t in reversed(keys.items()) if k not in have]
        if not missing:
            return
        tokens = [texts[t] or self.embedder.count_tokens(t) for t in missing]
        start = time.perf_counter()
        done = 0
        with tqdm(total=sum(tokens), desc=f"embed {len(missing)} new texts", unit="tok",
                  unit_scale=True, disable=not self.progress) as bar:
            for b in range(0, len(missing), 128):
                batch = missing[b : b + 128]
                keys_b = [text_key(self.embedder.model_id, t) for t in batch]
                present = self.cache.cached(keys_b)
                todo = [t for t, k in zip(batch, keys_b) if k not in present]
                if todo:
                    self.cache.embed_int8(self.embedder, todo)
                    done += len(todo)
                bar.update(sum(tokens[b : b + 128]))
        self.embedded = {"texts": done, "tokens": sum(n for t, n in zip(missing, tokens)),
                         "seconds": round(time.perf_counter() - start, 1)}

    # -- one haystack ----------------------------------------------------------------------

    def _memory(self, chunker: Callable[[Sequence[Message]], list[Chunk]]) -> Memory:
        """A scratch memory built from options; the config's chunker (memoised, or an ablation's
        documents) replaces the plan's chunking. Search options are set per config (search_view)."""
        return Memory(
            ":memory:", embedder=self.embedder, plan=self.config.view, embed_cache=self.cache, chunker=chunker,
            reranker=None, floor=None, group=False,  # the configs aggregate chunks to sessions themselves
            store_lines=False,  # rankings read no line (the context lab's memories store them)
        )

    def index(self, items: list[Prepared], part: str) -> Memory:
        """Index a haystack's sessions: part "raw" (the config's chunks) or "extract"."""
        from ..write.validate import SessionInput

        inputs = [SessionInput([m.__dict__ for m in p.messages], p.session_id, p.date, {}) for p in items]
        memory = self._memory(self.raw if part == "raw" else self.extract)
        memory.add_sessions(inputs, app=APP)
        return memory

    def parts(self) -> dict[str, int]:
        """The indexes this config reads ("raw", "extract"), keyed by the chunker that builds
        them: configs with the same chunker index a haystack identically and share one build."""
        out = {}
        if self.raw is not None:
            out["raw"] = id(self.raw)
        if self.extract is not None:
            out["extract"] = id(self.extract)
        return out

    def search_view(self, memory: Memory, part: str) -> Memory:
        """The shared build searched with this config's options (a derived Memory: the build
        is never mutated). The lab measures rankings: the floor is calibrated apart
        (benchmarks/floor.py) and is off unless the config sets one."""
        c = self.config
        return memory.derive(
            depth=c.depth, fusion=c.fusion, dense_weight=c.dense_weight, rrf_k=c.rrf_k, k1=c.k1, b=c.b, lexical_fusion=part == "extract" or c.channel != "dense",
            rerank_depth=c.rerank_depth, floor=c.floor, reranker=self._reranker if part == "raw" else None,
        )

    def _channel_hits(self, memory: Memory, query: str, now: str | None = None) -> list[Hit]:
        # The question's own date is "now" (a second stage may resolve "last Sunday" with it).
        previous = None
        if self._followup is not None:
            context, bare = self._followup(query)
            query, previous = bare, (context if self.config.followup == "previous" else None)
        hits = list(memory.search(query, app=APP, k=self.config.chunks_asked, now=now, previous=previous))
        if self.config.channel == "lexical":
            hits = sorted((h for h in hits if h.ranks.get("lexical")), key=lambda h: h.ranks["lexical"])
            for h in hits:
                h.score = h.scores["lexical"]
        return hits

    def _session_order(self, hits: list[Hit], n_chunks: dict[str, int]) -> list[str]:
        first: dict[str, int] = {}
        scores: dict[str, list[float]] = {}
        for i, h in enumerate(hits):
            first.setdefault(h.session_id, i)
            scores.setdefault(h.session_id, []).append(h.score)
        if self.config.aggregate == "max":
            return sorted(first, key=first.__getitem__)
        if self.config.aggregate != "mean3":
            raise ValueError(f"unknown aggregate {self.config.aggregate!r}; use max or mean3")
        mean3 = {
            sid: sum(sorted(v, reverse=True)[:3]) / max(1, min(3, n_chunks.get(sid, len(v))))
            for sid, v in scores.items()
        }
        return sorted(first, key=lambda s: (-mean3[s], first[s]))

    def _n_chunks(self, chunker: Callable[[Sequence[Message]], list[Chunk]], items: list[Prepared]) -> dict[str, int]:
        channel = self.config.channel
        out = {}
        for p in items:
            chunks = chunker(p.messages)
            if channel == "dense":
                out[p.session_id] = sum(c.dense for c in chunks)
            elif channel == "lexical":
                out[p.session_id] = sum(c.lexical for c in chunks)
            else:
                out[p.session_id] = len(chunks)
        return out

    @staticmethod
    def _turns(hits: list[Hit], roles: dict[str, list[str]]) -> list[tuple[str, int]]:
        seen: set[tuple[str, int]] = set()
        out: list[tuple[str, int]] = []
        for h in hits:
            assert h.session_id is not None and h.first_turn is not None and h.last_turn is not None
            for t in range(h.first_turn, h.last_turn + 1):
                if h.view == "user" and roles[h.session_id][t] != "user":
                    continue
                if (h.session_id, t) not in seen:
                    seen.add((h.session_id, t))
                    out.append((h.session_id, t))
        return out

    def ask(self, memories: dict[str, Memory], items: list[Prepared], question: Question,
            n_chunks: dict[str, dict[str, int]]) -> tuple[list[str], list[tuple[str, int]], int | None]:
        """(session ranking, ranked turns, rank of the first chunk holding an evidence turn)."""
        rankings: dict[str, list[str]] = {}
        turns: list[tuple[str, int]] = []
        chunk_rank = None
        roles = {p.session_id: [m.role for m in p.messages] for p in items}
        for name, memory in memories.items():
            hits = self._channel_hits(self.search_view(memory, name), question.text, question.date)
            rankings[name] = self._session_order(hits, n_chunks[name])
            if name == "raw":
                turns = self._turns(hits, roles)
                for i, h in enumerate(hits, start=1):
                    if any(h.first_turn <= t <= h.last_turn for t in question.evidence_turns.get(h.session_id, ())):
                        chunk_rank = i
                        break
        if len(rankings) == 2:
            ids = {sid: i for i, sid in enumerate(p.session_id for p in items)}
            back = {i: sid for sid, i in ids.items()}
            fused = rrf({n: [ids[s] for s in r] for n, r in rankings.items()}, self.config.rrf_k)
            ranked = [back[i] for i, _, _ in fused]
        else:
            ranked = next(iter(rankings.values()))
        return ranked, turns, chunk_rank

    # -- a whole run -----------------------------------------------------------------------

    def run(self, haystacks: list[Haystack], dataset: str) -> list[dict[str, Any]]:
        return run_many([self], haystacks, dataset)[self.config.name]

    def rows_for(self, hay: Haystack, items: list[Prepared], memories: dict[str, Memory],
                 index_ms: float) -> list[dict[str, Any]]:
        n_chunks = {"raw": self._n_chunks(self.raw, items) if self.raw else {},
                    "extract": {p.session_id: 1 for p in items}}
        order = [p.session_id for p in items]
        rows = []
        for q in hay.questions:
            t1 = time.perf_counter()
            ranked, turns, chunk_rank = self.ask(memories, items, q, n_chunks)
            query_ms = (time.perf_counter() - t1) * 1000
            reached = set(ranked)
            unranked = [s for s in order if s not in reached]
            ranked = ranked + unranked
            n = len(order)
            has_turns = any(q.evidence_turns.get(s) for s in q.gold)
            rows.append({
                "id": q.qid,
                "type": q.qtype,
                "unit": hay.unit,
                "config": self.config.name,
                "question": q.text,
                "abstention": q.abstention,
                "n_sessions": n,
                "ranked": ranked,
                "gold": q.gold,
                "gold_user": q.gold_user,
                "gold_dropped": q.gold_dropped,
                "metrics": session_metrics(ranked, q.gold, n),
                "metrics_user": session_metrics(ranked, q.gold_user, n) if q.gold_user else None,
                "turn": {
                    "has_evidence_turns": has_turns,
                    "first_evidence_turn_rank": first_rank(turns, q.evidence_turns) if has_turns else None,
                    "first_evidence_chunk_rank": chunk_rank,
                },
                "unranked": len(unranked),
                "index_ms": round(index_ms, 2),
                "query_ms": round(query_ms, 2),
                "peak_rss_mb": round(_peak_rss_mb(), 1),
            })
        return rows


def run_many(runners: list[Runner], haystacks: list[Haystack], dataset: str) -> dict[str, list[dict[str, Any]]]:
    """Run several configs over the same haystacks: each haystack is indexed once per distinct
    index (configs that differ only in search or session scoring share the build; its time is
    reported in each of their rows), then every config asks its questions."""
    from tqdm import tqdm

    if not runners:
        return {}
    prepared = runners[0].prepare(haystacks, embed=False)
    for runner in runners:
        runner.embed_missing(prepared)
    rows: dict[str, list[dict[str, Any]]] = {r.config.name: [] for r in runners}
    total = sum(len(h.questions) for h in haystacks) * len(runners)
    names = ",".join(r.config.name for r in runners)
    with tqdm(total=total, desc=f"{dataset} {names}"[:60], unit="q", disable=not runners[0].progress) as bar:
        for hay in haystacks:
            items = prepared[hay.unit]
            built: dict[int, tuple[Memory, float]] = {}
            for runner in runners:
                memories, index_ms = {}, 0.0
                for part, key in runner.parts().items():
                    if key not in built:
                        t0 = time.perf_counter()
                        memory = runner.index(items, part)
                        built[key] = (memory, (time.perf_counter() - t0) * 1000)
                    memories[part] = built[key][0]
                    index_ms += built[key][1]
                rows[runner.config.name] += runner.rows_for(hay, items, memories, index_ms)
                bar.update(len(hay.questions))
            for memory, _ in built.values():
                memory.close()  # the shared cache is a given object: it stays open
    return rows


LOADERS = {"longmemeval": load_longmemeval, "locomo": load_locomo}


def run_benchmarks(
    dataset: str,
    data: str | Path,
    configs: list[BenchConfig],
    outs: list[str | Path],
    *,
    limit: int | None = None,
    stride: int | None = None,
    embedder: str | Embedder = settings.EMBEDDER,
    cache_path: str | Path | None = DEFAULT_CACHE,
    progress: bool = True,
    threads: int | None = None,
) -> list[dict[str, Any]]:
    """Run configs over one file in one process (sharing chunking and index builds); one run
    folder per config. ``embedder``: a spec (``diarist bench --embedder``) or an ``Embedder``
    (an exploration's model: its ``embed_passages`` and ``embed_query`` are what the lab calls)."""
    import numpy
    from importlib.metadata import version as package_version  # importing onnxruntime starts its telemetry

    from .report import write_run

    started = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    version = code_version()  # before the run: the code that ran
    t0 = time.perf_counter()
    haystacks = LOADERS[dataset](str(data), limit, stride)
    runners: list[Runner] = []
    for config in configs:
        runner = Runner(config, embedder if not runners else runners[0].embedder, cache_path, progress, threads)
        runners.append(runner)
    for runner in runners:  # BM25 alone ranks the same over a build that also holds vectors
        if runner.config.channel == "lexical" and runner.raw is not None:
            twin = next((r for r in runners if r.raw is not None and not r.raw.lexical_only
                         and (r.raw.view, r.raw.doc) == (runner.raw.view, runner.raw.doc)), None)
            if twin is not None:
                runner.raw = twin.raw
    try:
        all_rows = run_many(runners, haystacks, dataset)
    finally:
        for runner in runners:
            runner.close()
    sha = _sha256(data)
    summaries = []
    for runner, out in zip(runners, outs):
        config = runner.config
        meta = {
            "dataset": dataset,
            "config_name": config.name,
            "description": config.description,
            "config": config.to_dict(),
            "embedder": embedder if isinstance(embedder, str) else runner.embedder.model_id,
            "model_id": runner.embedder.model_id,
            "dim": runner.embedder.dim,
            "window_tokens": runner.embedder.window,
            "data_file": str(data),
            "data_sha256": sha,
            "limit": limit,
            "stride": stride,
            "n_haystacks": len(haystacks),
            "code_version": version,
            "lexical_version": lexical.VERSION,  # the analyzer (3: stemmed terms)
            "pystemmer": package_version("PyStemmer"),
            "python": platform.python_version(),
            "numpy": numpy.__version__,
            "onnxruntime": package_version("onnxruntime"),
            "cache": str(cache_path) if cache_path else None,
            "embedded_this_run": runner.embedded,
            "threads": threads,
            "run_with": [c.name for c in configs],
            "started_at": started,
            "wall_s": round(time.perf_counter() - t0, 1),
            "command": " ".join(
                ["diarist bench", dataset, "--data", str(data), "--config", config.name, "--out", str(out)]
                + (["--limit", str(limit)] if limit else []) + (["--stride", str(stride)] if stride else [])
                + (["--embedder", embedder] if isinstance(embedder, str) and embedder != settings.EMBEDDER else [])
            ),
        }
        summaries.append(write_run(Path(out), all_rows[config.name], meta))
    return summaries
