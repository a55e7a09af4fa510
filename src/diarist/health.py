"""Health checks that check the real thing: a probe is embedded and must be found again.

Two checks, each per channel with its latency:

* **probe**: a known sentence and a decoy are embedded with the configured embedder, indexed in
  a scratch in-memory store, and the probe must come back first through the dense channel and
  through the lexical channel. This fails when the embedder raises, returns garbage (NaN,
  constant or random vectors) or the ranking code is broken.
* **index**: for each app in the real database, its most recent chunk is read back and
  re-embedded: the stored vector must agree with the embedder (a swapped or drifted model
  fails). ``diarist doctor`` (``deep``) then searches for it in the app's own index: the dense
  channel must return the chunk, and the lexical channel must return it for its own words
  (missing or corrupt postings fail even when the index's counters look right), and checks the
  graph's recall. ``/health`` searches nothing, so that its cost is the same at any size: the
  lexical index must be complete and current and hold the chunk's postings (one block read per
  word, up to ``POSTING_TERMS``). Nothing is written to the database.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from . import lexical
from .embed.base import dequantize, quantize
from .lexical import bm25, postings
from .checks import require_app
from .errors import UnknownApp
from .store.base import LexicalUnavailable, Store
from .store.open import open_store
from .vectors import exact, int8_scan

if TYPE_CHECKING:
    from .embed import Embedder
    from .lexical import LexicalChannel
    from .read.search import SearchSettings
    from .vectors import DenseIndex
    from .write.plan import IndexPlan

PROBE_TEXT = "diarist health probe: the quartz lighthouse keeper feeds seventeen herons"
PROBE_QUERY = "quartz lighthouse herons"
DECOY_TEXT = "an unrelated note about tomato soup"
AGREEMENT = 0.9  # minimum cosine between a stored vector and its text re-embedded now
TOP = 10  # the sampled chunk (or an identical text) must be among the top TOP of each channel


class Memory(Protocol):
    """What the checks read of ``diarist.memory.Memory`` (named here, not imported: ``Memory.health``
    imports this module, and hands it the store)."""

    embedder: Embedder
    dense: DenseIndex
    lexical: LexicalChannel
    settings: SearchSettings
    plan: IndexPlan

    def apps(self) -> list[str]: ...

    def add_fact(self, text: str, *, app: str, fact_id: str) -> str: ...

    def delete_app(self, app: str) -> None: ...

    def close(self) -> None: ...


@dataclass
class HealthReport:
    ok: bool = True
    lines: list[str] = field(default_factory=list)
    channels: dict[str, dict] = field(default_factory=dict)
    apps: dict[str, dict] = field(default_factory=dict)

    def add(self, ok: bool, line: str) -> None:
        self.ok &= ok
        self.lines.append(("ok    " if ok else "FAIL  ") + line)

    def to_dict(self, *, app_names: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "status": "ok" if self.ok else "failing", "probe": self.channels}
        if app_names:
            out["apps"] = self.apps
        else:
            out["apps_checked"] = len(self.apps)
            out["apps_failing"] = sum(not a["ok"] for a in self.apps.values())
        return out


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def _embed_checked(memory: Memory, texts: list[str]) -> np.ndarray:
    vectors = np.asarray(memory.embedder.embed(texts), dtype=np.float32)
    if vectors.shape != (len(texts), memory.embedder.dim):
        raise ValueError(f"embedder returned shape {vectors.shape}, expected ({len(texts)}, {memory.embedder.dim})")
    if not np.isfinite(vectors).all():
        raise ValueError("embedder returned non-finite values")
    return vectors


#: The probe's scratch memories by embedder, kept (with the embedder, so that its id is not reused,
#: and their store) across checks: opening and migrating a new one was most of /health's time.
_SCRATCH: dict[int, tuple[Any, Memory, Store]] = {}
_SCRATCH_LOCK = threading.Lock()


def _scratch(memory: Memory) -> tuple[Memory, Store]:
    """An empty scratch memory for this embedder (its probe app deleted since the last check), of
    the memory's own class, and its store."""
    with _SCRATCH_LOCK:
        held = _SCRATCH.pop(id(memory.embedder), None)  # taken: a concurrent check opens its own
    if held is not None and held[0] is memory.embedder:
        try:
            if "probe" in held[1].apps():
                held[1].delete_app("probe")
            return held[1], held[2]
        except Exception:  # noqa: BLE001 - a scratch store that fails is replaced, not reported
            held[1].close()
    store = open_store(":memory:")
    return type(memory)(store, embedder=memory.embedder), store


