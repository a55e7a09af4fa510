"""What the routes share: the app scope every route needs a key for, paging, ids, and the
answer to a write."""

from typing import Annotated, Any

from fastapi import Depends, Path, Query
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ...keys import KeyStore
from ..schemas import MAX_PAGE, ListOut, StoredOut

PREFIX = "/v1/apps/{app}"

ItemId = Annotated[str, Path(min_length=1, max_length=256)]
Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page size.")]
Offset = Annotated[int, Query(ge=0, le=10**9, description="Items to skip.")]


def app_scope(keys: KeyStore) -> Any:
    """The type of a route's ``app`` parameter: the path's app, once the request's key is checked
    against it (401 without a live key, 403 with another app's)."""
    bearer = HTTPBearer(auto_error=False, description="A per-app key from `diarist keys create`.")

    def authorized(
        app: Annotated[str, Path(min_length=1, max_length=256, description="The app (isolation unit).")],
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> str:
        keys.check(credentials.credentials if credentials else None, app)
        return app

    return Annotated[str, Depends(authorized)]


def stored(report: Any) -> StoredOut:
    """One item's ingest report as the answer to its write."""
    for status in ("added", "replaced", "unchanged"):
        ids = getattr(report, status)
        if ids:
            return StoredOut(id=ids[0], status=status, chunks=report.chunks)
    raise AssertionError("empty ingest report")  # pragma: no cover


def page(rows: list[dict[str, Any]], limit: int, offset: int) -> ListOut:
    """A page of ``limit`` rows out of ``limit + 1`` read: the extra one says there is more."""
    more = len(rows) > limit
    return ListOut(items=rows[:limit], limit=limit, offset=offset, next_offset=offset + limit if more else None)
