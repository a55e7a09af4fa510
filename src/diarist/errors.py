"""Every exception diarist raises on purpose, each with the HTTP status and code it maps to.

The CLI prints ``str(exc)`` as one line; the HTTP server answers ``exc.status`` with
``{"error": {"status", "code", "message"}}``. Neither matches message text.
"""

from __future__ import annotations


class DiaristError(Exception):
    """Base class of every error diarist raises on purpose."""

    status: int = 400
    code: str = "error"


class InvalidInput(DiaristError, ValueError):
    """A record or argument is malformed; nothing was stored."""

    status, code = 422, "invalid_input"


class ConfigError(DiaristError, ValueError):
    """An option has a value diarist does not know (an embedder, a plan, a store URL...)."""

    status, code = 400, "config_error"


class UnknownApp(DiaristError, LookupError):
    """The named app holds no memory in this database."""

    status, code = 404, "unknown_app"


class NotFound(DiaristError, LookupError):
    """The requested session, fact, chunk or key does not exist in this app."""

    status, code = 404, "not_found"


class MissingDependency(DiaristError, ImportError):
    """An optional dependency is not installed; the message names the install command."""

    status, code = 500, "missing_dependency"


class EmbedderMismatch(DiaristError):
    """The database was built with another embedding model than the one configured."""

    status, code = 409, "embedder_mismatch"


class PlanMismatch(DiaristError):
    """The database was indexed with another index plan than the one configured."""

    status, code = 409, "plan_mismatch"


class ConcurrentUpdate(DiaristError):
    """An item kept changing under concurrent writers; the write was not applied."""

    status, code = 409, "conflict"


class StoreError(DiaristError):
    """The database cannot be used as asked; the message names the file and the reason."""

    status, code = 503, "store_error"


class SchemaError(StoreError):
    """The database file was written by an incompatible version of diarist."""

    status, code = 409, "schema_error"


class DatabaseNotFound(StoreError):
    """A command that only reads was pointed at a database that does not exist."""

    status, code = 404, "no_database"


class NotADatabase(StoreError):
    """The file exists but is not a diarist database (not SQLite, or another program's)."""

    status, code = 409, "not_a_database"


class KeyRefused(DiaristError):
    """An API key is missing, unknown or revoked."""

    status, code = 401, "unauthorized"


class KeyForbidden(KeyRefused):
    """A live API key that belongs to another app."""

    status, code = 403, "forbidden"
