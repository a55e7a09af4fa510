"""The inspector and /docs in a real Chromium (Debian's, driven by Playwright; nothing is
downloaded): the flows a person follows, what must not happen (a stored script running, a
request leaving the machine), and the screenshots in docs/ui/ that the README shows
(rewritten only when DIARIST_UI_SHOTS=1, so a test run leaves the tree clean).

One browser for the module, the hash embedder, a few memories: the whole file runs in seconds.
scripts/test.sh installs the browser with apt when it is missing.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import urlparse

import pytest

from test_server_support import ServerThread
from diarist.memory import Memory
from diarist.server.app import create_app
from diarist.ui import local_app

playwright_api = pytest.importorskip("playwright.sync_api", reason="the browser tests need the playwright package ([test] extra)")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no chromium on PATH (scripts/test.sh installs Debian's with apt-get when it runs as root)",
                allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "ui"
CHATGPT_EXPORT = ROOT / "tests" / "data" / "importers" / "chatgpt" / "conversations.json"
LAUNCH_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"]
SCRIPT_TEXT = 'I keep my notes in <script>window.__pwned = 1</script> and <img src=x onerror="window.__pwned = 2">.'


def _seed(memory: Memory) -> None:
    memory.add_session([{"role": "user", "content": "My cat is called Admon and she hates the vacuum cleaner.",
                         "time": "2024-03-01T09:00:00"},
                        {"role": "assistant", "content": "Admon sounds like a cat with opinions."}],
                       app="alice", session_id="cat", date="2024-03-01", metadata={"title": "New cat", "source": "chat"})
    memory.add_session([{"role": "user", "content": "We planned the Lisbon trip for March: flights on the 12th."},
                        {"role": "assistant", "content": "Noted: Lisbon, March 12th."}],
                       app="alice", session_id="trip", date="2024-02-10", metadata={"title": "Lisbon trip", "source": "email"})
    memory.add_session([{"role": "user", "content": SCRIPT_TEXT}], app="alice", session_id="notes", date="2024-01-05")
    memory.add_fact("Alice lives in Porto.", app="alice", fact_id="home", date="2023-06-01", metadata={"source": "chat", "title": "Home"})
    memory.add_fact("Alice is allergic to peanuts.", app="alice", fact_id="allergy", date="2023-01-01")
    memory.add_fact("Alice is allergic to peanuts.", app="alice", fact_id="allergy-again", date="2024-04-01")
    memory.add_fact("The dentist appointment is on Friday.", app="alice", fact_id="dentist", date="2024-05-01")
    memory.add_fact("Bob's private note: the safe code is 4711.", app="bob", fact_id="secret")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The API server (the inspector at /ui behind keys, /docs) and `diarist ui`'s local app, on one memory."""
    memory = Memory(tmp_path_factory.mktemp("ui") / "memory.sqlite", embedder="hash")
    _seed(memory)
    alice_key, _ = memory.keys.create("alice")
    with ServerThread(create_app(memory)) as api, ServerThread(local_app(memory)) as local:
        yield {"memory": memory, "api": api.url, "local": local.url, "alice_key": alice_key}
    memory.close()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        # Playwright adds --headless and a fresh --user-data-dir (a temporary profile) itself.
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, site):
    """A fresh context (no cookies) whose every request is checked: one to any host other than
    our two loopback servers is refused and recorded, and the test fails on it."""
    context = browser.new_context(viewport={"width": 1280, "height": 860}, accept_downloads=True)
    ours = {urlparse(site["api"]).netloc, urlparse(site["local"]).netloc}
    leaked: list[str] = []

    def guard(route, request):
        url = urlparse(request.url)
        if url.scheme in ("data", "blob") or url.netloc in ours:
            route.continue_()
        else:
            leaked.append(request.url)
            route.abort()

    context.route("**/*", guard)
    errors: list[str] = []
    tab = context.new_page()
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    yield tab
    context.close()
    assert not leaked, f"requests left the machine: {leaked}"
    assert not [e for e in errors if "Content Security Policy" in e], errors


def _login(page, site) -> None:
    page.goto(site["api"] + "/ui/")
    page.fill("input[name=key]", site["alice_key"])
    page.click("button:has-text('Open')")
    page.wait_for_url("**/ui/apps/alice")


