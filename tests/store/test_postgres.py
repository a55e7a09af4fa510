"""The PostgreSQL store on a real server (``pg_server``, tests/support/pg_server.py), beyond the contract
suite that ``test_store_contract.py`` also runs on it:

- it ranks LoCoMo questions exactly as SQLite does (ids and scores, both channels and the fused
  search), and numbers its terms as SQLite does;
- ``Memory("postgresql://...")`` works end to end: add, search, delete, reindex, keys, health;
- what a user is told when the server, the extension or the schema is not right;
- concurrent writers to one app: every acknowledged write is there, the index is complete, and a
  reader's dense cache, extended by id while they wrote, equals a fresh read.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

pytest.register_assert_rewrite("store_contract")
import pg_server as pg_module  # noqa: E402

pg_module.require()  # skips without the postgres extra (fails in CI)

import psycopg  # noqa: E402
from conftest import add_all, load_locomo, make_sessions  # noqa: E402
from pg_server import PgServer  # noqa: E402
from store_contract import fact, identity_script  # noqa: E402

from diarist import lexical  # noqa: E402
from diarist.errors import DatabaseNotFound, NotADatabase, NotFound, SchemaError, StoreError  # noqa: E402
from diarist.importers.locomo import locomo_sessions  # noqa: E402
from diarist.memory import Memory  # noqa: E402
from diarist.store import open_store  # noqa: E402
from diarist.store.postgres import PostgresStore  # noqa: E402
from diarist.store.postgres.connection import redact  # noqa: E402
from diarist.store.postgres.text import from_db, to_db  # noqa: E402
from diarist.store.sqlite import SQLiteStore  # noqa: E402

DEPTH = 200
FETCH_ALL = 10  # questions whose search asks for more memories than there are


def _ranking_close(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], rtol=0, atol=1e-9)


# -- identical to SQLite ------------------------------------------------------------------------


@pytest.mark.slow
def test_locomo_rankings_are_identical_to_sqlite(pg_server: PgServer) -> None:
    record = load_locomo()[0]  # conv-26: 19 sessions, 199 questions
    sessions = list(locomo_sessions(record))
    questions = [qa["question"] for qa in record["qa"]]
    sqlite = Memory(":memory:", embedder="hash")
    pg = Memory(pg_server.new_url("locomo"), embedder="hash")
    try:
        for mem in (sqlite, pg):
            mem.add_sessions(sessions, app="locomo")
        assert pg.store.counts("locomo") == sqlite.store.counts("locomo")
        assert pg.store.read_vectors("locomo").ids.tolist() == sqlite.store.read_vectors("locomo").ids.tolist()
        vectors = sqlite.embedder.embed(questions)
        compared = 0
        for n, (question, vector) in enumerate(zip(questions, vectors)):
            terms = lexical.analyze(question)
            for channel in ("dense", "lexical"):
                got, want = (
                    mem.dense.search("locomo", vector[None], DEPTH) if channel == "dense"
                    else mem.lexical.search("locomo", terms, DEPTH)
                    for mem in (pg, sqlite)
                )
                assert len(want) == DEPTH or channel == "lexical"
                _ranking_close(got, want)
            # k = the 19 sessions: every memory ranked. A k over the memories there are sends the
            # fetch through the rest of the pool a row at a time (~180 reads a question, most of
            # this test's time on PostgreSQL): the first questions ask for one more, that path too.
            k = len(sessions) + (n < FETCH_ALL)
            got_hits, want_hits = (mem.search(question, app="locomo", k=k) for mem in (pg, sqlite))
            assert len(want_hits) == len(sessions)
            assert [(h.chunk_id, h.text, h.session_id) for h in got_hits] == \
                   [(h.chunk_id, h.text, h.session_id) for h in want_hits]
            assert np.allclose([h.score for h in got_hits], [h.score for h in want_hits], rtol=0, atol=1e-9)
            compared += 1
        assert compared == len(questions) == 199
    finally:
        sqlite.close()
        pg.close()


def test_term_ids_are_handed_out_as_sqlite_does(pg_server: PgServer) -> None:
    sqlite, pg = SQLiteStore(":memory:"), PostgresStore(pg_server.new_url())
    try:
        for store in (sqlite, pg):
            identity_script(store)
            # The largest id dropped and handed out again (SQLite's rowid rule).
            store.put_items("gamma", [fact("f1", "zzzzz the newest term")])
            store.delete_item("gamma", "fact", "f1")
            store.put_items("gamma", [fact("f1", "yyyyy")])
            # A rolled-back write hands its chunk ids out again (SQLite's AUTOINCREMENT does).
            with pytest.raises(RuntimeError), store.transaction():
                store.put_items("gamma", [fact("f2", "rolled back")])
                raise RuntimeError("undo")
            store.put_items("gamma", [fact("f3", "after the rollback")])
        want = dict(sqlite._db.read("SELECT term, id FROM lex_terms"))
        assert want and dict(pg._db.read("SELECT term, id FROM lex_terms")) == want
        assert pg.read_vectors("gamma").ids.tolist() == sqlite.read_vectors("gamma").ids.tolist()
    finally:
        sqlite.close()
        pg.close()


def test_a_first_format_schema_is_repacked_and_ranks_as_before(pg_server: PgServer) -> None:
    """Migration 3 regroups blocks of 1,024 chunk ids into blocks of 8,192, as SQLite's 7 does."""
    import itertools

    from diarist.lexical.postings import BLOCK_BITS, FIRST_FORMAT_BLOCK_BITS, repack
    from diarist.store.postgres.migrations import MIGRATIONS as PG_MIGRATIONS, _repack_postings

    url = pg_server.new_url("repack")
    queries = ("tuna cat", "red bicycle", "Lisbon", "cat")
    words = "cat tuna red bicycle Lisbon apartment piano garden".split()
    with Memory(url, embedder="hash") as mem:
        for start in (1020, 8190, 16383, 70_000):  # ids around both formats' block edges
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("UPDATE counters SET value = %s WHERE name = 'chunk'", (start - 1,))
            for i in range(8):
                mem.add_fact(" ".join(words[(i + j) % len(words)] for j in range(2 + i % 5)) + f" n{start}x{i}",
                             app="a" if i % 3 else "b")
        before = {(app, q): [(h.id, h.score) for h in mem.search(q, app=app, k=20, rerank=False)]
                  for app in ("a", "b") for q in queries}
    select = "SELECT app_id, term_id, block, data FROM lex_postings ORDER BY 1, 2, 3"
    with psycopg.connect(url, autocommit=True) as conn:
        current = [(a, t, b, bytes(d)) for a, t, b, d in conn.execute(select).fetchall()]
        assert len({b for _, _, b, _ in current}) >= 4
        with conn.transaction():  # as the previous release left it
            conn.execute("DELETE FROM lex_postings")
            for (app_id, term_id), group in itertools.groupby(current, key=lambda r: (r[0], r[1])):
                for number, data in repack([(b, d) for _, _, b, d in group], BLOCK_BITS, FIRST_FORMAT_BLOCK_BITS):
                    conn.execute("INSERT INTO lex_postings VALUES (%s, %s, %s, %s)", (app_id, term_id, number, data))
            conn.execute("UPDATE lex_stats SET version = 1")
            conn.execute("DROP TABLE synced_files")  # migration 5's
            conn.execute("DELETE FROM diarist_schema WHERE version > %s", (PG_MIGRATIONS.index(_repack_postings),))
    with Memory(url, embedder="hash") as mem:
        after = {(app, q): [(h.id, h.score) for h in mem.search(q, app=app, k=20, rerank=False)]
                 for app in ("a", "b") for q in queries}
        assert mem.lexical.status("a") is None and mem.lexical.status("b") is None
    assert after == before
    with psycopg.connect(url, autocommit=True) as conn:
        assert [(a, t, b, bytes(d)) for a, t, b, d in conn.execute(select).fetchall()] == current
        assert {v for (v,) in conn.execute("SELECT version FROM lex_stats")} == {lexical.VERSION}


