"""One registration shape (vestige.registry): embedders, rerankers and stores are looked up by the
name their spec starts with, the library's own as well as a plug-in's."""

from __future__ import annotations

import pytest

from vestige import Memory
from vestige.embed import EMBEDDERS, get_embedder
from vestige.embed.hashing import HashEmbedder
from vestige.errors import ConfigError
from vestige.registry import Registry
from vestige.rerank import RERANKERS, get_reranker
from vestige.rerank.evidence import EvidenceReranker
from vestige.store import open_store
from vestige.store.open import STORES, store_class
from vestige.store.sqlite import SQLiteStore


def test_a_spec_names_its_entry_and_the_entry_gets_the_whole_spec():
    seen = []
    registry: Registry[str] = Registry("thing")
    registry.register("a", lambda spec: seen.append(spec) or spec.upper())
    assert registry.build("a:x,y") == "A:X,Y" and seen == ["a:x,y"]
    assert registry.build("a") == "A"
    with pytest.raises(ConfigError, match="unknown thing 'b'; registered: a"):
        registry.build("b")
    with pytest.raises(ConfigError, match="registered already"):
        registry.register("a", str)
    registry.register("a", str.lower, replace=True)
    assert registry.build("a:X") == "a:x"
    with pytest.raises(ConfigError, match="no ':'"):
        registry.register("a:b", str)


def test_the_library_s_own_are_registered_the_same_way():
    assert {"minilm", "hash", "st"} <= set(EMBEDDERS.names())
    assert {"evidence", "cross-encoder"} <= set(RERANKERS.names())
    assert {"sqlite", "postgresql", "postgres"} <= set(STORES.names())
    assert isinstance(get_reranker("evidence:time"), EvidenceReranker)
    assert get_embedder("hash:16").dim == 16
    assert store_class("sqlite:///x.sqlite") == (SQLiteStore, "x.sqlite")
    assert store_class("x.sqlite") == (SQLiteStore, "x.sqlite")
    for spec in ("st", "minilm:large", "cross-encoder", "cross-encoder:"):
        with pytest.raises(ConfigError):
            (get_reranker if spec.startswith("cross") else get_embedder)(spec)
    with pytest.raises(ConfigError, match="unknown store URL scheme 'redis'"):
        store_class("redis://localhost/0")


def test_a_plug_in_embedder_is_used_by_memory(monkeypatch):
    monkeypatch.setattr(EMBEDDERS, "_entries", dict(EMBEDDERS._entries))
    EMBEDDERS.register("tiny", lambda spec: HashEmbedder(dim=int(spec.partition(":")[2] or 8)))
    with Memory(":memory:", embedder="tiny:12") as memory:
        memory.add_fact("The cat is called Admon.", app="me")
        assert memory.embedder.dim == 12
        assert [h.text for h in memory.search("cat Admon", app="me", k=1)] == ["The cat is called Admon."]


def test_a_plug_in_store_is_opened_by_its_scheme(tmp_path, monkeypatch):
    monkeypatch.setattr(STORES, "_entries", dict(STORES._entries))
    STORES.register("mine", lambda location: (SQLiteStore, str(tmp_path / location.partition("://")[2])))
    store = open_store("mine://a.sqlite")
    try:
        assert isinstance(store, SQLiteStore) and (tmp_path / "a.sqlite").exists()
    finally:
        store.close()
