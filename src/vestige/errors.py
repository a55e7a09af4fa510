"""Exceptions raised by vestige. The CLI and HTTP layers turn them into clear messages."""

from __future__ import annotations


class VestigeError(Exception):
    """Base class of every error vestige raises on purpose."""


class InvalidInput(VestigeError, ValueError):
    """A record or argument is malformed; nothing was stored."""


class UnknownApp(VestigeError, LookupError):
    """The named app holds no memory in this database."""


class NotFound(VestigeError, LookupError):
    """The requested session, fact or chunk does not exist in this app."""


class MissingDependency(VestigeError, ImportError):
    """An optional dependency is not installed; the message names the install command."""


class EmbedderMismatch(VestigeError):
    """The database was built with another embedding model than the one configured."""


class SchemaError(VestigeError):
    """The database file was written by an incompatible version of vestige."""
