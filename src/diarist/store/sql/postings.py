"""The BM25 index as plain tables, on either SQL backend: the term dictionary, posting blocks,
lengths and counts.

This module only moves bytes and counts; what a block holds is decided by
``diarist.lexical.postings`` (upkeep) and ``diarist.lexical.bm25`` (scoring). A backend's
``Blocks`` subclass says how its blocks are read and written in bulk.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from ... import lexical
from ...lexical import postings as lexical_postings
from ...lexical.analyze import CHANGED_LANGUAGES
from ...lexical.postings import BLOCK_BITS, repack_index
from ..base import LexicalStats
from .dialect import Cursor, Dialect

log = logging.getLogger("diarist")

#: Chunks analysed and written at a time by ``rebuild``.
REBUILD_BATCH = 20_000


def stats(d: Dialect, cur: Cursor, app_id: int) -> LexicalStats | None:
    row = cur.execute(d.sql("SELECT version, n_docs, total_len FROM lex_stats WHERE app_id = ?"), (app_id,)).fetchone()
    return LexicalStats(int(row[0]), int(row[1]), int(row[2])) if row else None


def indexed_count(d: Dialect, cur: Cursor, app_id: int) -> int:
    return int(cur.execute(d.sql(f"SELECT count(*) FROM chunks WHERE app_id = ? AND {d.in_lexical}"),
                           (app_id,)).fetchone()[0])


def reset_stats(d: Dialect, cur: Cursor, app_id: int) -> None:
    cur.execute(
        d.sql("INSERT INTO lex_stats (app_id, version, n_docs, total_len) VALUES (?, ?, 0, 0) "
              "ON CONFLICT (app_id) DO UPDATE SET version = excluded.version, n_docs = 0, total_len = 0"),
        (app_id, lexical.VERSION),
    )


def app_terms(d: Dialect, cur: Cursor, app_id: int) -> list[int]:
    return [r[0] for r in cur.execute(d.sql("SELECT DISTINCT term_id FROM lex_postings WHERE app_id = ?"), (app_id,))]


def rebuild(d: Dialect, cur: Cursor, app_id: int, *, languages: lexical_postings.Languages = "detect") -> int:
    """The app's postings, lengths, counts and chunk languages written anew from its stored chunk
    text by this diarist's analyzer (``diarist reindex``, and the migration to a new analyzer). Returns how
    many chunks were indexed. The caller bumps the app's generation: caches must reload.

    Chunks are read, analysed and written REBUILD_BATCH at a time, in id order (the blocks'
    appends stay sorted): a million chunks held at once took 7.7 GB.

    ``languages``: "detect": each chunk's language detected, analysed in and recorded;
    "recorded": each analysed in the language recorded with it (a migration to a new analyzer:
    the chunk keeps what it has); "english" (a migration that runs before the language column
    exists): every chunk analysed as English and none recorded, which is what an unrecorded
    language means."""
    old_terms = app_terms(d, cur, app_id)
    cur.execute(d.sql("DELETE FROM lex_postings WHERE app_id = ?"), (app_id,))
    reset_stats(d, cur, app_id)
    blocks = d.blocks(cur, app_id)
    count = 0
    recorded = "language" if languages == "recorded" else "NULL"
    page = d.sql(f"SELECT id, text, {recorded} FROM chunks WHERE app_id = ? AND {d.in_lexical} AND id > ? "
                 "ORDER BY id LIMIT ?")

    def rows_after(last: int) -> list[tuple[int, str, str | None]]:
        return [(i, d.from_db(text), language)
                for i, text, language in cur.execute(page, (app_id, last, REBUILD_BATCH)).fetchall()]

    for chunks in lexical_postings.analysed_pages(rows_after, languages=languages):
        d.set_lengths(cur, [(i, len(t)) for i, t, _ in chunks])
        if languages == "detect":
            set_languages(d, cur, [(i, language) for i, _, language in chunks])
        lexical_postings.add(blocks, [(i, t) for i, t, _ in chunks])
        count += len(chunks)
    blocks.drop_unused_terms(old_terms)
    return count


def set_languages(d: Dialect, cur: Cursor, languages: Sequence[tuple[int, str]]) -> None:
    """Record the language each chunk was analysed in (``rebuild``)."""
    cur.executemany(d.sql("UPDATE chunks SET language = ? WHERE id = ?"), [(lang, i) for i, lang in languages])


def restem(d: Dialect, cur: Cursor) -> None:
    """Every app whose index was current before stemming (lexical version 2) re-analysed from
    its stored chunk text, so an upgraded database keeps its lexical channel; apps whose index
    was of another version are left to ``diarist reindex`` as before."""
    apps = cur.execute(d.sql("SELECT app_id FROM lex_stats WHERE version = 2 ORDER BY app_id")).fetchall()
    for n, (app_id,) in enumerate(apps):
        if n == 0:
            log.warning(lexical_postings.RESTEM_NOTICE)
        rebuild(d, cur, int(app_id), languages="english")  # the language column comes in a later migration
        cur.execute(d.sql("UPDATE apps SET generation = generation + 1 WHERE id = ?"), (app_id,))


def reanalyse_changed(d: Dialect, cur: Cursor, version: int) -> None:
    """Every app whose index is of the version before ``version``: re-analysed from its stored
    chunk text, each chunk in its recorded language, when it holds a chunk in a language that
    version changed (``lexical.analyze.CHANGED_LANGUAGES``); marked current otherwise, its terms
    being the same. Apps of other versions are left to ``diarist reindex`` as before."""
    changed = CHANGED_LANGUAGES[version]
    marks = ", ".join("?" * len(changed))
    holds_changed = d.sql(f"SELECT 1 FROM chunks WHERE app_id = ? AND {d.in_lexical} AND language IN ({marks}) LIMIT 1")
    apps = cur.execute(d.sql("SELECT app_id FROM lex_stats WHERE version = ? ORDER BY app_id"), (version - 1,)).fetchall()
    noticed = False
    for (app_id,) in apps:
        if cur.execute(holds_changed, (app_id, *changed)).fetchone() is None:
            cur.execute(d.sql("UPDATE lex_stats SET version = ? WHERE app_id = ?"), (version, app_id))
            continue
        if not noticed:
            log.warning(lexical_postings.REANALYSE_NOTICE)
            noticed = True
        rebuild(d, cur, int(app_id), languages="recorded")
        cur.execute(d.sql("UPDATE apps SET generation = generation + 1 WHERE id = ?"), (app_id,))


def repack(d: Dialect, conn: Any, rows: Cursor, swap: Callable[[], None]) -> None:
    """Posting blocks of 8,192 chunk ids, were 1,024 (lexical format version 2): the same
    postings regrouped, so every score stays the same to the bit. ``rows`` (a cursor, streamed
    on PostgreSQL) is read into ``lex_postings_v2``, which the caller created; ``swap`` puts it
    in place of ``lex_postings``. Apps whose index was of another version lose their postings
    to ``diarist reindex``, which they needed anyway."""
    current = {int(app_id) for (app_id,) in conn.execute("SELECT app_id FROM lex_stats WHERE version = 1").fetchall()}
    rows.execute("SELECT app_id, term_id, block, data FROM lex_postings ORDER BY app_id, term_id, block")
    writer = conn.cursor()
    dropped = repack_index(rows, current, lambda batch: writer.executemany(
        d.sql("INSERT INTO lex_postings_v2 VALUES (?, ?, ?, ?)"), batch), 10, 13)
    rows.close()
    swap()
    conn.execute("UPDATE lex_stats SET version = 2 WHERE version = 1")
    if dropped:  # no term outlives its postings (deleted text leaves nothing in the index)
        conn.execute("DELETE FROM lex_terms WHERE id NOT IN (SELECT DISTINCT term_id FROM lex_postings)")


class Blocks(ABC):
    """``PostingBlocks`` over one app, inside the caller's open write transaction."""

    def __init__(self, d: Dialect, cur: Cursor, app_id: int):
        self.d = d
        self.cur = cur
        self.app_id = app_id
        # Blocks above this number hold no posting (see no_postings_above); None: unknown.
        self._last_used_block: int | None = None

    def no_postings_above(self, chunk_id: int) -> None:
        """No chunk id above ``chunk_id`` was ever handed out before the chunks being indexed
        (ids are never reused), so no block past its block can exist: reads skip them."""
        self._last_used_block = chunk_id >> BLOCK_BITS

    def may_exist(self, keys: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """The (term id, block) keys that can have a stored block."""
        last = self._last_used_block
        return [key for key in keys if last is None or key[1] <= last]

    @abstractmethod
    def term_ids(self, terms: Collection[str], *, create: bool) -> dict[str, int]: ...

    def create_terms(self, ordered: Sequence[str]) -> dict[str, int]:
        # Explicit ids, each the largest + 1 in the order given: what one INSERT per term
        # gives (SQLite's rowid rule), in one statement, with no read back.
        base = int(self.cur.execute("SELECT coalesce(max(id), 0) FROM lex_terms").fetchone()[0])
        ids = {term: base + 1 + i for i, term in enumerate(ordered)}
        self.d.insert_rows(self.cur, "lex_terms", ("id", "term"), [(i, t) for t, i in ids.items()])
        return ids

    @abstractmethod
    def read_blocks(self, keys: Collection[tuple[int, int]]) -> dict[tuple[int, int], bytes]: ...

    @abstractmethod
    def write_blocks(self, blocks: Mapping[tuple[int, int], bytes]) -> None: ...

    def add_stats(self, n_docs: int, total_len: int) -> None:
        self.cur.execute(
            self.d.sql("UPDATE lex_stats SET n_docs = n_docs + ?, total_len = total_len + ? WHERE app_id = ?"),
            (n_docs, total_len, self.app_id),
        )

    def stats(self) -> LexicalStats | None:
        return stats(self.d, self.cur, self.app_id)

    def indexed_count(self) -> int:
        return indexed_count(self.d, self.cur, self.app_id)

    @abstractmethod
    def drop_unused_terms(self, term_ids: Collection[int]) -> None: ...