def _give_back(memory: Memory, scratch: Memory, store: Store) -> None:
    with _SCRATCH_LOCK:
        if len(_SCRATCH) < 4 and id(memory.embedder) not in _SCRATCH:
            _SCRATCH[id(memory.embedder)] = (memory.embedder, scratch, store)
            return
    scratch.close()


def probe_channels(memory: Memory) -> dict[str, dict]:
    """Index the probe in a scratch in-memory store with this embedder; find it per channel."""
    scratch, store = _scratch(memory)
    out: dict[str, dict] = {}
    try:
        start = time.perf_counter()
        _embed_checked(memory, [DECOY_TEXT, PROBE_TEXT])
        scratch.add_fact(DECOY_TEXT, app="probe", fact_id="decoy")
        scratch.add_fact(PROBE_TEXT, app="probe", fact_id="probe")
        query = _embed_checked(memory, [PROBE_QUERY])
        out["embed"] = {"ok": True, "ms": _ms(start)}
        for channel, run in (
            ("dense", lambda: scratch.dense.search("probe", query, 2)),
            ("lexical", lambda: scratch.lexical.search("probe", lexical.analyze(PROBE_QUERY), 2)),
        ):
            start = time.perf_counter()
            try:
                found = run()
                rows = store.fetch_chunks("probe", [cid for cid, _ in found[:1]])
                first = next(iter(rows.values())).fact_id if rows else None
                # A broken embedder (constant vectors, say) ties everything: the decoy, stored
                # first, wins the tie, so the probe must outrank it on its merits.
                tied = len(found) > 1 and math.isclose(found[0][1], found[1][1])
                ok = first == "probe" and not tied
                result: dict[str, Any] = {"ok": ok, "ms": _ms(start)}
                if not ok:
                    result["error"] = "the probe was not found first" + (" (scores tied)" if tied else "")
            except Exception as exc:
                result = {"ok": False, "ms": _ms(start), "error": f"{type(exc).__name__}: {exc}"}
            out[channel] = result
    except Exception as exc:  # a health check reports failures, it does not raise them
        out["embed"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        for channel in ("dense", "lexical"):
            out.setdefault(channel, {"ok": False, "error": "not run: embedding failed"})
    finally:
        _give_back(memory, scratch, store)
    return out


def _found(store: Store, app: str, ranking: list[tuple[int, float]], chunk_id: int, text: str) -> int | None:
    """1-based rank of the chunk (or of a chunk with the very same text) in a ranking."""
    ids = [cid for cid, _ in ranking[:TOP]]
    if chunk_id in ids:
        return ids.index(chunk_id) + 1
    rows = store.fetch_chunks(app, ids)
    for rank, cid in enumerate(ids, 1):
        if cid in rows and rows[cid].text == text:
            return rank
    return None


#: How deep the lexical check looks for a sampled chunk not in the top TOP for its own words.
LEXICAL_DEPTH = 1000
RECALL_SAMPLES = 5  # doctor's graph recall check: each sample is one exact scan of the app
RECHECKS = 3  # a writer that replaced the sampled chunk meanwhile is no failure: sample again


#: /health checks the postings of at most this many of the sample's terms (one block read each).
POSTING_TERMS = 8


def check_app_index(memory: Memory, store: Store, app: str, *, deep: bool = True) -> dict[str, Any]:
    """Retrieve the app's most recent chunk from the real index, through each channel (``deep``,
    doctor), or check in a bounded number of reads that the index holds it (/health).

    A failure while the app's version moved (another writer replaced or deleted the sampled
    chunk during the check) is not the index's fault: the check runs again on a new sample.
    """
    for _ in range(RECHECKS):
        before = store.app_version(app)
        out = _check_sample(memory, store, app) if deep else _check_sample_held(memory, store, app)
        if out["ok"] or store.app_version(app) == before:
            return out
    # Every sample was changed under the check: no evidence against the index. Reported as not
    # judged, not as failing: under steady churn it answered 503 in 12 of 24 checks, all false.
    return {"ok": True, "note": f"the app changed during each of {RECHECKS} checks; not judged this time",
            "unjudged": out}


def _agreement(memory: Memory, sample: Any) -> tuple[float, np.ndarray]:
    """Cosine between the sample's stored vector and its text embedded now, and that vector."""
    text = sample.embed_text if sample.embed_text is not None else sample.text
    vector = _embed_checked(memory, [text])
    stored = dequantize(sample.vector.reshape(1, -1))
    if stored.shape[1] != vector.shape[1]:
        raise ValueError(f"stored vectors have {stored.shape[1]} dimensions, the embedder {vector.shape[1]}")
    return float((stored @ (quantize(vector).astype(np.float32) / 127).T).ravel()[0]), vector


def _has_posting(store: Store, app: str, term: str, chunk_id: int) -> bool:
    """Whether the lexical index holds ``term`` for the chunk: one block read where the backend
    offers it (``Store.read_posting_block``)."""
    block, offset = postings.block_of(chunk_id)
    data = store.read_posting_block(app, term, block)
    return data is not None and offset in postings.unpack(data)[:, 0]


def _check_sample_held(memory: Memory, store: Store, app: str) -> dict[str, Any]:
    """/health's check of the app's newest chunk, its cost the same at any size: its stored vector
    agrees with the embedder, the lexical index is complete and current, and it holds the
    chunk's postings (one block read per term). No search, no graph: those are doctor's."""
    out: dict[str, Any] = {"ok": True}
    sample = store.sample_chunk(app)
    if sample is None:
        return {"ok": True, "note": "empty"}
    if sample.vector is not None:
        start = time.perf_counter()
        try:
            agreement, _ = _agreement(memory, sample)
            out["dense"] = {"ok": agreement >= AGREEMENT, "ms": _ms(start), "agreement": round(agreement, 3)}
            if agreement < AGREEMENT:
                out["dense"]["error"] = f"stored vector disagrees with the embedder (cosine {agreement:.2f})"
        except Exception as exc:
            out["dense"] = {"ok": False, "ms": _ms(start), "error": f"{type(exc).__name__}: {exc}"}
    terms = (list(dict.fromkeys(lexical.analyze(sample.text, language=sample.language)))[:POSTING_TERMS]
             if sample.lexical else [])
    if sample.lexical:
        start = time.perf_counter()
        try:
            reason = memory.lexical.status(app)
            missing = [t for t in terms if not _has_posting(store, app, t, sample.chunk_id)]
            error = reason or (f"chunk {sample.chunk_id} has no posting for {', '.join(missing)}" if missing else None)
            out["lexical"] = {"ok": error is None, "ms": _ms(start), "terms": len(terms)}
            if error:
                out["lexical"]["error"] = error
        except Exception as exc:
            out["lexical"] = {"ok": False, "ms": _ms(start), "error": f"{type(exc).__name__}: {exc}"}
    out["ok"] = all(v["ok"] for k, v in out.items() if isinstance(v, dict))
    return out


def _check_sample(memory: Memory, store: Store, app: str) -> dict[str, Any]:
    out: dict[str, Any] = {"ok": True}
    sample = store.sample_chunk(app)
    if sample is None:
        return {"ok": True, "note": "empty"}
    chunk_id, text, language = sample.chunk_id, sample.text, sample.language
    if sample.vector is not None:
        start = time.perf_counter()
        try:
            agreement, vector = _agreement(memory, sample)
            rank = _found(store, app, memory.dense.search(app, vector, TOP), chunk_id, text)
            ok = rank is not None and agreement >= AGREEMENT
            out["dense"] = {"ok": ok, "ms": _ms(start), "rank": rank, "agreement": round(agreement, 3)}
            if not ok:
                out["dense"]["error"] = (
                    f"stored vector disagrees with the embedder (cosine {agreement:.2f})"
                    if agreement < AGREEMENT else f"chunk {chunk_id} not in the dense top {TOP} for its own text"
                )
        except Exception as exc:
            out["dense"] = {"ok": False, "ms": _ms(start), "error": f"{type(exc).__name__}: {exc}"}
    if sample.lexical and not lexical.analyze(text, language=language):
        # nothing in it BM25 could look for ("😀 ¿", a chunk of stopwords): no lexical check
        out["lexical"] = {"ok": True, "note": "the sampled chunk has no index term"}
    elif sample.lexical:
        start = time.perf_counter()
        try:
            terms = lexical.analyze(text, language=language)
            ranking = memory.lexical.search(app, terms, TOP, memory.settings.k1, memory.settings.b)
            rank = _found(store, app, ranking, chunk_id, text)
            if rank is None:
                # Low-vocabulary text: shorter chunks of the same words rightly outrank it (BM25's
                # length norm). A chunk whose postings are really missing is found at no depth.
                deep = memory.lexical.search(app, terms, LEXICAL_DEPTH, memory.settings.k1, memory.settings.b)
                ids = [cid for cid, _ in deep]
                rank = ids.index(chunk_id) + 1 if chunk_id in ids else None
            out["lexical"] = {"ok": rank is not None, "ms": _ms(start), "rank": rank}
            if rank is None:
                out["lexical"]["error"] = f"chunk {chunk_id} not in the lexical top {LEXICAL_DEPTH} for its own words"
        except LexicalUnavailable as exc:
            out["lexical"] = {"ok": False, "ms": _ms(start), "error": f"falls back to vectors: {exc}"}
        except Exception as exc:
            out["lexical"] = {"ok": False, "ms": _ms(start), "error": f"{type(exc).__name__}: {exc}"}
    out["ok"] = all(v["ok"] for k, v in out.items() if isinstance(v, dict))
    return out


def check(memory: Memory, store: Store, apps: list[str] | None = None, *, deep: bool = True) -> HealthReport:
    """Probe the embedder and both channels, then self-check each app's real index.

    ``apps`` limits the index check (None: every app). ``deep`` (``diarist doctor``) searches
    each app's index for its newest chunk and adds the HNSW graph's recall against the exact
    scan, which reads the app's whole matrix (88-108 s at 1M chunks before it was bounded):
    ``/health`` runs without them (``check_app_index(deep=False)``), so that its cost does not
    grow with the size of an app and no client can keep a server's cores busy with it.
    """
    report = HealthReport()
    report.add(True, f"database {store.location} opened (schema current)")
    pages, compacted = store.page_size(), store.compacted_page_size()
    if pages and compacted and pages < compacted and store.size_bytes() is not None:
        report.add(True, f"database pages of {pages} bytes, as earlier versions wrote them: `diarist compact` "
                         f"rewrites the file in {compacted}-byte pages (smaller, faster to search; it needs "
                         "the file to itself)")
    found = store.unknown_schema_objects()  # None: the backend does not check (SQLite does)
    if found is not None:
        report.add(not found, f"schema objects diarist did not create: {', '.join(found)}" if found
                   else "no schema object diarist did not create")
    report.add(True, f"embedder {memory.embedder.model_id} ({memory.embedder.dim}-d) loaded")
    built = store.get_meta("embedder")
    report.add(True, f"database built with embedding model {built}" if built
               else "database built with no embedding model yet (the first write records it)")
    report.add(True, f"exact dense scan of apps over {exact.FULL_SCAN_MAX:,} chunks: {int8_scan.describe()}")
    report.add(True, f"BM25 scoring: {bm25.describe()}")
    report.channels = probe_channels(memory)
    for name, result in report.channels.items():
        detail = f"{result['ms']} ms" if "ms" in result else ""
        if result.get("error"):
            detail = f"{detail} {result['error']}".strip()
        report.add(result["ok"], f"probe {name}: {detail}")
    names = memory.apps() if apps is None else [a for a in apps if a in memory.apps()]
    for app in names:
        result = check_app_index(memory, store, app, deep=deep)
        report.apps[app] = result
        parts = []
        for channel in ("dense", "lexical"):
            if channel in result:
                r = result[channel]
                held = f"rank {r['rank']}" if "rank" in r else "held"
                shown = (r.get("note") or f"{held} in {r['ms']} ms") if r["ok"] else r.get("error", "failed")
                parts.append(f"{channel} {shown}")
        # The counts scan the app's rows (linear in its size): doctor shows them, /health not.
        counts = store.counts(app) if deep else None
        summary = (f"{counts.sessions} sessions, {counts.facts} facts, {counts.chunks} chunks"
                   if counts else "empty" if deep else "counts not taken")
        report.add(result["ok"], f"app {app!r}: {summary}; " + ("; ".join(parts) or result.get("note", "")))
        if deep:
            _languages(memory, store, app, report)
            _stored_lines(store, app, report)
            _check_dense_index(memory, app, report)
    return report


def _stored_lines(store: Store, app: str, report: HealthReport) -> None:
    """Chunks stored before the lines' vectors were (or by a memory opened with
    ``store_lines=False``) make every block that shows them embed their lines at query time: the
    slow first answers a hook would give are named, with the command that ends them."""
    if store.chunks_without_lines(app, 0, 1):
        report.add(True, f"app {app!r}: some chunks have no stored line vectors, so a block that shows them "
                         f"embeds their lines when asked (slower answers): `diarist reindex --app {app}` stores them")


#: An app whose chunks are mostly (over this share) not English is told of the multilingual model.
MOSTLY_NOT_ENGLISH = 0.5


def _languages(memory: Memory, store: Store, app: str, report: HealthReport) -> None:
    """The languages the app's chunks were analysed in; chunks stored before languages were
    recorded (analysed as English) wait for ``diarist reindex``; a mostly non-English app on the
    English model is told of the multilingual one."""
    counts = store.language_counts(app)
    total = sum(counts.values())
    if not total:
        return
    unknown = counts.pop(None, 0)
    shares = ", ".join(f"{lang} {n / total:.0%}" for lang, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5])
    report.add(True, f"app {app!r}: chunk languages {shares or 'none recorded'}")
    if unknown:
        report.add(True, f"app {app!r}: {unknown} chunks stored before languages were recorded are analysed as "
                         f"English: `diarist reindex --app {app}` detects their languages")
    other = sum(n for lang, n in counts.items() if lang != "en")
    if other > MOSTLY_NOT_ENGLISH * total:
        from .reembed import switch_advice  # the re-embedding machinery, loaded only when advised

        if advice := switch_advice(memory.location, memory.embedder.model_id):
            report.add(True, f"app {app!r}: {advice}")


