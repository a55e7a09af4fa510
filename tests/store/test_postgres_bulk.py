"""Bulk writes of the PostgreSQL store (runs of new items: one COPY per table, postings once per
run), as tests/store/test_bulk_build.py checks SQLite's: the same rows as item-by-item writes, and
all-or-nothing."""

from __future__ import annotations

import pg_server as pg_module
import pytest

pg_module.require()  # skips without the postgres extra (fails in CI)

import psycopg  # noqa: E402
from memory_store import DictStore  # noqa: E402
from test_bulk_build import build, scores, workload  # noqa: E402

from diarist.store.postgres import PostgresStore  # noqa: E402
from diarist.store.postgres import postings as pg_postings  # noqa: E402

# Every table a write fills, without the columns that hold the time of the write.
TABLES = {
    "counters": "*", "lex_terms": "id, term", "lex_postings": "app_id, term_id, block, data",
    "lex_stats": "app_id, version, n_docs, total_len",
    "chunks": "id, app_id, session_id, fact_id, position, view, roles, first_turn, last_turn, text, date, "
              "n_tokens, lex_len, in_lexical, vector_i8, embedding::text, embed_text",
    "sessions": "id, app_id, external_id, date, metadata, content_hash", "messages": "*",
    "facts": "id, app_id, external_id, text, date, metadata, content_hash",
    "item_versions": "id, app_id, kind, external_id, date, metadata, content_hash, body",
}


def rows(url: str) -> dict[str, list[tuple]]:
    with psycopg.connect(url) as conn:
        return {t: sorted(conn.execute(f"SELECT {cols} FROM {t}").fetchall(), key=repr) for t, cols in TABLES.items()}


@pytest.mark.slow
def test_bulk_writes_the_same_rows_as_item_by_item(pg_server: pg_module.PgServer) -> None:
    urls = {name: pg_server.new_url(f"bulk_{name}_") for name in ("bulk", "single")}
    stores = {}
    for name, url in urls.items():
        stores[name] = PostgresStore(url)
        build(stores[name], one_by_one=name == "single")
    bulk = rows(urls["bulk"])
    assert max(r[0] for r in bulk["chunks"]) > 2 * 1024  # runs cross posting blocks
    assert bulk == rows(urls["single"])
    reference = DictStore()
    build(reference, one_by_one=True)
    assert scores(stores["bulk"]) == scores(stores["single"]) == scores(reference)
    for store in stores.values():
        store.close()


def test_a_bulk_call_that_fails_midway_stores_nothing(pg_server: pg_module.PgServer,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg_server.new_url("bulk_fail_")
    store = PostgresStore(url)
    calls = workload()
    for app, items, archive in calls[:2]:
        store.put_items(app, items, archive=archive)
    before = rows(url)

    def fail(self: pg_postings.Blocks, blocks: object) -> None:  # after every row and new term is in
        raise RuntimeError("disk gone")

    monkeypatch.setattr(pg_postings.Blocks, "write_blocks", fail)
    app, items, archive = calls[3]
    with pytest.raises(RuntimeError):
        store.put_items(app, items, archive=archive)
    assert rows(url) == before  # the chunk counter too: its ids are handed out again
    store.close()
