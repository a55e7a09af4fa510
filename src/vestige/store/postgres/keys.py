"""API keys (only their SHA-256 is stored), named by app so a key outlives its app's memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import StoreError
from ..base import KeyRecord
from .records import INT64
from .text import from_db, to_db

if TYPE_CHECKING:
    import psycopg

_COLUMNS = "id, app, prefix, label, created_at, revoked_at"


def _record(row: tuple) -> KeyRecord:
    return KeyRecord(int(row[0]), from_db(row[1]), from_db(row[2]), from_db(row[3]),  # type: ignore[arg-type]
                     from_db(row[4]), from_db(row[5]))  # type: ignore[arg-type]


def add_key(cur: psycopg.Cursor, app: str, key_hash: str, prefix: str, label: str | None, created_at: str,
            where: str) -> KeyRecord:
    # ON CONFLICT, not a unique violation: an SQL error would abort a joined outer transaction.
    row = cur.execute(
        "INSERT INTO api_keys (app, key_hash, prefix, label, created_at) VALUES (%s, %s, %s, %s, %s) "
        "ON CONFLICT (key_hash) DO NOTHING RETURNING id",
        (to_db(app), to_db(key_hash), to_db(prefix), to_db(label), to_db(created_at)),
    ).fetchone()
    if row is None:
        raise StoreError(f"{where}: an API key with this hash is already stored")
    return KeyRecord(int(row[0]), app, prefix, label, created_at, None)


def find_keys(cur: psycopg.Cursor, column: str, value: object) -> list[KeyRecord]:
    assert column in ("id", "key_hash", "prefix")
    if column == "id":
        key_id = int(value)  # type: ignore[call-overload]
        if not INT64[0] <= key_id <= INT64[1]:
            return []
        value = key_id
    else:
        value = to_db(str(value))
    rows = cur.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE {column} = %s ORDER BY id", (value,)).fetchall()
    return [_record(r) for r in rows]


def list_keys(cur: psycopg.Cursor, app: str | None, include_revoked: bool) -> list[KeyRecord]:
    query = f"SELECT {_COLUMNS} FROM api_keys"
    where, params = [], []
    if app is not None:
        where.append("app = %s")
        params.append(to_db(app))
    if not include_revoked:
        where.append("revoked_at IS NULL")
    if where:
        query += " WHERE " + " AND ".join(where)
    return [_record(r) for r in cur.execute(query + " ORDER BY id", params).fetchall()]


def revoke_key(cur: psycopg.Cursor, key_id: int, at: str) -> KeyRecord | None:
    found = find_keys(cur, "id", key_id)
    if not found:
        return None
    cur.execute("UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL", (to_db(at), found[0].id))
    return find_keys(cur, "id", key_id)[0]
