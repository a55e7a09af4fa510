"""One registration shape (diarist.registry): embedders, rerankers and stores are looked up by the
name their spec starts with, importers by their format name, the library's own as well as a
plug-in's."""

from __future__ import annotations

import pytest

from diarist import Memory
from diarist.embed import EMBEDDERS, get_embedder
from diarist.embed.hashing import HashEmbedder
from diarist.errors import ConfigError, InvalidInput
from diarist.importers import FORMATS, IMPORTERS, read_all
from diarist.importers import markdown as markdown_importer
from diarist.importers.base import TEXT_SUFFIXES, message
from diarist.read.search import STAGES
from diarist.registry import Entries, Registry
from diarist.write.validate import SessionInput
from diarist.rerank import RERANKERS, get_reranker
from diarist.rerank.evidence import EvidenceReranker
from diarist.store import open_store
from diarist.store.open import STORES, store_class
from diarist.store.sqlite import SQLiteStore


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


def test_entries_keep_their_order_and_a_plug_in_can_go_ahead_of_one():
    entries: Entries[int] = Entries("thing")
    for n, name in enumerate(["a", "b", "c"]):
        entries.register(name, n)
    entries.register("x", 9, before="b")
    assert list(entries) == ["a", "x", "b", "c"] and entries["x"] == 9 and len(entries) == 4
    entries.register("b", 7, replace=True, before="a")  # a replaced entry keeps its place
    assert list(entries.items()) == [("a", 0), ("x", 9), ("b", 7), ("c", 2)]
    with pytest.raises(ConfigError, match="before 'z': no such thing"):
        entries.register("y", 1, before="z")
    with pytest.raises(ConfigError, match="registered already"):
        entries.register("a", 1)
    assert "a" in entries and "minilm" in EMBEDDERS and "y" not in entries


def test_importers_are_registered_the_same_way_in_detection_order():
    assert isinstance(IMPORTERS, Entries) and FORMATS == tuple(IMPORTERS)
    assert list(IMPORTERS)[-1] == "markdown"
    with pytest.raises(ConfigError, match="importer 'chatgpt' is registered already"):
        IMPORTERS.register("chatgpt", markdown_importer.IMPORTER)


class TodoImporter:
    """A plug-in format: a text file whose first line is "TODO", one session per file."""

    name, title, suffixes, unit = "todo", "to-do lists", TEXT_SUFFIXES, "list"

    def detect(self, source, *, forced=False):
        return True if forced or source.text.startswith("TODO") else "no TODO line"

    def read(self, source, limit=None):
        items = [line.strip("- ") for line in source.text.splitlines()[1:] if line.strip()]
        yield SessionInput([message("user", item) for item in items], None, None, {"source": "todo"})


def test_a_plug_in_importer_ahead_of_markdown_is_detected_and_named(tmp_path, monkeypatch):
    monkeypatch.setattr(IMPORTERS, "_entries", dict(IMPORTERS._entries))
    (tmp_path / "list.txt").write_text("TODO\n- buy cat food\n- call the vet\n")
    (tmp_path / "note.md").write_text("# Garden\n\nThe tomatoes need water.\n")
    assert read_all(tmp_path / "list.txt").format == "markdown"  # not registered yet: any text is a note
    IMPORTERS.register("todo", TodoImporter(), before="markdown")
    imported = read_all(tmp_path / "list.txt")
    assert imported.format == "todo" and [m["content"] for m in imported.sessions[0].messages] == [
        "buy cat food", "call the vet"]
    assert read_all(tmp_path / "note.md").format == "markdown"
    assert read_all(tmp_path / "note.md", format="todo").sessions[0].metadata == {"source": "todo"}
    assert sorted(read_all(tmp_path).format.split("+")) == ["markdown", "todo"]


def test_read_stages_are_registered_and_a_plug_in_stage_runs_by_name(monkeypatch):
    monkeypatch.setattr(STAGES, "_entries", dict(STAGES._entries))
    assert list(STAGES) == ["channels", "sentences", "floor", "fusion", "fetch", "second-stage", "group", "cut", "trim",
                            "budget"]

    def facts_only(search):
        before = len(search.hits)
        search.hits = [h for h in search.hits if h.fact_id is not None]
        search.trace.record("facts-only", len(search.hits), before - len(search.hits), "sessions left out")

    STAGES.register("facts-only", facts_only)
    calls = []
    builtin_fusion = STAGES["fusion"]

    def counted_fusion(search):
        calls.append(search.question.text)
        builtin_fusion(search)

    STAGES.register("fusion", counted_fusion, replace=True)
    with Memory(":memory:", embedder="hash") as memory:
        memory.add_fact("The cat is called Admon.", app="me")
        memory.add_session([{"role": "user", "content": "my cat Admon sleeps all day"}], app="me")
        both = memory.search("cat Admon", app="me", k=5)
        facts = memory.search("cat Admon", app="me", k=5, after=["facts-only"])
        assert len(both) == 2 and [h.text for h in facts] == ["The cat is called Admon."]
        assert [r.stage for r in facts.trace][-1] == "facts-only" and calls == ["cat Admon", "cat Admon"]
        with pytest.raises(InvalidInput, match="unknown read stage 'nope'.*facts-only"):
            memory.search("cat", app="me", after=["nope"])
        with pytest.raises(InvalidInput, match="after must be a list"):
            memory.search("cat", app="me", after="facts-only")
