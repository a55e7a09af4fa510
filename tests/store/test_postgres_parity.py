"""SQLite and PostgreSQL return identical top-200 chunk rankings for every LoCoMo dev question,
both ingested through the CLI (``diarist ingest``): dense, lexical and the fused search.

Heavy (about a minute on two busy cores): run with ``pytest --heavy tests/store/test_postgres_parity.py``;
its figures are in BENCHMARKS.md ("PostgreSQL parity"). test_postgres.py checks one conversation
in the default suite.
"""

from __future__ import annotations

import numpy as np
import pytest

import pg_server as pg_module

pg_module.require()

from click.testing import CliRunner  # noqa: E402
from conftest import LOCOMO_PATH, load_locomo  # noqa: E402

from diarist import lexical  # noqa: E402
from diarist.cli import main  # noqa: E402
from diarist.memory import Memory  # noqa: E402

DEPTH = 200


def _ingest(location: str) -> None:
    result = CliRunner().invoke(main, ["ingest", str(LOCOMO_PATH), "--db", location, "--app", "locomo",
                                       "--embedder", "hash"], env={"DIARIST_DB": ""})
    assert result.exit_code == 0, result.output


def _same(got, want) -> bool:
    return [i for i, _ in got] == [i for i, _ in want] and np.allclose(
        [s for _, s in got], [s for _, s in want], rtol=0, atol=1e-9)


@pytest.mark.heavy
def test_every_locomo_question_ranks_identically_on_both_stores(pg_server, tmp_path, capsys):
    questions = [qa["question"] for record in load_locomo() for qa in record["qa"]]
    sqlite_path, pg_url = str(tmp_path / "locomo.sqlite"), pg_server.new_url("parity")
    _ingest(sqlite_path)
    _ingest(pg_url)
    a, b = Memory(sqlite_path, create=False), Memory(pg_url, create=False)
    try:
        assert a.store.counts("locomo") == b.store.counts("locomo")
        differ = {"dense": 0, "lexical": 0, "fused": 0}
        for question in questions:
            vector = a.embedder.embed([question])
            terms = lexical.analyze(question)
            differ["dense"] += not _same(b.dense.search("locomo", vector, DEPTH), a.dense.search("locomo", vector, DEPTH))
            differ["lexical"] += not _same(b.lexical.search("locomo", terms, DEPTH), a.lexical.search("locomo", terms, DEPTH))
            fused_a = [(h.chunk_id, h.score) for h in a.search(question, app="locomo", k=DEPTH, now="2024-01-01")]
            fused_b = [(h.chunk_id, h.score) for h in b.search(question, app="locomo", k=DEPTH, now="2024-01-01")]
            differ["fused"] += not _same(fused_b, fused_a)
        with capsys.disabled():
            print(f"\nPostgreSQL parity: {len(questions)} LoCoMo dev questions, top-{DEPTH} rankings that differ: {differ}")
        assert differ == {"dense": 0, "lexical": 0, "fused": 0}
        assert len(questions) > 1500
    finally:
        a.close()
        b.close()
