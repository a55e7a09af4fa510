"""The store contract (``store_contract.py``) on every backend: SQLite in memory, SQLite in a
file, and the pure-Python ``DictStore`` (``memory_store.py``). A new backend is one line in
``BACKENDS``."""

from __future__ import annotations

import pytest

pytest.register_assert_rewrite("store_contract")

from memory_store import DictStore  # noqa: E402
from pg_server import postgres_backend  # noqa: E402
from store_contract import Backend, StoreContract  # noqa: E402

from diarist.store.base import Store  # noqa: E402
from diarist.store.sqlite import SQLiteStore  # noqa: E402


def sqlite_terms(store: Store) -> set[str]:
    assert isinstance(store, SQLiteStore)
    return {row[0] for row in store._db.read("SELECT term FROM lex_terms")}


def dict_terms(store: Store) -> set[str]:
    assert isinstance(store, DictStore)
    return set(store._state.terms)


#: Where SQLite departs from the contract as base.py words it (reported to the lead).
SQLITE_KNOWN: dict[str, str] = {}

BACKENDS = [
    Backend("sqlite-memory", lambda folder: SQLiteStore(":memory:"), sqlite_terms, SQLITE_KNOWN),
    Backend("sqlite-file", lambda folder: SQLiteStore(folder / "x.sqlite"), sqlite_terms, SQLITE_KNOWN),
    Backend("dict", lambda folder: DictStore(), dict_terms),
    postgres_backend(),  # a fresh schema of the session's PostgreSQL server (tests/support/pg_server.py)
]


@pytest.fixture(params=BACKENDS, ids=lambda backend: backend.name)
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.param


class TestStoreContract(StoreContract):
    pass


def test_dict_store_hands_out_the_same_term_ids_as_sqlite() -> None:
    """Beyond the contract: DictStore mirrors SQLite's term dictionary id for id (rankings would
    only differ in the last bits of a score otherwise, through the order terms are summed)."""
    from store_contract import fact, identity_script

    sqlite, memory = SQLiteStore(":memory:"), DictStore()
    try:
        for store in (sqlite, memory):
            identity_script(store)
            # The largest id dropped and handed out again (SQLite's rowid rule).
            store.put_items("gamma", [fact("f1", "zzzzz the newest term")])
            store.delete_item("gamma", "fact", "f1")
            store.put_items("gamma", [fact("f1", "yyyyy")])
        want = dict(sqlite._db.read("SELECT term, id FROM lex_terms"))
        assert want and memory._state.terms == want
    finally:
        sqlite.close()
        memory.close()
