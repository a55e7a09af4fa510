"""benchmarks/peers.py runs end to end in the project venv, with the systems that need no peer
installed (numpy, SQLite FTS5, diarist), on a 2k-chunk corpus; its result JSON has every field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark_scripts import load_benchmark_script
from conftest import LONGMEMEVAL_PATH, needs_data

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "peers.py"
SYSTEMS = ("numpy", "sqlite_fts5_numpy", "diarist", "diarist_vectors", "diarist_exact")


def test_help():
    out = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, check=True)
    assert "--sizes" in out.stdout and "--plot" in out.stdout


@needs_data(LONGMEMEVAL_PATH)  # the corpus is benchmarks/scale.py's, cut from LongMemEval
@pytest.mark.slow
def test_smallest_run_writes_the_result_shape(tmp_path):
    subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "2000", "--systems", ",".join(SYSTEMS), "--queries", "20",
         "--repeats", "1", "--records", "8", "--workdir", str(tmp_path / "work"), "--out-dir", str(tmp_path)],
        check=True, capture_output=True, text=True, timeout=120,
    )
    result = json.loads((tmp_path / "peers_2k.json").read_text())
    assert result["size"] == 2000 and result["depth"] == 200 and result["k"] == 10 and result["queries"] == 20
    assert set(result["systems"]) == set(SYSTEMS)
    for name, row in result["systems"].items():
        assert "error" not in row, (name, row.get("error"))
        for field in ("build_s", "p50_ms", "p95_ms", "numpy_p50_ms", "ratio_p50_to_numpy", "rss_mb", "version", "measures"):
            assert isinstance(row[field], (int, float, str)), (name, field)
        assert row["p50_ms"] > 0 and row["p95_ms"] >= row["p50_ms"] and row["build_s"] >= 0
        assert len(row["passes_ms"]["system"]) == len(row["passes_ms"]["numpy"]) == 1
    assert result["systems"]["numpy"]["disk_mb"] is None  # in memory
    for name in ("sqlite_fts5_numpy", "diarist", "diarist_vectors", "diarist_exact"):
        assert result["systems"][name]["disk_mb"] > 0
        # exact dense channels: the same top-200 as numpy's (2k chunks: diarist scans exactly)
        assert result["systems"][name]["dense_recall_at_200"]["mean"] == 1.0
    assert result["diarist_build"]["chunks"] == 2000


def _peers_module():
    return load_benchmark_script("peers.py")


def _row(name: str, p50: float) -> dict:
    return {"system": name, "measures": f"{name} search", "build_s": 1.0, "p50_ms": p50, "p95_ms": p50 * 2,
            "ratio_p50_to_numpy": p50 / 10, "dense_recall_at_200": None, "rss_mb": 10.0, "disk_mb": None}


def _result(size: int, systems: dict, load: float) -> dict:
    return {"size": size, "load1_start": load, "load1_end": load, "systems": systems}


def test_keep_other_rows_merges_and_marks_the_earlier_ones(tmp_path):
    peers = _peers_module()
    earlier = _result(1000, {"numpy": _row("numpy", 10), "lancedb": _row("lancedb", 20), "diarist": _row("diarist", 5)}, 1.4)
    now = _result(1000, {"numpy": _row("numpy", 9), "diarist": _row("diarist", 3)}, 0.5)
    merged = peers.keep_other_rows(earlier, now, "not re-run")
    # This run's rows replace the earlier ones; the others are kept, in the table's order.
    assert merged["systems"]["diarist"]["p50_ms"] == 3 and merged["systems"]["numpy"]["p50_ms"] == 9
    assert merged["systems"]["lancedb"]["p50_ms"] == 20
    assert list(merged["systems"]) == ["numpy", "lancedb", "diarist"]
    assert merged["rows_from_an_earlier_run"] == {"systems": ["lancedb"], "why": "not re-run",
                                                  "load1_start": 1.4, "load1_end": 1.4}
    # Kept again by a later run: the provenance of the first keeping stays.
    again = peers.keep_other_rows(merged, _result(1000, {"numpy": _row("numpy", 8), "diarist": _row("diarist", 2)}, 0.1),
                                  "another reason")
    assert again["rows_from_an_earlier_run"] == merged["rows_from_an_earlier_run"]
    (tmp_path / "peers_1k.json").write_text(json.dumps(again))
    table = peers.table(tmp_path)
    assert "| lancedb * |" in table and "| diarist |" in table and "| numpy |" in table
    assert "\\* from an earlier run (load average 1.4 -> 1.4): not re-run" in table
    # Nothing kept: no mark, no note.
    alone = peers.keep_other_rows(now, earlier | {"systems": {"numpy": _row("numpy", 1), "diarist": _row("diarist", 1)}}, "x")
    assert "rows_from_an_earlier_run" not in alone


def test_keep_other_rows_refuses_another_size():
    peers = _peers_module()
    import pytest

    with pytest.raises(SystemExit, match="of 1000 chunks, not 2000"):
        peers.keep_other_rows(_result(1000, {}, 1.0), _result(2000, {}, 1.0), "why")
