"""The health check fails when the embedder or the index is broken (both broken on purpose here)."""

from __future__ import annotations

import copy
import sqlite3
import subprocess

import httpx
import numpy as np
import pytest
from test_server_support import DIARIST, ServerThread, diarist_env

from diarist.memory import Memory
from diarist.server.app import create_app


def fill(db) -> Memory:
    memory = Memory(db, embedder="hash")
    memory.add_session([{"role": "user", "content": "My cat is called Admon and loves tuna."},
                        {"role": "assistant", "content": "Admon is a fine name."}], app="me", session_id="s1")
    memory.add_fact("The user moved to Lisbon in March.", app="me", fact_id="f1")
    return memory


def doctor(db) -> subprocess.CompletedProcess:
    return subprocess.run([DIARIST, "doctor", "--db", str(db), "--embedder", "hash"],
                          env=diarist_env(), capture_output=True, text=True)


@pytest.mark.slow
def test_healthy(tmp_path):
    memory = fill(tmp_path / "m.sqlite")
    report = memory.health()
    assert report.ok, report.lines
    assert report.apps["me"]["dense"]["rank"] == 1 and report.apps["me"]["lexical"]["rank"] == 1
    assert all("ms" in report.channels[c] for c in ("embed", "dense", "lexical"))
    with ServerThread(create_app(memory)) as srv:
        r = httpx.get(f"{srv.url}/health", timeout=30)
        assert r.status_code == 200 and r.json()["ok"] is True
    memory.close()
    result = doctor(tmp_path / "m.sqlite")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "probe dense" in result.stdout and "app 'me'" in result.stdout


@pytest.mark.parametrize("broken", ["constant", "nan", "raises", "random"])
def test_broken_embedder_fails_health(tmp_path, broken):
    memory = fill(tmp_path / "m.sqlite")
    dim, rng = memory.embedder.dim, np.random.default_rng(0)

    def embed_batch(texts):
        if broken == "raises":
            raise RuntimeError("model file is corrupt")
        if broken == "nan":
            return np.full((len(texts), dim), np.nan, np.float32)
        if broken == "random":
            return rng.standard_normal((len(texts), dim)).astype(np.float32)
        return np.ones((len(texts), dim), np.float32)

    memory.embedder = copy.copy(memory.embedder)  # the instance is shared: break a copy
    memory.embedder.embed_batch = embed_batch  # break the embedder on purpose
    report = memory.health()
    assert not report.ok
    assert any(line.startswith("FAIL") for line in report.lines)
    with ServerThread(create_app(memory)) as srv:
        r = httpx.get(f"{srv.url}/health", timeout=30)
    assert r.status_code == 503 and r.json()["ok"] is False
    memory.close()


def test_corrupt_vectors_fail_health(tmp_path):
    db = tmp_path / "m.sqlite"
    fill(db).close()
    with sqlite3.connect(db) as conn:  # overwrite every stored vector with noise
        rows = conn.execute("SELECT id, length(vector) FROM chunks WHERE vector IS NOT NULL").fetchall()
        rng = np.random.default_rng(1)
        for chunk_id, n in rows:
            conn.execute("UPDATE chunks SET vector = ? WHERE id = ?",
                         (rng.integers(-127, 128, n, dtype=np.int8).tobytes(), chunk_id))
    memory = Memory(db, embedder="hash")
    report = memory.health()
    assert not report.ok and not report.apps["me"]["dense"]["ok"]
    assert report.apps["me"]["lexical"]["ok"]  # the other channel is still fine, and says so
    memory.close()
    result = doctor(db)
    assert result.returncode == 1 and "FAIL" in result.stdout


