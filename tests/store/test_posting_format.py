"""The posting-block format: ``repack`` regroups postings exactly, and a file written in the first
format (blocks of 1,024 chunk ids, lexical version 1) is repacked on open by migration 7 into the
same postings in blocks of 8,192, ranking exactly as before.
"""

from __future__ import annotations

import itertools
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from diarist import lexical
from diarist.lexical.postings import BLOCK_BITS, FIRST_FORMAT_BLOCK_BITS, pack, repack, unpack
from diarist.memory import Memory
from diarist.store.sqlite.migrations import MIGRATIONS, _repack_postings, _restem_postings


def _blocks(postings: list[tuple[int, int]], bits: int) -> list[tuple[int, bytes]]:
    """(chunk id, tf) ascending -> (block number, packed data) in blocks of ``1 << bits``."""
    out = []
    for number, group in itertools.groupby(postings, key=lambda p: p[0] >> bits):
        out.append((number, pack([(chunk & ((1 << bits) - 1), tf) for chunk, tf in group])))
    return out


def _decoded(blocks: list[tuple[int, bytes]], bits: int) -> list[tuple[int, int]]:
    return [((number << bits) + int(offset), int(tf)) for number, data in blocks for offset, tf in unpack(data)]


@pytest.mark.parametrize("seed", range(5))
def test_repack_keeps_every_posting_in_order(seed: int) -> None:
    rng = random.Random(seed)
    ids = sorted(rng.sample(range(200_000), rng.randint(1, 3000)))
    postings = [(chunk, rng.randint(1, 65535)) for chunk in ids]
    first = _blocks(postings, FIRST_FORMAT_BLOCK_BITS)
    now = repack(first, FIRST_FORMAT_BLOCK_BITS, BLOCK_BITS)
    assert now == _blocks(postings, BLOCK_BITS)  # byte for byte what a fresh write packs
    assert _decoded(now, BLOCK_BITS) == postings
    assert repack(now, BLOCK_BITS, FIRST_FORMAT_BLOCK_BITS) == first  # and back


def test_repack_refuses_what_it_cannot_represent() -> None:
    with pytest.raises(ValueError, match="ascending"):
        repack([(3, pack([(0, 1)])), (1, pack([(0, 1)]))], 10, 13)
    with pytest.raises(ValueError, match="uint16"):
        repack([(0, pack([(0, 1)]))], 10, 17)
    assert repack([], 10, 13) == []


def _postings(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT app_id, term_id, block, data FROM lex_postings ORDER BY 1, 2, 3").fetchall()
    finally:
        conn.close()


def _to_first_format(path: Path, other_version_app: str | None = None) -> None:
    """Rewrite a current file as the previous release left it: blocks of 1,024, version 1."""
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT app_id, term_id, block, data FROM lex_postings ORDER BY 1, 2, 3").fetchall()
    conn.execute("DELETE FROM lex_postings")
    for (app_id, term_id), group in itertools.groupby(rows, key=lambda r: (r[0], r[1])):
        blocks = repack([(b, d) for _, _, b, d in group], BLOCK_BITS, FIRST_FORMAT_BLOCK_BITS)
        conn.executemany("INSERT INTO lex_postings VALUES (?, ?, ?, ?)", [(app_id, term_id, b, d) for b, d in blocks])
    conn.execute("UPDATE lex_stats SET version = 1")
    if other_version_app:
        conn.execute("UPDATE lex_stats SET version = 0 WHERE app_id = (SELECT id FROM apps WHERE name = ?)",
                     (other_version_app,))
    conn.commit()
    # As the release before migration 7 left it (the migrations after it run on open too).
    conn.execute("DROP TABLE synced_files")  # migration 9's
    conn.execute("ALTER TABLE apps DROP COLUMN titles_indexed")  # migration 10's
    conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(_repack_postings)}")
    conn.close()


def _spread_ids(path: Path, next_id: int) -> None:
    """Make the next chunk id ``next_id``: postings span many blocks of both formats."""
    conn = sqlite3.connect(path)
    conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'chunks'", (next_id - 1,))
    conn.commit()
    conn.close()


QUERIES = ("tuna cat", "the red bicycle", "Lisbon apartment", "piano lessons on Tuesday", "cat")