def test_the_repack_leaves_an_index_of_another_version_to_reindex(pg_server: PgServer) -> None:
    from diarist.store.postgres.migrations import MIGRATIONS as PG_MIGRATIONS, _repack_postings

    url = pg_server.new_url("repack_stale")
    with Memory(url, embedder="hash") as mem:
        mem.add_fact("the cat likes tuna", app="kept")
        mem.add_fact("the dog likes bones", app="stale")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE lex_stats SET version = 1")
        conn.execute("UPDATE lex_stats SET version = 0 WHERE app_id = (SELECT id FROM apps WHERE name = 'stale')")
        conn.execute("DROP TABLE synced_files")  # migration 5's
        conn.execute("DELETE FROM diarist_schema WHERE version > %s", (PG_MIGRATIONS.index(_repack_postings),))
    with Memory(url, embedder="hash") as mem:
        assert mem.lexical.status("kept") is None
        assert "reindex" in (mem.lexical.status("stale") or "")
        with psycopg.connect(url, autocommit=True) as conn:
            orphans = conn.execute(
                "SELECT term FROM lex_terms t WHERE NOT EXISTS (SELECT 1 FROM lex_postings p WHERE p.term_id = t.id)"
            ).fetchall()
        assert orphans == []  # the stale app's own terms went with its postings
        mem.reindex("stale")
        assert [h.text for h in mem.search("bones", app="stale", k=1, rerank=False)] == ["the dog likes bones"]


