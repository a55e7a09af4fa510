"""The ``Store`` contract suite: what every storage backend must do, written against
``diarist.store.base.Store`` only (plus the shared channels, ``LexicalChannel`` and
``ExactDenseIndex``, that read a store through the contract).

How a backend runs it (see ``test_store_contract.py``)::

    from store_contract import Backend, StoreContract

    BACKENDS = [Backend("sqlite-file", lambda folder: SQLiteStore(folder / "x.sqlite")), ...]

    @pytest.fixture(params=BACKENDS, ids=lambda b: b.name)
    def backend(request):
        return request.param

    class TestStoreContract(StoreContract):
        pass

Every test gets a fresh, empty store from the ``store`` fixture (or several from
``make_store``). A backend can name tests it is known to fail (``Backend.known_failures``):
they run as strict xfails, so a fix shows up as a failure until the entry is removed.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from diarist import lexical
from diarist.embed.base import dequantize, normalise, quantize
from diarist.errors import DiaristError
from diarist.lexical import LexicalChannel, analyze
from diarist.lexical.postings import BLOCK_BITS, unpack
from diarist.store.base import (
    AppCounts,
    AppVersion,
    ChunkRow,
    Conflict,
    HIT_ROW_FIELDS,
    IndexedChunk,
    Item,
    ItemSummary,
    ItemVersion,
    KeyRecord,
    LexicalStats,
    LexicalUnavailable,
    Store,
    SyncedFile,
)
from diarist.types import Chunk, Message
from diarist.vectors import ExactDenseIndex

DIM = 8


# -- how a backend plugs in -----------------------------------------------------------------------


@dataclass(frozen=True)
class Backend:
    """A store backend under test."""

    name: str
    #: A fresh, empty store kept in the given (empty, private) folder.
    open: Callable[[Path], Store]
    #: The store's term dictionary, where a test can look at it (the contract has no reader for
    #: it); None: the tests that need it skip.
    terms: Callable[[Store], set[str]] | None = None
    #: Test name -> why this backend fails it (run as a strict xfail).
    known_failures: dict[str, str] = field(default_factory=dict)


def reference_store(folder: Path) -> Store:
    """The reference backend every other one must rank identically to."""
    from diarist.store.sqlite import SQLiteStore

    return SQLiteStore(":memory:")


# -- small hand-made records ----------------------------------------------------------------------


def vector_for(text: str) -> np.ndarray:
    """A fixed int8 vector for a text: seeded Gaussian, normalised, quantised."""
    rng = np.random.default_rng(zlib.crc32(text.encode("utf-8")))
    return quantize(normalise(rng.standard_normal((1, DIM)).astype(np.float32)))[0]


def indexed(
    text: str,
    position: int = 0,
    *,
    roles: tuple[str, ...] = ("user",),
    view: str = "all",
    first_turn: int | None = None,
    last_turn: int | None = None,
    dense: bool = True,
    lexical: bool = True,
    embed_text: str | None = None,
) -> IndexedChunk:
    chunk = Chunk(
        text=text, position=position, roles=roles,
        first_turn=position if first_turn is None else first_turn,
        last_turn=position if last_turn is None else last_turn,
        view=view, n_tokens=len(text.split()), dense=dense, lexical=lexical, embed_text=embed_text,
    )
    vector = vector_for(embed_text if embed_text is not None else text) if dense else None
    return IndexedChunk(chunk, vector, analyze(text))


def digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def session(external_id: str, *texts: str, date: str | None = "2024-03-01T10:00:00",
            metadata: dict | None = None) -> tuple[Item, list[IndexedChunk]]:
    """A session of alternating user/assistant turns, one chunk per turn."""
    messages = tuple(
        Message("user" if i % 2 == 0 else "assistant", t, f"2024-03-01T10:{i:02d}:00") for i, t in enumerate(texts)
    )
    item = Item("session", external_id, date, digest("session", external_id, *texts), dict(metadata or {}), messages)
    return item, [indexed(t, i, roles=(m.role,)) for i, (t, m) in enumerate(zip(texts, messages))]


def fact(external_id: str, text: str, date: str | None = None,
         metadata: dict | None = None) -> tuple[Item, list[IndexedChunk]]:
    item = Item("fact", external_id, date, digest("fact", external_id, text), dict(metadata or {}), text=text)
    return item, [indexed(text)]


def ids_of(store: Store, app: str) -> list[int]:
    """Every chunk id of an app that a channel can reach (dense or lexical), ascending."""
    return sorted(set(store.read_vectors(app).ids.tolist()) | set(store.doc_lengths(app).ids.tolist()))


def lex(store: Store, app: str, query: str, depth: int = 10) -> list[tuple[int, float]]:
    return LexicalChannel(store).search(app, analyze(query), depth)


def stems(*words: str) -> list[str]:
    """Query words as the index holds them (stemmed, stopwords kept)."""
    return [lexical.stem(w) for w in words]


def term_postings(store: Store, app: str, term: str) -> dict[int, int]:
    """chunk id -> term frequency, decoded from the app's posting blocks of one term (a word,
    looked up by its stem)."""
    read = store.read_postings(app, [lexical.stem(term)])
    assert len(read.blocks) <= 1
    out: dict[int, int] = {}
    for blocks in read.blocks.values():
        for number, data in blocks:
            for offset, tf in unpack(data).tolist():
                out[(number << BLOCK_BITS) + offset] = tf
    return out


def bm25(store: Store, app: str, terms: list[str]) -> dict[int, float]:
    """Okapi BM25 (Lucene idf) written out here, independently of diarist.lexical.bm25."""
    lengths = store.doc_lengths(app)
    length = dict(zip(lengths.ids.tolist(), lengths.lengths.tolist()))
    n, avgdl = len(length), sum(length.values()) / len(length)
    scores: dict[int, float] = {}
    for term in sorted(set(terms)):
        tfs = term_postings(store, app, term)
        idf = np.log1p((n - len(tfs) + 0.5) / (len(tfs) + 0.5))
        for chunk_id, tf in tfs.items():
            norm = lexical.K1 * (1 - lexical.B + lexical.B * length[chunk_id] / avgdl)
            scores[chunk_id] = scores.get(chunk_id, 0.0) + idf * tf * (lexical.K1 + 1) / (tf + norm)
    return scores


def assert_same_ranking(got: list[tuple[int, float]], want: list[tuple[int, float]], tol: float = 1e-12) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], rtol=0, atol=tol)


A, B = "alpha", "beta"


# -- the suite ------------------------------------------------------------------------------------


class StoreContract:
    """The contract tests. A test module subclasses this and provides a ``backend`` fixture."""

    @pytest.fixture(autouse=True)
    def _known_failures(self, request: pytest.FixtureRequest, backend: Backend) -> None:
        why = backend.known_failures.get(request.node.originalname)
        if why:
            request.applymarker(pytest.mark.xfail(reason=why, strict=True))

    @pytest.fixture
    def make_store(self, backend: Backend, tmp_path: Path) -> Iterator[Callable[[], Store]]:
        opened: list[Store] = []

        def make() -> Store:
            folder = tmp_path / f"store{len(opened)}"
            folder.mkdir()
            opened.append(backend.open(folder))
            return opened[-1]

        yield make
        for store in opened:
            store.close()

    @pytest.fixture
    def store(self, make_store: Callable[[], Store]) -> Store:
        return make_store()

    @pytest.fixture
    def terms(self, backend: Backend) -> Callable[[Store], set[str]]:
        if backend.terms is None:
            pytest.skip(f"{backend.name}: the term dictionary is not visible to tests")
        return backend.terms

    # -- meta -------------------------------------------------------------------------------

    def test_meta_first_writer_wins(self, store: Store) -> None:
        assert store.get_meta("embedder") is None
        assert store.claim_meta({"embedder": "hash", "dim": "8"}) == {"embedder": "hash", "dim": "8"}
        assert store.claim_meta({"embedder": "minilm", "plan": "p1"}) == {"embedder": "hash", "plan": "p1"}
        assert store.claim_meta({"embedder": "other"}) == {"embedder": "hash"}  # nothing left to claim
        assert store.get_meta("embedder") == "hash"
        assert store.get_meta("dim") == "8"
        assert store.get_meta("plan") == "p1"
        assert store.get_meta("absent") is None

    def test_meta_is_not_per_app(self, store: Store) -> None:
        store.claim_meta({"embedder": "hash"})
        store.put_items(A, [fact("f1", "anything")])
        store.delete_app(A)
        assert store.get_meta("embedder") == "hash"

    # -- apps -------------------------------------------------------------------------------

    def test_a_new_store_holds_nothing(self, store: Store) -> None:
        assert store.apps() == []
        assert store.app_version(A) is None
        assert store.delete_app(A) is False
        assert store.counts(A) is None
        assert store.content_hashes(A, "session", ["s1"]) == {}
        assert store.get_item(A, "fact", "f1") is None
        assert store.list_items(A, "session", 10, 0) == []
        assert store.delete_item(A, "session", "s1") is False
        assert store.fetch_chunks(A, [1, 2, 3]) == {}
        assert store.sample_chunk(A) is None
        batch = store.read_vectors(A)
        assert batch.version is None and len(batch.ids) == 0 and len(batch.vectors) == 0
        lengths = store.doc_lengths(A)
        assert lengths.version is None and len(lengths.ids) == 0 and len(lengths.lengths) == 0
        read = store.read_postings(A, ["anything"])
        assert (read.version, read.stats, read.blocks) == (None, None, {})
        assert LexicalChannel(store).status(A) is None
        assert lex(store, A, "anything") == []
        assert ExactDenseIndex(store).search(A, vector_for("q").astype(np.float32), 5) == []
        assert store.rebuild_lexical(A) == 0
        store.mark_lexical_stale(A)
        assert store.app_version(A) is None and store.apps() == []
        assert store.list_keys(include_revoked=True) == []

    def test_putting_nothing_creates_no_app(self, store: Store) -> None:
        store.put_items(A, [])
        assert store.app_version(A) is None
        assert store.apps() == []

    def test_apps_are_listed_by_name(self, store: Store) -> None:
        store.put_items("zeta", [fact("f1", "one")])
        store.put_items(A, [fact("f1", "two")])
        store.put_items(B, [session("s1", "three")])
        assert store.apps() == [A, B, "zeta"]
        assert store.delete_app("zeta") is True
        assert store.apps() == [A, B]

    def test_generation_moves_on_writes_purge_generation_on_removals(self, store: Store) -> None:
        store.put_items(A, [fact("f1", "first fact")])
        v1 = store.app_version(A)
        assert isinstance(v1, AppVersion)
        store.put_items(A, [fact("f2", "second fact"), session("s1", "a session")])
        v2 = store.app_version(A)
        assert v2.epoch == v1.epoch and v2.generation > v1.generation
        assert v2.purge_generation == v1.purge_generation  # nothing removed: caches may extend

        # Reads move nothing.
        for read in (lambda: store.get_item(A, "fact", "f1"), lambda: store.counts(A), lambda: store.read_vectors(A),
                     lambda: store.doc_lengths(A), lambda: store.read_postings(A, ["fact"]),
                     lambda: lex(store, A, "fact"), lambda: store.list_items(A, "fact", 5, 0),
                     lambda: store.sample_chunk(A), lambda: store.fetch_chunks(A, ids_of(store, A))):
            read()
        assert store.app_version(A) == v2

        store.put_items(A, [fact("f1", "first fact, replaced")])
        v3 = store.app_version(A)
        assert v3.generation > v2.generation and v3.purge_generation > v2.purge_generation

        assert store.delete_item(A, "fact", "f2") is True
        v4 = store.app_version(A)
        assert v4.generation > v3.generation and v4.purge_generation > v3.purge_generation

        assert store.delete_item(A, "fact", "f2") is False
        assert store.app_version(A) == v4

        store.rebuild_lexical(A)  # lengths may change: the lexical cache must reload
        v5 = store.app_version(A)
        assert v5.generation > v4.generation and v5.purge_generation == v4.purge_generation

        store.put_items(B, [fact("f1", "another app")])  # another app's writes move nothing here
        store.delete_item(B, "fact", "f1")
        assert store.app_version(A) == v5
        assert {v1.epoch, v2.epoch, v3.epoch, v4.epoch, v5.epoch} == {v1.epoch}

    def test_epoch_is_new_when_an_app_is_deleted_and_created_again(self, store: Store) -> None:
        dense = ExactDenseIndex(store)
        channel = LexicalChannel(store)
        store.put_items(A, [fact("f1", "old lantern"), fact("f2", "old harbor")])
        old = store.app_version(A)
        old_ids = ids_of(store, A)
        query = dequantize(vector_for("old lantern")[None])
        assert dense.search(A, query, 5)[0][0] == old_ids[0]  # cached now
        assert channel.search(A, ["lantern"], 5)[0][0] == old_ids[0]

        assert store.delete_app(A) is True
        assert store.app_version(A) is None
        assert store.counts(A) is None
        assert dense.search(A, query, 5) == [] and channel.search(A, ["lantern"], 5) == []
        assert store.delete_app(A) is False

        store.put_items(A, [fact("g1", "new meadow"), fact("g2", "new copper")])
        new = store.app_version(A)
        assert new is not None and new.epoch != old.epoch
        new_ids = ids_of(store, A)
        assert min(new_ids) > max(old_ids)  # never handed out again
        assert store.get_item(A, "fact", "f1") is None
        assert store.counts(A) == AppCounts(sessions=0, messages=0, facts=2, chunks=2)
        assert {i for i, _ in dense.search(A, query, 5)} == set(new_ids)  # no stale cache rows
        assert channel.search(A, ["lantern"], 5) == []
        assert store.read_postings(A, ["lantern", "old"]).blocks == {}
        assert channel.search(A, ["meadow"], 5)[0][0] == new_ids[0]

    def test_delete_app_leaves_other_apps_alone(self, store: Store) -> None:
        store.put_items(A, [session("s1", "shared words here", "alpha only")])
        store.put_items(B, [session("s1", "shared words there", "beta only")])
        before = (store.app_version(B), store.counts(B), lex(store, B, "shared words"), ids_of(store, B))
        assert store.delete_app(A) is True
        assert store.apps() == [B]
        assert (store.app_version(B), store.counts(B), lex(store, B, "shared words"), ids_of(store, B)) == before
        assert LexicalChannel(store).status(B) is None

    def test_chunk_ids_grow_and_are_never_handed_out_again(self, store: Store) -> None:
        store.put_items(A, [session("s1", "one", "two", "three")])
        first = ids_of(store, A)
        assert first == sorted(first) and len(set(first)) == 3
        store.delete_item(A, "session", "s1")
        store.put_items(A, [fact("f1", "four")])
        second = ids_of(store, A)
        assert min(second) > max(first)
        store.put_items(B, [fact("f1", "five")])
        store.put_items(A, [fact("f2", "six")])
        third = ids_of(store, A)
        assert third[:-1] == second and third[-1] > max(ids_of(store, B)) > max(second)

    # -- items ------------------------------------------------------------------------------

    def test_session_round_trip(self, store: Store) -> None:
        item, chunks = session("s1", "I planted tulips", "Lovely, which colour?", "Red ones",
                               metadata={"topic": "garden", "n": 3, "tags": ["a", "b"], "nested": {"x": None}})
        store.put_items(A, [(item, chunks)])
        got = store.get_item(A, "session", "s1")
        assert got == item
        assert got.messages[1] == Message("assistant", "Lovely, which colour?", "2024-03-01T10:01:00")
        assert got.text is None
        assert got.to_dict()["session_id"] == "s1"

    def test_fact_round_trip(self, store: Store) -> None:
        item, chunks = fact("f1", "The user is allergic to peanuts", date="2024-05-02", metadata={"source": "chat"})
        store.put_items(A, [(item, chunks)])
        got = store.get_item(A, "fact", "f1")
        assert got == item
        assert got.messages == () and got.text == "The user is allergic to peanuts"
        assert store.get_item(A, "session", "f1") is None

    def test_sessions_and_facts_are_one_kind_of_item_with_separate_ids(self, store: Store) -> None:
        s, f = session("x", "a session called x"), fact("x", "a fact called x")
        store.put_items(A, [s, f])
        assert store.get_item(A, "session", "x") == s[0]
        assert store.get_item(A, "fact", "x") == f[0]
        assert store.content_hashes(A, "session", ["x"]) == {"x": s[0].content_hash}
        assert store.content_hashes(A, "fact", ["x"]) == {"x": f[0].content_hash}
        assert store.counts(A) == AppCounts(sessions=1, messages=1, facts=1, chunks=2)
        assert store.delete_item(A, "fact", "x") is True
        assert store.get_item(A, "session", "x") == s[0]
        assert store.counts(A) == AppCounts(sessions=1, messages=1, facts=0, chunks=1)

    def test_unknown_kinds_are_refused(self, store: Store) -> None:
        note = Item("note", "n1", None, digest("n1"), text="a note")
        with pytest.raises(ValueError):
            store.put_items(A, [(note, [indexed("a note")])])
        assert store.app_version(A) is None
        store.put_items(A, [fact("f1", "a fact")])
        for call in (
            lambda: store.get_item(A, "note", "n1"),
            lambda: store.list_items(A, "note", 10, 0),
            lambda: store.content_hashes(A, "note", ["n1"]),
            lambda: store.delete_item(A, "note", "n1"),
        ):
            with pytest.raises(ValueError):
                call()

    def test_put_replaces_the_item_with_the_same_kind_and_id(self, store: Store) -> None:
        v1 = session("s1", "apple orchard visit", "pears too")
        store.put_items(A, [v1, fact("f1", "unrelated fact")])
        old_ids = [i for i, row in store.fetch_chunks(A, ids_of(store, A)).items() if row.session_id == "s1"]
        assert len(old_ids) == 2
        v2 = session("s1", "grape harvest")
        store.put_items(A, [v2])
        assert store.get_item(A, "session", "s1") == v2[0]
        assert store.content_hashes(A, "session", ["s1"]) == {"s1": v2[0].content_hash}
        assert store.counts(A) == AppCounts(sessions=1, messages=1, facts=1, chunks=2)
        assert store.fetch_chunks(A, old_ids) == {}
        new_ids = [i for i, row in store.fetch_chunks(A, ids_of(store, A)).items() if row.session_id == "s1"]
        assert len(new_ids) == 1 and new_ids[0] > max(old_ids)
        assert lex(store, A, "apple") == [] and store.read_postings(A, ["apple", "pears"]).blocks == {}
        assert [i for i, _ in lex(store, A, "grape")] == new_ids
        block, offset = divmod(new_ids[0], 1 << BLOCK_BITS)
        held = store.read_posting_block(A, lexical.stem("grape"), block)
        assert held is not None and offset in unpack(held)[:, 0]
        assert store.read_posting_block(A, lexical.stem("apple"), block) is None
        assert store.read_posting_block(A, lexical.stem("grape"), block + 1) is None
        assert LexicalChannel(store).status(A) is None
        assert [s.external_id for s in store.list_items(A, "session", 10, 0)] == ["s1"]

        # The same (kind, id) twice in one call: the later one wins.
        v3, v4 = session("s2", "draft"), session("s2", "final words")
        store.put_items(A, [v3, v4])
        assert store.get_item(A, "session", "s2") == v4[0]
        assert store.counts(A).sessions == 2 and lex(store, A, "draft") == []
        assert LexicalChannel(store).status(A) is None

    def test_content_hashes(self, store: Store) -> None:
        items = [fact(f"f{i}", f"fact number {i}") for i in range(3)]
        store.put_items(A, items)
        assert store.content_hashes(A, "fact", ["f0", "f2", "nope"]) == {
            "f0": items[0][0].content_hash, "f2": items[2][0].content_hash,
        }
        assert store.content_hashes(A, "fact", []) == {}
        assert store.content_hashes(A, "session", ["f0"]) == {}
        assert store.content_hashes(B, "fact", ["f0"]) == {}

    def test_expect_is_a_compare_and_swap(self, store: Store) -> None:
        first = fact("f1", "version one")
        store.put_items(A, [first], expect={("fact", "f1"): None})  # absent, as read
        assert store.get_item(A, "fact", "f1") == first[0]
        version, counts, ids = store.app_version(A), store.counts(A), ids_of(store, A)

        def unchanged() -> None:
            assert store.get_item(A, "fact", "f1") == first[0]
            assert store.get_item(A, "fact", "f2") is None
            assert (store.app_version(A), store.counts(A), ids_of(store, A)) == (version, counts, ids)
            assert lex(store, A, "two") == [] and LexicalChannel(store).status(A) is None

        with pytest.raises(Conflict):  # it is there now
            store.put_items(A, [fact("f1", "version two")], expect={("fact", "f1"): None})
        unchanged()
        with pytest.raises(Conflict):  # another hash than the one stored
            store.put_items(A, [fact("f1", "version two")], expect={("fact", "f1"): "not the hash"})
        unchanged()
        with pytest.raises(Conflict):  # one expectation of several fails: nothing at all is written
            store.put_items(A, [fact("f2", "fact two"), fact("f1", "version two")],
                            expect={("fact", "f2"): None, ("fact", "f1"): digest("stale")})
        unchanged()
        with pytest.raises(Conflict):  # an expectation about an item the call does not write
            store.put_items(A, [fact("f2", "fact two")], expect={("fact", "f1"): None})
        unchanged()
        with pytest.raises(Conflict):  # a fresh app: the app is not created either
            store.put_items(B, [fact("f1", "x")], expect={("fact", "f1"): "some hash"})
        assert store.app_version(B) is None and store.apps() == [A]

        second = fact("f1", "version two")
        store.put_items(A, [second], expect={("fact", "f1"): first[0].content_hash, ("session", "f1"): None})
        assert store.get_item(A, "fact", "f1") == second[0]
        assert [i for i, _ in lex(store, A, "two")] == ids_of(store, A)

    def test_a_conflict_inside_a_transaction_writes_nothing(self, store: Store) -> None:
        with store.transaction():
            store.put_items(A, [fact("f1", "lands")])
            with pytest.raises(Conflict):
                store.put_items(B, [fact("f1", "refused")], expect={("fact", "f1"): "some hash"})
        assert store.get_item(A, "fact", "f1") is not None
        assert store.app_version(B) is None
        assert store.apps() == [A]

    def test_delete_item(self, store: Store) -> None:
        store.put_items(A, [session("s1", "keep me"), session("s2", "remove me", "and me")])
        doomed = [i for i, r in store.fetch_chunks(A, ids_of(store, A)).items() if r.session_id == "s2"]
        assert store.delete_item(A, "session", "s2") is True
        assert store.get_item(A, "session", "s2") is None
        assert store.content_hashes(A, "session", ["s1", "s2"]).keys() == {"s1"}
        assert [s.external_id for s in store.list_items(A, "session", 10, 0)] == ["s1"]
        assert store.counts(A) == AppCounts(sessions=1, messages=1, facts=0, chunks=1)
        assert store.fetch_chunks(A, doomed) == {}
        assert not set(doomed) & set(ids_of(store, A))
        assert lex(store, A, "remove") == []
        assert store.delete_item(A, "session", "s2") is False
        assert store.delete_item(A, "fact", "s1") is False
        assert store.delete_item(B, "session", "s1") is False
        assert store.get_item(A, "session", "s1") is not None
        assert LexicalChannel(store).status(A) is None

    def test_line_vectors_are_found_by_digest_inside_the_app_and_go_with_their_chunks(self, store: Store) -> None:
        if not store.keeps_lines:
            pytest.skip(f"{type(store).__name__} keeps no line vectors")
        rng = np.random.default_rng(7)
        vec = {name: rng.standard_normal(DIM).astype(np.float32) for name in ("a", "b", "c")}
        kept, doomed = session("s1", "keep me"), session("s2", "remove me", "and me")
        kept[1][0].lines = [(b"a" * 16, vec["a"])]
        doomed[1][0].lines = [(b"b" * 16, vec["b"]), (b"c" * 16, vec["c"])]
        store.put_items(A, [kept, doomed])
        found = store.line_vectors(A, [b"a" * 16, b"b" * 16, b"c" * 16, b"x" * 16])
        assert found.keys() == {b"a" * 16, b"b" * 16, b"c" * 16}
        assert all(np.array_equal(found[d * 16], vec[d.decode()]) for d in (b"a", b"b", b"c"))  # byte for byte
        assert store.line_vectors(B, [b"a" * 16]) == {}  # another app's lines are not found
        assert store.delete_item(A, "session", "s2") is True
        assert store.line_vectors(A, [b"a" * 16, b"b" * 16, b"c" * 16]).keys() == {b"a" * 16}
        # Chunks stored without lines are listed and get theirs once; a chunk of another app is passed over.
        store.put_items(A, [session("s3", "later")])
        (late,) = [i for i, r in store.fetch_chunks(A, ids_of(store, A)).items() if r.session_id == "s3"]
        assert store.chunks_without_lines(A, 0, 10) == [(late, "later")]
        store.put_items(B, [session("s4", "elsewhere")])
        (other,) = ids_of(store, B)
        assert store.put_line_vectors(A, [(late, [(b"d" * 16, vec["a"])]), (other, [(b"e" * 16, vec["b"])])]) == 1
        assert store.put_line_vectors(A, [(late, [(b"f" * 16, vec["c"])])]) == 0  # it has its lines
        assert store.chunks_without_lines(A, 0, 10) == [] and store.line_vectors(B, [b"e" * 16]) == {}
        assert store.delete_app(A) and store.line_vectors(A, [b"a" * 16, b"d" * 16]) == {}

    def test_sentence_vectors_are_found_by_chunk_inside_the_app_and_go_with_their_chunks(self, store: Store) -> None:
        if not store.keeps_sentences:
            pytest.skip(f"{type(store).__name__} keeps no sentence vectors")
        rng = np.random.default_rng(8)
        vec = [rng.standard_normal(DIM).astype(np.float32) for _ in range(4)]
        kept, doomed, long = fact("f1", "One. Two."), fact("f2", "Three. Four."), fact("f3", "none")
        kept[1][0].sentences = [vec[0], vec[1]]
        doomed[1][0].sentences = [vec[2]]
        store.put_items(A, [kept, doomed, long])
        store.put_items(B, [fact("f9", "elsewhere")])
        ids = {r.fact_id: i for i, r in store.fetch_chunks(A, ids_of(store, A)).items()}
        found = store.sentence_vectors(A, [*ids.values(), 10**9])
        assert found.keys() == {ids["f1"], ids["f2"]}  # a chunk without sentences is left out
        assert sorted(map(bytes, found[ids["f1"]])) == sorted(v.tobytes() for v in vec[:2])  # byte for byte
        assert found[ids["f1"]].dtype == np.float32 and found[ids["f1"]].shape == (2, DIM)
        assert store.sentence_vectors(B, list(ids.values())) == {}  # another app's are not found
        assert store.delete_item(A, "fact", "f2") is True
        assert store.sentence_vectors(A, list(ids.values())).keys() == {ids["f1"]}
        # Chunks stored without them get theirs once; a chunk of another app is passed over.
        (other,) = ids_of(store, B)
        assert store.put_sentence_vectors(A, [(ids["f3"], [vec[3]]), (other, [vec[3]])]) == 1
        assert store.put_sentence_vectors(A, [(ids["f3"], [vec[0]])]) == 0  # it has its sentences
        assert store.sentence_vectors(A, [ids["f3"]])[ids["f3"]].tobytes() == vec[3].tobytes()
        assert store.sentence_vectors(B, [other]) == {}
        assert store.sentences_indexed(A)  # an app stored since they were kept needs no reindex
        store.mark_sentences_indexed(A, False)
        assert not store.sentences_indexed(A) and store.sentences_indexed(B)
        assert store.delete_app(A) and store.sentence_vectors(A, list(ids.values())) == {}

    def test_list_items_pages_in_the_order_last_stored(self, store: Store) -> None:
        store.put_items(A, [session("s3", "c", date="2024-01-03")])
        store.put_items(A, [session("s1", "a", date="2024-01-01"), fact("f1", "a fact"),
                            session("s2", "b", date=None)])
        store.put_items(A, [session("s0", "z", date="2023-12-31"), session("s4", "e", date="2024-01-05")])
        page = lambda limit, offset: [s.external_id for s in store.list_items(A, "session", limit, offset)]  # noqa: E731
        assert page(2, 0) == ["s3", "s1"]
        assert page(2, 2) == ["s2", "s0"]
        assert page(2, 4) == ["s4"]
        assert page(2, 5) == []
        assert page(10, 0) == ["s3", "s1", "s2", "s0", "s4"]
        assert store.list_items(A, "session", 2, 0) == [
            ItemSummary("session", "s3", "2024-01-03"), ItemSummary("session", "s1", "2024-01-01"),
        ]
        assert store.list_items(A, "session", 1, 2) == [ItemSummary("session", "s2", None)]
        assert store.list_items(A, "fact", 10, 0) == [ItemSummary("fact", "f1", None)]
        # Deleted and stored again: it is stored first now, last in the list.
        store.delete_item(A, "session", "s1")
        store.put_items(A, [session("s1", "a again")])
        assert page(10, 0) == ["s3", "s2", "s0", "s4", "s1"]

    def test_list_items_moves_a_replaced_item_to_the_end(self, store: Store) -> None:
        store.put_items(A, [session("s1", "a"), session("s2", "b"), session("s3", "c")])
        store.put_items(A, [session("s1", "a, replaced")])
        assert [s.external_id for s in store.list_items(A, "session", 10, 0)] == ["s2", "s3", "s1"]

    def test_list_items_newest_first(self, store: Store) -> None:
        store.put_items(A, [session("s1", "a"), session("s2", "b"), session("s3", "c")])
        page = lambda limit, offset: [s.external_id for s in store.list_items(A, "session", limit, offset, newest_first=True)]  # noqa: E731
        assert page(2, 0) == ["s3", "s2"] and page(2, 2) == ["s1"]

    def test_archive_keeps_versions_and_a_delete_forgets_them(self, store: Store) -> None:
        first = session("s1", "the first words", metadata={"v": 1})
        store.put_items(A, [first])
        store.put_items(A, [session("s1", "the second words", metadata={"v": 2})], archive=True)
        store.put_items(A, [session("s1", "the third words", metadata={"v": 3})])  # a replace that keeps nothing
        history = store.item_history(A, "session", "s1")
        assert [v.item.metadata for v in history] == [{"v": 1}] and history[0].item == first[0]
        assert history[0].replaced_at
        store.put_items(A, [fact("f1", "old text")])
        store.put_items(A, [fact("f1", "new text")], archive=True)
        assert [v.item.text for v in store.item_history(A, "fact", "f1")] == ["old text"]
        assert store.item_history(B, "fact", "f1") == [] and store.item_history(A, "session", "nope") == []
        assert store.delete_item(A, "session", "s1")
        assert store.item_history(A, "session", "s1") == []
        store.delete_app(A)
        assert store.item_history(A, "fact", "f1") == []

    def test_put_history_appends_versions_as_given(self, store: Store) -> None:
        from diarist.errors import NotFound

        store.put_items(A, [session("s1", "now")])
        old = [ItemVersion("2024-01-01T00:00:00+00:00", session("s1", "first", metadata={"v": 1})[0]),
               ItemVersion("2024-02-01T00:00:00+00:00", session("s1", "second", metadata={"v": 2})[0])]
        store.put_history(A, "session", "s1", old)
        assert store.item_history(A, "session", "s1") == old  # replaced_at kept, oldest first
        store.put_items(A, [session("s1", "later")], archive=True)
        history = store.item_history(A, "session", "s1")
        assert history[:2] == old and len(history) == 3  # a later archive goes after them
        with pytest.raises(NotFound):
            store.put_history(A, "session", "absent", [ItemVersion(old[0].replaced_at, session("absent", "x")[0])])
        with pytest.raises(NotFound):
            store.put_history(B, "session", "s1", old)
        with pytest.raises(ValueError):  # a version of another item: nothing written
            store.put_history(A, "session", "s1", [old[0], ItemVersion("2024-03-01T00:00:00+00:00", fact("s1", "x")[0])])
        assert len(store.item_history(A, "session", "s1")) == 3
        assert store.delete_item(A, "session", "s1") and store.item_history(A, "session", "s1") == []

    def test_chunk_ids_where_filters_by_metadata_as_json(self, store: Store) -> None:
        store.put_items(A, [session("s1", "one", "two", metadata={"source": "chat", "n": 1, "ok": True}),
                            fact("f1", "three", metadata={"source": "chat", "n": "1"}),
                            fact("f2", "four", metadata={"source": "notes", "nested": {"a": [1, 2]}})])
        store.put_items(B, [fact("g1", "five", metadata={"source": "chat"})])
        by_item = {}
        for cid, row in store.fetch_chunks(A, ids_of(store, A)).items():
            by_item.setdefault(row.session_id or row.fact_id, []).append(cid)
            assert row.metadata == {"s1": {"source": "chat", "n": 1, "ok": True}, "f1": {"source": "chat", "n": "1"},
                                    "f2": {"source": "notes", "nested": {"a": [1, 2]}}}[row.session_id or row.fact_id]
        where = lambda **kw: store.chunk_ids_where(A, kw).tolist()  # noqa: E731
        assert where(source="chat") == sorted(by_item["s1"] + by_item["f1"])
        assert where(n=1) == by_item["s1"] and where(n="1") == by_item["f1"]  # 1 is not "1"
        assert where(ok=True) == by_item["s1"] and where(ok=1) == [] and where(ok=False) == []
        assert where(nested={"a": [1, 2]}) == by_item["f2"]
        assert where(source="chat", n=1) == by_item["s1"] and where(missing=None) == []
        assert store.chunk_ids_where("nobody", {"source": "chat"}).tolist() == []

    def test_counts(self, store: Store) -> None:
        item, chunks = session("s1", "one", "two", "three")
        chunks.append(indexed("an extra vector-only chunk", 3, lexical=False))
        chunks.append(indexed("an extra lexical-only chunk", 4, dense=False))
        store.put_items(A, [(item, chunks), session("s2", "four", "five"), fact("f1", "six")])
        assert store.counts(A) == AppCounts(sessions=2, messages=5, facts=1, chunks=8)
        store.put_items(B, [fact("f1", "elsewhere")])
        assert store.counts(B) == AppCounts(sessions=0, messages=0, facts=1, chunks=1)
        store.delete_item(A, "session", "s1")
        assert store.counts(A) == AppCounts(sessions=1, messages=2, facts=1, chunks=3)

    # -- chunks -----------------------------------------------------------------------------

    def test_fetch_chunks(self, store: Store) -> None:
        item = Item("session", "s1", "2024-02-02", digest("s1"), {},
                    (Message("user", "hello there"), Message("assistant", "hi, how can I help")))
        chunks = [
            indexed("hello there\nhi, how can I help", 0, roles=("user", "assistant"), first_turn=0, last_turn=1),
            indexed("hello there", 1, roles=("user",), view="user", first_turn=0, last_turn=0),
        ]
        store.put_items(A, [(item, chunks), fact("f1", "a fact", date="2024-02-03")])
        s_ids = ids_of(store, A)
        got = store.fetch_chunks(A, s_ids + [10_000])
        assert set(got) == set(s_ids)
        assert got[s_ids[0]] == ChunkRow(s_ids[0], "hello there\nhi, how can I help", "s1", None, "2024-02-02",
                                         ("user", "assistant"), "all", 0, 0, 1)
        assert got[s_ids[1]] == ChunkRow(s_ids[1], "hello there", "s1", None, "2024-02-02",
                                         ("user",), "user", 1, 0, 0)
        assert got[s_ids[2]] == ChunkRow(s_ids[2], "a fact", None, "f1", "2024-02-03", ("user",), "all", 0, 0, 0)
        assert store.fetch_chunks(A, [s_ids[2]]).keys() == {s_ids[2]}
        assert store.fetch_chunks(A, []) == {}
        assert store.fetch_chunks(B, s_ids) == {}
        store.put_items(B, [fact("fb", "another app")])  # rows are looked up by id: the app still decides
        assert store.fetch_chunks(B, s_ids) == {} and set(store.fetch_chunks(A, s_ids)) == set(s_ids)
        store.delete_item(A, "fact", "f1")
        assert set(store.fetch_chunks(A, s_ids)) == set(s_ids[:2])

    def test_hit_rows_are_fetch_chunks_rows_as_the_read_path_reads_them(self, store: Store) -> None:
        """``hit_rows``: the rows of ``fetch_chunks`` as ``HitRow`` tuples (fields in
        ``HIT_ROW_FIELDS``' order; roles joined by ",", metadata as JSON text), with the same
        rules: this app's chunks only, deleted and unknown ids left out."""
        item = Item("session", "s1", "2024-02-02", digest("s1"), {"title": "Trip", "n": [1, None]},
                    (Message("user", "hello there"), Message("assistant", "hi, how can I help")))
        chunks = [
            indexed("hello there\nhi, how can I help", 0, roles=("user", "assistant"), first_turn=0, last_turn=1),
            indexed("hello there", 1, roles=("user",), view="user", first_turn=0, last_turn=0),
        ]
        store.put_items(A, [(item, chunks), fact("f1", "a fact", date="2024-02-03")])
        store.put_items(B, [fact("fb", "another app", metadata={"k": "v"})])
        s_ids, b_ids = ids_of(store, A), ids_of(store, B)
        got = store.hit_rows(A, s_ids + b_ids + [10_000])
        assert set(got) == set(s_ids)
        for cid, row in got.items():
            assert type(row) is tuple and len(row) == len(HIT_ROW_FIELDS)
            fields = dict(zip(HIT_ROW_FIELDS, row))
            assert fields["metadata"] is None or isinstance(fields["metadata"], str)
            metadata = json.loads(fields["metadata"]) if fields["metadata"] else {}
            roles = tuple(fields["roles"].split(",")) if fields["roles"] else ()
            as_chunk_row = ChunkRow(fields["chunk_id"], fields["text"], fields["session_id"], fields["fact_id"],
                                    fields["date"], roles, fields["view"], 0, fields["first_turn"],
                                    fields["last_turn"], metadata)
            assert as_chunk_row == store.fetch_chunks(A, [cid])[cid]._replace(position=0)
        first = dict(zip(HIT_ROW_FIELDS, got[s_ids[0]]))
        assert json.loads(first.pop("metadata")) == {"title": "Trip", "n": [1, None]}
        assert first == {"chunk_id": s_ids[0], "text": "hello there\nhi, how can I help", "session_id": "s1",
                         "fact_id": None, "date": "2024-02-02", "roles": "user,assistant", "view": "all",
                         "first_turn": 0, "last_turn": 1}
        assert got[s_ids[2]][2:4] == (None, "f1") and got[s_ids[2]][9] in (None, "{}")
        assert store.hit_rows(A, []) == {} and store.hit_rows(B, s_ids) == {} and store.hit_rows("nowhere", s_ids) == {}
        assert set(store.hit_rows(B, b_ids)) == set(b_ids)
        store.delete_item(A, "fact", "f1")
        assert set(store.hit_rows(A, s_ids)) == set(s_ids[:2])

    def test_sample_chunk_is_the_most_recent_as_stored(self, store: Store) -> None:
        item, chunks = fact("f1", "the user said hello and more")
        chunks[0] = indexed("the user said hello and more", embed_text="hello")
        store.put_items(A, [session("s1", "older turn"), (item, chunks)])
        sample = store.sample_chunk(A)
        assert sample.chunk_id == max(ids_of(store, A))
        assert sample.text == "the user said hello and more"
        assert sample.vector.dtype == np.int8 and np.array_equal(sample.vector, vector_for("hello"))
        assert sample.lexical is True and sample.embed_text == "hello"

        plain = Item("fact", "f2", None, digest("f2"), text="stored only")
        store.put_items(A, [(plain, [indexed("stored only", dense=False, lexical=False)])])
        sample = store.sample_chunk(A)
        assert sample.text == "stored only" and sample.vector is None
        assert sample.lexical is False and sample.embed_text is None
        store.delete_item(A, "fact", "f2")
        assert store.sample_chunk(A).text == "the user said hello and more"
        store.put_items(B, [fact("g1", "later, elsewhere")])
        assert store.sample_chunk(A).text == "the user said hello and more"

    def test_item_chunks_are_what_put_items_was_given(self, store: Store) -> None:
        item = Item("session", "s1", "2024-02-02", digest("s1"), {},
                    (Message("user", "hello there"), Message("assistant", "hi, how can I help")))
        chunks = [
            indexed("hello there\nhi, how can I help", 0, roles=("user", "assistant"), first_turn=0, last_turn=1),
            indexed("hello there", 1, roles=("user",), view="user", first_turn=0, last_turn=0, embed_text="hello"),
            indexed("not embedded", 2, roles=(), dense=False),
            indexed("not indexed", 3, lexical=False),
        ]
        store.put_items(A, [fact("f0", "before"), (item, chunks), fact("f1", "after")])
        got = store.item_chunks(A, "session", "s1")
        assert [g.chunk for g in got] == [c.chunk for c in chunks]
        for g, c in zip(got, chunks):
            if c.chunk.dense:
                assert g.vector.dtype == np.int8 and np.array_equal(g.vector, c.vector)
            else:
                assert g.vector is None
        ids = [g.chunk_id for g in got]
        assert ids == sorted(ids) and set(ids) == set(store.fetch_chunks(A, ids))
        assert max(g.chunk_id for g in store.item_chunks(A, "fact", "f0")) < ids[0]
        assert min(g.chunk_id for g in store.item_chunks(A, "fact", "f1")) > ids[-1]
        # What it gives back is what put_items takes: a copy ranks as the original does.
        copy = [IndexedChunk(g.chunk, g.vector, analyze(g.chunk.text) if g.chunk.lexical else []) for g in got]
        store.put_items(B, [(item, copy)])
        assert [g.chunk for g in store.item_chunks(B, "session", "s1")] == [c.chunk for c in chunks]
        assert store.item_chunks(A, "session", "nope") == [] and store.item_chunks("gamma", "session", "s1") == []
        assert store.item_chunks(A, "fact", "s1") == []
        with pytest.raises(ValueError):
            store.item_chunks(A, "note", "s1")
        store.delete_item(A, "session", "s1")
        assert store.item_chunks(A, "session", "s1") == []

    # -- the dense channel's storage -----------------------------------------------------------

    def test_read_vectors(self, store: Store) -> None:
        item, chunks = session("s1", "one", "two", "three")
        chunks[1] = indexed("two", 1, dense=False)
        store.put_items(A, [(item, chunks)])
        batch = store.read_vectors(A)
        assert batch.version == store.app_version(A)
        assert batch.ids.dtype == np.int64 and batch.vectors.dtype == np.int8
        assert batch.vectors.shape == (2, DIM)
        assert batch.ids.tolist() == sorted(batch.ids.tolist())
        rows = store.fetch_chunks(A, batch.ids.tolist())
        assert [rows[i].text for i in batch.ids.tolist()] == ["one", "three"]
        assert np.array_equal(batch.vectors, np.stack([vector_for("one"), vector_for("three")]))  # int8 round trip

        first, last = batch.ids.tolist()
        after = store.read_vectors(A, after_id=first)
        assert after.ids.tolist() == [last] and np.array_equal(after.vectors[0], vector_for("three"))
        empty = store.read_vectors(A, after_id=last)
        assert empty.version == batch.version and len(empty.ids) == 0 and len(empty.vectors) == 0

        store.put_items(A, [fact("f1", "four"), fact("f2", "five")])
        more = store.read_vectors(A, after_id=last)
        assert more.version == store.app_version(A) and more.version.generation > batch.version.generation
        assert len(more.ids) == 2 and more.ids.min() > last
        assert np.array_equal(more.vectors, np.stack([vector_for("four"), vector_for("five")]))
        assert store.read_vectors(A).ids.tolist() == [first, last, *more.ids.tolist()]

    def test_dense_channel_over_the_store(self, store: Store) -> None:
        dense = ExactDenseIndex(store)
        texts = ["garden river", "lantern violin", "harbor meadow", "copper falcon"]
        store.put_items(A, [fact(f"f{i}", t) for i, t in enumerate(texts)])
        ids = ids_of(store, A)
        for chunk_id, text in zip(ids, texts):
            top = dense.search(A, dequantize(vector_for(text)[None]), 2)
            assert top[0][0] == chunk_id and abs(top[0][1] - 1.0) < 1e-5 and top[1][1] < top[0][1]
        both = dense.search(A, dequantize(np.stack([vector_for(texts[0]), vector_for(texts[3])])), 2)
        assert {i for i, _ in both} == {ids[0], ids[3]}  # each chunk keeps its best score
        store.delete_item(A, "fact", "f0")  # purge: the cached matrix is rebuilt
        assert ids[0] not in {i for i, _ in dense.search(A, dequantize(vector_for(texts[0])[None]), 10)}
        store.put_items(A, [fact("f9", "pepper orchard")])  # no purge: the cached matrix is extended
        hits = dense.search(A, dequantize(vector_for("pepper orchard")[None]), 10)
        assert hits[0][0] == max(ids_of(store, A)) and len(hits) == 4
        assert {i for i, _ in hits} == set(ids_of(store, A))

    # -- the lexical channel's storage ---------------------------------------------------------

    def test_doc_lengths(self, store: Store) -> None:
        texts = ["apple apple orchard", "the quick brown fox jumps", "a"]
        item, chunks = session("s1", *texts)
        chunks.append(indexed("not in the lexical channel", 3, lexical=False))
        store.put_items(A, [(item, chunks)])
        lengths = store.doc_lengths(A)
        assert lengths.version == store.app_version(A)
        assert lengths.ids.dtype == np.int64 and lengths.lengths.dtype == np.float64
        assert len(lengths.ids) == 3 and lengths.ids.tolist() == sorted(lengths.ids.tolist())
        assert lengths.lengths.tolist() == [float(len(analyze(t))) for t in texts]  # [3, 4, 0]
        assert set(lengths.ids.tolist()) < set(store.read_vectors(A).ids.tolist())

    def test_read_postings(self, store: Store) -> None:
        store.put_items(A, [session("s1", "apple apple orchard", "orchard of pears"), fact("f1", "apple")])
        ids = ids_of(store, A)
        assert term_postings(store, A, "apple") == {ids[0]: 2, ids[2]: 1}
        assert term_postings(store, A, "orchard") == {ids[0]: 1, ids[1]: 1}
        read = store.read_postings(A, stems("apple", "pears", "nothing"))
        assert read.version == store.app_version(A)
        assert read.stats == LexicalStats(lexical.VERSION, 3, 3 + 2 + 1)
        assert len(read.blocks) == 2  # term id -> blocks; unknown terms are left out
        assert all(number == ids[0] >> BLOCK_BITS for blocks in read.blocks.values() for number, _ in blocks)
        nothing = store.read_postings(A, [])
        assert nothing.blocks == {} and nothing.stats == read.stats and nothing.version == read.version

    def test_lexical_channel_ranks_by_bm25(self, store: Store) -> None:
        texts = ["apple apple orchard", "apple orchard harvest festival", "apple pie", "banana bread"]
        store.put_items(A, [fact(f"f{i}", t) for i, t in enumerate(texts)])
        ids = ids_of(store, A)
        channel = LexicalChannel(store)
        assert channel.status(A) is None
        hits = channel.search(A, stems("apple"), 10)
        assert [i for i, _ in hits] == [ids[0], ids[2], ids[1]]  # tf 2; then the shorter of tf 1
        assert all(s > 0 for _, s in hits) and hits == sorted(hits, key=lambda h: -h[1])
        expected = bm25(store, A, ["apple"])
        assert_same_ranking(hits, sorted(expected.items(), key=lambda kv: (-kv[1], kv[0])))
        both = channel.search(A, stems("apple", "orchard", "apple"), 10)
        expected = bm25(store, A, ["apple", "orchard"])
        assert_same_ranking(both, sorted(expected.items(), key=lambda kv: (-kv[1], kv[0])))
        assert [i for i, _ in channel.search(A, stems("orchard", "apple"), 1)] == [ids[0]]
        assert channel.search(A, stems("bread"), 10)[0][0] == ids[3]
        assert channel.search(A, stems("nothing"), 10) == [] and channel.search(A, [], 10) == []

    def test_stale_index_is_refused_until_rebuilt(self, store: Store) -> None:
        item, chunks = session("s1", "apple apple orchard", "orchard of pears", "the apple pie")
        chunks.append(indexed("apple without postings", 3, lexical=False))
        store.put_items(A, [(item, chunks), fact("f1", "banana apple")])
        channel = LexicalChannel(store)
        before = channel.search(A, stems("apple", "orchard"), 10)
        assert len(before) == 4

        store.mark_lexical_stale(A)
        assert "never built" in channel.status(A)
        assert store.read_postings(A, stems("apple")).stats is None
        with pytest.raises(LexicalUnavailable, match="never built"):
            channel.search(A, stems("apple"), 10)
        store.put_items(A, [fact("f2", "apple tart")])  # writes keep a stale index stale
        store.delete_item(A, "fact", "f2")
        assert "never built" in channel.status(A)

        assert store.rebuild_lexical(A) == 4  # the chunk without postings stays without
        assert channel.status(A) is None
        assert store.read_postings(A, []).stats == LexicalStats(lexical.VERSION, 4, 3 + 2 + 2 + 2)
        assert_same_ranking(channel.search(A, stems("apple", "orchard"), 10), before)
        assert channel.search(A, stems("tart"), 10) == [] and store.read_postings(A, stems("tart")).blocks == {}

    def test_rebuild_reads_the_stored_text_with_the_one_analyzer(self, store: Store) -> None:
        item, chunks = fact("f1", "the cat")
        chunks[0].terms = ["the", "cat", "wrong"]  # terms that disagree with analyze(text)...
        store.put_items(A, [(item, chunks), fact("f2", "a dog and the bird")])
        ids = ids_of(store, A)
        channel = LexicalChannel(store)
        assert store.rebuild_lexical(A) == 2  # ...are re-derived from the stored text
        assert channel.status(A) is None
        assert store.doc_lengths(A).lengths.tolist() == [1.0, 2.0]
        assert channel.search(A, stems("the"), 10) == [] and store.read_postings(A, stems("the", "wrong")).blocks == {}
        assert [i for i, _ in channel.search(A, stems("bird"), 10)] == [ids[1]]

    def test_deletion_leaves_nothing_behind_in_the_index(self, store: Store) -> None:
        store.put_items(A, [fact("f1", "zyzzyva shared words"), fact("f2", "shared other words")])
        store.put_items(B, [fact("g1", "shared beta words")])
        stats = store.read_postings(A, []).stats
        assert term_postings(store, A, "zyzzyva")
        assert store.delete_item(A, "fact", "f1") is True
        assert store.read_postings(A, stems("zyzzyva")).blocks == {}
        assert lex(store, A, "zyzzyva") == []
        assert store.read_postings(A, []).stats == LexicalStats(stats.version, stats.n_docs - 1, stats.total_len - 3)
        assert LexicalChannel(store).status(A) is None
        assert [i for i, _ in lex(store, A, "shared")] == ids_of(store, A)
        assert len(lex(store, B, "shared words")) == 1  # the other app keeps its postings

        store.put_items(A, [fact("f2", "replaced text")])  # a replace unindexes the old text too
        assert store.read_postings(A, stems("shared", "other", "words")).blocks == {}
        assert len(lex(store, B, "shared words")) == 1
        assert LexicalChannel(store).status(A) is None

    def test_terms_no_app_uses_are_forgotten(self, store: Store, terms: Callable[[Store], set[str]]) -> None:
        store.put_items(A, [fact("f1", "zyzzyva shared"), fact("f2", "quokka shared")])
        store.put_items(B, [fact("g1", "shared xylophone")])
        assert set(stems("zyzzyva", "quokka", "shared", "xylophone")) <= terms(store)
        store.delete_item(A, "fact", "f1")
        assert "zyzzyva" not in terms(store) and lexical.stem("shared") in terms(store)
        store.put_items(A, [fact("f2", "wombat")])  # replace
        assert "quokka" not in terms(store) and "wombat" in terms(store)
        store.delete_app(B)
        assert lexical.stem("xylophone") not in terms(store) and lexical.stem("shared") not in terms(store)
        store.put_items(A, [fact("f3", "the nonce word")])
        store.rebuild_lexical(A)
        assert terms(store) == set(stems("nonce", "word", "wombat"))
        store.delete_app(A)
        assert terms(store) == set()

    # -- isolation ----------------------------------------------------------------------------

    def test_every_read_filters_by_app(self, store: Store, make_store: Callable[[], Store]) -> None:
        a_items = [session("s1", "alpha secret lantern", "shared river"), fact("f1", "alpha only fact")]
        b_items = [session("s1", "beta garden", "shared river banks"), fact("f2", "beta fact shared")]
        store.put_items(B, b_items[:1])
        store.put_items(A, a_items)
        store.put_items(B, b_items[1:])
        store.put_items(A, [fact("f3", "alpha written last")])
        a_ids, b_ids = ids_of(store, A), ids_of(store, B)
        assert not set(a_ids) & set(b_ids)

        assert store.get_item(B, "session", "s1") == b_items[0][0]
        assert store.get_item(B, "fact", "f1") is None
        assert store.content_hashes(B, "session", ["s1"]) == {"s1": b_items[0][0].content_hash}
        assert store.content_hashes(B, "fact", ["f1", "f3"]) == {}
        assert [s.external_id for s in store.list_items(B, "fact", 10, 0)] == ["f2"]
        assert store.counts(B) == AppCounts(sessions=1, messages=2, facts=1, chunks=3)
        assert store.fetch_chunks(B, a_ids) == {}
        assert set(store.fetch_chunks(B, a_ids + b_ids)) == set(b_ids)
        assert store.sample_chunk(B).chunk_id == max(b_ids)
        assert store.read_vectors(B).ids.tolist() == b_ids
        assert store.read_vectors(B, after_id=min(a_ids)).ids.tolist() == [i for i in b_ids if i > min(a_ids)]
        assert store.doc_lengths(B).ids.tolist() == b_ids
        assert store.read_postings(B, stems("alpha", "secret", "lantern")).blocks == {}
        assert set(term_postings(store, B, "shared")) == {b_ids[1], b_ids[2]}
        assert store.read_postings(B, []).stats == LexicalStats(lexical.VERSION, 3, 2 + 3 + 3)

        # The channels see one app: B's BM25 statistics are B's alone.
        alone = make_store()
        alone.put_items(B, b_items[:1])
        alone.put_items(B, b_items[1:])
        for query in ("shared river", "beta", "alpha lantern"):
            got, want = lex(store, B, query), lex(alone, B, query)
            assert {i for i, _ in got} <= set(b_ids)
            assert np.allclose([s for _, s in got], [s for _, s in want], rtol=0, atol=1e-12)
            assert [store.fetch_chunks(B, [i])[i].text for i, _ in got] == \
                   [alone.fetch_chunks(B, [i])[i].text for i, _ in want]
        dense = ExactDenseIndex(store)
        assert {i for i, _ in dense.search(B, dequantize(vector_for("alpha secret lantern")[None]), 10)} == set(b_ids)

        # Writes through one app's name never reach another's.
        assert store.delete_item(B, "fact", "f1") is False
        store.mark_lexical_stale(A)
        assert LexicalChannel(store).status(B) is None
        assert store.rebuild_lexical(A) == len(a_ids)
        assert store.delete_item(B, "session", "s1") is True
        assert store.get_item(A, "session", "s1") == a_items[0][0]
        assert ids_of(store, A) == a_ids
        assert store.delete_app(B) is True
        assert store.counts(A) == AppCounts(sessions=1, messages=2, facts=2, chunks=4)
        assert [i for i, _ in lex(store, A, "secret")] == [a_ids[0]]

    # -- transactions ---------------------------------------------------------------------------

    def test_a_transaction_is_all_or_nothing(self, store: Store) -> None:
        store.put_items(A, [fact("f1", "before the transaction"), session("s1", "a session before")])
        key = store.add_key(A, "hash-0", "vk_0", None, "2024-01-01T00:00:00")

        def observe() -> tuple:
            return (
                store.apps(), store.app_version(A), store.counts(A), store.get_item(A, "fact", "f1"),
                store.get_item(A, "fact", "f2"), store.list_items(A, "session", 10, 0), ids_of(store, A),
                store.read_vectors(A).vectors.tolist(), store.doc_lengths(A).lengths.tolist(),
                store.read_postings(A, []).stats, lex(store, A, "transaction session"), store.get_meta("m"),
                store.list_keys(include_revoked=True), store.app_version(B), LexicalChannel(store).status(A),
            )

        before = observe()
        with pytest.raises(RuntimeError, match="boom"):
            with store.transaction():
                store.put_items(A, [fact("f2", "inside the transaction")])
                store.put_items(A, [fact("f1", "replaced inside")])
                store.delete_item(A, "session", "s1")
                store.put_items(B, [fact("g1", "a new app")])
                store.claim_meta({"m": "v"})
                store.add_key(B, "hash-1", "vk_1", "label", "2024-01-02T00:00:00")
                store.revoke_key(key.id, "2024-01-03T00:00:00")
                store.mark_lexical_stale(A)
                assert store.get_item(A, "fact", "f2") is not None  # reads see the open transaction
                assert store.get_meta("m") == "v"
                raise RuntimeError("boom")
        assert observe() == before

        with pytest.raises(RuntimeError):
            with store.transaction():
                store.delete_app(A)
                store.rebuild_lexical(B)
                raise RuntimeError("again")
        assert observe() == before

        with store.transaction():  # usable again, and a transaction that ends well lands
            store.put_items(A, [fact("f2", "inside the transaction")])
            store.claim_meta({"m": "v"})
        assert store.get_item(A, "fact", "f2") is not None and store.get_meta("m") == "v"
        assert [store.fetch_chunks(A, [i])[i].text for i, _ in lex(store, A, "transaction")] == [
            "before the transaction", "inside the transaction"]

    def test_transactions_nest_by_joining(self, store: Store) -> None:
        with store.transaction():
            store.put_items(A, [fact("f1", "outer")])
            with store.transaction():
                store.put_items(A, [fact("f2", "inner")])
                assert store.counts(A).facts == 2
            assert store.get_item(A, "fact", "f2") is not None
        assert [s.external_id for s in store.list_items(A, "fact", 10, 0)] == ["f1", "f2"]
        version = store.app_version(A)

        with pytest.raises(KeyError):
            with store.transaction():
                store.put_items(A, [fact("f3", "outer, undone")])
                with store.transaction():
                    store.put_items(A, [fact("f4", "inner, undone")])
                    raise KeyError("inner")
        assert store.content_hashes(A, "fact", ["f1", "f2", "f3", "f4"]).keys() == {"f1", "f2"}
        assert store.app_version(A) == version
        assert LexicalChannel(store).status(A) is None

        with store.transaction():  # the depth was reset: this one commits on its own
            store.put_items(A, [fact("f5", "after")])
        assert store.get_item(A, "fact", "f5") is not None

        # Joined, an inner block is no unit of its own: its writes stand or fall with the outer.
        with store.transaction():
            with pytest.raises(KeyError):
                with store.transaction():
                    store.put_items(A, [fact("f6", "inner, kept")])
                    raise KeyError("caught inside the outer block")
            assert store.get_item(A, "fact", "f6") is not None
        assert store.get_item(A, "fact", "f6") is not None
        assert LexicalChannel(store).status(A) is None

    def test_other_threads_never_see_half_a_transaction(self, store: Store) -> None:
        seen: list[object] = []
        with store.transaction():
            store.put_items(A, [fact("f1", "first half")])
            reader = threading.Thread(target=lambda: seen.append(store.counts(A)))
            reader.start()
            reader.join(0.05)
            store.put_items(A, [fact("f2", "second half")])
        reader.join(5)
        assert not reader.is_alive()
        assert seen in ([None], [AppCounts(sessions=0, messages=0, facts=2, chunks=2)])

    # -- API keys -------------------------------------------------------------------------------

    def test_add_and_find_keys(self, store: Store) -> None:
        k1 = store.add_key(A, "hash-1", "vk_aaaa", "laptop", "2024-01-01T00:00:00")
        k2 = store.add_key(B, "hash-2", "vk_bbbb", None, "2024-01-02T00:00:00")
        k3 = store.add_key(A, "hash-3", "vk_aaaa", None, "2024-01-03T00:00:00")  # prefixes may repeat
        assert k1 == KeyRecord(k1.id, A, "vk_aaaa", "laptop", "2024-01-01T00:00:00", None)
        assert k1.id < k2.id < k3.id
        assert "hash-1" not in k1.to_dict().values()  # the hash never leaves the store
        assert store.find_keys(key_id=k2.id) == [k2]
        assert store.find_keys(key_hash="hash-3") == [k3]
        assert store.find_keys(prefix="vk_aaaa") == [k1, k3]
        assert store.find_keys(key_hash="nope") == [] and store.find_keys(key_id=10_000) == []
        with pytest.raises(ValueError):
            store.find_keys()
        with pytest.raises(ValueError):
            store.find_keys(key_id=k1.id, prefix="vk_aaaa")

    def test_list_and_revoke_keys(self, store: Store) -> None:
        k1 = store.add_key(A, "hash-1", "vk_1", None, "2024-01-01T00:00:00")
        k2 = store.add_key(B, "hash-2", "vk_2", None, "2024-01-02T00:00:00")
        k3 = store.add_key(A, "hash-3", "vk_3", "ci", "2024-01-03T00:00:00")
        assert store.list_keys() == [k1, k2, k3]
        assert store.list_keys(A) == [k1, k3] and store.list_keys("gamma") == []
        revoked = store.revoke_key(k1.id, "2024-02-01T00:00:00")
        assert revoked == KeyRecord(k1.id, A, "vk_1", None, "2024-01-01T00:00:00", "2024-02-01T00:00:00")
        assert store.revoke_key(k1.id, "2024-03-01T00:00:00") == revoked  # the first time stays
        assert store.revoke_key(10_000, "2024-03-01T00:00:00") is None
        assert store.list_keys() == [k2, k3]
        assert store.list_keys(A) == [k3]
        assert store.list_keys(A, include_revoked=True) == [revoked, k3]
        assert store.list_keys(include_revoked=True) == [revoked, k2, k3]
        assert store.find_keys(key_hash="hash-1") == [revoked]  # revoked keys are still found

    def test_key_hashes_are_read_back_for_copies_only(self, store: Store) -> None:
        assert store.key_hashes() == {}
        k1 = store.add_key(A, "hash-1", "vk_1", None, "2024-01-01T00:00:00")
        k2 = store.add_key(B, "hash-2", "vk_2", "ci", "2024-01-02T00:00:00")
        store.revoke_key(k1.id, "2024-02-01T00:00:00")
        assert store.key_hashes() == {k1.id: "hash-1", k2.id: "hash-2"}  # revoked ones too

    def test_keys_outlive_their_apps_memory(self, store: Store) -> None:
        store.put_items(A, [fact("f1", "memory")])
        key = store.add_key(A, "hash-1", "vk_1", None, "2024-01-01T00:00:00")
        store.delete_app(A)
        assert store.list_keys(A) == [key] and store.find_keys(key_hash="hash-1") == [key]

    def test_a_key_hash_is_stored_once(self, store: Store) -> None:
        key = store.add_key(A, "hash-1", "vk_1", None, "2024-01-01T00:00:00")
        with pytest.raises(DiaristError):
            store.add_key(B, "hash-1", "vk_2", None, "2024-01-02T00:00:00")
        assert store.list_keys(include_revoked=True) == [key]

    # -- synced files (diarist sync) ------------------------------------------------------------

    def test_synced_files_are_recorded_replaced_and_dropped(self, store: Store) -> None:
        assert store.synced_files(A) == []
        one = SyncedFile("/vault", "a.md", "s1", 10, 111, (("session", "a.md"),))
        two = SyncedFile("/vault", "sub/b\u00e9.md", "s2", 20, 222, ())
        other = SyncedFile("/other", "a.md", "s3", 30, 333, (("session", "x"), ("fact", "y")))
        store.record_synced_files(A, [one, two, other])
        assert store.synced_files(A) == [other, one, two]  # by (root, path)
        assert store.synced_files(B) == []  # per app
        changed = SyncedFile("/vault", "a.md", "s4", 11, 2**62, (("session", "a.md"), ("session", "a.md#2")))
        store.record_synced_files(A, [changed], drop=[("/vault", "sub/b\u00e9.md"), ("/vault", "absent.md")])
        assert store.synced_files(A) == [other, changed]
        store.record_synced_files(B, [], drop=[("/vault", "a.md")])  # an app that does not exist: nothing
        assert B not in store.apps()

    def test_synced_files_go_with_their_app(self, store: Store) -> None:
        store.record_synced_files(A, [SyncedFile("/vault", "a.md", "s1", 1, 1)])
        store.put_items(A, [fact("f1", "something")])
        assert store.delete_app(A)
        store.put_items(A, [fact("f1", "something")])
        assert store.synced_files(A) == []

    # -- misc ------------------------------------------------------------------------------------

    def test_location_and_size(self, store: Store) -> None:
        assert isinstance(store.location, str) and store.location
        store.put_items(A, [fact("f1", "something")])
        size = store.size_bytes()
        assert size is None or (isinstance(size, int) and size > 0)

    # -- every backend ranks like the reference --------------------------------------------------

    def test_ranks_identically_to_the_reference_backend(self, store: Store, tmp_path: Path) -> None:
        reference = reference_store(tmp_path)
        try:
            got, want = identity_script(store), identity_script(reference)
        finally:
            reference.close()
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g[:2] == w[:2]
            if g[0] in ("lexical", "dense"):
                assert_same_ranking(g[2], w[2])
            else:
                assert g[2] == w[2], g[:2]


WORDS = (
    "garden river lantern violin harbor meadow copper falcon pepper orchard canyon marble thunder "
    "willow saddle compass velvet ember glacier tulip cobalt anchor biscuit quiver summit tavern"
).split()


def identity_script(store: Store) -> list[tuple]:
    """One fixed sequence of writes (with a replace, a delete and a rebuild) on two apps, and
    what the contract and both channels answer after each step."""
    rng = random.Random(7)
    text = lambda: " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))  # noqa: E731
    query_rng = np.random.default_rng(11)
    queries = [normalise(query_rng.standard_normal((n, DIM)).astype(np.float32)) for n in (1, 1, 2)]
    lexical_queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(4)] + [WORDS[0]]
    channel, dense = LexicalChannel(store), ExactDenseIndex(store)
    out: list[tuple] = []

    def observe(step: str) -> None:
        for app in (A, B):
            lengths = store.doc_lengths(app)
            out.append(("ids", (step, app), (ids_of(store, app), lengths.lengths.tolist())))
            out.append(("stats", (step, app), store.read_postings(app, []).stats))
            out.append(("counts", (step, app), store.counts(app)))
            rows = store.fetch_chunks(app, ids_of(store, app))
            out.append(("rows", (step, app), sorted(rows.items())))
            for term in sorted({t for q in lexical_queries for t in analyze(q)}):
                blocks = list(store.read_postings(app, [term]).blocks.values())
                out.append(("postings", (step, app, term), sorted(blocks[0]) if blocks else None))
            for q in lexical_queries:
                out.append(("lexical", (step, app, q), channel.search(app, analyze(q), 8)))
            for i, q in enumerate(queries):
                out.append(("dense", (step, app, i), dense.search(app, q, 8)))

    store.put_items(A, [session(f"s{i}", *(text() for _ in range(3))) for i in range(4)])
    store.put_items(B, [fact(f"f{i}", text()) for i in range(5)])
    observe("first writes")
    store.put_items(A, [session("s4", text(), text()), fact("f0", text())])
    store.put_items(B, [session("s0", text(), text())])
    observe("more writes")  # no purge: the dense cache is extended
    store.put_items(A, [session("s1", text(), text(), text(), text())])
    observe("replace")
    store.delete_item(A, "session", "s2")
    store.delete_item(B, "fact", "f3")
    observe("delete")
    store.mark_lexical_stale(B)
    out.append(("rebuilt", ("rebuild", B), store.rebuild_lexical(B)))
    store.put_items(B, [fact("f9", text())])
    observe("rebuild")
    return out
