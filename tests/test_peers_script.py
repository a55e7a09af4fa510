"""benchmarks/peers.py runs end to end in the project venv, with the systems that need no peer
installed (numpy, SQLite FTS5, vestige), on a 2k-chunk corpus; its result JSON has every field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "peers.py"
SYSTEMS = ("numpy", "sqlite_fts5_numpy", "vestige", "vestige_vectors", "vestige_exact")


def test_help():
    out = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, check=True)
    assert "--sizes" in out.stdout and "--plot" in out.stdout


def test_smallest_run_writes_the_result_shape(tmp_path):
    assert (ROOT.parent / "shared" / "data" / "longmemeval_s_dev.json.gz").exists(), "the LongMemEval file is missing"
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
    for name in ("sqlite_fts5_numpy", "vestige", "vestige_vectors", "vestige_exact"):
        assert result["systems"][name]["disk_mb"] > 0
        # exact dense channels: the same top-200 as numpy's (2k chunks: vestige scans exactly)
        assert result["systems"][name]["dense_recall_at_200"]["mean"] == 1.0
    assert result["vestige_build"]["chunks"] == 2000