def _check_dense_index(memory: Memory, app: str, report: HealthReport) -> None:
    """The app's HNSW graph, when one serves it: its size, and its recall against exact."""
    try:
        info = memory.dense.state(app)
        if info is None:  # no graph: the exact scan serves every app
            return
        recall = memory.dense.recall(app, samples=RECALL_SAMPLES)
    except Exception as exc:  # a health check reports failures, it does not raise them
        report.add(False, f"app {app!r}: dense index failed: {type(exc).__name__}: {exc}")
        return
    if recall is None:
        report.add(True, f"app {app!r}: dense index exact scan (hnsw from {info['min_vectors']:,} chunks)")
        return
    report.add(recall >= 0.9, f"app {app!r}: dense index hnsw, {info['vectors']:,} vectors"
               f"{', persisted' if info['persisted'] else ''}; recall@50 {recall:.3f} against exact on {RECALL_SAMPLES} samples")


def app_stats(memory: Memory, store: Store, app: str) -> dict[str, Any]:
    """``Memory.app_stats``: counts of one app's items and chunks, and the state of its lexical index."""
    counts = store.counts(app)
    if counts is None:
        raise UnknownApp(f"app {app!r} holds no memory")
    titles = "indexed" if store.titles_indexed(app) else "stored before titles were indexed (run: diarist reindex)"
    return {**counts.__dict__, "lexical_index": memory.lexical.status(app) or "complete", "titles": titles}


def stats(memory: Memory, store: Store, app: str | None) -> dict[str, Any]:
    """``Memory.stats``: the store's location and size, the embedder, the plan, and each app's counts."""
    if app is not None:
        require_app(store, app)
    names = [app] if app is not None else store.apps()
    out: dict[str, Any] = {"path": store.location, "apps": {n: app_stats(memory, store, n) for n in names}}
    size = store.size_bytes()
    if size is not None:
        out["file_bytes"] = size
    out["embedder"] = memory.embedder.model_id
    out["index_plan"] = memory.plan.name
    return out
