"""Items (sessions and facts), their messages and their chunks, as PostgreSQL rows.

The same layout and the same rules as ``store/sqlite/records.py``: sessions and facts keep their
own tables, every function takes the kind as a value. Text goes through ``text.to_db`` and
``text.from_db`` (PostgreSQL text cannot hold NUL). Rows are written a statement per item
(``unnest`` of arrays), not a statement per row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...dates import now_iso
from ...types import Chunk, Message
from ..base import ChunkRow, IndexedChunk, Item, ItemSummary, ItemVersion, SampleChunk, StoredChunk
from .text import from_db, to_db

if TYPE_CHECKING:
    import psycopg

TABLES = {"session": "sessions", "fact": "facts"}
CHUNK_COLUMNS = {"session": "session_id", "fact": "fact_id"}
INT64 = (-(2**63), 2**63 - 1)


def table(kind: str) -> str:
    try:
        return TABLES[kind]
    except KeyError:
        raise ValueError(f"unknown item kind {kind!r}; use one of {', '.join(TABLES)}") from None


def int64s(values: Sequence[object]) -> list[int]:
    """Ids as Python ints (numpy ones too), leaving out what no bigint column can hold."""
    out = []
    for v in values:
        i = int(v)  # type: ignore[call-overload]
        if INT64[0] <= i <= INT64[1]:
            out.append(i)
    return out


def item_pk(cur: psycopg.Cursor, app_id: int, kind: str, external_id: str) -> int | None:
    row = cur.execute(
        f"SELECT id FROM {table(kind)} WHERE app_id = %s AND external_id = %s", (app_id, to_db(external_id))
    ).fetchone()
    return row[0] if row else None


def content_hashes(cur: psycopg.Cursor, app_id: int, kind: str, external_ids: Sequence[str]) -> dict[str, str]:
    rows = cur.execute(
        f"SELECT external_id, content_hash FROM {table(kind)} WHERE app_id = %s AND external_id = ANY(%s::text[])",
        (app_id, [to_db(e) for e in external_ids]),
    ).fetchall()
    return {from_db(e): h for e, h in rows}  # type: ignore[misc]


def insert_item(cur: psycopg.Cursor, app_id: int, item: Item) -> int:
    """Insert the item's own row (and a session's messages); returns its primary key."""
    metadata = json.dumps(item.metadata, ensure_ascii=False)  # escapes NUL as \\u0000
    if item.kind == "session":
        pk = cur.execute(
            "INSERT INTO sessions (app_id, external_id, date, metadata, content_hash, created_at) "
            "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
            (app_id, to_db(item.external_id), to_db(item.date), metadata, item.content_hash, now_iso()),
        ).fetchone()[0]
        if item.messages:
            cur.execute(
                "INSERT INTO messages (session_id, position, role, content, time) "
                "SELECT %s::bigint, u.ord - 1, u.role, u.content, u.time "
                "FROM unnest(%s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS u(role, content, time, ord)",
                (
                    pk,
                    [to_db(m.role) for m in item.messages],
                    [to_db(m.content) for m in item.messages],
                    [to_db(m.time) for m in item.messages],
                ),
            )
    else:
        pk = cur.execute(
            "INSERT INTO facts (app_id, external_id, text, date, metadata, content_hash, created_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (app_id, to_db(item.external_id), to_db(item.text), to_db(item.date), metadata, item.content_hash,
             now_iso()),
        ).fetchone()[0]
    return int(pk)


def _vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(map(str, np.asarray(vector, dtype=np.int8).tolist())) + "]"


def insert_chunks(
    cur: psycopg.Cursor, app_id: int, kind: str, item_pk: int, chunks: Sequence[IndexedChunk], date: str | None,
    vector_type: str,
) -> list[tuple[int, list[str]]]:
    """Insert chunk rows in order, with ids taken from the counter (under the write lock: they
    grow in commit order); returns (chunk id, terms) of the lexical ones."""
    if not chunks:
        return []
    last = cur.execute(
        "UPDATE counters SET value = value + %s WHERE name = 'chunk' RETURNING value", (len(chunks),)
    ).fetchone()[0]
    ids = list(range(int(last) - len(chunks) + 1, int(last) + 1))
    cs = [c.chunk for c in chunks]
    vectors = [np.ascontiguousarray(c.vector, dtype=np.int8) if c.chunk.dense else None for c in chunks]
    cur.execute(
        "INSERT INTO chunks (id, app_id, session_id, fact_id, position, view, roles, first_turn, last_turn, "
        "text, date, n_tokens, lex_len, in_lexical, vector_i8, embedding, embed_text) "
        "SELECT u.id, %s::bigint, %s::bigint, %s::bigint, u.position, u.view, u.roles, u.first_turn, u.last_turn, "
        "u.text, %s::text, "
        f"u.n_tokens, u.lex_len, u.in_lexical, u.vector_i8, u.embedding::{vector_type}, u.embed_text "
        "FROM unnest(%s::bigint[], %s::int[], %s::text[], %s::text[], %s::int[], %s::int[], %s::text[], "
        "%s::int[], %s::int[], %s::bool[], %s::bytea[], %s::text[], %s::text[]) "
        "AS u(id, position, view, roles, first_turn, last_turn, text, n_tokens, lex_len, in_lexical, "
        "vector_i8, embedding, embed_text)",
        (
            app_id, item_pk if kind == "session" else None, item_pk if kind == "fact" else None, to_db(date),
            ids,
            [c.position for c in cs],
            [to_db(c.view) for c in cs],
            [to_db(",".join(c.roles)) for c in cs],
            [c.first_turn for c in cs],
            [c.last_turn for c in cs],
            [to_db(c.text) for c in cs],
            [c.n_tokens for c in cs],
            [len(ic.terms) if ic.chunk.lexical else 0 for ic in chunks],
            [bool(c.lexical) for c in cs],
            [v.tobytes() if v is not None else None for v in vectors],
            [_vector_text(v) if v is not None else None for v in vectors],
            [to_db(c.embed_text) if c.dense else None for c in cs],
        ),
    )
    return [(chunk_id, ic.terms) for chunk_id, ic in zip(ids, chunks) if ic.chunk.lexical]


def lexical_chunks(cur: psycopg.Cursor, kind: str, item_pk: int) -> list[tuple[int, str, int]]:
    """(chunk id, text, BM25 length) of an item's chunks that have postings."""
    rows = cur.execute(
        f"SELECT id, text, lex_len FROM chunks WHERE {CHUNK_COLUMNS[kind]} = %s AND in_lexical ORDER BY id",
        (item_pk,),
    ).fetchall()
    return [(int(i), from_db(t), int(n)) for i, t, n in rows]  # type: ignore[misc]


