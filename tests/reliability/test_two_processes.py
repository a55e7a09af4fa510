"""Two processes on one file: caches of an app must never outlive the app.

Another process deletes an app and creates it again. SQLite hands the new app the same integer
id, and its write counter starts again from 0: a per-process cache keyed on (id, counter) took
the re-created app for the old one and served the deleted app's vectors (IndexError in the
dense search, KeyError while building hits) until the process restarted. Caches are keyed on
an epoch drawn when the app is created, which is never reused.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from diarist.memory import Memory

RECREATE = textwrap.dedent(
    """
    import sys
    from diarist.memory import Memory

    with Memory(sys.argv[1], embedder="hash") as other:
        other.delete_app("shared")
        other.add_session([{"role": "user", "content": "The lighthouse keeper feeds herons at dawn."}],
                          app="shared", session_id="new")
    """
)


def _other_process(path: str) -> None:
    subprocess.run([sys.executable, "-c", RECREATE, path], check=True, timeout=120)


def test_an_app_deleted_and_recreated_by_another_process_is_searched_fresh(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    with Memory(path, embedder="hash") as worker:
        worker.add_session([{"role": "user", "content": f"Old note {i} about tomato soup."} for i in range(30)],
                           app="shared", session_id="old")
        assert worker.search("tomato soup", app="shared", k=5)[0].session_id == "old"  # caches warm
        _other_process(path)
        for query in ("lighthouse herons", "tomato soup"):  # both channels, a cached one each time
            hits = worker.search(query, app="shared", k=5)
            assert [h.session_id for h in hits] == ["new"], query
