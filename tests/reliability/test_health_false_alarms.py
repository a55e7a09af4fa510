"""``/health`` and ``diarist doctor`` without false alarms (issue 31, item 7), and still
catching a really broken index.

Before: under concurrent replace/delete ``/health`` answered 503 in 12 of 24 checks on SQLite
and 26 of 62 on PostgreSQL with no data wrong (each of its 3 samples was replaced under it), and
doctor failed a healthy low-vocabulary app ("lexical chunk N not in the lexical top 10 for its
own words": shorter chunks of the same words rightly outrank it).
"""

from __future__ import annotations

import sqlite3

import pytest

import pg_server as pg_module
from diarist.health import RECHECKS, check_app_index
from diarist.memory import Memory


def _low_vocabulary(memory: Memory) -> None:
    for i in range(50):
        memory.add_fact("garden river", app="k", fact_id=f"f{i}")
    # the newest chunk (the sample): the same two words, longer, so 50 chunks outrank it
    memory.add_fact("garden garden garden garden garden garden river", app="k", fact_id="last")


def test_a_healthy_low_vocabulary_app_passes(tmp_path):
    with Memory(tmp_path / "m.sqlite", embedder="hash") as memory:
        _low_vocabulary(memory)
        report = memory.health(["k"])
        assert report.ok, [line for line in report.lines if line.startswith("FAIL")]
        assert report.apps["k"]["lexical"]["rank"] > 10


def test_a_broken_low_vocabulary_index_still_fails(tmp_path):
    db = tmp_path / "m.sqlite"
    with Memory(db, embedder="hash") as memory:
        _low_vocabulary(memory)
    with sqlite3.connect(db) as conn:  # the postings lost, the counters intact
        conn.execute("DELETE FROM lex_postings")
    with Memory(db, embedder="hash") as memory:
        report = memory.health(["k"])
    assert not report.ok and not report.apps["k"]["lexical"]["ok"]
    assert "not in the lexical top" in report.apps["k"]["lexical"]["error"]


@pytest.fixture(params=["sqlite", "postgres"])
def location(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "m.sqlite")
    pg_module.require()
    return request.getfixturevalue("pg_server").new_url("health")


def test_a_sample_replaced_under_every_recheck_is_not_judged_a_failure(location):
    """Steady churn: another writer replaces the sampled session right after each sample is
    read, every time. The index is sound: no failure (the check says it could not judge)."""
    memory = Memory(location, embedder="hash")
    memory.add_session([{"role": "user", "content": "the quartz lighthouse keeper"}], app="a", session_id="s1")
    real_sample = memory.store.sample_chunk
    replaced = []

    def sample_then_another_writer_replaces(app):
        found = real_sample(app)
        with Memory(location, embedder="hash") as other:
            other.add_session([{"role": "user", "content": f"new words number {len(replaced)} about soup"}],
                              app="a", session_id="s1")
        replaced.append(True)
        return found

    memory.store.sample_chunk = sample_then_another_writer_replaces
    result = check_app_index(memory, memory.store, "a")
    assert len(replaced) == RECHECKS and result["ok"], result
    assert "not judged" in result["note"]
    memory.store.sample_chunk = real_sample
    assert memory.health(["a"]).ok  # once the writer stops, judged again, and sound
    memory.close()
