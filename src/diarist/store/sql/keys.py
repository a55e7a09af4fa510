"""API keys (only their SHA-256 is stored), named by app so a key outlives its app's memory."""

from __future__ import annotations

from ...errors import StoreError
from ..base import KeyRecord
from .dialect import INT64, Cursor, Dialect

_COLUMNS = "id, app, prefix, label, created_at, revoked_at"


def _record(d: Dialect, row: tuple) -> KeyRecord:
    text = d.from_db
    return KeyRecord(int(row[0]), text(row[1]), text(row[2]), text(row[3]), text(row[4]), text(row[5]))


def add_key(d: Dialect, cur: Cursor, app: str, key_hash: str, prefix: str, label: str | None, created_at: str,
            where: str) -> KeyRecord:
    # ON CONFLICT, not a unique violation: on PostgreSQL an SQL error aborts a joined outer transaction.
    added = cur.execute(
        d.sql("INSERT INTO api_keys (app, key_hash, prefix, label, created_at) VALUES (?, ?, ?, ?, ?) "
              "ON CONFLICT (key_hash) DO NOTHING"),
        (d.to_db(app), d.to_db(key_hash), d.to_db(prefix), d.to_db(label), d.to_db(created_at)),
    ).rowcount
    if added != 1:
        raise StoreError(f"{where}: an API key with this hash is already stored")
    key_id = cur.execute(d.sql("SELECT id FROM api_keys WHERE key_hash = ?"), (d.to_db(key_hash),)).fetchone()[0]
    return KeyRecord(int(key_id), app, prefix, label, created_at, None)


def find_keys(d: Dialect, cur: Cursor, column: str, value: object) -> list[KeyRecord]:
    assert column in ("id", "key_hash", "prefix")
    if column == "id":
        key_id = int(value)  # type: ignore[call-overload]
        if not INT64[0] <= key_id <= INT64[1]:
            return []  # no key has it (and no bigint can hold it)
        value = key_id
    else:
        value = d.to_db(str(value))
    rows = cur.execute(d.sql(f"SELECT {_COLUMNS} FROM api_keys WHERE {column} = ? ORDER BY id"), (value,)).fetchall()
    return [_record(d, r) for r in rows]


def list_keys(d: Dialect, cur: Cursor, app: str | None, include_revoked: bool) -> list[KeyRecord]:
    query = f"SELECT {_COLUMNS} FROM api_keys"
    where, params = [], []
    if app is not None:
        where.append("app = ?")
        params.append(d.to_db(app))
    if not include_revoked:
        where.append("revoked_at IS NULL")
    if where:
        query += " WHERE " + " AND ".join(where)
    return [_record(d, r) for r in cur.execute(d.sql(query + " ORDER BY id"), params).fetchall()]


def revoke_key(d: Dialect, cur: Cursor, key_id: int, at: str) -> KeyRecord | None:
    found = find_keys(d, cur, "id", key_id)
    if not found:
        return None
    cur.execute(d.sql("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"),
                (d.to_db(at), found[0].id))
    return find_keys(d, cur, "id", key_id)[0]
