"""What the tests of a lexical version's migration share (tests/store/test_lexical_v*_migration.py):
raw SQL on either backend, and the schema rewound to just before a migration step."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

BY_TERM = ("SELECT a.name, t.term, p.block, p.data FROM lex_postings p JOIN lex_terms t ON t.id = p.term_id "
           "JOIN apps a ON a.id = p.app_id ORDER BY 1, 2, 3")
RAW = "SELECT a.name, p.term_id, p.block, p.data FROM lex_postings p JOIN apps a ON a.id = p.app_id ORDER BY 1, 2, 3"


def query(url: str, sql: str) -> list[tuple]:
    if url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in conn.execute(sql)]
    conn = sqlite3.connect(url)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def rewind_schema(url: str, step: Callable[[Any], None], sqlite_number: int) -> None:
    """The schema as the release before ``step`` (a migration function of the backend, found by its
    name) left it: that migration and the ones after it not yet run. ``sqlite_number``: the step's
    place on SQLite (asserted)."""
    if url.startswith("postgresql"):
        import psycopg

        from diarist.store.postgres import migrations

        with psycopg.connect(url, autocommit=True) as conn:
            before = migrations.MIGRATIONS.index(getattr(migrations, step.__name__))
            conn.execute("DELETE FROM diarist_schema WHERE version > %s", (before,))
        return
    from diarist.store.sqlite import migrations

    before = migrations.MIGRATIONS.index(getattr(migrations, step.__name__))
    assert before == sqlite_number - 1
    conn = sqlite3.connect(url)
    try:
        conn.execute(f"PRAGMA user_version = {before}")
        conn.commit()
    finally:
        conn.close()


def index_as(memory: Any, apps: tuple[str, ...], analyzer: Callable[[], Any], version: int) -> None:
    """The ``apps`` indexed as an earlier analyzer did (``analyzer``: a context manager that puts
    its rules in place), and every app's index stamped ``version``."""
    from diarist.store.sql import postings as sql_postings

    store, d = memory.store, memory.store.dialect
    with analyzer(), store._db.write() as cur:
        for app in apps:
            app_id = store._app_id(cur, app)
            sql_postings.rebuild(d, cur, app_id, languages="recorded")
            cur.execute(d.sql("UPDATE apps SET generation = generation + 1 WHERE id = ?"), (app_id,))
        cur.execute(f"UPDATE lex_stats SET version = {int(version)}")


def rankings(memory: Any, app: str, questions: tuple[str, ...]) -> dict[str, list[tuple[str, float]]]:
    return {q: [(h.id, h.score) for h in memory.search(q, app=app, k=5, rerank=False)] for q in questions}


def open_migrating(url: str, caplog: Any) -> tuple[Any, list[int]]:
    """The database opened (so migrated) with the warnings captured, and the ids of the apps its
    migrations re-analysed (``sql.postings.rebuild``), in order."""
    import logging

    import pytest

    from diarist.memory import Memory
    from diarist.store.sql import postings as sql_postings

    rebuilt: list[int] = []
    rebuild = sql_postings.rebuild

    def spy(d, cur, app_id, **kwargs):  # type: ignore[no-untyped-def]
        rebuilt.append(app_id)
        return rebuild(d, cur, app_id, **kwargs)

    with pytest.MonkeyPatch.context() as patch, caplog.at_level(logging.WARNING, logger="diarist"):
        patch.setattr(sql_postings, "rebuild", spy)
        return Memory(url, embedder="hash"), rebuilt
