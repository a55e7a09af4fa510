"""Lexical version 4 (Arabic clitics, Russian interrogatives as stopwords) on a database indexed by
version 3: the stores' migration (SQLite 13, PostgreSQL 9) marks an app with no Arabic or Russian
chunk current without touching its postings (its terms are the same), and re-analyses an app that
holds some from its stored text, each chunk in its recorded language."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from diarist import lexical
from diarist.lexical import stopwords as stopwords_module
from diarist.lexical.postings import REANALYSE_NOTICE
from diarist.memory import Memory
from diarist.store.sqlite.migrations import _reanalyse_arabic_russian
from lexical_migration import BY_TERM, RAW, index_as, open_migrating, query, rankings, rewind_schema

ARABIC = "ذهب أحمد إلى المكتبة في الصباح واشترى القلم والكتاب الذي طلبه المعلم منه"  # "والكتاب": and the book
RUSSIAN = "Компания, которая построила этот мост через реку, была основана в Москве в 1900 году."
ENGLISH = ("Caroline adopted two dogs last spring", "Melanie is painting a sunrise for the pottery class",
           "The cat likes tuna")
GERMAN = "Die Stadt Berlin hatte im Jahr 1900 fast zwei Millionen Einwohner und wuchs schnell weiter."
QUESTIONS = ("adopting a dog", "paintings", "Caroline", "Einwohner Berlin")


@contextmanager
def _version_3_analyzer() -> Iterator[None]:
    """What version 3 analysed: no Arabic clitic taken off, "которая" not a Russian stopword."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys.modules["diarist.lexical.analyze"], "NORMALISE", {})
        patch.setitem(stopwords_module.STOPWORDS, "ru", stopwords_module.STOPWORDS["ru"] - {"которая"})
        yield


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
        fresh = rankings(memory, "en", QUESTIONS)
        current = query(url, BY_TERM)
        index_as(memory, ("ar", "ru") if with_arabic_russian else (), _version_3_analyzer, 3)
    rewind_schema(url, _reanalyse_arabic_russian, 13)
    version_3 = query(url, BY_TERM)
    english_before = [row for row in query(url, RAW) if row[0] == "en"]
    generations = dict(query(url, "SELECT name, generation FROM apps"))
    if with_arabic_russian:
        assert version_3 != current
        assert ("ar", "كتاب") not in {row[:2] for row in version_3}, "version 3 left والكتاب whole"
        assert ("ru", "котор") in {row[:2] for row in version_3}
    else:
        assert version_3 == current

    memory, rebuilt = open_migrating(url, caplog)
    with memory:
        apps = ("en", "ar", "ru") if with_arabic_russian else ("en",)
        assert all(memory.lexical.status(app) is None for app in apps)
        assert rankings(memory, "en", QUESTIONS) == fresh
        if with_arabic_russian:
            # "الكتاب" (the book) finds "والكتاب" (and the book) through the terms the migration wrote.
            found = memory.lexical.search("ar", lexical.analyze_question("الكتاب"), 5)
            arabic = query(url, "SELECT c.id FROM chunks c JOIN apps a ON a.id = c.app_id "
                                 "WHERE a.name = 'ar' AND c.language = 'ar'")
            assert [chunk_id for chunk_id, _ in found] == [arabic[0][0]]
    assert (REANALYSE_NOTICE in caplog.text) is with_arabic_russian
    ids = dict(query(url, "SELECT name, id FROM apps"))
    # never the English app (the Arabic one twice: version 5's migration re-analyses it again)
    assert set(rebuilt) == {ids[app] for app in ("ar", "ru") if app in ids}
    assert query(url, BY_TERM) == current  # the postings a fresh build writes
    assert [row for row in query(url, RAW) if row[0] == "en"] == english_before  # not re-analysed: same term ids
    after = dict(query(url, "SELECT name, generation FROM apps"))
    assert after["en"] == generations["en"]  # caches of the English app stay valid
    if with_arabic_russian:
        assert after["ar"] > generations["ar"] and after["ru"] > generations["ru"]
    assert {v for (v,) in query(url, "SELECT version FROM lex_stats")} == {lexical.VERSION}


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
    rewind_schema(path, _reanalyse_arabic_russian, 13)
    with Memory(path, embedder="hash") as memory:
        assert "run: diarist reindex" in (memory.lexical.status("en") or "")