def test_an_unstemmed_index_is_restemmed_on_open_and_ranks_as_a_fresh_one(pg_server: PgServer) -> None:
    """Migration 4 re-analyses every version-2 index with the stemming analyzer, as SQLite's 8."""
    import sys

    from diarist.store.postgres.dialect import DIALECT
    from diarist.store.postgres.migrations import MIGRATIONS as PG_MIGRATIONS, _restem_postings
    from diarist.store.sql import postings as sql_postings

    url = pg_server.new_url("restem")
    queries = ("adopting a dog", "paintings", "Caroline")
    with Memory(url, embedder="hash") as mem:
        mem.add_fact("Caroline adopted two dogs last spring", app="a")
        mem.add_fact("Melanie is painting a sunrise for the pottery class", app="a")
        mem.add_fact("the cat likes tuna", app="b")
        fresh = {q: [(h.id, h.score) for h in mem.search(q, app="a", k=5, rerank=False)] for q in queries}
    select = ("SELECT p.app_id, t.term, p.block, p.data FROM lex_postings p JOIN lex_terms t ON t.id = p.term_id "
              "ORDER BY 1, 2, 3")
    analyze_module = sys.modules["diarist.lexical.analyze"]
    with psycopg.connect(url, autocommit=True) as conn:
        current = [(a, t, b, bytes(d)) for a, t, b, d in conn.execute(select).fetchall()]
        stem = analyze_module.stem
        analyze_module.stem, analyze_module._STEMS = (lambda word: word), {}  # the analyzer of version 2
        try:
            with conn.transaction(), conn.cursor() as cur:
                for (app_id,) in cur.execute("SELECT id FROM apps").fetchall():
                    sql_postings.rebuild(DIALECT, cur, int(app_id))
                cur.execute("UPDATE lex_stats SET version = 2")
                cur.execute("DROP TABLE synced_files")  # migration 5's
                cur.execute("DELETE FROM diarist_schema WHERE version > %s", (PG_MIGRATIONS.index(_restem_postings),))
        finally:
            analyze_module.stem, analyze_module._STEMS = stem, {}
        assert [(a, t, b, bytes(d)) for a, t, b, d in conn.execute(select).fetchall()] != current
    with Memory(url, embedder="hash") as mem:
        assert mem.lexical.status("a") is None and mem.lexical.status("b") is None
        assert {q: [(h.id, h.score) for h in mem.search(q, app="a", k=5, rerank=False)] for q in queries} == fresh
        assert len(mem.lexical.search("a", lexical.analyze("adopting"), 5)) == 1
    with psycopg.connect(url, autocommit=True) as conn:
        assert [(a, t, b, bytes(d)) for a, t, b, d in conn.execute(select).fetchall()] == current
        assert {v for (v,) in conn.execute("SELECT version FROM lex_stats")} == {lexical.VERSION}


