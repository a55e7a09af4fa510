"""Lexical version 4 (Arabic clitics, Russian interrogatives as stopwords) on a database indexed by
version 3: the stores' migration (SQLite 13, PostgreSQL 9) marks an app with no Arabic or Russian
chunk current without touching its postings (its terms are the same), and re-analyses an app that
holds some from its stored text, each chunk in its recorded language."""

from __future__ import annotations

import logging
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from diarist import lexical
from diarist.lexical import stopwords as stopwords_module
from diarist.lexical.postings import REANALYSE_NOTICE
from diarist.memory import Memory
from diarist.store.sql import postings as sql_postings

ARABIC = "ذهب أحمد إلى المكتبة في الصباح واشترى القلم والكتاب الذي طلبه المعلم منه"  # "والكتاب": and the book
RUSSIAN = "Компания, которая построила этот мост через реку, была основана в Москве в 1900 году."
ENGLISH = ("Caroline adopted two dogs last spring", "Melanie is painting a sunrise for the pottery class",
           "The cat likes tuna")
GERMAN = "Die Stadt Berlin hatte im Jahr 1900 fast zwei Millionen Einwohner und wuchs schnell weiter."
QUESTIONS = ("adopting a dog", "paintings", "Caroline", "Einwohner Berlin")

BY_TERM = ("SELECT a.name, t.term, p.block, p.data FROM lex_postings p JOIN lex_terms t ON t.id = p.term_id "
           "JOIN apps a ON a.id = p.app_id ORDER BY 1, 2, 3")
RAW = "SELECT a.name, p.term_id, p.block, p.data FROM lex_postings p JOIN apps a ON a.id = p.app_id ORDER BY 1, 2, 3"


@contextmanager
def _version_3_analyzer() -> Iterator[None]:
    """What version 3 analysed: no Arabic clitic taken off, "которая" not a Russian stopword."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys.modules["diarist.lexical.analyze"], "NORMALISE", {})
        patch.setitem(stopwords_module.STOPWORDS, "ru", stopwords_module.STOPWORDS["ru"] - {"которая"})
        yield


def _query(url: str, sql: str) -> list[tuple]:
    if url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in conn.execute(sql)]
    conn = sqlite3.connect(url)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _rewind_schema(url: str) -> None:
    """The schema as the release before version 4 left it: the new migration not yet run."""
    if url.startswith("postgresql"):
        import psycopg

        from diarist.store.postgres.migrations import MIGRATIONS, _reanalyse_arabic_russian

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DELETE FROM diarist_schema WHERE version > %s", (MIGRATIONS.index(_reanalyse_arabic_russian),))
        return
    from diarist.store.sqlite.migrations import MIGRATIONS, _reanalyse_arabic_russian

    assert MIGRATIONS.index(_reanalyse_arabic_russian) == 12  # the 13th, rewound to just before it
    conn = sqlite3.connect(url)
    try:
        conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(_reanalyse_arabic_russian)}")
        conn.commit()
    finally:
        conn.close()


def _as_version_3(memory: Memory, reanalyse: tuple[str, ...]) -> None:
    """The apps ``reanalyse`` indexed as version 3 analysed them; every app's index stamped 3."""
    store, d = memory.store, memory.store.dialect
    with _version_3_analyzer(), store._db.write() as cur:
        for app in reanalyse:
            app_id = store._app_id(cur, app)
            sql_postings.rebuild(d, cur, app_id, languages="recorded")
            cur.execute(d.sql("UPDATE apps SET generation = generation + 1 WHERE id = ?"), (app_id,))
        cur.execute("UPDATE lex_stats SET version = 3")


def _rankings(memory: Memory, app: str) -> dict[str, list[tuple[str, float]]]:
    return {q: [(h.id, h.score) for h in memory.search(q, app=app, k=5, rerank=False)] for q in QUESTIONS}


