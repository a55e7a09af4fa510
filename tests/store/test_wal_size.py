"""The write-ahead log stays small (issue 31, item 9): with 16 KiB pages a small commit writes
about 350 KB to the ``-wal`` (every page it touches), and SQLite's default checkpoint every 1,000
pages let the log reach 16 MB and stay that size. Now it is checkpointed every ``WAL_PAGES``
pages and cut back to ``WAL_BYTES``: the bound is ``WAL_BYTES`` plus one transaction."""

from __future__ import annotations

import os

from diarist.memory import Memory
from diarist.store.sqlite.connection import WAL_BYTES

ONE_SMALL_COMMIT = 1024 * 1024  # generous: measured about 350 KB


def test_the_log_stays_near_its_bound_over_many_small_commits(tmp_path):
    db = tmp_path / "m.sqlite"
    largest = 0
    with Memory(db, embedder="hash") as memory:
        for i in range(60):
            memory.add_session([{"role": "user", "content": f"a small session {i} about the weather"},
                                {"role": "assistant", "content": "noted"}], app="a", session_id=f"s{i}")
            largest = max(largest, os.path.getsize(f"{db}-wal"))
        assert memory.stats("a")["apps"]["a"]["sessions"] == 60
    assert largest <= WAL_BYTES + ONE_SMALL_COMMIT, largest  # before: 14.5 MB after 60
