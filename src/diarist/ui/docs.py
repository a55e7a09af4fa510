"""The API reference page (``/docs``): the Swagger UI vendored in ``static/swagger`` (5.x, which
reads the OpenAPI 3.1 the server emits), served by the server itself, so it renders offline."""

from __future__ import annotations

from html import escape
from pathlib import Path

SWAGGER_DIR = Path(__file__).parent / "static" / "swagger"
#: Scripts and styles from this server only; Swagger UI sets element styles from script (allowed)
#: and shows inline SVG and data: images.
DOCS_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def docs_page(openapi_url: str, assets: str, title: str = "diarist API") -> str:
    """The page's HTML: the vendored bundle and stylesheet, started by ``docs.js`` on ``openapi_url``."""
    a, url = escape(assets, quote=True), escape(openapi_url, quote=True)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{escape(title)}</title>
<link rel="stylesheet" href="{a}/swagger-ui.css">
<link rel="icon" type="image/png" href="{a}/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui" data-openapi-url="{url}"></div>
<script src="{a}/swagger-ui-bundle.js"></script>
<script src="{a}/docs.js"></script>
</body>
</html>
"""