def _shot(page, name: str) -> None:
    """Render the page either way (a broken page fails here); keep the file only when asked."""
    image = page.screenshot()
    assert image[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("DIARIST_UI_SHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / f"{name}.png").write_bytes(image)


@pytest.mark.slow
def test_browse_to_a_memory_and_a_stored_script_does_not_run(page, site):
    page.goto(site["local"] + "/ui/")
    assert "alice" in page.inner_text("#apps") and "bob" in page.inner_text("#apps")
    _shot(page, "apps")
    _login(page, site)
    assert "3 sessions" in page.inner_text("#counts")
    assert page.locator("#items a.item-link").first.inner_text() == "notes"  # the most recently stored first
    _shot(page, "memories")
    page.click("a.item-link:has-text('cat')")
    page.wait_for_selector("#messages")
    turns = page.locator(".turn")
    assert turns.count() == 2
    assert "user" in turns.nth(0).inner_text() and "2024-03-01T09:00:00" in turns.nth(0).inner_text()
    assert "My cat is called Admon" in turns.nth(0).inner_text()
    assert "New cat" in page.inner_text("main") and "email" not in page.inner_text("#metadata")
    _shot(page, "memory")
    page.goto(site["api"] + "/ui/apps/alice/items/session/notes")
    assert page.inner_text(".turn pre") == SCRIPT_TEXT  # shown as text
    assert page.evaluate("window.__pwned") is None  # neither the script nor the onerror ran
    page.goto(site["api"] + "/ui/apps/alice?kind=session&source=email")
    assert [a.inner_text() for a in page.locator("#items a.item-link").all()] == ["trip"]


@pytest.mark.slow
def test_search_shows_the_why_and_the_context_block(page, site):
    _login(page, site)
    page.fill("form.search input[name=q]", "What is my cat called?")
    page.click("form.search button")
    page.wait_for_selector("#hits")
    first = page.locator("li.hit").first
    assert "cat" in first.locator(".hit-head a").inner_text()
    assert first.locator("mark").count() >= 1 and first.locator("mark").first.inner_text().lower() == "cat"
    assert first.locator(".channel-dense").inner_text().startswith("#")
    assert first.locator(".channel-lexical").inner_text().startswith("#1")
    assert float(first.locator(".fused").inner_text()) > 0
    tokens = int(page.inner_text("#context-tokens").split()[0])
    assert tokens > 0 and "Admon" in page.inner_text("#context")
    assert page.locator("#left-out").count() == 1
    _shot(page, "ask")


@pytest.mark.slow
def test_edit_a_fact_and_see_its_history(page, site):
    _login(page, site)
    page.goto(site["api"] + "/ui/apps/alice/items/fact/home")
    page.fill("#edit-text textarea", "Alice lives in Coimbra.")
    page.click("#edit-text button")
    page.wait_for_selector("#saved")
    assert page.inner_text("#text") == "Alice lives in Coimbra."
    assert "Alice lives in Porto." in page.inner_text("#history")
    page.fill("#set-metadata input[name=key]", "checked")
    page.fill("#set-metadata input[name=value]", "true")
    page.click("#set-metadata button")
    page.wait_for_selector("#saved")
    metadata = site["memory"].get("home", app="alice")["metadata"]
    assert metadata == {"source": "chat", "title": "Home", "checked": True}  # one key set, the others kept
    _shot(page, "edit")


@pytest.mark.slow
def test_delete_a_memory_and_it_is_gone_from_search(page, site):
    _login(page, site)
    page.goto(site["api"] + "/ui/apps/alice/ask?q=dentist+appointment")
    assert "dentist" in page.inner_text("#hits")
    page.goto(site["api"] + "/ui/apps/alice/items/fact/dentist")
    page.click("a.danger")
    page.wait_for_selector("#confirm")
    page.click("#confirm button")
    page.wait_for_selector("#deleted")
    page.goto(site["api"] + "/ui/apps/alice/ask?q=dentist+appointment")
    assert "dentist" not in page.inner_text("#hits")
    assert all(h.id != "dentist" for h in site["memory"].search("dentist appointment", app="alice"))


@pytest.mark.slow
def test_upload_a_real_export_find_it_and_download_an_export(page, site):
    _login(page, site)
    page.set_input_files("form.upload input[type=file]", str(CHATGPT_EXPORT))
    page.click("form.upload button")
    page.wait_for_selector("#imported", timeout=30_000)
    assert "sessions added" in page.inner_text("#imported")
    page.goto(site["api"] + "/ui/apps/alice/ask?q=sourdough+starter")
    assert "Sourdough starter feeding" in page.inner_text("#hits")
    _shot(page, "import")
    page.goto(site["api"] + "/ui/apps/alice")
    with page.expect_download() as download:
        page.click("text=Download alice as JSONL")
    lines = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert any(r["metadata"].get("title") == "Sourdough starter feeding" for r in records)
    assert all(r.get("fact_id") != "secret" for r in records)  # bob's stays bob's


@pytest.mark.slow
def test_curate_a_duplicate_pair(page, site):
    _login(page, site)
    page.goto(site["api"] + "/ui/apps/alice/curate")
    pair = page.locator("li.pair", has_text="allergy-again").first
    assert "same text" in pair.inner_text()
    _shot(page, "curate")
    pair.locator("button[data-action=supersede-B]").click()  # the older (A) is superseded by the newer (B)
    page.wait_for_selector("#done")
    assert site["memory"].get("allergy", app="alice")["metadata"]["superseded_by"] == "allergy-again"
    assert "allergy-again" not in page.inner_text("#pairs")  # a marked pair is not offered again
    page.goto(site["api"] + "/ui/apps/alice/items/fact/allergy")
    assert "superseded by allergy-again" in page.inner_text("main")


@pytest.mark.slow
def test_docs_lists_every_operation(page, site):
    page.goto(site["api"] + "/docs")
    page.wait_for_selector(".opblock", timeout=30_000)
    spec = json.loads(page.evaluate("fetch('/openapi.json').then(r => r.text())"))
    operations = sorted((m.upper(), p) for p, ops in spec["paths"].items() for m in ops)
    shown = sorted(page.evaluate("""[...document.querySelectorAll('.opblock')].map(b => [
        b.querySelector('.opblock-summary-method').textContent.trim(),
        b.querySelector('.opblock-summary-path').getAttribute('data-path')])"""))
    assert [tuple(op) for op in shown] == operations
    assert "Unable to render" not in page.inner_text("#swagger-ui")
    _shot(page, "docs")
