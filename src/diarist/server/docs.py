"""/docs with the Swagger UI vendored in diarist.ui (it reads OpenAPI 3.1), served by this server,
so the page renders with no network (the stock page loads its assets from a CDN)."""

from fastapi import FastAPI

DOCS_ASSETS = "/docs-assets"


def add_offline_docs(api: FastAPI) -> None:
    from fastapi.responses import HTMLResponse
    from fastapi.staticfiles import StaticFiles

    from ..ui.docs import DOCS_CSP, SWAGGER_DIR, docs_page

    api.mount(DOCS_ASSETS, StaticFiles(directory=SWAGGER_DIR), name="docs-assets")

    @api.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(docs_page(api.openapi_url or "/openapi.json", DOCS_ASSETS),
                            headers={"Content-Security-Policy": DOCS_CSP})
