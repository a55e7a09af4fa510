"""Items (sessions and facts), their messages and their chunks, as SQLite rows.

Sessions and facts keep their own tables (a session has messages, a fact a text), but every
function here takes the kind as a value: one code path for both.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...dates import now_iso
from ...types import Chunk, Message
from ..base import ChunkRow, IndexedChunk, Item, ItemSummary, ItemVersion, SampleChunk, StoredChunk

TABLES = {"session": "sessions", "fact": "facts"}
CHUNK_COLUMNS = {"session": "session_id", "fact": "fact_id"}


def table(kind: str) -> str:
    try:
        return TABLES[kind]
    except KeyError:
        raise ValueError(f"unknown item kind {kind!r}; use one of {', '.join(TABLES)}") from None


def item_pk(cur: sqlite3.Cursor, app_id: int, kind: str, external_id: str) -> int | None:
    row = cur.execute(
        f"SELECT id FROM {table(kind)} WHERE app_id = ? AND external_id = ?", (app_id, external_id)
    ).fetchone()
    return row[0] if row else None


def content_hashes(cur: sqlite3.Cursor, app_id: int, kind: str, external_ids: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for start in range(0, len(external_ids), 500):
        part = list(external_ids[start : start + 500])
        marks = ",".join("?" * len(part))
        rows = cur.execute(
            f"SELECT external_id, content_hash FROM {table(kind)} "
            f"WHERE app_id = ? AND external_id IN ({marks})",
            (app_id, *part),
        ).fetchall()
        out.update(dict(rows))
    return out


def item_pks(cur: sqlite3.Cursor, app_id: int, kind: str, external_ids: Sequence[str]) -> dict[str, int]:
    """external id -> primary key, for the ids stored, 500 per statement."""
    out: dict[str, int] = {}
    for start in range(0, len(external_ids), 500):
        part = list(external_ids[start : start + 500])
        marks = ",".join("?" * len(part))
        out.update(cur.execute(
            f"SELECT external_id, id FROM {table(kind)} WHERE app_id = ? AND external_id IN ({marks})",
            (app_id, *part),
        ).fetchall())
    return out


def last_chunk_id(cur: sqlite3.Cursor) -> int:
    """The largest chunk id ever handed out (AUTOINCREMENT's rule: the sequence or the largest
    row, whichever is larger); the next chunk gets this + 1."""
    return cur.execute(
        "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), 0), "
        "coalesce((SELECT max(id) FROM chunks), 0))"
    ).fetchone()[0]


def _last_item_id(cur: sqlite3.Cursor, kind: str) -> int:
    return cur.execute(f"SELECT coalesce(max(id), 0) FROM {table(kind)}").fetchone()[0]


def _chunk_row(app_id: int, kind: str, item_pk: int, chunk_id: int, item: IndexedChunk, date: str | None) -> tuple:
    c = item.chunk
    return (
        chunk_id, app_id, item_pk if kind == "session" else None, item_pk if kind == "fact" else None,
        c.position, c.view, ",".join(c.roles), c.first_turn, c.last_turn, c.text, date, c.n_tokens,
        len(item.terms) if c.lexical else 0, int(c.lexical),
        np.ascontiguousarray(item.vector, dtype=np.int8).tobytes() if c.dense else None,
        c.embed_text if c.dense else None,
    )


def insert_items(
    cur: sqlite3.Cursor, app_id: int, items: Sequence[tuple[Item, Sequence[IndexedChunk]]]
) -> list[list[tuple[int, list[str]]]]:
    """Insert items none of which is stored yet, with their messages and chunks: one statement
    per table. Ids are given explicitly, each the one a row-by-row insert would get (an item:
    its table's largest id + 1; a chunk: the largest ever handed out + 1), so rows, their order
    and the postings keyed on them stay as they were. Returns, per item, (chunk id, terms) of
    its lexical chunks."""
    next_pk = {kind: _last_item_id(cur, kind) for kind in {item.kind for item, _ in items}}
    chunk_id = last_chunk_id(cur)
    sessions, facts, messages, chunk_rows = [], [], [], []
    indexed: list[list[tuple[int, list[str]]]] = []
    for item, chunks in items:
        next_pk[item.kind] += 1
        pk = next_pk[item.kind]
        metadata = json.dumps(item.metadata, ensure_ascii=False)
        if item.kind == "session":
            sessions.append((pk, app_id, item.external_id, item.date, metadata, item.content_hash, now_iso()))
            messages.extend((pk, i, m.role, m.content, m.time) for i, m in enumerate(item.messages))
        else:
            facts.append((pk, app_id, item.external_id, item.text, item.date, metadata, item.content_hash, now_iso()))
        lexical: list[tuple[int, list[str]]] = []
        for one in chunks:
            chunk_id += 1
            chunk_rows.append(_chunk_row(app_id, item.kind, pk, chunk_id, one, item.date))
            if one.chunk.lexical:
                lexical.append((chunk_id, one.terms))
        indexed.append(lexical)
    cur.executemany(
        "INSERT INTO sessions (id, app_id, external_id, date, metadata, content_hash, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)", sessions)
    cur.executemany(
        "INSERT INTO facts (id, app_id, external_id, text, date, metadata, content_hash, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", facts)
    cur.executemany("INSERT INTO messages (session_id, position, role, content, time) VALUES (?, ?, ?, ?, ?)", messages)
    cur.executemany(
        "INSERT INTO chunks (id, app_id, session_id, fact_id, position, view, roles, first_turn, last_turn, "
        "text, date, n_tokens, lex_len, in_lexical, vector, embed_text) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", chunk_rows)
    return indexed


def lexical_chunks(cur: sqlite3.Cursor, kind: str, item_pk: int) -> list[tuple[int, str, int]]:
    """(chunk id, text, BM25 length) of an item's chunks that have postings."""
    return cur.execute(
        f"SELECT id, text, lex_len FROM chunks WHERE {CHUNK_COLUMNS[kind]} = ? AND in_lexical = 1 ORDER BY id",
        (item_pk,),
    ).fetchall()


def delete_item_row(cur: sqlite3.Cursor, kind: str, item_pk: int) -> None:
    cur.execute(f"DELETE FROM {table(kind)} WHERE id = ?", (item_pk,))  # cascades to chunks


def get_item(cur: sqlite3.Cursor, app_id: int, kind: str, external_id: str) -> Item | None:
    if kind == "session":
        row = cur.execute(
            "SELECT id, external_id, date, metadata, content_hash FROM sessions "
            "WHERE app_id = ? AND external_id = ?",
            (app_id, external_id),
        ).fetchone()
        if row is None:
            return None
        messages = cur.execute(
            "SELECT role, content, time FROM messages WHERE session_id = ? ORDER BY position", (row[0],)
        ).fetchall()
        return Item("session", row[1], row[2], row[4], json.loads(row[3]), tuple(Message(*m) for m in messages))
    row = cur.execute(
        f"SELECT external_id, date, metadata, content_hash, text FROM {table(kind)} "
        "WHERE app_id = ? AND external_id = ?",
        (app_id, external_id),
    ).fetchone()
    if row is None:
        return None
    return Item("fact", row[0], row[1], row[3], json.loads(row[2]), text=row[4])


def list_items(cur: sqlite3.Cursor, app_id: int, kind: str, limit: int, offset: int,
               newest_first: bool = False) -> list[ItemSummary]:
    rows = cur.execute(
        f"SELECT external_id, date FROM {table(kind)} WHERE app_id = ? ORDER BY id {'DESC' if newest_first else ''} "
        "LIMIT ? OFFSET ?",
        (app_id, limit, offset),
    ).fetchall()
    return [ItemSummary(kind, r[0], r[1]) for r in rows]


def archive_item(cur: sqlite3.Cursor, app_id: int, item: Item, replaced_at: str) -> None:
    """Keep an item's record (not its chunks) as a previous version."""
    body = [dict(m.__dict__) for m in item.messages] if item.kind == "session" else item.text
    cur.execute(
        "INSERT INTO item_versions (app_id, kind, external_id, date, metadata, content_hash, body, replaced_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (app_id, item.kind, item.external_id, item.date, json.dumps(item.metadata, ensure_ascii=False),
         item.content_hash, json.dumps(body, ensure_ascii=False), replaced_at),
    )