def test_a_first_format_file_is_repacked_and_ranks_as_before(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    rng = random.Random(7)
    words = "cat tuna red bicycle Lisbon apartment piano lessons Tuesday garden rain coffee".split()
    with Memory(path, embedder="hash") as mem:
        mem.add_fact("bootstrap fact about a cat", app="a")
    # Ids around both formats' block edges (1,024 and 8,192), and far beyond.
    for start in (1020, 8190, 16383, 70_000):
        _spread_ids(path, start)
        with Memory(path, embedder="hash") as mem:
            for i in range(12):
                app = "a" if i % 3 else "b"
                mem.add_fact(" ".join(rng.choice(words) for _ in range(rng.randint(2, 9))) + f" n{start}x{i}", app=app)
    with Memory(path, embedder="hash") as mem:
        before = {(app, q): [(h.id, h.score) for h in mem.search(q, app=app, k=20, rerank=False)]
                  for app in ("a", "b") for q in QUERIES}
    current = _postings(path)
    assert len({block for _, _, block, _ in current}) >= 4
    _to_first_format(path)
    assert _postings(path) != current
    with Memory(path, embedder="hash") as mem:
        after = {(app, q): [(h.id, h.score) for h in mem.search(q, app=app, k=20, rerank=False)]
                 for app in ("a", "b") for q in QUERIES}
        assert mem.lexical.status("a") is None and mem.lexical.status("b") is None
    assert after == before
    assert _postings(path) == current  # the bytes a fresh write of the current format holds
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert {v for (v,) in conn.execute("SELECT version FROM lex_stats")} == {lexical.VERSION}
    conn.close()


def test_an_index_of_another_version_is_left_to_reindex(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    with Memory(path, embedder="hash") as mem:
        mem.add_fact("the cat likes tuna", app="kept")
        mem.add_fact("the dog likes bones", app="stale")
    _to_first_format(path, other_version_app="stale")
    with Memory(path, embedder="hash") as mem:
        assert mem.lexical.status("kept") is None
        assert "reindex" in (mem.lexical.status("stale") or "")
        orphans = mem.store._db.read(
            "SELECT term FROM lex_terms WHERE id NOT IN (SELECT term_id FROM lex_postings)")
        assert orphans == []  # the stale app's terms went with its postings ("bones", "dog")
        mem.reindex(app="stale")
        assert mem.lexical.status("stale") is None
        assert [h.text for h in mem.search("bones", app="stale", k=1, rerank=False)] == ["the dog likes bones"]
    kept = np.unique([app for app, *_ in _postings(path)])
    assert len(kept) == 2


def test_a_repack_says_so_and_a_new_file_says_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from diarist.lexical.postings import REPACK_NOTICE

    path = tmp_path / "m.sqlite"
    with caplog.at_level("WARNING", logger="diarist"):
        with Memory(path, embedder="hash") as mem:
            mem.add_fact("the cat likes tuna", app="a")
    assert REPACK_NOTICE not in caplog.text  # migration 7 ran on an empty index: nothing to say
    _to_first_format(path)
    with caplog.at_level("WARNING", logger="diarist"):
        Memory(path, embedder="hash").close()
    assert REPACK_NOTICE in caplog.text


def _postings_by_term(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT p.app_id, t.term, p.block, p.data FROM lex_postings p "
                            "JOIN lex_terms t ON t.id = p.term_id ORDER BY 1, 2, 3").fetchall()
    finally:
        conn.close()


def _to_unstemmed_index(path: Path) -> None:
    """Rewrite a current file as the release before stemming left it: every app's postings
    written from unstemmed terms (lexical version 2), schema before migration 8."""
    import sys

    from diarist.store.sql import postings as sql_postings
    from diarist.store.sqlite.dialect import DIALECT

    analyze_module = sys.modules["diarist.lexical.analyze"]  # the module, not the function

    conn = sqlite3.connect(path)
    stem = analyze_module.stem
    analyze_module.stem = lambda word: word  # the analyzer of version 2
    analyze_module._STEMS.clear()
    try:
        cur = conn.cursor()
        for (app_id,) in cur.execute("SELECT id FROM apps").fetchall():
            sql_postings.rebuild(DIALECT, cur, app_id)
        conn.execute("UPDATE lex_stats SET version = 2")
        conn.commit()
    finally:
        analyze_module.stem = stem
        analyze_module._STEMS.clear()
    conn.execute("DROP TABLE synced_files")  # migration 9's
    conn.execute("ALTER TABLE apps DROP COLUMN titles_indexed")  # migration 10's
    conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(_restem_postings)}")
    conn.close()


def test_an_unstemmed_index_is_restemmed_on_open_and_ranks_as_a_fresh_one(tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    from diarist.lexical.postings import RESTEM_NOTICE

    path = tmp_path / "m.sqlite"
    with Memory(path, embedder="hash") as mem:
        mem.add_fact("Caroline adopted two dogs last spring", app="a")
        mem.add_fact("Melanie is painting a sunrise for the pottery class", app="a")
        mem.add_fact("the cat likes tuna", app="b")
        fresh = {q: [(h.id, h.score) for h in mem.search(q, app="a", k=5, rerank=False)]
                 for q in ("adopting a dog", "paintings", "Caroline")}
    current = _postings_by_term(path)
    _to_unstemmed_index(path)
    assert _postings_by_term(path) != current
    with caplog.at_level("WARNING", logger="diarist"), Memory(path, embedder="hash") as mem:
        assert mem.lexical.status("a") is None and mem.lexical.status("b") is None
        after = {q: [(h.id, h.score) for h in mem.search(q, app="a", k=5, rerank=False)] for q in fresh}
        # "adopting" finds "adopted" only through the stems the migration wrote.
        assert len(mem.lexical.search("a", lexical.analyze("adopting"), 5)) == 1
    assert RESTEM_NOTICE in caplog.text
    assert after == fresh
    assert _postings_by_term(path) == current  # term ids are new; terms and postings the same
    conn = sqlite3.connect(path)
    assert {v for (v,) in conn.execute("SELECT version FROM lex_stats")} == {lexical.VERSION}
    conn.close()


def test_dropping_a_term_probes_the_postings_primary_key(tmp_path: Path) -> None:
    """Regression: the plan scanned every posting row once per term dropped, so a reindex or a
    migration of a 100k-chunk file ran for minutes."""
    from diarist.store.sqlite.postings import DROP_UNUSED_TERM

    path = tmp_path / "m.sqlite"
    with Memory(path, embedder="hash") as mem:
        for i in range(30):
            mem.add_fact(f"fact number {i} about cats and tuna n{i}", app="a" if i % 2 else "b")
    conn = sqlite3.connect(path)
    try:
        plan = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + DROP_UNUSED_TERM, (1, 1))]
    finally:
        conn.close()
    assert any("SEARCH p USING PRIMARY KEY (app_id=? AND term_id=?)" in step for step in plan), plan
    assert not any(step.startswith("SCAN p") for step in plan), plan


