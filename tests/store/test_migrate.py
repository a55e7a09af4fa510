"""``diarist migrate SRC DST`` (``diarist.migrate``): a whole store copied into another.

- SQLite -> PostgreSQL -> SQLite: the same contents (the JSONL exports are equal), the same
  rankings for every LoCoMo question of one conversation (the fused search, ids and scores),
  keys that still open their app (revoked ones stay revoked), the embedder and plan recorded,
  empty apps kept;
- all or nothing: a destination that is not empty is refused, and a copy whose source is written
  meanwhile, or that does not verify, commits nothing (a new SQLite file it made is removed);
- DictStore (a store written only against the contract) copies too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import add_all, load_locomo, make_sessions
from memory_store import DictStore

import diarist.migrate as migrate_module
from diarist.cli import main
from diarist.errors import ConfigError, DatabaseNotFound, KeyRefused
from diarist.export import jsonl_lines
from diarist.importers.locomo import locomo_sessions
from diarist.keys import KeyStore
from diarist.memory import Memory
from diarist.migrate import MigrationFailed, migrate, same_ranking
from diarist.read.lines import line_digest
from diarist.read.trim import lines_of
from diarist.store.base import StoredChunk
from diarist.store.sqlite import SQLiteStore


def build_source(path: Path | str, with_locomo: bool = True) -> dict[str, Any]:
    """A memory with some history: LoCoMo conv-26, an app of facts with a replace and a delete,
    an app whose every item was deleted (it still exists, empty), and keys (one revoked)."""
    out: dict[str, Any] = {}
    with Memory(path, embedder="hash") as mem:
        if with_locomo:
            record = load_locomo()[0]  # conv-26: 19 sessions, 199 questions
            mem.add_sessions(list(locomo_sessions(record)), app="locomo")
            out["questions"] = [qa["question"] for qa in record["qa"]]
        add_all(mem, make_sessions(5, seed=4, prefix="n"), app="notes")
        mem.add_fact("The user is allergic to peanuts.", app="notes", fact_id="allergy", metadata={"src": "chat"})
        mem.add_fact("The user's sister lives in Lyon.", app="notes", fact_id="sister")
        mem.add_fact("The user's sister moved to Porto.", app="notes", fact_id="sister")  # a replace
        mem.update("allergy", app="notes", text="The user is allergic to peanuts and shellfish.")  # history
        mem.update("allergy", app="notes", metadata={"src": "doctor"})
        mem.add_fact("Forget me.", app="notes", fact_id="gone")
        mem.delete("gone", app="notes")
        mem.add_session([{"role": "user", "content": "nul \x00 and the \ufdd0 mark"}], app="notes", session_id="odd")
        mem.add_fact("short-lived", app="empty")
        mem.delete(mem.list(app="empty", kind="fact")[0]["fact_id"], app="empty")
        out["key"], _ = mem.keys.create("notes", label="laptop")
        revoked, record_ = mem.keys.create("locomo")
        mem.keys.revoke(str(record_.id))
        out["revoked"] = revoked
    return out


def exports(location: Any) -> dict[str, list[str]]:
    with Memory(location) as mem:
        return {app: list(jsonl_lines(mem, app)) for app in mem.apps()}


def histories(location: Any) -> dict[str, list[dict[str, Any]]]:
    """Every kept version of the notes app's facts (replaced-at times included)."""
    with Memory(location) as mem:
        return {f["fact_id"]: mem.history(f["fact_id"], app="notes", kind="fact")
                for f in mem.list(app="notes", kind="fact")}


def keys_of(location: Any) -> list[tuple]:
    with Memory(location) as mem:
        return [(k.app, k.prefix, k.label, k.created_at, k.revoked_at) for k in mem.keys.list(include_revoked=True)]


