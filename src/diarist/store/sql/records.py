"""Items (sessions and facts), their messages and their chunks, as rows of either SQL backend.

Sessions and facts keep their own tables (a session has messages, a fact a text), but every
function here takes the kind as a value: one code path for both. Text goes through the
dialect's codec (``to_db`` / ``from_db``), ids through its bigint rules.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...dates import now_iso
from ...types import Chunk, Message
from ..base import ChunkRow, HitRow, IndexedChunk, Item, ItemSummary, ItemVersion, SampleChunk, StoredChunk
from . import lines, sentences
from .dialect import Cursor, Dialect, _same

TABLES = {"session": "sessions", "fact": "facts"}
CHUNK_COLUMNS = {"session": "session_id", "fact": "fact_id"}
_ITEM_COLUMNS = {
    "session": ("id", "app_id", "external_id", "date", "metadata", "content_hash", "created_at"),
    "fact": ("id", "app_id", "external_id", "text", "date", "metadata", "content_hash", "created_at"),
}
_MESSAGE_COLUMNS = ("session_id", "position", "role", "content", "time")
_CHUNK_COLUMNS = ("id", "app_id", "session_id", "fact_id", "position", "view", "roles", "first_turn", "last_turn",
                  "text", "date", "n_tokens", "lex_len", "in_lexical", "language")


def table(kind: str) -> str:
    try:
        return TABLES[kind]
    except KeyError:
        raise ValueError(f"unknown item kind {kind!r}; use one of {', '.join(TABLES)}") from None


def item_pk(d: Dialect, cur: Cursor, app_id: int, kind: str, external_id: str) -> int | None:
    row = cur.execute(
        d.sql(f"SELECT id FROM {table(kind)} WHERE app_id = ? AND external_id = ?"), (app_id, d.to_db(external_id))
    ).fetchone()
    return int(row[0]) if row else None


def _by_external_id(d: Dialect, cur: Cursor, app_id: int, kind: str, column: str,
                    external_ids: Sequence[str]) -> dict[str, Any]:
    """external id -> ``column`` of the stored ones among ``external_ids``."""
    out: dict[str, Any] = {}
    for test, params in d.in_list("external_id", [d.to_db(e) for e in external_ids], "text"):
        rows = cur.execute(
            d.sql(f"SELECT external_id, {column} FROM {table(kind)} WHERE app_id = ? AND {test}"), (app_id, *params)
        ).fetchall()
        out.update((d.from_db(e), value) for e, value in rows)
    return out


def content_hashes(d: Dialect, cur: Cursor, app_id: int, kind: str, external_ids: Sequence[str]) -> dict[str, str]:
    return _by_external_id(d, cur, app_id, kind, "content_hash", external_ids)


def item_pks(d: Dialect, cur: Cursor, app_id: int, kind: str, external_ids: Sequence[str]) -> dict[str, int]:
    return _by_external_id(d, cur, app_id, kind, "id", external_ids)


def _chunk_row(d: Dialect, app_id: int, kind: str, item_pk: int, chunk_id: int, item: IndexedChunk,
               date: str | None) -> tuple:
    c, enc = item.chunk, d.to_db
    vector = np.ascontiguousarray(item.vector, dtype=np.int8) if c.dense else None
    return (
        chunk_id, app_id, item_pk if kind == "session" else None, item_pk if kind == "fact" else None,
        c.position, enc(c.view), enc(",".join(c.roles)), c.first_turn, c.last_turn, enc(c.text),
        date, c.n_tokens, len(item.terms) if c.lexical else 0, bool(c.lexical), item.language,
        *d.vector_values(vector), enc(c.embed_text) if c.dense else None,
    )


def insert_items(
    d: Dialect, cur: Cursor, app_id: int, items: Sequence[tuple[Item, Sequence[IndexedChunk]]]
) -> list[list[tuple[int, list[str]]]]:
    """Insert items none of which is stored yet, with their messages and chunks: one bulk
    insert per table. Ids are the ones a row-by-row insert would get (the dialect's
    ``new_item_ids`` and ``new_chunk_ids``), so rows, their order and the postings keyed on them
    stay as they were. Returns, per item, (chunk id, terms) of its lexical chunks."""
    pks = {kind: iter(d.new_item_ids(cur, table(kind), sum(1 for i, _ in items if i.kind == kind)))
           for kind in dict.fromkeys(item.kind for item, _ in items)}
    chunk_ids = iter(d.new_chunk_ids(cur, sum(len(chunks) for _, chunks in items)))
    rows: dict[str, list[tuple]] = {"sessions": [], "facts": [], "messages": [], "chunks": [], "line_vectors": [],
                                    "sentence_vectors": []}
    indexed: list[list[tuple[int, list[str]]]] = []
    for item, chunks in items:
        pk, date = next(pks[item.kind]), d.to_db(item.date)
        metadata = json.dumps(item.metadata, ensure_ascii=False)  # escapes NUL as \u0000
        head = (pk, app_id, d.to_db(item.external_id))
        if item.kind == "session":
            rows["sessions"].append((*head, date, metadata, item.content_hash, now_iso()))
            enc = d.to_db
            rows["messages"].extend((pk, i, enc(m.role), enc(m.content), enc(m.time)) for i, m in enumerate(item.messages))
        else:
            rows["facts"].append((*head, d.to_db(item.text), date, metadata, item.content_hash, now_iso()))
        lexical: list[tuple[int, list[str]]] = []
        for one in chunks:
            chunk_id = next(chunk_ids)
            rows["chunks"].append(_chunk_row(d, app_id, item.kind, pk, chunk_id, one, date))
            if one.lines:
                rows["line_vectors"].extend(lines.rows(app_id, [(chunk_id, one.lines)]))
            if len(one.sentences):
                rows["sentence_vectors"].extend(sentences.rows(app_id, [(chunk_id, one.sentences)]))
            if one.chunk.lexical:
                lexical.append((chunk_id, one.terms))
        indexed.append(lexical)
    chunk_columns = (*_CHUNK_COLUMNS, *d.vector_columns, "embed_text")
    for name, columns in (("sessions", _ITEM_COLUMNS["session"]), ("facts", _ITEM_COLUMNS["fact"]),
                          ("messages", _MESSAGE_COLUMNS), ("chunks", chunk_columns),
                          ("line_vectors", lines.COLUMNS), ("sentence_vectors", sentences.COLUMNS)):
        if rows[name]:
            d.insert_rows(cur, name, columns, rows[name])
    return indexed


def lexical_chunks(d: Dialect, cur: Cursor, kind: str, item_pk: int) -> list[tuple[int, str, int, str]]:
    """(chunk id, text, BM25 length, language analysed in) of an item's chunks that have postings
    (English where none was recorded: chunks stored before languages were)."""
    rows = cur.execute(
        d.sql(f"SELECT id, text, lex_len, language FROM chunks WHERE {CHUNK_COLUMNS[kind]} = ? AND {d.in_lexical} "
              "ORDER BY id"),
        (item_pk,),
    ).fetchall()
    return [(int(i), d.from_db(t), int(n), language or "en") for i, t, n, language in rows]


def delete_item_row(d: Dialect, cur: Cursor, kind: str, item_pk: int) -> None:
    cur.execute(d.sql(f"DELETE FROM {table(kind)} WHERE id = ?"), (item_pk,))  # cascades to chunks


def _item_read_columns(kind: str) -> str:
    """The columns an ``Item`` is read from (``_item``), sessions' and facts' alike."""
    return "id, external_id, date, metadata, content_hash" + ("" if kind == "session" else ", text")


def _item(d: Dialect, kind: str, row: Sequence[Any], messages: Sequence[Message] = ()) -> Item:
    """A row of ``_item_read_columns`` (and a session's messages) as an ``Item``."""
    text = d.from_db
    if kind == "session":
        return Item("session", text(row[1]), text(row[2]), row[4], json.loads(row[3]), tuple(messages))
    return Item("fact", text(row[1]), text(row[2]), row[4], json.loads(row[3]), text=text(row[5]))


def get_item(d: Dialect, cur: Cursor, app_id: int, kind: str, external_id: str) -> Item | None:
    text = d.from_db
    row = cur.execute(
        d.sql(f"SELECT {_item_read_columns(kind)} FROM {table(kind)} WHERE app_id = ? AND external_id = ?"),
        (app_id, d.to_db(external_id)),
    ).fetchone()
    if row is None:
        return None
    if kind != "session":
        return _item(d, kind, row)
    messages = cur.execute(
        d.sql("SELECT role, content, time FROM messages WHERE session_id = ? ORDER BY position"), (row[0],)
    ).fetchall()
    return _item(d, kind, row, [Message(text(r), text(c), text(t)) for r, c, t in messages])


def list_items(d: Dialect, cur: Cursor, app_id: int, kind: str, limit: int, offset: int,
               newest_first: bool = False) -> list[ItemSummary]:
    rows = cur.execute(
        d.sql(f"SELECT external_id, date FROM {table(kind)} WHERE app_id = ? "
              f"ORDER BY id {'DESC' if newest_first else ''} LIMIT ? OFFSET ?"),
        (app_id, *d.page(limit, offset)),
    ).fetchall()
    return [ItemSummary(kind, d.from_db(e), d.from_db(date)) for e, date in rows]


def archive_item(d: Dialect, cur: Cursor, app_id: int, item: Item, replaced_at: str) -> None:
    """Keep an item's record (not its chunks) as a previous version (JSON escapes NUL)."""
    body = [dict(m.__dict__) for m in item.messages] if item.kind == "session" else item.text
    cur.execute(
        d.sql("INSERT INTO item_versions (app_id, kind, external_id, date, metadata, content_hash, body, "
              "replaced_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
        (app_id, item.kind, d.to_db(item.external_id), d.to_db(item.date),
         json.dumps(item.metadata, ensure_ascii=False), item.content_hash, json.dumps(body, ensure_ascii=False),
         replaced_at),
    )


def item_history(d: Dialect, cur: Cursor, app_id: int, kind: str, external_id: str) -> list[ItemVersion]:
    rows = cur.execute(
        d.sql("SELECT date, metadata, content_hash, body, replaced_at FROM item_versions "
              "WHERE app_id = ? AND kind = ? AND external_id = ? ORDER BY id"),
        (app_id, kind, d.to_db(external_id)),
    ).fetchall()
    out = []
    for date, metadata, digest, body, replaced_at in rows:
        content = json.loads(body)
        if kind == "session":
            item = Item(kind, external_id, d.from_db(date), digest, json.loads(metadata),
                        tuple(Message(**m) for m in content))
        else:
            item = Item(kind, external_id, d.from_db(date), digest, json.loads(metadata), text=content)
        out.append(ItemVersion(replaced_at, item))
    return out


def delete_versions(d: Dialect, cur: Cursor, app_id: int, kind: str, external_id: str) -> None:
    cur.execute(d.sql("DELETE FROM item_versions WHERE app_id = ? AND kind = ? AND external_id = ?"),
                (app_id, kind, d.to_db(external_id)))


def chunk_ids_where(d: Dialect, cur: Cursor, app_id: int, where: Mapping[str, Any]) -> np.ndarray:
    """Chunks of items whose metadata matches every (key, value) of ``where``, compared as JSON."""
    if not where:
        rows = cur.execute(d.sql("SELECT id FROM chunks WHERE app_id = ? ORDER BY id"), (app_id,)).fetchall()
        return np.fromiter((int(r[0]) for r in rows), np.int64, len(rows))
    tests, params = [], []
    for key, value in where.items():
        test, values = d.metadata_test(str(key), value)
        tests.append(test)
        params += values
    condition = " AND ".join(tests)
    rows = cur.execute(
        d.sql(f"SELECT c.id FROM chunks c JOIN sessions m ON m.id = c.session_id WHERE c.app_id = ? AND {condition} "
              f"UNION SELECT c.id FROM chunks c JOIN facts m ON m.id = c.fact_id WHERE c.app_id = ? AND {condition} "
              "ORDER BY 1"),
        (app_id, *params, app_id, *params),
    ).fetchall()
    return np.fromiter((int(r[0]) for r in rows), np.int64, len(rows))


def _metadata(stored: str | None) -> dict:
    """An item's metadata as stored: most items have none ("{}"), which needs no parser."""
    return json.loads(stored) if stored and stored != "{}" else {}


@functools.lru_cache(maxsize=64)
def _roles(stored: str | None) -> tuple[str, ...]:
    """A chunk's roles as stored ("user,assistant"): a handful of distinct values in any app."""
    return tuple(stored.split(",")) if stored else ()


def chunks_in_other_languages(d: Dialect, cur: Cursor, app_id: int, chunk_ids: Sequence[int],
                              language: str) -> set[int]:
    """The app's chunks among the ids whose recorded language is not ``language`` (NULL: English)."""
    out: set[int] = set()
    for test, params in d.in_list("id", d.bigints(chunk_ids), "bigint"):
        rows = cur.execute(d.sql(f"SELECT id FROM chunks WHERE {test} AND app_id = ? AND coalesce(language, 'en') <> ?"),
                           (*params, app_id, language)).fetchall()
        out.update(int(r[0]) for r in rows)
    return out


def fetch_chunks(d: Dialect, cur: Cursor, app_id: int, chunk_ids: Sequence[int]) -> dict[int, ChunkRow]:
    out: dict[int, ChunkRow] = {}
    text = d.from_db
    for test, params in d.in_list("c.id", d.bigints(chunk_ids), "bigint"):
        # By primary key alone, the app compared here: with ``c.app_id = ?`` in the query SQLite
        # looked each id up in the (app_id, id) index, then in the table (two searches a row).
        rows = cur.execute(
            d.sql("SELECT c.id, c.text, s.external_id, f.external_id, c.date, c.roles, c.view, "
                  "c.position, c.first_turn, c.last_turn, coalesce(s.metadata, f.metadata), c.app_id FROM chunks c "
                  "LEFT JOIN sessions s ON s.id = c.session_id "
                  "LEFT JOIN facts f ON f.id = c.fact_id "
                  f"WHERE {test}"),
            params,
        ).fetchall()
        if text is _same:  # SQLite: text as stored, no call per column (a search reads ~300 rows)
            for r in rows:
                if r[11] == app_id:
                    out[r[0]] = ChunkRow(r[0], r[1], r[2], r[3], r[4], _roles(r[5]), r[6], r[7], r[8], r[9],
                                         _metadata(r[10]))
            continue
        for r in rows:
            if r[11] != app_id:
                continue
            out[int(r[0])] = ChunkRow(int(r[0]), text(r[1]), text(r[2]), text(r[3]), text(r[4]), _roles(text(r[5])),
                                      text(r[6]), r[7], r[8], r[9], _metadata(r[10]))
    return out


def hit_rows_statements(d: Dialect, app: str, chunk_ids: Sequence[int]) -> list[tuple[str, tuple]]:
    """The statements (and their parameters) that read the app's chunks among the ids as
    ``HitRow`` tuples: one for up to 500 ids (SQLite; PostgreSQL: always one). The app is looked
    up inside each: a read of one statement needs no transaction of its own. Metadata "{}" (most
    items') comes back as None: no string made, none parsed."""
    return [
        # By primary key alone: ``+c.app_id`` keeps SQLite from looking each id up in the
        # (app_id, id) index first (two searches a row); the app is still compared in SQL.
        (d.sql("SELECT c.id, c.text, s.external_id, f.external_id, c.date, c.roles, c.view, c.first_turn, "
               "c.last_turn, nullif(coalesce(s.metadata, f.metadata), '{}') FROM chunks c "
               "LEFT JOIN sessions s ON s.id = c.session_id "
               "LEFT JOIN facts f ON f.id = c.fact_id "
               f"WHERE {test} AND +c.app_id = (SELECT id FROM apps WHERE name = ?)"), (*params, d.to_db(app)))
        for test, params in d.in_list("c.id", d.bigints(chunk_ids), "bigint")
    ]


def hit_rows(d: Dialect, results: Sequence[Sequence[Sequence[Any]]]) -> dict[int, HitRow]:
    """The rows ``hit_rows_statements`` read, by chunk id: SQLite's as they come."""
    out: dict[int, HitRow] = {}
    text = d.from_db
    for rows in results:
        if text is _same:
            out.update({r[0]: r for r in rows})  # type: ignore[misc]
            continue
        out.update({int(r[0]): (int(r[0]), text(r[1]), text(r[2]), text(r[3]), text(r[4]), text(r[5]), text(r[6]),
                                r[7], r[8], r[9]) for r in rows})
    return out


def _vector(stored: Any) -> np.ndarray | None:
    """A chunk's int8 vector from its stored bytes (blob or bytea)."""
    return np.frombuffer(bytes(stored), dtype=np.int8).copy() if stored is not None else None


def sample_chunk(d: Dialect, cur: Cursor, app_id: int) -> SampleChunk | None:
    row = cur.execute(
        d.sql(f"SELECT id, text, {d.vector_columns[0]}, in_lexical, embed_text, language FROM chunks WHERE app_id = ? "
              "ORDER BY id DESC LIMIT 1"),
        (app_id,),
    ).fetchone()
    if row is None:
        return None
    return SampleChunk(int(row[0]), d.from_db(row[1]), _vector(row[2]), bool(row[3]), d.from_db(row[4]), row[5] or "en")


def language_counts(d: Dialect, cur: Cursor, app_id: int) -> dict[str | None, int]:
    rows = cur.execute(d.sql("SELECT language, count(*) FROM chunks WHERE app_id = ? GROUP BY language"), (app_id,))
    return {language: int(n) for language, n in rows.fetchall()}


def _stored_chunk_columns(d: Dialect) -> str:
    return (f"id, text, position, roles, first_turn, last_turn, view, n_tokens, in_lexical, "
            f"{d.vector_columns[0]}, embed_text")


def _stored_chunk(d: Dialect, r: Sequence[Any]) -> StoredChunk:
    """A row of ``_stored_chunk_columns`` as a ``StoredChunk``."""
    text = d.from_db
    return StoredChunk(
        int(r[0]),
        Chunk(text=text(r[1]), position=r[2], roles=_roles(text(r[3])), first_turn=r[4], last_turn=r[5],
              view=text(r[6]), n_tokens=r[7], dense=r[9] is not None, lexical=bool(r[8]), embed_text=text(r[10])),
        _vector(r[9]),
    )


def item_chunks(d: Dialect, cur: Cursor, kind: str, item_pk: int) -> list[StoredChunk]:
    """An item's chunks as stored, in id order, with their vectors (the int8 bytes)."""
    rows = cur.execute(
        d.sql(f"SELECT {_stored_chunk_columns(d)} FROM chunks WHERE {CHUNK_COLUMNS[kind]} = ? ORDER BY id"),
        (item_pk,),
    ).fetchall()
    return [_stored_chunk(d, r) for r in rows]


def items_with_chunks(d: Dialect, cur: Cursor, app_id: int, kind: str,
                      external_ids: Sequence[str]) -> list[tuple[Item, list[StoredChunk]]]:
    """The stored items among ``external_ids`` (in that order; one not stored is left out), each
    as ``get_item`` reads it with its chunks as ``item_chunks`` does: a few statements for the
    lot (``reindex`` reads every item so), not three an item."""
    text, found = d.from_db, {}
    columns = _item_read_columns(kind)
    for test, params in d.in_list("external_id", [d.to_db(e) for e in external_ids], "text"):
        found.update((int(r[0]), r) for r in cur.execute(
            d.sql(f"SELECT {columns} FROM {table(kind)} WHERE app_id = ? AND {test}"), (app_id, *params)).fetchall())
    pks = d.bigints(list(found))
    messages: dict[int, list[Message]] = {pk: [] for pk in found}
    if kind == "session":
        for test, params in d.in_list("session_id", pks, "bigint"):
            for pk, role, content, time in cur.execute(
                    d.sql(f"SELECT session_id, role, content, time FROM messages WHERE {test} "
                          "ORDER BY session_id, position"), params).fetchall():
                messages[int(pk)].append(Message(text(role), text(content), text(time)))
    chunks: dict[int, list[StoredChunk]] = {pk: [] for pk in found}
    owner = CHUNK_COLUMNS[kind]
    for test, params in d.in_list(owner, pks, "bigint"):
        for r in cur.execute(d.sql(f"SELECT {owner}, {_stored_chunk_columns(d)} FROM chunks WHERE {test} ORDER BY id"),
                             params).fetchall():
            chunks[int(r[0])].append(_stored_chunk(d, r[1:]))
    by_id = {}
    for pk, r in found.items():
        item = _item(d, kind, r, messages[pk])
        by_id[item.external_id] = (item, chunks[pk])
    return [by_id[e] for e in dict.fromkeys(external_ids) if e in by_id]


def read_vectors(d: Dialect, cur: Cursor, app_id: int, after_id: int) -> tuple[np.ndarray, np.ndarray]:
    column = d.vector_columns[0]
    rows = d.fetch_all(
        cur, d.sql(f"SELECT id, {column} FROM chunks WHERE app_id = ? AND id > ? AND {column} IS NOT NULL ORDER BY id"),
        (app_id, d.bigint(after_id)),
    )
    if not rows:
        return np.zeros(0, np.int64), np.zeros((0, 0), np.int8)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8).reshape(len(rows), -1)
    return ids, matrix
