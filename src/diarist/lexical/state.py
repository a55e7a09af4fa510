"""Whether an app's lexical index can be trusted: a half-built index ranks confidently and wrongly."""

from __future__ import annotations

from ..store.base import LexicalStats
from .analyze import VERSION


def status_reason(stats: LexicalStats | None, n_indexed: int) -> str | None:
    """Why an app's lexical index cannot be used, or None when it is complete and current."""
    if stats is None:
        return "the lexical index was never built for this app (run: diarist reindex)"
    if stats.version != VERSION:
        return (
            f"the lexical index was built by analyzer version {stats.version}, this diarist uses "
            f"{VERSION} (run: diarist reindex)"
        )
    if stats.n_docs != n_indexed:
        return f"the lexical index covers {stats.n_docs} of {n_indexed} chunks (run: diarist reindex)"
    return None
