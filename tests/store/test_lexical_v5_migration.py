"""Lexical version 5 (Arabic prepositions before the article, Eastern Arabic digits in Arabic,
Persian and Urdu) on a database indexed by version 4: the stores' migration (SQLite 15,
PostgreSQL 11) marks an app with no chunk in those languages current without touching its
postings, and re-analyses an app that holds some from its stored text."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from diarist import lexical
from diarist.lexical.postings import REANALYSE_NOTICE
from diarist.memory import Memory
from diarist.store.sqlite.migrations import _reanalyse_arabic_script
from lexical_migration import BY_TERM, RAW, index_as, open_migrating, query, rankings, rewind_schema

ARABIC = "كتب الطالب الدرس باللغة العربية في عام ۲۰۱۵ ثم قرأه المعلم بعناية كبيرة"  # "باللغة": in the language
ENGLISH = ("Caroline adopted two dogs last spring", "The cat likes tuna")
GERMAN = "Die Stadt Berlin hatte im Jahr 1900 fast zwei Millionen Einwohner und wuchs schnell weiter."
QUESTIONS = ("adopting a dog", "Caroline", "Einwohner Berlin")

@contextmanager
def _version_4_analyzer() -> Iterator[None]:
    """What version 4 analysed: no preposition taken off before the article, digits as written."""
    with pytest.MonkeyPatch.context() as patch:
        analyze = sys.modules["diarist.lexical.analyze"]
        patch.setattr(analyze, "arabic_preposition_article", lambda word: None)
        patch.setattr(analyze, "EASTERN_DIGITS_IN", ())
        yield


def _upgrade_keeps_english_and_reanalyses_arabic(url: str, caplog: pytest.LogCaptureFixture, with_arabic: bool) -> None:
    with Memory(url, embedder="hash") as memory:
        for text in (*ENGLISH, GERMAN):
            memory.add_fact(text, app="en")
        if with_arabic:
            memory.add_fact(ARABIC, app="ar")
            memory.add_fact(ENGLISH[1], app="ar")
        fresh = rankings(memory, "en", QUESTIONS)
        current = query(url, BY_TERM)
        index_as(memory, ("ar",) if with_arabic else (), _version_4_analyzer, 4)
    rewind_schema(url, _reanalyse_arabic_script, 15)
    version_4 = {row[:2] for row in query(url, BY_TERM)}
    english_before = [row for row in query(url, RAW) if row[0] == "en"]
    generations = dict(query(url, "SELECT name, generation FROM apps"))
    if with_arabic:
        assert {("ar", "باللغ"), ("ar", "۲۰۱۵")} <= version_4, "version 4 kept the preposition and the digits"

    memory, rebuilt = open_migrating(url, caplog)
    with memory:
        assert all(memory.lexical.status(app) is None for app in (("en", "ar") if with_arabic else ("en",)))
        assert rankings(memory, "en", QUESTIONS) == fresh
        if with_arabic:  # "اللغة" (the language) and 2015 find "باللغة" and "۲۰۱۵" through the new terms
            arabic = query(url, "SELECT c.id FROM chunks c JOIN apps a ON a.id = c.app_id "
                                 "WHERE a.name = 'ar' AND c.language = 'ar'")
            for question in ("اللغة", "عام 2015"):
                found = memory.lexical.search("ar", lexical.analyze_question(question), 5)
                assert [chunk_id for chunk_id, _ in found] == [arabic[0][0]]
    assert (REANALYSE_NOTICE in caplog.text) is with_arabic
    ids = dict(query(url, "SELECT name, id FROM apps"))
    assert rebuilt == ([ids["ar"]] if with_arabic else [])  # never the English app
    assert query(url, BY_TERM) == current  # the postings a fresh build writes
    assert [row for row in query(url, RAW) if row[0] == "en"] == english_before  # not re-analysed
    after = dict(query(url, "SELECT name, generation FROM apps"))
    assert after["en"] == generations["en"]
    if with_arabic:
        assert after["ar"] > generations["ar"]
    assert {v for (v,) in query(url, "SELECT version FROM lex_stats")} == {lexical.VERSION} == {5}


@pytest.mark.parametrize("with_arabic", [False, True], ids=["english-only", "arabic"])
def test_a_version_4_index_is_upgraded_sqlite(tmp_path, caplog: pytest.LogCaptureFixture, with_arabic: bool) -> None:
    _upgrade_keeps_english_and_reanalyses_arabic(str(tmp_path / "m.sqlite"), caplog, with_arabic)


@pytest.mark.parametrize("with_arabic", [False, True], ids=["english-only", "arabic"])
def test_a_version_4_index_is_upgraded_postgresql(pg_server, caplog: pytest.LogCaptureFixture, with_arabic: bool) -> None:
    pytest.importorskip("psycopg")
    _upgrade_keeps_english_and_reanalyses_arabic(pg_server.new_url("lexical5"), caplog, with_arabic)
