"""The inspector's pages, one module per page, as ``server/routes/`` holds the API's routes;
``routes`` gathers them over one ``Site`` (``common``)."""

from __future__ import annotations

from starlette.routing import Route

from . import apps, ask, curate, fix, imports, items, who
from .common import Site


def routes(site: Site) -> list[Route]:
    """Every page's routes. The item's own page comes after its actions (``.../delete``...)."""
    return [route for page in (apps, who, imports, ask, curate, fix, items) for route in page.routes(site)]