def delete_item_row(cur: psycopg.Cursor, kind: str, item_pk: int) -> None:
    cur.execute(f"DELETE FROM {table(kind)} WHERE id = %s", (item_pk,))  # cascades to chunks


def get_item(cur: psycopg.Cursor, app_id: int, kind: str, external_id: str) -> Item | None:
    if kind == "session":
        row = cur.execute(
            "SELECT id, external_id, date, metadata, content_hash FROM sessions "
            "WHERE app_id = %s AND external_id = %s",
            (app_id, to_db(external_id)),
        ).fetchone()
        if row is None:
            return None
        messages = cur.execute(
            "SELECT role, content, time FROM messages WHERE session_id = %s ORDER BY position", (row[0],)
        ).fetchall()
        return Item(
            "session", from_db(row[1]), from_db(row[2]), row[4], json.loads(row[3]),  # type: ignore[arg-type]
            tuple(Message(from_db(r), from_db(c), from_db(t)) for r, c, t in messages),  # type: ignore[arg-type]
        )
    row = cur.execute(
        f"SELECT external_id, date, metadata, content_hash, text FROM {table(kind)} "
        "WHERE app_id = %s AND external_id = %s",
        (app_id, to_db(external_id)),
    ).fetchone()
    if row is None:
        return None
    return Item("fact", from_db(row[0]), from_db(row[1]), row[3], json.loads(row[2]),  # type: ignore[arg-type]
                text=from_db(row[4]))


def list_items(cur: psycopg.Cursor, app_id: int, kind: str, limit: int, offset: int,
               newest_first: bool = False) -> list[ItemSummary]:
    # As SQLite reads them: a negative limit is no limit, a negative offset is none.
    limit_: int | None = None if limit < 0 else min(int(limit), INT64[1])
    offset = max(0, min(int(offset), INT64[1]))
    rows = cur.execute(
        f"SELECT external_id, date FROM {table(kind)} WHERE app_id = %s ORDER BY id {'DESC' if newest_first else ''} "
        "LIMIT %s OFFSET %s",
        (app_id, limit_, offset),
    ).fetchall()
    return [ItemSummary(kind, from_db(e), from_db(d)) for e, d in rows]  # type: ignore[arg-type]


def archive_item(cur: psycopg.Cursor, app_id: int, item: Item, replaced_at: str) -> None:
    """Keep an item's record (not its chunks) as a previous version (JSON escapes NUL)."""
    body = [dict(m.__dict__) for m in item.messages] if item.kind == "session" else item.text
    cur.execute(
        "INSERT INTO item_versions (app_id, kind, external_id, date, metadata, content_hash, body, replaced_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (app_id, item.kind, to_db(item.external_id), to_db(item.date), json.dumps(item.metadata, ensure_ascii=False),
         item.content_hash, json.dumps(body, ensure_ascii=False), replaced_at),
    )


