"""Health checks that check the real thing: a probe is embedded and must be found again."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .embed.base import quantize
from .memory import Memory
from .store.sqlite import SQLiteStore

PROBE_TEXT = "vestige health probe: the quartz lighthouse keeper feeds seventeen herons"
PROBE_QUERY = "quartz lighthouse herons"


@dataclass
class HealthReport:
    ok: bool = True
    lines: list[str] = field(default_factory=list)
    channels: dict[str, dict] = field(default_factory=dict)

    def add(self, ok: bool, line: str) -> None:
        self.ok &= ok
        self.lines.append(("ok    " if ok else "FAIL  ") + line)


def probe_channels(memory: Memory) -> dict[str, dict]:
    """Index the probe in a scratch in-memory store with this embedder; find it per channel."""
    scratch = Memory(SQLiteStore(":memory:"), embedder=memory.embedder)
    out: dict[str, dict] = {}
    try:
        start = time.perf_counter()
        scratch.add_fact("an unrelated note about tomato soup", app="probe")
        scratch.add_fact(PROBE_TEXT, app="probe", fact_id="probe")
        out["embed"] = {"ok": True, "ms": round((time.perf_counter() - start) * 1000, 1)}
        query = quantize(memory.embedder.embed([PROBE_QUERY])).astype("float32") / 127
        for channel, run in (
            ("dense", lambda: scratch.store.dense_search("probe", query, 2)),
            ("lexical", lambda: scratch.store.lexical_search("probe", ["quartz", "lighthouse"], 2, 1.5, 0.75)),
        ):
            start = time.perf_counter()
            found = run()
            rows = scratch.store.fetch_chunks("probe", [cid for cid, _ in found[:1]])
            ok = bool(rows) and next(iter(rows.values())).fact_id == "probe"
            out[channel] = {"ok": ok, "ms": round((time.perf_counter() - start) * 1000, 2)}
    except Exception as exc:  # a health check reports failures, it does not raise them
        out.setdefault("embed", {"ok": False, "error": str(exc)})
        out["error"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        scratch.store.close()
    return out


def check(memory: Memory) -> HealthReport:
    report = HealthReport()
    report.add(True, f"database {getattr(memory.store, 'path', '?')} opened (schema current)")
    report.add(True, f"embedder {memory.embedder.model_id} ({memory.embedder.dim}-d) loaded")
    report.channels = probe_channels(memory)
    for name, result in report.channels.items():
        detail = f"{result['ms']} ms" if "ms" in result else result.get("error", "")
        report.add(result["ok"], f"probe {name}: {detail}")
    for app in memory.apps():
        reason = memory.store.lexical_status(app)
        if reason:
            report.add(False, f"app {app!r}: lexical channel falls back to vectors: {reason}")
        else:
            stats = memory.store.stats(app)["apps"][app]
            report.add(True, f"app {app!r}: {stats['sessions']} sessions, {stats['chunks']} chunks, lexical index complete")
    return report
