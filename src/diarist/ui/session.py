"""Who is looking, and proof that a form came from one of our pages.

A session is a signed cookie (HMAC-SHA256): a random nonce, the time it was made and, behind
``diarist serve``, the hash of the API key the person logged in with (never the key). Each
request re-reads that key, so revoking it ends the session at once.

The signing secret never lives in the database file: ``diarist serve`` draws one at start and
hands it to its workers in the environment (``DIARIST_UI_SECRET``, as it hands them its other
settings), ``diarist ui`` and any other process draw their own. So a copy of the file (a backup)
holds nothing a cookie can be made from, and every session ends when the server stops. A session
expires ``SESSION_SECONDS`` after login; logout ends it in the server: its nonce is kept in a
revocation list until it would have expired (in the process's memory, and in the database's
``meta`` table when the file can be written, ``KeyStore.end_session``, so every worker of
``serve`` refuses it).

The CSRF token of a form is an HMAC of the session's nonce: a page from another origin can
neither read it nor forge it, and the cookie is ``SameSite=Strict`` besides.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from dataclasses import dataclass, field

from ..errors import StoreError
from ..keys import KeyStore, hash_key

COOKIE = "diarist_ui"
SECRET_ENV = "DIARIST_UI_SECRET"
MAX_COOKIE_CHARS = 1024
#: A session ends this long after login (or at logout, or when the server stops).
SESSION_SECONDS = 12 * 3600

_PROCESS_SECRET = secrets.token_urlsafe(32)


def server_secret() -> str:
    """The signing secret: the serving process's (``DIARIST_UI_SECRET``, set by ``diarist serve``
    for its workers), else this process's own. Never read from nor written to the database."""
    return os.environ.get(SECRET_ENV) or _PROCESS_SECRET


@dataclass(frozen=True)
class Session:
    nonce: str
    key_hash: str | None = None  # the API key this session logged in with (keyed mode)
    issued: int = field(default_factory=lambda: int(time.time()))


class Signer:
    """Signs sessions and derives their CSRF tokens from the server's secret; remembers the
    sessions ended by logout (``revoke``) until they would have expired."""

    def __init__(self, keys: KeyStore | None = None, secret: str | None = None):
        self._secret = (secret or server_secret()).encode("utf-8")
        self._keys = keys  # where a logout is recorded for every process of the store
        self._revoked: dict[str, int] = {}  # nonce -> when it would have expired
        self._lock = threading.Lock()

    def _mac(self, purpose: str, data: str) -> str:
        digest = hmac.new(self._secret, f"{purpose}:{data}".encode("utf-8"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")

    def dump(self, session: Session) -> str:
        data = {"n": session.nonce, "k": session.key_hash, "t": session.issued}
        body = base64.urlsafe_b64encode(json.dumps(data).encode()).decode()
        return f"{body}.{self._mac('session', body)}"

    def load(self, cookie: str | None) -> Session | None:
        """The session a cookie holds, or None when it is absent, malformed, not ours, expired or
        ended by logout."""
        if not cookie or len(cookie) > MAX_COOKIE_CHARS or "." not in cookie:
            return None
        body, mac = cookie.rsplit(".", 1)
        if not hmac.compare_digest(mac, self._mac("session", body)):
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(body.encode("ascii")))
            nonce, key_hash, issued = data["n"], data["k"], data["t"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(nonce, str) or not (key_hash is None or isinstance(key_hash, str)):
            return None
        now = time.time()
        if not isinstance(issued, int) or isinstance(issued, bool) or not now - SESSION_SECONDS < issued <= now + 60:
            return None
        if self._is_revoked(nonce):
            return None
        return Session(nonce, key_hash, issued)

    def revoke(self, session: Session) -> None:
        """End ``session`` in this server (logout): its cookie, wherever copied, opens nothing."""
        until = session.issued + SESSION_SECONDS
        with self._lock:
            now = time.time()
            self._revoked = {n: t for n, t in self._revoked.items() if t > now}  # the expired need no entry
            self._revoked[session.nonce] = until
        if self._keys is not None:
            try:
                self._keys.end_session(session.nonce, until)
            except StoreError:
                pass  # a read-only file: this process's list still ends it here

    def _is_revoked(self, nonce: str) -> bool:
        with self._lock:
            if nonce in self._revoked:
                return True
        if self._keys is None:
            return False
        try:
            return self._keys.session_ended(nonce)
        except StoreError:
            return False

    def csrf(self, session: Session) -> str:
        return self._mac("csrf", session.nonce)

    def csrf_ok(self, session: Session | None, token: object) -> bool:
        return session is not None and isinstance(token, str) and hmac.compare_digest(token, self.csrf(session))


def new_session(key: str | None = None) -> Session:
    return Session(secrets.token_urlsafe(24), hash_key(key) if key else None)