def test_a_rebuild_in_pages_writes_what_one_page_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``rebuild`` reads, analyses and writes chunks a page at a time (memory stays flat at a
    million chunks): pages of 3 give the postings, lengths and rankings of a single page."""
    from diarist.store.sql import postings as sql_postings

    path = tmp_path / "m.sqlite"
    rng = random.Random(3)
    words = "cat tuna red bicycle Lisbon apartment piano lessons Tuesday garden rain coffee painting".split()
    with Memory(path, embedder="hash") as mem:
        for i in range(20):
            mem.add_fact(" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))), app="a" if i % 4 else "b")
        indexed = mem.store.rebuild_lexical("a")
        whole = _postings_by_term(path), mem.store.doc_lengths("a").lengths.tolist()
        ranked = [(h.id, h.score) for h in mem.search("red bicycle in Lisbon", app="a", k=10, rerank=False)]
        monkeypatch.setattr(sql_postings, "REBUILD_BATCH", 3)
        assert indexed > 3 * 4 and mem.store.rebuild_lexical("a") == indexed
        assert (_postings_by_term(path), mem.store.doc_lengths("a").lengths.tolist()) == whole
        assert [(h.id, h.score) for h in mem.search("red bicycle in Lisbon", app="a", k=10, rerank=False)] == ranked