@pytest.mark.slow
def test_sqlite_to_postgresql_and_back(pg_server: Any, tmp_path: Path) -> None:
    src, back = tmp_path / "src.sqlite", tmp_path / "back.sqlite"
    built = build_source(src)
    url = pg_server.new_url("mig")

    report = migrate(src, url)
    assert set(report.apps) == {"empty", "locomo", "notes"} and report.keys == 2
    assert report.apps["empty"].sessions == report.apps["empty"].facts == 0
    assert report.checked["dense_queries"] > 0 and report.checked["lexical_queries"] > 0
    assert report.checked["items"] == 19 + 5 + 3 and report.meta["embedder"] == "hash-64-64"
    assert "postgres:@" not in report.destination

    # Back through the command line.
    result = CliRunner().invoke(main, ["migrate", url, str(back)], catch_exceptions=False)
    assert result.exit_code == 0, result.output + result.stderr
    assert "app 'locomo': 19 sessions" in result.stdout and "2 API keys" in result.stdout
    assert "rankings identical" in result.stdout

    want = exports(src)
    assert set(want) == {"empty", "locomo", "notes"} and want["empty"] == []
    assert exports(url) == want and exports(back) == want
    assert keys_of(url) == keys_of(src) == keys_of(back)
    assert histories(url) == histories(src) == histories(back) and len(histories(src)["allergy"]) == 2
    assert report.checked["histories"] == 1
    with Memory(src) as mem:
        plan = mem.plan
    for where in (url, back):
        with Memory(where) as mem:
            assert mem.embedder.model_id == "hash-64-64" and mem.plan == plan
            assert mem.keys.app_for(built["key"]) == "notes"
            with pytest.raises(KeyRefused, match="revoked"):
                mem.keys.app_for(built["revoked"])
            assert mem.get("odd", app="notes")["messages"][0]["content"] == "nul \x00 and the \ufdd0 mark"
            assert mem.app_stats("locomo")["lexical_index"] == "complete"

    # The same rankings for every question: the fused search, then the second stage. k = the 19
    # sessions, every memory ranked; the first questions ask for one more, which sends the fetch
    # through the rest of the pool a row at a time (~180 reads a question: asked every time, that
    # was most of this test's time).
    mems = [Memory(where) for where in (src, url, back)]
    try:
        for n, question in enumerate(built["questions"]):
            k = 19 + (n < 10)
            first, *others = ([(h.session_id, h.text, h.score) for h in m.search(question, app="locomo", k=k)]
                              for m in mems)
            assert len(first) == 19
            for other in others:
                assert [h[:2] for h in other] == [h[:2] for h in first], question
                assert np.allclose([h[2] for h in other], [h[2] for h in first], rtol=0, atol=1e-9)
        # The lines' vectors come along, byte for byte: no chunk waits for `reindex` to get them.
        for m in mems:
            assert m.store.chunks_without_lines("locomo", 0, 10) == [] and m.store.chunks_without_lines("notes", 0, 10) == []
        texts = [r.text for r in mems[0].store.fetch_chunks("locomo", mems[0].store.read_vectors("locomo").ids[:20].tolist()).values()]
        digests = [line_digest(line) for text in texts for line in lines_of(text)]
        want_lines = mems[0].store.line_vectors("locomo", digests)
        assert len(want_lines) == len(set(digests)) > 0
        for m in mems[1:]:
            got = m.store.line_vectors("locomo", digests)
            assert got.keys() == want_lines.keys() and all(np.array_equal(got[d], want_lines[d]) for d in got)
        # With no deletes in it, the LoCoMo app even keeps its chunk ids.
        assert [m.store.read_vectors("locomo").ids.tolist() for m in mems[1:]] == \
            [mems[0].store.read_vectors("locomo").ids.tolist()] * 2
    finally:
        for m in mems:
            m.close()


