"""Lexical version 5 (Arabic prepositions before the article, Eastern Arabic digits in Arabic,
Persian and Urdu) on a database indexed by version 4: the stores' migration (SQLite 15,
PostgreSQL 11) marks an app with no chunk in those languages current without touching its
postings, and re-analyses an app that holds some from its stored text."""

from __future__ import annotations

import logging
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from diarist import lexical
from diarist.lexical.postings import REANALYSE_NOTICE
from diarist.memory import Memory
from diarist.store.sql import postings as sql_postings

ARABIC = "كتب الطالب الدرس باللغة العربية في عام ۲۰۱۵ ثم قرأه المعلم بعناية كبيرة"  # "باللغة": in the language
ENGLISH = ("Caroline adopted two dogs last spring", "The cat likes tuna")
GERMAN = "Die Stadt Berlin hatte im Jahr 1900 fast zwei Millionen Einwohner und wuchs schnell weiter."
QUESTIONS = ("adopting a dog", "Caroline", "Einwohner Berlin")
BY_TERM = ("SELECT a.name, t.term, p.block, p.data FROM lex_postings p JOIN lex_terms t ON t.id = p.term_id "
           "JOIN apps a ON a.id = p.app_id ORDER BY 1, 2, 3")
RAW = "SELECT a.name, p.term_id, p.block, p.data FROM lex_postings p JOIN apps a ON a.id = p.app_id ORDER BY 1, 2, 3"


@contextmanager
def _version_4_analyzer() -> Iterator[None]:
    """What version 4 analysed: no preposition taken off before the article, digits as written."""
    with pytest.MonkeyPatch.context() as patch:
        analyze = sys.modules["diarist.lexical.analyze"]
        patch.setattr(analyze, "arabic_preposition_article", lambda word: None)
        patch.setattr(analyze, "EASTERN_DIGITS_IN", ())
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
    """The schema as the release before version 5 left it: the new migration not yet run."""
    if url.startswith("postgresql"):
        import psycopg

        from diarist.store.postgres.migrations import MIGRATIONS, _reanalyse_arabic_script

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DELETE FROM diarist_schema WHERE version > %s", (MIGRATIONS.index(_reanalyse_arabic_script),))
        return
    from diarist.store.sqlite.migrations import MIGRATIONS, _reanalyse_arabic_script

    assert MIGRATIONS.index(_reanalyse_arabic_script) == 14  # the 15th, rewound to just before it
    conn = sqlite3.connect(url)
    try:
        conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(_reanalyse_arabic_script)}")
        conn.commit()
    finally:
        conn.close()


def _as_version_4(memory: Memory, reanalyse: tuple[str, ...]) -> None:
    """The apps ``reanalyse`` indexed as version 4 analysed them; every app's index stamped 4."""
    store, d = memory.store, memory.store.dialect
    with _version_4_analyzer(), store._db.write() as cur:
        for app in reanalyse:
            app_id = store._app_id(cur, app)
            sql_postings.rebuild(d, cur, app_id, languages="recorded")
            cur.execute(d.sql("UPDATE apps SET generation = generation + 1 WHERE id = ?"), (app_id,))
        cur.execute("UPDATE lex_stats SET version = 4")


def _rankings(memory: Memory, app: str) -> dict[str, list[tuple[str, float]]]:
    return {q: [(h.id, h.score) for h in memory.search(q, app=app, k=5, rerank=False)] for q in QUESTIONS}


def _upgrade_keeps_english_and_reanalyses_arabic(url: str, caplog: pytest.LogCaptureFixture, with_arabic: bool) -> None:
    with Memory(url, embedder="hash") as memory:
        for text in (*ENGLISH, GERMAN):
            memory.add_fact(text, app="en")
        if with_arabic:
            memory.add_fact(ARABIC, app="ar")
            memory.add_fact(ENGLISH[1], app="ar")
        fresh = _rankings(memory, "en")
        current = _query(url, BY_TERM)
        _as_version_4(memory, ("ar",) if with_arabic else ())
    _rewind_schema(url)
    version_4 = {row[:2] for row in _query(url, BY_TERM)}
    english_before = [row for row in _query(url, RAW) if row[0] == "en"]
    generations = dict(_query(url, "SELECT name, generation FROM apps"))
    if with_arabic:
        assert {("ar", "باللغ"), ("ar", "۲۰۱۵")} <= version_4, "version 4 kept the preposition and the digits"

    rebuilt: list[int] = []
    rebuild = sql_postings.rebuild

    def spy(d, cur, app_id, **kwargs):  # type: ignore[no-untyped-def]
        rebuilt.append(app_id)
        return rebuild(d, cur, app_id, **kwargs)

    with pytest.MonkeyPatch.context() as patch, caplog.at_level(logging.WARNING, logger="diarist"):
        patch.setattr(sql_postings, "rebuild", spy)
        memory = Memory(url, embedder="hash")  # migrates
    with memory:
        assert all(memory.lexical.status(app) is None for app in (("en", "ar") if with_arabic else ("en",)))
        assert _rankings(memory, "en") == fresh
        if with_arabic:  # "اللغة" (the language) and 2015 find "باللغة" and "۲۰۱۵" through the new terms
            arabic = _query(url, "SELECT c.id FROM chunks c JOIN apps a ON a.id = c.app_id "
                                 "WHERE a.name = 'ar' AND c.language = 'ar'")
            for question in ("اللغة", "عام 2015"):
                found = memory.lexical.search("ar", lexical.analyze_question(question), 5)
                assert [chunk_id for chunk_id, _ in found] == [arabic[0][0]]
    assert (REANALYSE_NOTICE in caplog.text) is with_arabic
    ids = dict(_query(url, "SELECT name, id FROM apps"))
    assert rebuilt == ([ids["ar"]] if with_arabic else [])  # never the English app
    assert _query(url, BY_TERM) == current  # the postings a fresh build writes
    assert [row for row in _query(url, RAW) if row[0] == "en"] == english_before  # not re-analysed
    after = dict(_query(url, "SELECT name, generation FROM apps"))
    assert after["en"] == generations["en"]
    if with_arabic:
        assert after["ar"] > generations["ar"]
    assert {v for (v,) in _query(url, "SELECT version FROM lex_stats")} == {lexical.VERSION} == {5}


@pytest.mark.parametrize("with_arabic", [False, True], ids=["english-only", "arabic"])
def test_a_version_4_index_is_upgraded_sqlite(tmp_path, caplog: pytest.LogCaptureFixture, with_arabic: bool) -> None:
    _upgrade_keeps_english_and_reanalyses_arabic(str(tmp_path / "m.sqlite"), caplog, with_arabic)


@pytest.mark.parametrize("with_arabic", [False, True], ids=["english-only", "arabic"])
def test_a_version_4_index_is_upgraded_postgresql(pg_server, caplog: pytest.LogCaptureFixture, with_arabic: bool) -> None:
    pytest.importorskip("psycopg")
    _upgrade_keeps_english_and_reanalyses_arabic(pg_server.new_url("lexical5"), caplog, with_arabic)