def test_a_rebuild_in_pages_writes_what_one_page_writes(pg_server: PgServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """As SQLite's: pages of 3 chunks give the postings, lengths and rankings of one page."""
    from diarist.store.sql import postings as sql_postings

    url = pg_server.new_url("rebuild_pages")
    words = "cat tuna red bicycle Lisbon apartment piano lessons garden rain painting".split()
    select = ("SELECT p.app_id, t.term, p.block, p.data FROM lex_postings p JOIN lex_terms t ON t.id = p.term_id "
              "ORDER BY 1, 2, 3")
    with Memory(url, embedder="hash") as mem:
        for i in range(16):
            mem.add_fact(" ".join(words[(i * 3 + j) % len(words)] for j in range(1 + i % 6)) + f" n{i}", app="a")
        indexed = mem.store.rebuild_lexical("a")
        with psycopg.connect(url, autocommit=True) as conn:
            whole = [(a, t, b, bytes(d)) for a, t, b, d in conn.execute(select).fetchall()]
        lengths = mem.store.doc_lengths("a").lengths.tolist()
        ranked = [(h.id, h.score) for h in mem.search("red bicycle in Lisbon", app="a", k=10, rerank=False)]
        monkeypatch.setattr(sql_postings, "REBUILD_BATCH", 3)
        assert indexed == 16 and mem.store.rebuild_lexical("a") == indexed
        with psycopg.connect(url, autocommit=True) as conn:
            assert [(a, t, b, bytes(d)) for a, t, b, d in conn.execute(select).fetchall()] == whole
        assert mem.store.doc_lengths("a").lengths.tolist() == lengths
        assert [(h.id, h.score) for h in mem.search("red bicycle in Lisbon", app="a", k=10, rerank=False)] == ranked


# -- Memory end to end ------------------------------------------------------------------------


def test_memory_round_trip(pg_server: PgServer) -> None:
    url = pg_server.new_url("mem")
    with Memory(url, embedder="hash") as mem:
        assert mem.store.location == url.replace("postgres:@", "postgres@", 1)  # the (empty) password left out
        add_all(mem, make_sessions(6, seed=3), app="me")
        mem.add_session([{"role": "user", "content": "My cat is called Admon and loves tuna."},
                         {"role": "assistant", "content": "Admon is a lovely name."}], app="me", session_id="cat")
        fact_id = mem.add_fact("The user is allergic to peanuts.", app="me", fact_id="allergy")
        hits = mem.search("What is my cat called?", app="me", k=3)
        assert hits and hits[0].session_id == "cat" and "Admon" in hits[0].text
        assert mem.search("peanuts allergy", app="me", k=1)[0].fact_id == fact_id
        assert mem.get("cat", app="me")["messages"][0]["content"].startswith("My cat")
        assert [s["session_id"] for s in mem.list(app="me", newest_first=False)][-1] == "cat"
        stats = mem.stats("me")
        assert stats["apps"]["me"]["sessions"] == 7 and stats["apps"]["me"]["lexical_index"] == "complete"
        assert stats["file_bytes"] > 0

        mem.delete("cat", app="me")
        with pytest.raises(NotFound):
            mem.get("cat", app="me")
        assert all(h.session_id != "cat" for h in mem.search("What is my cat called?", app="me", k=10))
        assert mem.reindex("me") == len(mem.store.doc_lengths("me").ids) > 0
        assert mem.app_stats("me")["lexical_index"] == "complete"

        key, record = mem.keys.create("me", label="laptop")
        assert mem.keys.app_for(key) == "me" and mem.keys.list("me") == [record]
        mem.keys.revoke(str(record.id))
        assert mem.keys.list("me") == [] and mem.keys.list("me", include_revoked=True)[0].revoked_at

        report = mem.health()
        assert report.ok, report.lines
        assert report.apps["me"]["ok"]

        mem.delete_app("me")
        assert mem.apps() == []
    # Opened again, by the other scheme's name: the embedder and plan were recorded.
    with Memory(url.replace("postgresql://", "postgres://", 1)) as again:
        assert again.embedder.model_id == mem.embedder.model_id
        assert again.keys.list("me", include_revoked=True)  # keys outlive the app's memory


def test_text_with_nul_characters_round_trips(pg_server: PgServer) -> None:
    odd = ["a\x00b", "\ufdd0starts with the mark", "\\0 not a nul", "\x00", "tail\\", "\ufdd0\x00\\"]
    for value in odd + ["plain", "", "\\"]:
        assert from_db(to_db(value)) == value
    assert len({to_db(v) for v in odd}) == len(odd) and all("\x00" not in to_db(v) for v in odd)
    with Memory(pg_server.new_url(), embedder="hash") as mem:
        sid = mem.add_session([{"role": "user", "content": "nul \x00 inside, \\0 and \ufdd0 too"}],
                              app="odd\x00app", session_id="id\x00one", metadata={"k\x00": "v\x00"})
        got = mem.get(sid, app="odd\x00app")
        assert got["session_id"] == "id\x00one" and got["metadata"] == {"k\x00": "v\x00"}
        assert got["messages"][0]["content"] == "nul \x00 inside, \\0 and \ufdd0 too"
        assert mem.apps() == ["odd\x00app"]
        assert mem.search("inside", app="odd\x00app", k=1)[0].text.startswith("nul \x00")


# -- what users are told ------------------------------------------------------------------------


def test_location_never_holds_the_password(pg_server: PgServer) -> None:
    assert redact("postgresql://me:s3cret@db.example:5432/mem?sslmode=require") == \
        "postgresql://me@db.example:5432/mem?sslmode=require"
    assert redact("postgres://db/mem?password=s3cret&user=me") == "postgres://db/mem?user=me"
    assert redact("postgresql://:s3cret@/mem?host=/run/pg") == "postgresql:///mem?host=/run/pg"
    secret = pg_server.url(pg_server.new_schema()).replace("postgres:@", "postgres:s3cret@", 1)
    assert "s3cret" in secret
    store = open_store(secret)  # the server trusts local logins: any password passes
    try:
        assert isinstance(store, PostgresStore) and "s3cret" not in store.location
    finally:
        store.close()


def test_an_unreachable_server_is_a_clear_error(tmp_path: Any) -> None:
    with pytest.raises(StoreError, match="cannot reach the PostgreSQL server") as info:
        PostgresStore(f"postgresql://me:s3cret@/mem?host={tmp_path}&connect_timeout=2")
    assert "s3cret" not in str(info.value) and "is it running" in str(info.value)


def test_a_missing_database_or_schema(pg_server: PgServer) -> None:
    base = pg_server.uri.split("?", 1)
    with pytest.raises(DatabaseNotFound, match="createdb nowhere"):
        PostgresStore(base[0].rsplit("/", 1)[0] + "/nowhere?" + base[1])
    with pytest.raises(StoreError, match="refused the login"):
        PostgresStore(pg_server.uri.replace("postgres:@", "nobody@", 1))
    with pytest.raises(StoreError, match="CREATE SCHEMA"):
        PostgresStore(pg_server.url("no_such_schema"))
    with pytest.raises(DatabaseNotFound, match="diarist ingest"):
        PostgresStore(pg_server.new_url(), create=False)


def test_the_missing_vector_extension_names_what_to_run(pg_server: PgServer) -> None:
    with pg_server.connect() as conn:
        conn.execute("DROP DATABASE IF EXISTS noext")
        conn.execute("DROP ROLE IF EXISTS plain")
        conn.execute("CREATE ROLE plain LOGIN")
        conn.execute("CREATE DATABASE noext OWNER plain")
    base = pg_server.uri.split("?", 1)
    url = base[0].replace("postgres:@", "plain@", 1).rsplit("/", 1)[0] + "/noext?" + base[1]
    with pytest.raises(StoreError, match=r"CREATE EXTENSION vector;") as info:
        PostgresStore(url)
    assert "may not enable it" in str(info.value)
    with psycopg.connect(url.replace("plain@", "postgres@", 1), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")  # what the message says a superuser should run
    store = PostgresStore(url)  # then the plain owner keeps its memory there
    try:
        store.put_items("a", [fact("f1", "works now")])
        assert store.read_vectors("a").ids.tolist() == [1]
    finally:
        store.close()


def test_a_newer_or_foreign_schema_is_refused(pg_server: PgServer) -> None:
    url = pg_server.new_url()
    PostgresStore(url).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO diarist_schema (version) VALUES (99)")
    with pytest.raises(SchemaError, match="99 is newer"):
        PostgresStore(url)
    foreign = pg_server.new_url()
    with psycopg.connect(foreign, autocommit=True) as conn:
        conn.execute("CREATE TABLE chunks (id int)")
    with pytest.raises(NotADatabase, match="another program"):
        PostgresStore(foreign)


# -- concurrency ----------------------------------------------------------------------------


@pytest.mark.slow
def test_concurrent_writers_to_one_app(pg_server: PgServer) -> None:
    """4 writer threads (each its own Memory, pool and connections) add sessions and append to
    one shared session while a reader searches; chunk ids must grow in commit order."""
    url = pg_server.new_url("conc")
    app, n_writers, n_sessions, n_appends = "shared", 4, 12, 4
    Memory(url, embedder="hash").close()  # record the embedder once
    acknowledged: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(n_writers + 1)

    def writer(w: int) -> None:
        try:
            with Memory(url, embedder="hash") as mem:
                start.wait()
                for i in range(n_sessions):
                    sid = mem.add_session(
                        [{"role": "user", "content": f"writer{w} note{i} marker w{w}n{i}"},
                         {"role": "assistant", "content": "noted"}], app=app, session_id=f"w{w}-{i}")
                    with lock:
                        acknowledged.append(sid)
                    if i < n_appends:
                        mem.append_messages("together", [{"role": "user", "content": f"append w{w}n{i}"}], app=app)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    reader = Memory(url, embedder="hash")
    extended: list[int] = []  # after_id of every incremental read of the reader's dense cache
    read_vectors = reader.store.read_vectors

    def counting_read_vectors(app: str, after_id: int = 0) -> Any:
        if after_id:
            extended.append(after_id)
        return read_vectors(app, after_id)

    reader.store.read_vectors = counting_read_vectors  # type: ignore[method-assign]
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(n_writers)]
    for t in threads:
        t.start()
    start.wait()
    query = reader.embedder.embed(["writer note marker"])
    searches = 0
    while any(t.is_alive() for t in threads):
        if reader.store.app_version(app) is not None:
            reader.dense.search(app, query, 10)  # extends its cache by id while writers commit
            searches += 1
    for t in threads:
        t.join()
    try:
        assert not errors, errors
        assert len(acknowledged) == n_writers * n_sessions
        for sid in acknowledged:
            assert reader.get(sid, app=app)["session_id"] == sid
        together = reader.get("together", app=app)["messages"]
        assert sorted(m["content"] for m in together) == sorted(
            f"append w{w}n{i}" for w in range(n_writers) for i in range(n_appends))
        counts = reader.store.counts(app)
        assert counts.sessions == n_writers * n_sessions + 1
        assert reader.app_stats(app)["lexical_index"] == "complete"
        for w in range(n_writers):
            for i in range(n_sessions):
                top = reader.search(f"w{w}n{i}", app=app, k=1)
                assert top and top[0].session_id == f"w{w}-{i}"
        # The reader's cache, extended by id between commits, is exactly a fresh read.
        reader.dense.search(app, query, 10)
        fresh = reader.store.read_vectors(app)
        cached = reader.dense._cache[app]  # type: ignore[attr-defined]
        assert cached.ids.tolist() == fresh.ids.tolist()
        assert searches > 0 and extended, (searches, len(extended))
        assert reader.store.doc_lengths(app).ids.tolist() == fresh.ids.tolist()
    finally:
        reader.close()


def test_a_writer_waits_for_the_write_lock_then_gives_up_clearly(pg_server: PgServer) -> None:
    url = pg_server.new_url()
    holder, waiter = PostgresStore(url), PostgresStore(url, lock_timeout=0.3)
    try:
        with holder.transaction():
            holder.put_items("a", [fact("f1", "held")])
            with pytest.raises(StoreError, match="locked by another writer"):
                waiter.put_items("a", [fact("f2", "waits")])
            assert waiter.get_item("a", "fact", "f1") is None  # readers never wait, see commits only
        waiter.put_items("a", [fact("f2", "lands now")])
        assert [s.external_id for s in waiter.list_items("a", "fact", 10, 0)] == ["f1", "f2"]
    finally:
        holder.close()
        waiter.close()
