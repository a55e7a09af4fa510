"""Line vectors stored at ingest (store.sql.lines): a question embeds only itself, the block reads
the same as when the trim embedded its lines, and nothing of a forgotten item stays behind."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from diarist.cli import main
from diarist.memory import Memory
from diarist.read.lines import line_digest, unit_rows
from diarist.read.trim import lines_of
from diarist.store.sqlite.migrations import MIGRATIONS

CHATS = [
    [{"role": "user", "content": "I repaired the garden fence last weekend.\nMy cat Miso hid under the porch."},
     {"role": "assistant", "content": "Cats like dark places.\nDid Miso come out for dinner?"}],
    [{"role": "user", "content": "We booked a flight to Lisbon for March."},
     {"role": "assistant", "content": "Lisbon in March is mild.\nPack a light jacket."}],
    [{"role": "user", "content": "My sister Ana plays the cello in a quartet."}],
]
QUESTIONS = ["Where did my cat hide?", "When is the trip to Lisbon?", "What instrument does Ana play?"]


def _add(memory: Memory, app: str = "me") -> None:
    memory.add_sessions([{"session_id": f"s{n}", "messages": chat, "date": f"2025-01-0{n + 1}"}
                         for n, chat in enumerate(CHATS)], app=app)


def _rows(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM line_vectors").fetchone()[0]


def _chunks(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM chunks").fetchone()[0]


def _lines_of_chunks(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return sum(len(lines_of(text)) for (text,) in conn.execute("SELECT text FROM chunks"))


def test_a_question_embeds_no_line_and_the_block_reads_the_same(tmp_path: Path):
    stored, embedded = Memory(tmp_path / "a.sqlite"), Memory(tmp_path / "b.sqlite", store_lines=False)
    _add(stored)
    _add(embedded)
    for trim in ("pointers", "lines"):
        for question in QUESTIONS:
            assert str(stored.context(question, app="me", trim=trim)) == str(embedded.context(question, app="me", trim=trim))
    assert stored._line_vectors.embedded == 0 and stored._line_vectors.read > 0
    assert embedded._line_vectors.embedded > 0 and embedded._line_vectors.read == 0
    # The very bytes the trim computes for a line.
    line = "My cat Miso hid under the porch."
    found = stored.store.line_vectors("me", [line_digest(line)])[line_digest(line)]
    assert np.array_equal(found, unit_rows(stored.embedder.embed_passages([line]))[0])
    stored.close()
    embedded.close()


def test_forgetting_an_item_leaves_no_line_behind(tmp_path: Path):
    path = tmp_path / "m.sqlite"
    with Memory(path) as memory:
        _add(memory)
        memory.add_fact("Ana's quartet rehearses on Thursdays.", app="me", fact_id="f1")
        _add(memory, app="other")
        assert _rows(path) == _lines_of_chunks(path) > 0
        memory.update("s1", app="me", messages=[{"role": "user", "content": "The Lisbon trip moved to April."}])
        memory.append_messages("s0", [{"role": "user", "content": "Miso is fine now."}], app="me")
        assert _rows(path) == _lines_of_chunks(path)  # a replaced chunk's lines went with it
        for item in ("s0", "s1", "s2", "f1"):
            memory.delete(item, app="me")
        assert memory.store.line_vectors("me", [line_digest("Miso is fine now.")]) == {}
        assert _rows(path) == _lines_of_chunks(path) > 0  # app "other" keeps its own
        memory.delete_app("other")
    assert _rows(path) == 0


def test_reindex_gives_a_database_from_before_line_vectors_its_lines(tmp_path: Path):
    path = tmp_path / "old.sqlite"
    with Memory(path) as memory:
        _add(memory)
        memory.add_fact("Ana's quartet rehearses on Thursdays.", app="me", fact_id="f1")
    (step,) = [step for step in MIGRATIONS if isinstance(step, str) and "CREATE TABLE IF NOT EXISTS line_vectors" in step]
    with sqlite3.connect(path) as conn:  # the migration run on a database of the version before it
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        conn.execute("DROP TABLE line_vectors")
        conn.executescript(step)
    with Memory(path) as memory:
        assert _rows(path) == 0
        memory.context(QUESTIONS[0], app="me")
        assert memory._line_vectors.embedded > 0  # the trim embeds, as it did before
    doctor = CliRunner().invoke(main, ["doctor", "--db", str(path)], env={"DIARIST_DB": ""})
    assert "no stored line vectors" in doctor.output and "diarist reindex --app me" in doctor.output, doctor.output
    done = CliRunner().invoke(main, ["reindex", "--db", str(path), "--app", "me"], env={"DIARIST_DB": ""})
    assert done.exit_code == 0, done.output
    assert f"stored the lines' vectors of {_chunks(path)} chunks of app 'me'" in done.output
    doctor = CliRunner().invoke(main, ["doctor", "--db", str(path)], env={"DIARIST_DB": ""})
    assert "no stored line vectors" not in doctor.output, doctor.output
    assert _rows(path) == _lines_of_chunks(path) > 0
    with Memory(path) as memory:
        assert memory.index_lines("me") == 0  # nothing left to do
    with Memory(path) as memory:
        memory.context(QUESTIONS[0], app="me")
        assert memory._line_vectors.embedded == 0


def test_the_embedding_cache_gives_a_line_the_same_bytes_and_embeds_it_once(tmp_path: Path):
    from diarist.embed.cache import EmbeddingCache

    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    with Memory(tmp_path / "a.sqlite", embed_cache=cache) as cached, Memory(tmp_path / "b.sqlite") as plain:
        _add(cached)
        _add(plain)
        lines = ["My cat Miso hid under the porch.", "Pack a light jacket."]
        digests = [line_digest(line) for line in lines]
        got, want = cached.store.line_vectors("me", digests), plain.store.line_vectors("me", digests)
        assert all(np.array_equal(got[d], want[d]) for d in digests)
        calls = []
        embed = cached.embedder.embed_passages
        cached.embedder.embed_passages = lambda texts, *a, **k: calls.append(list(texts)) or embed(texts, *a, **k)
        try:
            assert np.array_equal(cache.embed_float32(cached.embedder, lines), cache.embed_float32(plain.embedder, lines))
        finally:
            del cached.embedder.embed_passages
        assert calls == []  # the ingest cached them
    cache.close()


def test_postgresql_stores_finds_backfills_and_forgets_lines_as_sqlite_does(pg_server, tmp_path: Path):
    pytest.importorskip("psycopg")
    url = pg_server.new_url("lines")
    digest = line_digest("My cat Miso hid under the porch.")
    with Memory(url, store_lines=False) as memory:  # chunks stored without lines, as before them
        _add(memory)
        assert memory.store.line_vectors("me", [digest]) == {}
    with Memory(url) as memory, Memory(tmp_path / "a.sqlite") as reference:
        assert memory.index_lines("me") == memory.store.counts("me").chunks
        _add(reference)
        assert np.array_equal(memory.store.line_vectors("me", [digest])[digest],
                              reference.store.line_vectors("me", [digest])[digest])
        for question in QUESTIONS:
            assert str(memory.context(question, app="me")) == str(reference.context(question, app="me"))
        assert memory._line_vectors.embedded == 0
        memory.delete("s0", app="me")
        assert memory.store.line_vectors("me", [digest]) == {}
        assert memory.store.chunks_without_lines("me", 0, 10) == []