def item_history(cur: sqlite3.Cursor, app_id: int, kind: str, external_id: str) -> list[ItemVersion]:
    rows = cur.execute(
        "SELECT date, metadata, content_hash, body, replaced_at FROM item_versions "
        "WHERE app_id = ? AND kind = ? AND external_id = ? ORDER BY id",
        (app_id, kind, external_id),
    ).fetchall()
    out = []
    for date, metadata, digest, body, replaced_at in rows:
        content = json.loads(body)
        if kind == "session":
            item = Item(kind, external_id, date, digest, json.loads(metadata), tuple(Message(**m) for m in content))
        else:
            item = Item(kind, external_id, date, digest, json.loads(metadata), text=content)
        out.append(ItemVersion(replaced_at, item))
    return out


def delete_versions(cur: sqlite3.Cursor, app_id: int, kind: str, external_id: str) -> None:
    cur.execute("DELETE FROM item_versions WHERE app_id = ? AND kind = ? AND external_id = ?",
                (app_id, kind, external_id))


def chunk_ids_where(cur: sqlite3.Cursor, app_id: int, where: Mapping[str, Any]) -> np.ndarray:
    """Chunks of items whose metadata matches every (key, value) of ``where``, compared as JSON."""
    if not where:
        rows = cur.execute("SELECT id FROM chunks WHERE app_id = ? ORDER BY id", (app_id,)).fetchall()
        return np.fromiter((r[0] for r in rows), np.int64, len(rows))
    tests, params = [], []
    for key, value in where.items():
        path = "$." + json.dumps(str(key))
        if value is None or isinstance(value, bool):  # json_extract turns true into 1: ask the type
            tests.append("json_type(m.metadata, ?) = ?")
            params += [path, "null" if value is None else ("true" if value else "false")]
            continue
        # json_quote(json_extract(...)) compares values as JSON (1 is not "1"; absent is not null)
        tests.append("json_type(m.metadata, ?) NOT IN ('true', 'false', 'null') "
                     "AND json_quote(json_extract(m.metadata, ?)) = json(?)")
        params += [path, path, json.dumps(value, ensure_ascii=False, separators=(",", ":"))]
    condition = " AND ".join(tests)
    rows = cur.execute(
        f"SELECT c.id FROM chunks c JOIN sessions m ON m.id = c.session_id WHERE c.app_id = ? AND {condition} "
        f"UNION SELECT c.id FROM chunks c JOIN facts m ON m.id = c.fact_id WHERE c.app_id = ? AND {condition} "
        "ORDER BY 1",
        (app_id, *params, app_id, *params),
    ).fetchall()
    return np.fromiter((r[0] for r in rows), np.int64, len(rows))


