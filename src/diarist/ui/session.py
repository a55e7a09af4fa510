"""Who is looking, and proof that a form came from one of our pages.

A session is a signed cookie (HMAC-SHA256 with a secret kept in the memory's own store, so every
worker process agrees on it): a random nonce and, behind ``diarist serve``, the hash of the API key
the person logged in with (never the key). Each request re-reads that key, so revoking it ends
the session at once. The CSRF token of a form is an HMAC of the session's nonce: a page from
another origin can neither read it nor forge it, and the cookie is ``SameSite=Strict`` besides.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import StoreError
from ..keys import hash_key
from ..store.base import Store

COOKIE = "diarist_ui"
SECRET_META_KEY = "ui_secret"
MAX_COOKIE_CHARS = 1024


@dataclass(frozen=True)
class Session:
    nonce: str
    key_hash: str | None = None  # the API key this session logged in with (keyed mode)


class Signer:
    """Signs sessions and derives their CSRF tokens from one secret, read (or created) on first
    use: serving the API alone writes nothing to the database."""

    def __init__(self, secret: Callable[[], str]):
        self._get_secret = secret
        self._secret: bytes | None = None
        self._lock = threading.Lock()

    def _key(self) -> bytes:
        with self._lock:
            if self._secret is None:
                self._secret = self._get_secret().encode("utf-8")
            return self._secret

    def _mac(self, purpose: str, data: str) -> str:
        digest = hmac.new(self._key(), f"{purpose}:{data}".encode("utf-8"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")

    def dump(self, session: Session) -> str:
        body = base64.urlsafe_b64encode(json.dumps({"n": session.nonce, "k": session.key_hash}).encode()).decode()
        return f"{body}.{self._mac('session', body)}"

    def load(self, cookie: str | None) -> Session | None:
        """The session a cookie holds, or None when it is absent, malformed or not ours."""
        if not cookie or len(cookie) > MAX_COOKIE_CHARS or "." not in cookie:
            return None
        body, mac = cookie.rsplit(".", 1)
        if not hmac.compare_digest(mac, self._mac("session", body)):
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(body.encode("ascii")))
            nonce, key_hash = data["n"], data["k"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(nonce, str) or not (key_hash is None or isinstance(key_hash, str)):
            return None
        return Session(nonce, key_hash)

    def csrf(self, session: Session) -> str:
        return self._mac("csrf", session.nonce)

    def csrf_ok(self, session: Session | None, token: object) -> bool:
        return session is not None and isinstance(token, str) and hmac.compare_digest(token, self.csrf(session))


def new_session(key: str | None = None) -> Session:
    return Session(secrets.token_urlsafe(24), hash_key(key) if key else None)


def store_secret(store: Store) -> str:
    """The signing secret, created once per database (the first writer's wins). A database that
    cannot be written gets one for this process only: its sessions end when the process does."""
    found = store.get_meta(SECRET_META_KEY)
    if found:
        return found
    try:
        return store.claim_meta({SECRET_META_KEY: secrets.token_urlsafe(32)})[SECRET_META_KEY]
    except StoreError:
        return secrets.token_urlsafe(32)
