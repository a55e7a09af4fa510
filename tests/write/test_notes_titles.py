"""A note's title and file name, and an item's title, are read by both channels (issue 41 item 2):
each chunk of a titled item begins with its title line; an untitled session's chunks are what
they were; a database stored before is migrated to wait for `diarist reindex`, which re-chunks
its titled items (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from diarist.cli import main
from diarist.importers import read_sessions
from diarist.memory import Memory
from diarist.types import Message
from diarist.write.chunk import chunk_session, title_line

BODY = ("Thousands of vermilion gates up the mountain behind the shrine.\n\n"
        "## Crowds\n\nThey thin out after the halfway intersection, which has the best view.\n")
OTHER = "Knead the dough ten minutes, then rest it two hours at room temperature.\n"


def _vault(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    (vault / "Trips").mkdir(parents=True)
    (vault / "Trips" / "Fushimi Inari.md").write_text(f"---\ntype: place\n---\n{BODY}", encoding="utf-8")
    (vault / "Pizza.md").write_text(f"---\ntitle: Dough for Friday\n---\n{OTHER}", encoding="utf-8")
    return vault


def test_the_title_line_names_a_note_by_title_and_file_name():
    assert title_line({"source": "markdown", "path": "Trips/Fushimi Inari.md"}) == "Fushimi Inari"
    assert title_line({"source": "markdown", "path": "Pizza.md", "front_matter": {"title": "Dough for Friday"}}) == \
        "Dough for Friday · Pizza"
    assert title_line({"source": "claude.ai", "title": "Two weeks  in Japan"}) == "Two weeks in Japan"
    assert title_line({}) is None and title_line({"title": "  "}) is None and title_line({"title": 3}) is None


def test_an_untitled_session_is_chunked_as_before(memory):
    messages = [Message("user", "My cat is called Admon."), Message("assistant", "A fine name.")]
    assert memory.chunk(messages) == chunk_session(messages, memory.embedder, memory.plan)
    assert memory.chunk(messages, None) == memory.chunk(messages)


def test_every_chunk_of_a_titled_note_begins_with_its_title_and_fits_the_window(memory):
    long = [Message("user", " ".join(["word"] * 700))]
    chunks = memory.chunk(long, "Fushimi Inari")
    assert len(chunks) > 1 and all(c.text.startswith("Fushimi Inari\n") for c in chunks)
    assert all(c.n_tokens <= memory.embedder.window for c in chunks)
    split = memory.chunk([Message("user", "where"), Message("assistant", "at the gates")], "Kyoto")
    assert split[0].dense_text.startswith("Kyoto\n"), "the vector reads the title too"


def test_a_note_is_found_by_its_name_in_both_channels(memory, tmp_path):
    memory.add_sessions(read_sessions(_vault(tmp_path))[1], app="v")
    for query, wanted in (("Fushimi Inari", "Trips/Fushimi Inari.md"), ("Dough for Friday", "Pizza.md"),
                          ("pizza", "Pizza.md")):
        hit = memory.search(query, app="v", k=2)[0]
        assert hit.session_id == wanted, query
        assert hit.ranks.get("lexical") == 1 and hit.ranks.get("dense") == 1, (query, hit.ranks)


def _stored_before_titles(memory: Memory, app: str) -> None:
    """Each titled session re-stored as a diarist before this change stored it (no title line)."""
    for summary in memory.store.list_items(app, "session", 100, 0):
        item = memory.store.get_item(app, "session", summary.external_id)
        memory._write(app, [(item, chunk_session(item.messages, memory.embedder, memory.plan))])


def _found_by_name(memory: Memory, app: str) -> bool:
    hit = memory.search("Fushimi Inari", app=app, k=1)[0]
    return hit.session_id == "Trips/Fushimi Inari.md" and hit.ranks.get("lexical") == 1


def test_a_sqlite_database_stored_before_titles_waits_for_reindex(tmp_path):
    db = tmp_path / "old.sqlite"
    with Memory(db, embedder="hash") as memory:
        memory.add_sessions(read_sessions(_vault(tmp_path))[1], app="v")
        memory.add_session([{"role": "user", "content": "untitled words"}], app="plain", session_id="p")
        _stored_before_titles(memory, "v")
        assert not _found_by_name(memory, "v")
    with sqlite3.connect(db) as conn:  # the schema before migration 10
        conn.execute("ALTER TABLE apps DROP COLUMN titles_indexed")
        conn.execute("PRAGMA user_version = 9")
    with Memory(db, embedder="hash") as memory:
        assert "run: diarist reindex" in memory.app_stats("v")["titles"]
        assert not _found_by_name(memory, "v")
    runner = CliRunner()
    done = runner.invoke(main, ["reindex", "--db", str(db), "--app", "v", "--embedder", "hash"])
    assert done.exit_code == 0, done.output
    assert "re-chunked 2 titled items" in done.output
    with Memory(db, embedder="hash") as memory:
        assert _found_by_name(memory, "v") and memory.app_stats("v")["titles"] == "indexed"
        assert memory.index_titles("v") == 0, "done once"
        assert memory.index_titles("plain") == 0 and memory.app_stats("plain")["titles"] == "indexed"
        fresh = Memory(":memory:", embedder="hash")
        fresh.add_session([{"role": "user", "content": "x"}], app="new", session_id="n")
        assert fresh.app_stats("new")["titles"] == "indexed", "an app stored since is indexed so"
        fresh.close()


def test_a_postgresql_database_stored_before_titles_waits_for_reindex(pg_server, tmp_path):
    pytest.importorskip("psycopg")
    schema = pg_server.new_schema("titles")
    url = pg_server.url(schema)
    with Memory(url, embedder="hash") as memory:
        memory.add_sessions(read_sessions(_vault(tmp_path))[1], app="v")
        _stored_before_titles(memory, "v")
    with pg_server.connect() as conn:  # the schema before migration 6
        conn.execute(f'ALTER TABLE "{schema}".apps DROP COLUMN titles_indexed')
        conn.execute(f'DELETE FROM "{schema}".diarist_schema WHERE version >= 6')  # and the later ones
    with Memory(url, embedder="hash") as memory:
        assert "run: diarist reindex" in memory.app_stats("v")["titles"]
        assert not _found_by_name(memory, "v")
        assert memory.index_titles("v") == 2
        memory.reindex("v")
        assert _found_by_name(memory, "v") and memory.app_stats("v")["titles"] == "indexed"


def test_migrate_carries_an_app_that_still_waits_for_reindex(tmp_path):
    from diarist.migrate import migrate

    src = tmp_path / "src.sqlite"
    with Memory(src, embedder="hash") as memory:
        memory.add_sessions(read_sessions(_vault(tmp_path))[1], app="v")
        memory.add_fact("done", app="done")
        _stored_before_titles(memory, "v")
        memory.store.mark_titles_indexed("v", False)
    migrate(src, tmp_path / "dst.sqlite")
    with Memory(tmp_path / "dst.sqlite", embedder="hash") as copied:
        assert not copied.store.titles_indexed("v") and copied.store.titles_indexed("done")
        assert not _found_by_name(copied, "v")
        assert copied.index_titles("v") == 2 and _found_by_name(copied, "v")


def test_a_new_title_given_by_update_is_what_both_channels_read(memory, tmp_path):
    memory.add_sessions(read_sessions(_vault(tmp_path))[1], app="v")
    memory.update("Pizza.md", app="v", metadata={"front_matter": {"title": "Neapolitan base"}}, merge_metadata=True)
    hit = memory.search("Neapolitan base", app="v", k=1)[0]
    assert hit.session_id == "Pizza.md" and hit.ranks.get("lexical") == 1 and hit.text.startswith("Neapolitan base")