@pytest.mark.slow
def test_lost_postings_fail_health_even_when_counters_look_right(tmp_path):
    db = tmp_path / "m.sqlite"
    fill(db).close()
    with sqlite3.connect(db) as conn:  # the counters still match the chunks; the postings are gone
        conn.execute("DELETE FROM lex_postings")
    memory = Memory(db, embedder="hash")
    assert memory.lexical.status("me") is None  # the cheap check sees nothing wrong
    report = memory.health()
    assert not report.ok and not report.apps["me"]["lexical"]["ok"]
    with ServerThread(create_app(memory)) as srv:
        r = httpx.get(f"{srv.url}/health", timeout=30)
    assert r.status_code == 503 and r.json()["apps_failing"] == 1
    memory.close()
    assert doctor(db).returncode == 1


def test_incomplete_lexical_index_fails_health(tmp_path):
    db = tmp_path / "m.sqlite"
    fill(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE lex_stats SET n_docs = n_docs - 1")
    memory = Memory(db, embedder="hash")
    report = memory.health()
    assert not report.ok and "falls back to vectors" in report.apps["me"]["lexical"]["error"]
    memory.close()


def test_a_writer_replacing_the_sampled_chunk_during_the_check_is_no_failure(tmp_path):
    """Under churn the sampled chunk may be replaced between sampling and searching: that is
    not a broken index, and the check samples again (it answered 503 once in 31 heavy checks)."""
    from diarist.health import check_app_index

    path = tmp_path / "churn.sqlite"
    memory = Memory(path, embedder="hash")
    memory.add_session([{"role": "user", "content": "The quartz lighthouse keeper feeds herons."}], app="a", session_id="s1")
    real_sample = memory.store.sample_chunk
    replaced = []

    def sample_then_another_writer_replaces(app):
        found = real_sample(app)
        if not replaced:  # another process replaces the session right after the sample is read
            with Memory(path, embedder="hash") as other:
                other.add_session([{"role": "user", "content": "Entirely new words about tomato soup."}],
                                  app="a", session_id="s1")
            replaced.append(True)
        return found

    memory.store.sample_chunk = sample_then_another_writer_replaces
    result = check_app_index(memory, memory.store, "a")
    assert replaced and result["ok"], result
    memory.close()


def test_a_newest_chunk_without_index_terms_is_no_failure(tmp_path):
    """An app whose newest chunk has nothing BM25 can look for ("😀 ¿") is healthy."""

    with Memory(tmp_path / "emoji.sqlite", embedder="hash") as memory:
        memory.add_fact("The quartz lighthouse keeper feeds herons.", app="a")
        memory.add_fact("😀 ¿", app="a")
        report = memory.health()
        assert report.ok, report.lines
        assert "no index term" in report.apps["a"]["lexical"]["note"]


def test_keys_refuse_text_that_is_not_unicode(tmp_path):
    from diarist.errors import InvalidInput
    from diarist.keys import KeyStore
    from diarist.store.sqlite import SQLiteStore

    keys = KeyStore(SQLiteStore(tmp_path / "k.sqlite"))
    with pytest.raises(InvalidInput):
        keys.create("a", label="bad \udcff label")
    with pytest.raises(InvalidInput):
        keys.revoke("vst_\udcff")


@pytest.mark.parametrize("failure", ["store error", "raw sqlite error"])
def test_a_storage_failure_does_not_tell_clients_where_the_database_is(tmp_path, monkeypatch, caplog, failure):
    """A 5xx names the database's path in the server log only: the path (or a PostgreSQL host)
    is the operator's business, not every API key holder's."""
    from diarist.errors import StoreError
    from diarist.keys import KeyStore

    (tmp_path / "secret-folder").mkdir()
    memory = fill(tmp_path / "secret-folder" / "m.sqlite")
    location = str(memory.store.location)
    key = KeyStore(memory.store).create("me")[0]

    def broken(*args, **kwargs):
        if failure == "store error":
            raise StoreError(f"the disk holding {location} is full (database or disk is full)")
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(memory, "search", broken)
    with ServerThread(create_app(memory)) as srv, caplog.at_level("ERROR", logger="diarist"):
        r = httpx.post(f"{srv.url}/v1/apps/me/search", json={"query": "cat"},
                       headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert r.status_code >= 500
    body = r.text
    assert "secret-folder" not in body and "the database" in body, body
    assert "secret-folder" in caplog.text
    memory.close()
