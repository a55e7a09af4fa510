"""Shared fixtures for the test suite: real SQLite files in tmp_path, real data from ../shared/data.

The benchmark data is optional: a fresh clone has no ../shared, and every test that reads it
skips with a one-line reason then (``data_file``, ``needs_data``). DIARIST_SHARED_DATA names
another folder; pointing it at a missing one hides the data (how .ci/run checks the skips).

The hash embedder (deterministic, no semantics) stands in for the model everywhere except the
tests marked ``model``, which load the real default embedder.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

# The tests sit in one folder per part (store, read, write, importers, serving, ui, lab,
# reliability) and import their helpers by name from support/, a few another part's test module
# (test_ui's login, test_forgetting's scan): every folder is on the import path.
TESTS = Path(__file__).resolve().parent
for _folder in sorted(p for p in TESTS.iterdir() if p.is_dir() and p.name not in ("data", "__pycache__")):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

# onnxruntime before anything imports usearch (test_hnsw does, at collection): the other order
# crashes the process (see diarist.vectors.hnsw). onnx_minilm sets ORT_DISABLE_TELEMETRY first.
import diarist.embed.onnx_minilm  # noqa: F401,E402
import onnxruntime  # noqa: F401,E402,I001

from diarist.embed import get_embedder
from diarist.memory import Memory

from pg_server import pg_server  # noqa: F401  (a real PostgreSQL server, session-scoped)

#: ../shared/data beside the project checkout (CI has the same copy there), or DIARIST_SHARED_DATA.
DATA_DIR = Path(os.environ.get("DIARIST_SHARED_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data")
LOCOMO_PATH = DATA_DIR / "locomo_dev.json.gz"
LONGMEMEVAL_PATH = DATA_DIR / "longmemeval_s_dev.json.gz"


def missing_data(*paths: Path) -> str | None:
    """Why a test that reads these benchmark files cannot run, or None when they are all there."""
    absent = [p.name for p in paths if not p.exists()]
    if not absent:
        return None
    return f"benchmark data not found: {', '.join(absent)} in {DATA_DIR} (../shared/data beside the checkout)"


def needs_data(*paths: Path) -> pytest.MarkDecorator:
    """Skip the test (one line, saying which file) unless every one of these benchmark files exists."""
    reason = missing_data(*paths)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def data_file(path: Path) -> Path:
    """This benchmark file, or skip the calling test with the reason."""
    reason = missing_data(path)
    if reason:
        pytest.skip(reason)
    return path

_locomo_cache: list[dict[str, Any]] | None = None


def load_locomo() -> list[dict[str, Any]]:
    """The LoCoMo dev conversations, or skip the test with the reason."""
    global _locomo_cache
    if _locomo_cache is None:
        with gzip.open(data_file(LOCOMO_PATH), "rt", encoding="utf-8") as f:
            _locomo_cache = json.load(f)
    return _locomo_cache


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--heavy", action="store_true", default=False,
                     help="Also run the heavy reliability loops (minutes; their figures are in RELIABILITY.md).")
    parser.addoption("--update-docs", action="store_true", default=False,
                     help="tests/test_docs.py: rewrite the outputs README.md and docs/ show with what the commands print now.")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--heavy"):
        return
    skip = pytest.mark.skip(reason="heavy loop: run with --heavy (figures in RELIABILITY.md)")
    for item in items:
        if "heavy" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def locomo() -> list[dict[str, Any]]:
    return load_locomo()


@pytest.fixture(scope="session")
def hash_embedder():
    return get_embedder("hash")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite"


@pytest.fixture
def memory(db_path: Path):
    """A fresh on-disk memory with the deterministic hash embedder."""
    mem = Memory(db_path, embedder="hash")
    yield mem
    mem.close()


# -- synthetic but deterministic conversation text --------------------------------------------

WORDS = (
    "garden river lantern violin harbor meadow copper falcon pepper orchard canyon marble "
    "thunder willow saddle compass velvet ember glacier tulip cobalt anchor biscuit quiver "
    "summit tavern juniper plaza ribbon hazel walnut prairie beacon cedar dune echo fable "
    "grove ivory jasper kettle lilac mosaic nectar oasis pebble quartz raven sorrel timber "
    "umber vessel wharf yarrow zephyr"
).split()


def sentence(rng: random.Random, n: int | None = None) -> str:
    n = n or rng.randint(5, 14)
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def make_sessions(n: int, seed: int = 0, prefix: str = "s", turns: int = 4) -> list[dict[str, Any]]:
    """n sessions of alternating user/assistant turns, as the API takes them."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        messages = [
            {"role": "user" if t % 2 == 0 else "assistant", "content": " ".join(sentence(rng) for _ in range(rng.randint(1, 4)))}
            for t in range(turns)
        ]
        out.append({"session_id": f"{prefix}{i}", "date": f"2024-03-{1 + i % 28:02d}T10:00:00", "messages": messages})
    return out


def add_all(mem: Memory, sessions: list[dict[str, Any]], app: str = "default") -> None:
    from diarist.write.validate import SessionInput

    mem.add_sessions([SessionInput(s["messages"], s["session_id"], s.get("date"), s.get("metadata", {})) for s in sessions], app=app)


def db_dump(path: Path) -> list[str]:
    """Every row of the database as SQL text: equal dumps mean an unchanged database."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def chunk_keys(mem: Memory, app: str) -> dict[int, tuple]:
    """chunk id -> (session or fact id, view, position): stable names across databases."""
    conn = sqlite3.connect(mem.store.path)
    try:
        rows = conn.execute(
            "SELECT c.id, coalesce(s.external_id, 'fact:' || f.external_id), c.view, c.position "
            "FROM chunks c JOIN apps a ON a.id = c.app_id "
            "LEFT JOIN sessions s ON s.id = c.session_id LEFT JOIN facts f ON f.id = c.fact_id "
            "WHERE a.name = ?",
            (app,),
        ).fetchall()
    finally:
        conn.close()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def first_per_memory(mem: Memory, app: str, ranked: list) -> list:
    """The entries of a chunk ranking (each led by its chunk id) that open a memory (session or
    fact): the ranking as search groups it, each memory at its best chunk."""
    rows = mem.store.fetch_chunks(app, [entry[0] for entry in ranked])
    seen, out = set(), []
    for entry in ranked:
        row = rows[entry[0]]
        if (row.fact_id, row.session_id) not in seen:
            seen.add((row.fact_id, row.session_id))
            out.append(entry)
    return out