def _upgrade_keeps_english_and_reanalyses_arabic_russian(url: str, caplog: pytest.LogCaptureFixture,
                                                          with_arabic_russian: bool) -> None:
    with Memory(url, embedder="hash") as memory:
        for text in ENGLISH:
            memory.add_fact(text, app="en")
        memory.add_fact(GERMAN, app="en")  # another language, whose terms version 4 did not change
        if with_arabic_russian:
            memory.add_fact(ARABIC, app="ar")
            memory.add_fact(ENGLISH[2], app="ar")
            memory.add_fact(RUSSIAN, app="ru")
            assert memory.store.language_counts("ar") == {"ar": 1, "en": 1}
        fresh = _rankings(memory, "en")
        current = _query(url, BY_TERM)
        _as_version_3(memory, ("ar", "ru") if with_arabic_russian else ())
    _rewind_schema(url)
    version_3 = _query(url, BY_TERM)
    english_before = [row for row in _query(url, RAW) if row[0] == "en"]
    generations = dict(_query(url, "SELECT name, generation FROM apps"))
    if with_arabic_russian:
        assert version_3 != current
        assert ("ar", "كتاب") not in {row[:2] for row in version_3}, "version 3 left والكتاب whole"
        assert ("ru", "котор") in {row[:2] for row in version_3}
    else:
        assert version_3 == current

    rebuilt: list[int] = []
    rebuild = sql_postings.rebuild

    def spy(d, cur, app_id, **kwargs):  # type: ignore[no-untyped-def]
        rebuilt.append(app_id)
        return rebuild(d, cur, app_id, **kwargs)

    with pytest.MonkeyPatch.context() as patch, caplog.at_level(logging.WARNING, logger="diarist"):
        patch.setattr(sql_postings, "rebuild", spy)
        memory = Memory(url, embedder="hash")  # migrates
    with memory:
        apps = ("en", "ar", "ru") if with_arabic_russian else ("en",)
        assert all(memory.lexical.status(app) is None for app in apps)
        assert _rankings(memory, "en") == fresh
        if with_arabic_russian:
            # "الكتاب" (the book) finds "والكتاب" (and the book) through the terms the migration wrote.
            found = memory.lexical.search("ar", lexical.analyze_question("الكتاب"), 5)
            arabic = _query(url, "SELECT c.id FROM chunks c JOIN apps a ON a.id = c.app_id "
                                 "WHERE a.name = 'ar' AND c.language = 'ar'")
            assert [chunk_id for chunk_id, _ in found] == [arabic[0][0]]
    assert (REANALYSE_NOTICE in caplog.text) is with_arabic_russian
    ids = dict(_query(url, "SELECT name, id FROM apps"))
    # never the English app (the Arabic one twice: version 5's migration re-analyses it again)
    assert set(rebuilt) == {ids[app] for app in ("ar", "ru") if app in ids}
    assert _query(url, BY_TERM) == current  # the postings a fresh build writes
    assert [row for row in _query(url, RAW) if row[0] == "en"] == english_before  # not re-analysed: same term ids
    after = dict(_query(url, "SELECT name, generation FROM apps"))
    assert after["en"] == generations["en"]  # caches of the English app stay valid
    if with_arabic_russian:
        assert after["ar"] > generations["ar"] and after["ru"] > generations["ru"]
    assert {v for (v,) in _query(url, "SELECT version FROM lex_stats")} == {lexical.VERSION}


@pytest.mark.parametrize("with_arabic_russian", [False, True], ids=["english-only", "arabic-russian"])
def test_a_version_3_index_is_upgraded_sqlite(tmp_path, caplog: pytest.LogCaptureFixture,
                                               with_arabic_russian: bool) -> None:
    _upgrade_keeps_english_and_reanalyses_arabic_russian(str(tmp_path / "m.sqlite"), caplog, with_arabic_russian)


@pytest.mark.parametrize("with_arabic_russian", [False, True], ids=["english-only", "arabic-russian"])
def test_a_version_3_index_is_upgraded_postgresql(pg_server, caplog: pytest.LogCaptureFixture,
                                                   with_arabic_russian: bool) -> None:
    pytest.importorskip("psycopg")
    _upgrade_keeps_english_and_reanalyses_arabic_russian(pg_server.new_url("lexical4"), caplog, with_arabic_russian)


def test_an_app_of_another_version_is_left_to_reindex(tmp_path) -> None:
    """An index of version 2 or older (never migrated, or stale) is not stamped 4: it still asks
    for ``diarist reindex``."""
    path = str(tmp_path / "m.sqlite")
    with Memory(path, embedder="hash") as memory:
        memory.add_fact(ENGLISH[0], app="en")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE lex_stats SET version = 1")
    conn.commit()
    conn.close()
    _rewind_schema(path)
    with Memory(path, embedder="hash") as memory:
        assert "run: diarist reindex" in (memory.lexical.status("en") or "")
