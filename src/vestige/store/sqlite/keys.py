"""API keys (only their SHA-256 is stored), named by app so a key outlives its app's memory."""

from __future__ import annotations

import sqlite3

from ..base import KeyRecord

_COLUMNS = "id, app, prefix, label, created_at, revoked_at"


def add_key(cur: sqlite3.Cursor, app: str, key_hash: str, prefix: str, label: str | None, created_at: str) -> KeyRecord:
    cur.execute(
        "INSERT INTO api_keys (app, key_hash, prefix, label, created_at) VALUES (?, ?, ?, ?, ?)",
        (app, key_hash, prefix, label, created_at),
    )
    assert cur.lastrowid is not None
    return KeyRecord(cur.lastrowid, app, prefix, label, created_at, None)


def find_keys(cur: sqlite3.Cursor, column: str, value: object) -> list[KeyRecord]:
    assert column in ("id", "key_hash", "prefix")
    rows = cur.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE {column} = ? ORDER BY id", (value,)).fetchall()
    return [KeyRecord(*r) for r in rows]


def list_keys(cur: sqlite3.Cursor, app: str | None, include_revoked: bool) -> list[KeyRecord]:
    sql = f"SELECT {_COLUMNS} FROM api_keys"
    where, params = [], []
    if app is not None:
        where.append("app = ?")
        params.append(app)
    if not include_revoked:
        where.append("revoked_at IS NULL")
    if where:
        sql += " WHERE " + " AND ".join(where)
    return [KeyRecord(*r) for r in cur.execute(sql + " ORDER BY id", params).fetchall()]


def revoke_key(cur: sqlite3.Cursor, key_id: int, at: str) -> KeyRecord | None:
    cur.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (at, key_id))
    found = find_keys(cur, "id", key_id)
    return found[0] if found else None
