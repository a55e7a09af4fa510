"""A deleted chunk's vector leaves the HNSW graph's files (issue 31, item 2).

usearch's ``remove`` only marks a node removed; its int8 vector stayed in ``<db>.hnsw/*.usearch``
after ``Memory.delete``, after the next search saved the graph again and after ``close()``.
These tests read the raw bytes of every file in the folder for the deleted chunk's vector.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("usearch")

from diarist.cli import main  # noqa: E402
from diarist.memory import Memory  # noqa: E402

FACTS = 300


def _folder_bytes(db: Path) -> bytes:
    folder = Path(f"{db}.hnsw")
    return b"".join(p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file())


def _filled(db: Path) -> tuple[bytes, bytes]:
    """An app in a graph on disk; returns the vectors of the fact to delete and of a kept one."""
    with Memory(db, embedder="hash", dense="hnsw") as mem:
        for i in range(FACTS):
            mem.add_fact(f"fact {i} about lantern{i} and kite{i * 7919 % 1000} river", app="a", fact_id=f"f{i}")
        mem.search("lantern river", app="a", k=3, rerank=False)  # builds and saves the graph
        batch = mem.store.read_vectors("a", 0)
        rows = mem.store.fetch_chunks("a", [int(i) for i in batch.ids])
        by_fact = {rows[int(cid)].fact_id: vec.tobytes() for cid, vec in zip(batch.ids, batch.vectors)}
    secret, kept = by_fact["f42"], by_fact["f43"]
    values = list(by_fact.values())
    assert values.count(secret) == values.count(kept) == 1  # a match in the files is that chunk's
    assert secret in _folder_bytes(db) and kept in _folder_bytes(db)
    return secret, kept


def test_a_delete_through_the_api_leaves_no_copy_in_the_graph_files(tmp_path):
    db = tmp_path / "m.sqlite"
    secret, kept = _filled(db)
    with Memory(db, embedder="hash", dense="hnsw") as mem:
        mem.search("lantern river", app="a", k=3, rerank=False)  # the graph held in memory
        mem.delete("f42", app="a")
        assert secret not in _folder_bytes(db)  # when the delete returns
        hits = mem.search("fact number 42 about lantern", app="a", k=5, rerank=False)
        assert "f42" not in [h.fact_id for h in hits]
        mem.add_fact("one more after the delete", app="a", fact_id="late")
        mem.search("lantern river", app="a", k=3, rerank=False)  # catches up, may save again
        assert secret not in _folder_bytes(db)
    assert secret not in _folder_bytes(db)  # after close
    assert kept in _folder_bytes(db)  # the graph itself is still there


def test_a_delete_through_the_cli_leaves_no_copy_in_the_graph_files(tmp_path):
    db = tmp_path / "m.sqlite"
    secret, kept = _filled(db)
    result = CliRunner().invoke(main, ["delete", "f42", "--db", str(db), "--app", "a", "--embedder", "hash"],
                                env={"DIARIST_DB": ""})
    assert result.exit_code == 0, result.output
    assert secret not in _folder_bytes(db) and kept in _folder_bytes(db)


def test_a_replace_leaves_no_copy_of_the_old_vector(tmp_path):
    db = tmp_path / "m.sqlite"
    secret, _ = _filled(db)
    with Memory(db, embedder="hash", dense="hnsw") as mem:
        mem.update("f42", app="a", text="a wholly different fact now")
        assert secret not in _folder_bytes(db)


def test_a_stale_process_does_not_save_a_deleted_vector_back_on_close(tmp_path):
    """A server's graph in memory, a delete by another process (the CLI), then the server's
    close: the close brings its graph up to date before it saves."""
    db = tmp_path / "m.sqlite"
    secret, _ = _filled(db)
    server = Memory(db, embedder="hash", dense="hnsw")
    server.search("lantern river", app="a", k=3, rerank=False)
    server.add_fact("written by the server", app="a", fact_id="srv")
    server.search("lantern river", app="a", k=3, rerank=False)  # unsaved vectors in memory
    with Memory(db, embedder="hash", dense="hnsw") as other:
        other.delete("f42", app="a")
    assert secret not in _folder_bytes(db)
    server.close()
    assert secret not in _folder_bytes(db)


def test_scrubbing_keeps_the_graph_searchable():
    """Placeholders overwrite the removed slots and are removed again: the graph's size and
    its answers for the vectors it keeps are unchanged."""
    from diarist.vectors.hnsw import _remove_and_scrub
    from usearch.index import Index

    rng = np.random.default_rng(0)
    vectors = rng.integers(-127, 127, (2000, 64), dtype=np.int8)
    index = Index(ndim=64, metric="cos", dtype="i8")
    index.add(np.arange(2000, dtype=np.uint64), vectors)
    gone = np.array([3, 500, 1999], dtype=np.uint64)
    _remove_and_scrub(index, gone)
    assert len(index) == 1997 and not any(index.contains(int(k)) for k in gone)
    found = index.search(vectors[:100], 1).keys[:, 0]
    assert (found == np.arange(100))[~np.isin(np.arange(100), gone)].mean() > 0.9


def test_the_embedding_cache_is_opt_in_and_outside_the_delete_guarantee(tmp_path):
    """The guarantee RELIABILITY.md states: a delete does not reach the embedding cache (a
    vector keyed by a SHA-256 of the text), which only a caller's ``embed_cache=`` creates; no
    memory the CLI or the server opens has one."""
    from diarist.cli.options import open_memory
    from diarist.embed.cache import text_key

    db = tmp_path / "m.sqlite"
    with Memory(db, embedder="hash") as plain:
        assert plain.cache is None
    assert open_memory(str(db), "hash").cache is None
    with Memory(db, embedder="hash", embed_cache=tmp_path / "cache.sqlite") as mem:
        mem.add_fact("the vault code is 4417", app="a", fact_id="v")
        mem.delete("v", app="a")
        key = text_key(mem.embedder.model_id, "the vault code is 4417")
        assert mem.cache.cached([key]) == {key}  # stated: kept by the cache, outside the guarantee
