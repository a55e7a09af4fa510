"""Notes as notes (issue 41 item 2): a note is dated by its front matter before its file's time,
titled by its ``title:`` or file name (never a section heading), and ``diarist show`` and the
inspector show it as a note (title, front matter as fields, body as text), not as a session of
``user`` messages."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from diarist.cli import main
from diarist.importers import read_sessions
from diarist.note_view import is_note, note_markdown, note_view
from diarist.types import Hit
from diarist.ui import local_app

LOCAL = "http://127.0.0.1"
OLD = 1_600_000_000  # 2020-09-13: a checkout's file time, older or newer than any front matter date


def _note(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (OLD, OLD))
    (session,) = read_sessions(path)[1]
    return session


@pytest.mark.parametrize("front, date", [
    ("start: 2023-04-02\nend: 2023-04-09", "2023-04-02"),  # a trip: when it began
    ("published: 2019-11-02\nclipped: 2025-03-10", "2019-11-02"),  # an article: when it was written
    ("clipped: 2025-01-04", "2025-01-04"),
    ("created: 2024-05-12\nstart: 2023-01-01", "2024-05-12"),  # the documented order: created before start
    ("date: 2026-02-09\ncreated: 2026-01-01", "2026-02-09"),
    ("date: '{{date}}'\nstart: 2024-10-11", "2024-10-11"),  # a template's date is none: the next key
])
def test_a_note_is_dated_by_its_front_matter_in_the_documented_order(tmp_path, front, date):
    session = _note(tmp_path, "n.md", f"---\n{front}\n---\nSome text.\n")
    assert str(session.date).startswith(date)


def test_a_note_without_a_front_matter_date_is_dated_by_its_file(tmp_path):
    session = _note(tmp_path, "n.md", "---\nrating: 4\n---\nSome text.\n")
    assert session.date == OLD


def test_a_note_is_titled_by_its_title_or_file_name_never_a_heading(tmp_path):
    headed = _note(tmp_path, "Trips/Fushimi Inari.md", "## Getting there\n\nTake the JR Nara line.\n")
    assert headed.metadata["title"] == "Fushimi Inari"
    titled = _note(tmp_path, "soup.md", "---\ntitle: Soup of the house\n---\n# Ingredients\n\n- leeks\n")
    assert titled.metadata["title"] == "Soup of the house"
    hit = Hit(chunk_id=1, session_id="Trips/Fushimi Inari.md", fact_id=None, date=None, text="x", score=1.0, roles=("user",), view="all",
              metadata={"source": "markdown", "path": "Trips/Fushimi Inari.md", "title": "Getting there"})
    assert hit.title == "Fushimi Inari", "an older import's heading title is not shown either"


def test_front_matter_lists_are_kept_as_lists(tmp_path):
    session = _note(tmp_path, "tart.md", "---\ntitle: Plum tart\nservings: 8\ntags:\n  - baking\n  - 'autumn'\n---\nBake.\n")
    assert session.metadata["front_matter"] == {"title": "Plum tart", "servings": "8", "tags": ["baking", "autumn"]}


NOTE = ("---\nauthor: Susanna Clarke\nrating: 5\ntags:\n  - book\n---\nThe House of halls, with tides.\n\n"
        "## Verdict\n\nRead it in two evenings.\n")


@pytest.fixture
def stored(memory, tmp_path):
    _note(tmp_path / "vault", "Books/Piranesi.md", NOTE)
    memory.add_sessions(read_sessions(tmp_path / "vault")[1], app="notes")  # a folder: ids are paths in it
    return memory.get("Books/Piranesi.md", app="notes")


def test_a_stored_note_is_viewed_as_title_fields_and_body(stored):
    assert is_note(stored)
    view = note_view(stored)
    assert view.title == "Piranesi" and view.path == "Books/Piranesi.md"
    assert view.fields == [("author", "Susanna Clarke"), ("rating", "5"), ("tags", ["book"])]
    assert view.body == "The House of halls, with tides.\n\n## Verdict\n\nRead it in two evenings."
    text = note_markdown(stored)
    assert text.startswith("# Piranesi\n") and "- author: Susanna Clarke" in text and "- tags: book" in text
    assert "## user" not in text and "author: Susanna Clarke\nrating" not in text  # the block is not repeated


def test_show_prints_a_note_as_a_note(memory, tmp_path):
    db = tmp_path / "m.sqlite"
    path = tmp_path / "vault" / "Books" / "Piranesi.md"
    path.parent.mkdir(parents=True)
    path.write_text(NOTE, encoding="utf-8")
    runner = CliRunner()
    done = runner.invoke(main, ["ingest", str(tmp_path / "vault"), "--db", str(db), "--embedder", "hash"])
    assert done.exit_code == 0, done.output
    shown = runner.invoke(main, ["show", "Books/Piranesi.md", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert shown.output.startswith("# Piranesi\n") and "- rating: 5" in shown.output
    assert "Read it in two evenings." in shown.output and "## user" not in shown.output
    assert "Session" not in shown.output


def test_the_inspector_shows_a_note_as_a_note(memory, stored):
    memory.add_session([{"role": "user", "content": "Hello there"}], app="notes", session_id="chat1")
    client = TestClient(local_app(memory), base_url=LOCAL)
    page = client.get("/ui/apps/notes/items/session/Books%2FPiranesi.md")
    assert page.status_code == 200, page.text[:300]
    assert '<h1 id="note-title">Piranesi</h1>' in page.text
    assert "<th>author</th><td>Susanna Clarke</td>" in page.text and "<th>tags</th><td>book</td>" in page.text
    assert 'class="speaker">user' not in page.text and "Read it in two evenings." in page.text
    chat = client.get("/ui/apps/notes/items/session/chat1")
    assert 'class="speaker">user' in chat.text and "note-title" not in chat.text  # a chat stays a chat