def test_a_destination_must_be_empty(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.sqlite", tmp_path / "dst.sqlite"
    build_source(src, with_locomo=False)
    with Memory(dst, embedder="hash") as mem:
        mem.add_fact("already here", app="mine")
    with pytest.raises(MigrationFailed, match="not empty"):
        migrate(src, dst)
    left = exports(dst)
    assert list(left) == ["mine"] and len(left["mine"]) == 1  # untouched
    with pytest.raises(ConfigError, match="same store"):
        migrate(src, src)
    with pytest.raises(DatabaseNotFound):
        migrate(tmp_path / "typo.sqlite", tmp_path / "new.sqlite")
    assert not (tmp_path / "new.sqlite").exists()
    # Another embedder recorded in an empty destination is refused too.
    with Memory(tmp_path / "other.sqlite", embedder="hash:32"):
        pass
    with pytest.raises(MigrationFailed, match="already records embedder"):
        migrate(src, tmp_path / "other.sqlite")


def test_a_source_written_during_the_copy_commits_nothing(pg_server: Any, tmp_path: Path) -> None:
    src = tmp_path / "src.sqlite"
    build_source(src, with_locomo=False)
    writer = Memory(src)

    def meanwhile(n: int) -> None:
        writer.add_fact(f"written during the copy ({n})", app="notes")

    url = pg_server.new_url("busy")
    with pytest.raises(MigrationFailed, match="changed while it was copied"):
        migrate(src, url, progress=meanwhile)
    new = tmp_path / "new.sqlite"
    with pytest.raises(MigrationFailed, match="changed while it was copied"):
        migrate(src, new, progress=meanwhile)
    writer.close()
    assert not new.exists() and not Path(f"{new}-wal").exists()  # the file it created is gone
    from diarist.store.postgres import PostgresStore

    left = PostgresStore(url)
    try:  # rolled back whole: no app, no key, not even the embedder it claimed
        assert left.apps() == [] and left.list_keys(include_revoked=True) == [] and left.get_meta("embedder") is None
    finally:
        left.close()
    assert migrate(src, url).keys == 2  # and the empty schema takes the copy once the source is still


def test_a_copy_that_does_not_verify_commits_nothing(pg_server: Any, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src.sqlite"
    build_source(src, with_locomo=False)
    indexed = migrate_module._indexed

    def corrupt(chunk: StoredChunk) -> Any:  # one vector goes wrong on its way
        out = indexed(chunk)
        if chunk.chunk.text.startswith("The user is allergic"):
            out.vector = -out.vector
        return out

    monkeypatch.setattr(migrate_module, "_indexed", corrupt)
    url = pg_server.new_url("bad")
    with pytest.raises(MigrationFailed, match="differs"):
        migrate(src, url, sample=100)
    monkeypatch.undo()
    from diarist.store.postgres import PostgresStore

    left = PostgresStore(url)
    try:
        assert left.apps() == [] and left.get_meta("embedder") is None
    finally:
        left.close()


def test_any_two_stores_through_the_contract(tmp_path: Path) -> None:
    src = tmp_path / "src.sqlite"
    build_source(src, with_locomo=False)
    middle = DictStore()
    migrate(src, middle)
    back = tmp_path / "back.sqlite"
    migrate(middle, back)
    assert exports(back) == exports(src)
    assert histories(back) == histories(src) and len(histories(src)["allergy"]) == 2
    assert middle.apps() == ["empty", "notes"]  # a store given is not closed
    empty = migrate(SQLiteStore(":memory:"), tmp_path / "nothing.sqlite")
    assert empty.apps == {} and empty.keys == 0


def test_the_record_of_synced_files_is_copied(tmp_path: Path) -> None:
    """A copy keeps what ``diarist sync`` recorded: a sync into it reads no unchanged file again
    and still knows which memories a deleted file produced."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# Garden\n\nThe fence was repaired with cedar boards.\n")
    (vault / "b.md").write_text("# Cat\n\nMiso hides under the porch.\n")
    src = tmp_path / "src.sqlite"
    with Memory(src, embedder="hash") as mem:
        assert sorted(mem.sync(vault, app="vault").added) == ["a.md", "b.md"]
    copy = tmp_path / "copy.sqlite"
    report = migrate(src, copy)
    assert report.checked["synced_files"] == 2
    assert SQLiteStore(copy).synced_files("vault") == SQLiteStore(src).synced_files("vault")
    (vault / "b.md").unlink()
    with Memory(copy) as mem:
        again = mem.sync(vault, app="vault")
        assert again.unchanged == 1 and again.added == [] and again.deleted == ["b.md"]
        assert "Miso" not in " ".join(h.text for h in mem.search("Where does Miso hide?", app="vault"))


def test_a_copy_in_many_small_batches_is_the_same_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch limits (large by default: few posting-block rewrites) only cut the copy into
    put_items calls: crossing them many times gives the same store."""
    src = tmp_path / "src.sqlite"
    build_source(src)
    whole = tmp_path / "whole.sqlite"
    migrate(src, whole)
    monkeypatch.setattr(migrate_module, "BATCH_ITEMS", 2)
    monkeypatch.setattr(migrate_module, "BATCH_CHUNKS", 3)
    pieces = tmp_path / "pieces.sqlite"
    migrate(src, pieces)
    assert exports(pieces) == exports(whole) == exports(src)
    assert histories(pieces) == histories(whole)
    a, b = SQLiteStore(whole), SQLiteStore(pieces)
    try:
        for query in ("SELECT * FROM lex_terms ORDER BY 1", "SELECT * FROM lex_postings ORDER BY 1, 2, 3",
                      "SELECT * FROM lex_stats ORDER BY 1"):
            assert a._db.read(query) == b._db.read(query)
    finally:
        a.close()
        b.close()


def test_near_ties_may_swap_but_nothing_else() -> None:
    a = [("x", 1.0), ("y", 0.5), ("z", 0.5 + 1e-15), ("w", 0.1)]
    assert same_ranking(a, a, depth=4)
    assert same_ranking(a, [a[0], a[2], a[1], a[3]], depth=4)  # scores equal to the last bits
    assert not same_ranking(a, [a[1], a[0], a[2], a[3]], depth=4)
    assert not same_ranking(a, a[:3], depth=4)
    assert same_ranking(a, a[:3] + [("v", 0.1)], depth=3)  # beyond the depth compared


def test_the_cli_prints_json(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.sqlite", tmp_path / "dst.sqlite"
    build_source(src, with_locomo=False)
    result = CliRunner().invoke(main, ["migrate", str(src), str(dst), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["apps"]["notes"]["facts"] == 2 and report["keys"] == 2
    result = CliRunner().invoke(main, ["migrate", str(src), str(dst)])
    assert result.exit_code == 1 and "not empty" in result.output


def _sentences(path: Path, app: str) -> dict[str, list[list[float]]]:
    """Each short memory's chunk text -> its stored sentence vectors (ids differ between stores)."""
    store = SQLiteStore(path)
    try:
        chunks = [c for item in store.list_items(app, "fact", 100, 0)
                  for c in store.item_chunks(app, "fact", item.external_id)]
        found = store.sentence_vectors(app, [c.chunk_id for c in chunks])
        return {c.chunk.text: np.asarray(found[c.chunk_id]).round(6).tolist() for c in chunks if c.chunk_id in found}
    finally:
        store.close()


def test_the_sentence_vectors_of_short_memories_are_copied(tmp_path: Path) -> None:
    """A short memory's sentences' vectors (the sentences read stage) go with it: a copy that
    left them behind would read without the blend, and, marked indexed, `reindex` would never add
    them. A source still waiting for them leaves its copy waiting too."""
    src = tmp_path / "src.sqlite"
    with Memory(src, embedder="hash") as mem:
        mem.add_fact("The user works as a data analyst. She asked how to chart delivery rates.", app="me",
                      fact_id="job")
    held = _sentences(src, "me")
    assert held and all(len(vectors) == 2 for vectors in held.values())
    copy = tmp_path / "copy.sqlite"
    migrate(src, copy)
    assert _sentences(copy, "me") == held
    waiting = SQLiteStore(src)
    waiting.mark_sentences_indexed("me", False)
    waiting.close()
    again = tmp_path / "again.sqlite"
    migrate(src, again)
    copied = SQLiteStore(again)
    assert copied.sentences_indexed("me") is False
    copied.close()
