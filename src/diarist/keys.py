"""Per-app API keys, kept as SHA-256 hashes in the memory's own store.

A key is 32 random bytes (``vst_`` + url-safe base64); it is shown once, when created. Keys are
high-entropy, so a plain SHA-256 is enough to make a stolen database useless for logging in
(no password-style stretching is needed). A key reaches exactly one app.
"""

from __future__ import annotations

import hashlib
import secrets

from .dates import now_iso
from .errors import KeyForbidden, KeyRefused, NotFound
from .store.base import KeyRecord, Store
from .write.validate import check_app, check_text, shown

KEY_PREFIX = "vst_"
MAX_LABEL_CHARS = 256
SHOWN_CHARS = 12  # "vst_" + 8 characters: enough to tell keys apart, useless to log in
#: A logged-out inspector session's nonce is kept in ``meta`` under this prefix (value: when it
#: would have expired), so that every worker of ``diarist serve`` refuses it (``ui.session``).
REVOKED_PREFIX = "ui_revoked:"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class KeyStore:
    """Create, check, list and revoke keys in the memory's own store (any backend)."""

    def __init__(self, store: Store):
        self.store = store

    def create(self, app: str, label: str | None = None) -> tuple[str, KeyRecord]:
        """A new key for ``app``: (the key itself, shown only now; its stored description)."""
        app = check_app(app)
        if label is not None:
            label = check_text(label, "the key's label", max_chars=MAX_LABEL_CHARS)
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        return key, self.store.add_key(app, hash_key(key), key[:SHOWN_CHARS], label, now_iso())

    def app_for(self, key: str | None) -> str:
        """The app a live key belongs to, or KeyRefused."""
        if not key:
            raise KeyRefused("missing API key: send the header 'Authorization: Bearer <key>'")
        if not isinstance(key, str):  # a key is text; a tuple or bytes raised AttributeError
            raise KeyRefused("unknown API key")
        try:
            digest = hash_key(key)
        except UnicodeEncodeError:
            raise KeyRefused("unknown API key") from None
        found = self.store.find_keys(key_hash=digest)
        if not found:
            raise KeyRefused("unknown API key")
        if found[0].revoked_at:
            raise KeyRefused(f"this API key was revoked at {found[0].revoked_at}")
        return found[0].app

    def app_for_hash(self, key_hash: str) -> str | None:
        """The app a live key grants, by the key's hash (an inspector session keeps only that);
        None for an unknown or revoked key."""
        found = self.store.find_keys(key_hash=key_hash)
        return found[0].app if found and not found[0].revoked_at else None

    def end_session(self, nonce: str, until: int) -> None:
        """Record a logged-out inspector session (``ui.session``) until it would have expired."""
        self.store.claim_meta({REVOKED_PREFIX + nonce: str(until)})

    def session_ended(self, nonce: str) -> bool:
        """Whether ``end_session`` recorded this session's nonce (in any process of the store)."""
        return self.store.get_meta(REVOKED_PREFIX + nonce) is not None

    def check(self, key: str | None, app: str) -> None:
        """KeyRefused unless ``key`` is a live key; KeyForbidden if it is another app's."""
        owner = self.app_for(key)
        if owner != app:
            # Same message whether the app exists or not: a key learns nothing about other apps.
            raise KeyForbidden(f"this API key does not grant access to app {shown(app)}")

    def list(self, app: str | None = None, *, include_revoked: bool = False) -> list[KeyRecord]:
        if app is not None:
            app = check_app(app)
        return self.store.list_keys(app, include_revoked=include_revoked)

    def revoke(self, key_or_id: str) -> KeyRecord:
        """Revoke a key given by its numeric id, its shown prefix, or the key itself."""
        if isinstance(key_or_id, int) and not isinstance(key_or_id, bool) and 0 <= key_or_id < 10**18:
            key_or_id = str(key_or_id)  # a key id (str() of a 5,000-digit int raised ValueError)
        value = check_text(key_or_id, "the key or key id", max_chars=MAX_LABEL_CHARS).strip()
        if value.isdigit() and value.isascii() and len(value) <= 18:  # a key id that fits SQLite's integer
            found = self.store.find_keys(key_id=int(value))
        elif len(value) > SHOWN_CHARS:
            found = self.store.find_keys(key_hash=hash_key(value))
        else:
            found = self.store.find_keys(prefix=value)
        if not found:
            raise NotFound(f"no API key {value!r}")
        if len(found) > 1:
            raise NotFound(f"{len(found)} keys start with {value!r}; revoke by id instead")
        revoked = self.store.revoke_key(found[0].id, now_iso())
        assert revoked is not None
        return revoked
