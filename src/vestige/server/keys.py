"""Per-app API keys, kept as SHA-256 hashes in the memory database itself (table ``api_keys``).

A key is 32 random bytes (``vst_`` + url-safe base64); it is shown once, when created. Keys are
high-entropy, so a plain SHA-256 is enough to make a stolen database useless for logging in
(no password-style stretching is needed). A key reaches exactly one app.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from ..dates import now_iso
from ..errors import NotFound, VestigeError
from ..store.sqlite import SQLiteStore
from ..validate import check_app

KEY_PREFIX = "vst_"
SHOWN_CHARS = 12  # "vst_" + 8 characters: enough to tell keys apart, useless to log in


class KeyRefused(VestigeError):
    """An API key is missing, unknown, revoked, or belongs to another app."""


@dataclass(frozen=True)
class KeyInfo:
    id: int
    app: str
    prefix: str
    label: str | None
    created_at: str
    revoked_at: str | None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class KeyStore:
    """Create, check, list and revoke keys in the same SQLite file as the memory."""

    def __init__(self, store: SQLiteStore):
        if not isinstance(store, SQLiteStore):
            raise TypeError("API keys live in a SQLite store")
        self.store = store

    def create(self, app: str, label: str | None = None) -> tuple[str, KeyInfo]:
        """A new key for ``app``: (the key itself, shown only now; its stored description)."""
        app = check_app(app)
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        created = now_iso()
        with self.store._write() as cur:
            cur.execute(
                "INSERT INTO api_keys (app, key_hash, prefix, label, created_at) VALUES (?, ?, ?, ?, ?)",
                (app, hash_key(key), key[:SHOWN_CHARS], label, created),
            )
            key_id = cur.lastrowid
        return key, KeyInfo(key_id, app, key[:SHOWN_CHARS], label, created, None)

    def app_for(self, key: str | None) -> str:
        """The app a live key belongs to, or KeyRefused."""
        if not key:
            raise KeyRefused("missing API key: send the header 'Authorization: Bearer <key>'")
        rows = self.store._read(
            "SELECT app, revoked_at FROM api_keys WHERE key_hash = ?", (hash_key(key),)
        )
        if not rows:
            raise KeyRefused("unknown API key")
        app, revoked = rows[0]
        if revoked:
            raise KeyRefused(f"this API key was revoked at {revoked}")
        return app

    def check(self, key: str | None, app: str) -> None:
        """KeyRefused unless ``key`` is a live key of ``app``."""
        owner = self.app_for(key)
        if owner != app:
            # Same message whether the app exists or not: a key learns nothing about other apps.
            raise KeyRefused(f"this API key does not grant access to app {app!r}")

    def list(self, app: str | None = None, *, include_revoked: bool = False) -> list[KeyInfo]:
        sql = "SELECT id, app, prefix, label, created_at, revoked_at FROM api_keys"
        where, params = [], []
        if app is not None:
            where.append("app = ?")
            params.append(app)
        if not include_revoked:
            where.append("revoked_at IS NULL")
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [KeyInfo(*row) for row in self.store._read(sql + " ORDER BY id", params)]

    def revoke(self, key_or_id: str) -> KeyInfo:
        """Revoke a key given by its numeric id, its shown prefix, or the key itself."""
        value = str(key_or_id).strip()
        if value.isdigit():
            rows = self.store._read("SELECT id FROM api_keys WHERE id = ?", (int(value),))
        elif len(value) > SHOWN_CHARS:
            rows = self.store._read("SELECT id FROM api_keys WHERE key_hash = ?", (hash_key(value),))
        else:
            rows = self.store._read("SELECT id FROM api_keys WHERE prefix = ?", (value,))
        if not rows:
            raise NotFound(f"no API key {value!r}")
        if len(rows) > 1:
            raise NotFound(f"{len(rows)} keys start with {value!r}; revoke by id instead")
        key_id = rows[0][0]
        with self.store._write() as cur:
            cur.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now_iso(), key_id)
            )
        row = self.store._read(
            "SELECT id, app, prefix, label, created_at, revoked_at FROM api_keys WHERE id = ?", (key_id,)
        )
        return KeyInfo(*row[0])
