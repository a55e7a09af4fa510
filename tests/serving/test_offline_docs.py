"""/docs works with no network: every asset the page loads is served by the server itself."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from diarist.memory import Memory
from diarist.server.app import create_app


def test_docs_page_loads_only_local_assets():
    with Memory(":memory:", embedder="hash") as memory, TestClient(create_app(memory)) as client:
        page = client.get("/docs")
        assert page.status_code == 200 and "swagger-ui" in page.text
        urls = re.findall(r"""(?:src|href)=["']([^"']+)["']|url: ?["']([^"']+)["']""", page.text)
        urls = [a or b for a, b in urls]
        assert urls, page.text[:500]
        for url in urls:
            assert not url.startswith(("http://", "https://", "//")), f"/docs loads {url} from the network"
            assert client.get(url).status_code == 200, url
        assert client.get("/openapi.json").json()["info"]["title"] == "diarist"
