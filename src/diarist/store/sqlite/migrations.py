"""Numbered schema migrations; each runs in its own transaction and bumps PRAGMA user_version."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

from ...errors import SchemaError
from ..sql import postings as sql_postings
from .dialect import DIALECT


def _repack_postings(conn: sqlite3.Connection) -> None:
    """7: posting blocks of 8,192 chunk ids (``sql.postings.repack``)."""
    conn.execute(
        "CREATE TABLE lex_postings_v2 ("
        " app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,"
        " term_id INTEGER NOT NULL, block INTEGER NOT NULL, data BLOB NOT NULL,"
        " PRIMARY KEY (app_id, term_id, block)) WITHOUT ROWID"
    )

    def swap() -> None:
        conn.execute("DROP TABLE lex_postings")
        conn.execute("ALTER TABLE lex_postings_v2 RENAME TO lex_postings")

    sql_postings.repack(DIALECT, conn, conn.cursor(), swap)


def _restem_postings(conn: sqlite3.Connection) -> None:
    """8: stemmed terms (lexical version 3): every version-2 index re-analysed."""
    sql_postings.restem(DIALECT, conn.cursor())


def _reanalyse_arabic_russian(conn: sqlite3.Connection) -> None:
    """13: lexical version 4 (Arabic clitics, Russian interrogatives): a version-3 index is
    re-analysed where its app holds Arabic or Russian chunks, marked current elsewhere."""
    sql_postings.reanalyse_changed(DIALECT, conn.cursor(), 4)


def _reanalyse_arabic_script(conn: sqlite3.Connection) -> None:
    """15: lexical version 5 (Arabic prepositions before the article; Eastern Arabic digits in
    Arabic, Persian and Urdu): a version-4 index is re-analysed where its app holds chunks in
    them, marked current elsewhere."""
    sql_postings.reanalyse_changed(DIALECT, conn.cursor(), 5)


def _record_languages(conn: sqlite3.Connection) -> None:
    """The language each chunk's terms were analysed in (ISO 639-1, ``diarist.lexical.language``).
    NULL: stored before languages were recorded, so analysed as English; ``diarist reindex``
    detects it and re-analyses. (Added only where absent: tests that rewind the schema to an
    earlier migration keep the later columns, as PostgreSQL's ``IF NOT EXISTS`` does.)"""
    if not any(row[1] == "language" for row in conn.execute("PRAGMA table_info(chunks)")):
        conn.execute("ALTER TABLE chunks ADD COLUMN language TEXT")


def _sentence_vectors(conn: sqlite3.Connection) -> None:
    """Migration 14. Idempotent: a database rewound past it (tests do) keeps its table and column."""
    conn.execute("""
        CREATE TABLE IF NOT EXISTS sentence_vectors (
            chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
            app_id INTEGER NOT NULL,  -- the chunk's: a lookup stays inside the app
            vector BLOB NOT NULL  -- float32 unit vector
        )""")
    conn.execute("CREATE INDEX IF NOT EXISTS sentence_vectors_chunk ON sentence_vectors (chunk_id)")
    columns = {row[1] for row in conn.execute("PRAGMA table_info(apps)")}
    if "sentences_indexed" not in columns:
        conn.execute("ALTER TABLE apps ADD COLUMN sentences_indexed INTEGER NOT NULL DEFAULT 1")
        conn.execute("UPDATE apps SET sentences_indexed = 0 WHERE id IN (SELECT DISTINCT app_id FROM chunks)")


MIGRATIONS: list[str | Callable[[sqlite3.Connection], None]] = [
    # 1: the whole first schema.
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE apps (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        generation INTEGER NOT NULL DEFAULT 0,  -- bumped by every write: caches reload
        purge_generation INTEGER NOT NULL DEFAULT 0  -- bumped by deletes: caches rebuild
    );
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        external_id TEXT NOT NULL,
        date TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        content_hash TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (app_id, external_id)
    );
    CREATE TABLE messages (
        session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        time TEXT,
        PRIMARY KEY (session_id, position)
    ) WITHOUT ROWID;
    CREATE TABLE facts (
        id INTEGER PRIMARY KEY,
        app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        external_id TEXT NOT NULL,
        text TEXT NOT NULL,
        date TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        content_hash TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (app_id, external_id)
    );
    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: postings blocks stay sorted
        app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        session_id INTEGER REFERENCES sessions(id) ON DELETE CASCADE,
        fact_id INTEGER REFERENCES facts(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        view TEXT NOT NULL,
        roles TEXT NOT NULL,
        first_turn INTEGER NOT NULL,
        last_turn INTEGER NOT NULL,
        text TEXT NOT NULL,
        date TEXT,
        n_tokens INTEGER NOT NULL,
        lex_len INTEGER NOT NULL,  -- BM25 document length, in index terms
        in_lexical INTEGER NOT NULL DEFAULT 1,  -- 0: the chunk has no postings by design
        vector BLOB  -- normalised int8, or NULL when the chunk is not in the dense channel
    );
    CREATE INDEX chunks_app ON chunks (app_id, id);
    CREATE INDEX chunks_session ON chunks (session_id);
    CREATE INDEX chunks_fact ON chunks (fact_id);
    -- The BM25 inverted index. Postings are packed per (term, block of 1024 chunk ids; 8192
    -- since migration 7) as little-endian uint16 pairs (chunk id - block start, term frequency).
    CREATE TABLE lex_terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
    CREATE TABLE lex_postings (
        app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        term_id INTEGER NOT NULL,
        block INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (app_id, term_id, block)
    ) WITHOUT ROWID;
    CREATE TABLE lex_stats (
        app_id INTEGER PRIMARY KEY REFERENCES apps(id) ON DELETE CASCADE,
        version INTEGER NOT NULL,  -- analyzer/format version the postings were written with
        n_docs INTEGER NOT NULL,
        total_len INTEGER NOT NULL
    );
    """,
    # 2: per-app API keys for the HTTP and MCP servers (diarist.server.keys). Only a SHA-256 of
    # each key is kept; the app is named, not referenced, so a key outlives its app's memory.
    """
    CREATE TABLE api_keys (
        id INTEGER PRIMARY KEY,
        app TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL,  -- the key's first characters, to tell keys apart in listings
        label TEXT,
        created_at TEXT NOT NULL,
        revoked_at TEXT
    );
    CREATE INDEX api_keys_app ON api_keys (app);
    """,
    # 3: a covering index for the lexical channel's document lengths and indexed-chunk count,
    # read without scanning the chunk rows (at 100k chunks: 261 -> 68 ms and 129 -> 12 ms).
    """
    CREATE INDEX chunks_lexical ON chunks (app_id, in_lexical, id, lex_len);
    """,
    # 4: the text a chunk's vector reads when it is not the whole chunk (view "split": the
    # user's words in it), so a vector can always be re-derived and checked.
    """
    ALTER TABLE chunks ADD COLUMN embed_text TEXT;
    """,
    # 5: an epoch per app, drawn at random when the app is created and never reused. Caches of
    # an app's index (each process holds its own) are keyed on it: the integer id is handed out
    # again after a delete, so a cache keyed on it served a deleted app's vectors.
    """
    ALTER TABLE apps ADD COLUMN epoch TEXT NOT NULL DEFAULT '';
    UPDATE apps SET epoch = lower(hex(randomblob(16)));
    """,
    # 6: previous versions of items replaced by Memory.update (Memory.history reads them). A
    # delete removes an item's versions with it: forgetting covers the history too.
    """
    CREATE TABLE item_versions (
        id INTEGER PRIMARY KEY,
        app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        external_id TEXT NOT NULL,
        date TEXT,
        metadata TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        body TEXT NOT NULL,  -- JSON: the messages of a session, or the text of a fact
        replaced_at TEXT NOT NULL
    );
    CREATE INDEX item_versions_item ON item_versions (app_id, kind, external_id, id);
    """,
    # 7: posting blocks of 8,192 chunk ids (were 1,024): a common term's postings are read in
    # 8x fewer rows, and a bulk build writes 8x fewer.
    _repack_postings,
    # 8: the lexical channel's terms are stemmed (lexical version 3): version-2 indexes rebuilt.
    _restem_postings,
    # 9: the files ``diarist sync`` read, per app and synced folder: a file whose size, time and
    # content hash did not change is not read again; the items each produced are deleted with it.
    """
    CREATE TABLE synced_files (
        app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        root TEXT NOT NULL,  -- the synced folder, absolute
        path TEXT NOT NULL,  -- the file inside it, with / between folders
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        items TEXT NOT NULL,  -- JSON: [[kind, external id], ...] the file produced
        PRIMARY KEY (app_id, root, path)
    ) WITHOUT ROWID;
    """,
    # 10: a titled item's chunks begin with its title line (write.chunk.title_line: a note's title
    # and file name, a conversation's name), so both channels read it. Chunks stored before were
    # not: every app already holding sessions waits for ``diarist reindex`` (Memory.index_titles)
    # to re-chunk and re-embed its titled ones; an app created from now on is indexed so.
    """
    ALTER TABLE apps ADD COLUMN titles_indexed INTEGER NOT NULL DEFAULT 1;
    UPDATE apps SET titles_indexed = 0 WHERE id IN (SELECT DISTINCT app_id FROM sessions);
    """,
    # 11: the language each chunk's terms were analysed in (_record_languages).
    _record_languages,
    # 12: the vectors of chunks' lines (store.sql.lines), written at ingest so that the block's
    # trim embeds only the question. A chunk's lines go with it (the foreign key cascades);
    # chunks stored before get theirs from ``diarist reindex`` (Memory.index_lines). "IF NOT
    # EXISTS": a database rewound past it (tests do) keeps its table.
    """
    CREATE TABLE IF NOT EXISTS line_vectors (
        chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
        app_id INTEGER NOT NULL,  -- the chunk's: a lookup stays inside the app
        digest BLOB NOT NULL,  -- blake2b-128 of the line's text (read.lines.line_digest)
        vector BLOB NOT NULL  -- float32 unit vector
    );
    CREATE INDEX IF NOT EXISTS line_vectors_chunk ON line_vectors (chunk_id);
    CREATE INDEX IF NOT EXISTS line_vectors_digest ON line_vectors (app_id, digest);
    """,
    # 13: Arabic and Russian analysed by lexical version 4's rules (_reanalyse_arabic_russian).
    _reanalyse_arabic_russian,
    # 14: the vectors of the sentences of short memories' chunks (store.sql.sentences), written at
    # ingest; the read path rescores a short memory's cosine with its best sentence's
    # (read.sentences). A chunk's sentences go with it (the foreign key cascades). Apps holding
    # chunks wait for ``diarist reindex`` (Memory.index_sentences); until then they read as before.
    _sentence_vectors,
    # 15: Arabic, Persian and Urdu analysed by lexical version 5's rules (_reanalyse_arabic_script).
    _reanalyse_arabic_script,
]


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; returns the version reached. Needs an autocommit connection."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(MIGRATIONS):
        raise SchemaError(
            f"database schema version {version} is newer than this diarist ({len(MIGRATIONS)})"
        )
    for number in range(version + 1, len(MIGRATIONS) + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-check under the write lock: another process may have migrated meanwhile.
            if conn.execute("PRAGMA user_version").fetchone()[0] < number:
                step = MIGRATIONS[number - 1]
                if callable(step):
                    step(conn)
                else:
                    script = re.sub(r"--[^\n]*", "", step)  # comments may hold ';'
                    for statement in script.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return len(MIGRATIONS)