def _metadata(stored: str | None) -> dict:
    """An item's metadata as stored: most items have none ("{}"), which needs no parser."""
    return json.loads(stored) if stored and stored != "{}" else {}


def fetch_chunks(cur: sqlite3.Cursor, app_id: int, chunk_ids: Sequence[int]) -> dict[int, ChunkRow]:
    out: dict[int, ChunkRow] = {}
    for start in range(0, len(chunk_ids), 500):
        part = list(chunk_ids[start : start + 500])
        marks = ",".join("?" * len(part))
        rows = cur.execute(
            "SELECT c.id, c.text, s.external_id, f.external_id, c.date, c.roles, c.view, "
            "c.position, c.first_turn, c.last_turn, coalesce(s.metadata, f.metadata) FROM chunks c "
            "LEFT JOIN sessions s ON s.id = c.session_id "
            "LEFT JOIN facts f ON f.id = c.fact_id "
            f"WHERE c.app_id = ? AND c.id IN ({marks})",
            (app_id, *part),
        ).fetchall()
        for r in rows:
            out[r[0]] = ChunkRow(r[0], r[1], r[2], r[3], r[4], _roles(r[5]), r[6], r[7], r[8], r[9], _metadata(r[10]))
    return out


@functools.lru_cache(maxsize=64)
def _roles(stored: str | None) -> tuple[str, ...]:
    """A chunk's roles as stored ("user,assistant"): a handful of distinct values in any app."""
    return tuple(stored.split(",")) if stored else ()


def sample_chunk(cur: sqlite3.Cursor, app_id: int) -> SampleChunk | None:
    row = cur.execute(
        "SELECT id, text, vector, in_lexical, embed_text FROM chunks WHERE app_id = ? ORDER BY id DESC LIMIT 1",
        (app_id,),
    ).fetchone()
    if row is None:
        return None
    vector = np.frombuffer(row[2], dtype=np.int8).copy() if row[2] is not None else None
    return SampleChunk(row[0], row[1], vector, bool(row[3]), row[4])


def item_chunks(cur: sqlite3.Cursor, kind: str, item_pk: int) -> list[StoredChunk]:
    """An item's chunks as stored, in id order, with their vectors."""
    rows = cur.execute(
        "SELECT id, text, position, roles, first_turn, last_turn, view, n_tokens, in_lexical, vector, embed_text "
        f"FROM chunks WHERE {CHUNK_COLUMNS[kind]} = ? ORDER BY id",
        (item_pk,),
    ).fetchall()
    return [
        StoredChunk(
            r[0],
            Chunk(text=r[1], position=r[2], roles=tuple(r[3].split(",")) if r[3] else (), first_turn=r[4],
                  last_turn=r[5], view=r[6], n_tokens=r[7], dense=r[9] is not None, lexical=bool(r[8]),
                  embed_text=r[10]),
            np.frombuffer(r[9], dtype=np.int8).copy() if r[9] is not None else None,
        )
        for r in rows
    ]