def item_history(cur: psycopg.Cursor, app_id: int, kind: str, external_id: str) -> list[ItemVersion]:
    rows = cur.execute(
        "SELECT date, metadata, content_hash, body, replaced_at FROM item_versions "
        "WHERE app_id = %s AND kind = %s AND external_id = %s ORDER BY id",
        (app_id, kind, to_db(external_id)),
    ).fetchall()
    out = []
    for date, metadata, digest, body, replaced_at in rows:
        content = json.loads(body)
        if kind == "session":
            item = Item(kind, external_id, from_db(date), digest, json.loads(metadata),  # type: ignore[arg-type]
                        tuple(Message(**m) for m in content))
        else:
            item = Item(kind, external_id, from_db(date), digest, json.loads(metadata), text=content)  # type: ignore[arg-type]
        out.append(ItemVersion(replaced_at, item))
    return out


def delete_versions(cur: psycopg.Cursor, app_id: int, kind: str, external_id: str) -> None:
    cur.execute("DELETE FROM item_versions WHERE app_id = %s AND kind = %s AND external_id = %s",
                (app_id, kind, to_db(external_id)))


def chunk_ids_where(cur: psycopg.Cursor, app_id: int, where: Mapping[str, Any]) -> np.ndarray:
    """Chunks of items whose metadata matches every (key, value) of ``where``, compared as jsonb."""
    tests, params = [], []
    for key, value in where.items():
        tests.append("(m.metadata::jsonb -> %s) = %s::jsonb")
        params += [str(key), json.dumps(value, ensure_ascii=False)]
    condition = " AND ".join(tests) or "TRUE"
    rows = cur.execute(
        f"SELECT c.id FROM chunks c JOIN sessions m ON m.id = c.session_id WHERE c.app_id = %s AND {condition} "
        f"UNION SELECT c.id FROM chunks c JOIN facts m ON m.id = c.fact_id WHERE c.app_id = %s AND {condition} "
        "ORDER BY 1",
        (app_id, *params, app_id, *params),
    ).fetchall()
    return np.fromiter((int(r[0]) for r in rows), np.int64, len(rows))


def fetch_chunks(cur: psycopg.Cursor, app_id: int, chunk_ids: Sequence[int]) -> dict[int, ChunkRow]:
    ids = int64s(chunk_ids)
    if not ids:
        return {}
    rows = cur.execute(
        "SELECT c.id, c.text, s.external_id, f.external_id, c.date, c.roles, c.view, "
        "c.position, c.first_turn, c.last_turn, coalesce(s.metadata, f.metadata) FROM chunks c "
        "LEFT JOIN sessions s ON s.id = c.session_id "
        "LEFT JOIN facts f ON f.id = c.fact_id "
        "WHERE c.app_id = %s AND c.id = ANY(%s::bigint[])",
        (app_id, ids),
    ).fetchall()
    out: dict[int, ChunkRow] = {}
    for r in rows:
        roles = from_db(r[5])
        out[int(r[0])] = ChunkRow(
            chunk_id=int(r[0]), text=from_db(r[1]), session_id=from_db(r[2]), fact_id=from_db(r[3]),  # type: ignore[arg-type]
            date=from_db(r[4]), roles=tuple(roles.split(",")) if roles else (), view=from_db(r[6]),  # type: ignore[arg-type]
            position=r[7], first_turn=r[8], last_turn=r[9], metadata=json.loads(r[10]) if r[10] else {},
        )
    return out


def sample_chunk(cur: psycopg.Cursor, app_id: int) -> SampleChunk | None:
    row = cur.execute(
        "SELECT id, text, vector_i8, in_lexical, embed_text FROM chunks WHERE app_id = %s "
        "ORDER BY id DESC LIMIT 1",
        (app_id,),
    ).fetchone()
    if row is None:
        return None
    vector = np.frombuffer(bytes(row[2]), dtype=np.int8).copy() if row[2] is not None else None
    return SampleChunk(int(row[0]), from_db(row[1]), vector, bool(row[3]), from_db(row[4]))  # type: ignore[arg-type]


def item_chunks(cur: psycopg.Cursor, kind: str, item_pk: int) -> list[StoredChunk]:
    """An item's chunks as stored, in id order, with their vectors (the int8 bytes)."""
    rows = cur.execute(
        "SELECT id, text, position, roles, first_turn, last_turn, view, n_tokens, in_lexical, vector_i8, embed_text "
        f"FROM chunks WHERE {CHUNK_COLUMNS[kind]} = %s ORDER BY id",
        (item_pk,),
    ).fetchall()
    out = []
    for r in rows:
        roles: str = from_db(r[3])  # type: ignore[assignment]
        chunk = Chunk(text=from_db(r[1]), position=r[2], roles=tuple(roles.split(",")) if roles else (),  # type: ignore[arg-type]
                      first_turn=r[4], last_turn=r[5], view=from_db(r[6]),  # type: ignore[arg-type]
                      n_tokens=r[7], dense=r[9] is not None, lexical=bool(r[8]), embed_text=from_db(r[10]))
        vector = np.frombuffer(bytes(r[9]), dtype=np.int8).copy() if r[9] is not None else None
        out.append(StoredChunk(int(r[0]), chunk, vector))
    return out
