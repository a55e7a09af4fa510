"""The sentence vectors' migration (SQLite 14, PostgreSQL 10) on a database stored before it: the
app that held chunks waits for ``reindex`` and reads exactly as before meanwhile; reindex stores
its short memories' sentences, and a later search reads them."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from diarist.memory import Memory

JOB = ("I work as a data analyst at Rota Freight, a logistics company. Can you suggest a clean way to show "
       "on-time delivery rates by depot in one chart?")
OTHER = "My bike's rear brake squeaks when it rains. How can I fix it myself?"


def _execute(url: str, *statements: str) -> list[tuple]:
    if url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            out = []
            for sql in statements:
                cur = conn.execute(sql)
                out = cur.fetchall() if cur.description else []
            return out
    conn = sqlite3.connect(url)
    try:
        out = []
        for sql in statements:
            out = conn.execute(sql).fetchall()
        conn.commit()
        return out
    finally:
        conn.close()


def _as_before(url: str) -> None:
    """The schema as the release before the sentence vectors left it."""
    if url.startswith("postgresql"):
        _execute(url, "DROP TABLE sentence_vectors", "ALTER TABLE apps DROP COLUMN sentences_indexed",
                 "DELETE FROM diarist_schema WHERE version > 9")
    else:
        _execute(url, "DROP TABLE sentence_vectors", "ALTER TABLE apps DROP COLUMN sentences_indexed",
                 "PRAGMA user_version = 13")


def _ranked(memory: Memory) -> list[tuple[str, float]]:
    memory.settings = replace(memory.settings, sentence_weight=1.0)  # the hash embedder's own weight is 0
    return [(h.id, h.score) for h in memory.search("Where do I work?", app="me", k=5)]


def _stored_before_then_reindexed(url: str) -> None:
    with Memory(url, embedder="hash") as memory:
        memory.add_session([{"role": "user", "content": JOB}], session_id="job", date="2025-01-02", app="me")
        memory.add_session([{"role": "user", "content": OTHER}], session_id="bike", date="2025-01-03", app="me")
        with_them = _ranked(memory)
        memory.store.drop_sentence_vectors()
        without = _ranked(memory)
        assert without != with_them
    _as_before(url)
    with Memory(url, embedder="hash") as memory:  # migrates
        assert not memory.store.sentences_indexed("me")
        assert memory.store.sentence_vectors("me", list(range(1, 10))) == {}
        assert _ranked(memory) == without
        memory.add_fact("The user drives a grey Skoda. It is old.", fact_id="car", app="me")  # stored with its own
        memory.reindex("me")
        assert memory.store.sentences_indexed("me")
        assert len(_execute(url, "SELECT chunk_id FROM sentence_vectors")) == 6  # two sentences each of three
        assert [row for row in _ranked(memory) if row[0] != "car"] == with_them


def test_stored_before_sentence_vectors_sqlite(tmp_path) -> None:
    _stored_before_then_reindexed(str(tmp_path / "m.sqlite"))


def test_stored_before_sentence_vectors_postgresql(pg_server) -> None:
    pytest.importorskip("psycopg")
    _stored_before_then_reindexed(pg_server.new_url("sentences"))
