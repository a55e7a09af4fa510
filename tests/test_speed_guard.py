"""The read path's speed guard (benchmarks/read_speed.py --check, issue 46) at 10k chunks.

Not a timed test: the benchmark measures this tree's search rows side by side with an exact
numpy scan of the same matrix, in one run, and compares each row's ratio to that scan with the
committed baseline (benchmarks/results/latency/baseline_10k.json), each row's fastest pass to
numpy's fastest. A row more than 1.15x its baseline ratio is measured again, twice, and fails
only if it stays over. The corpus is the
benchmark's seeded synthetic text, so no data set is needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "benchmarks" / "results" / "latency" / "baseline_10k.json"


def test_search_is_within_its_baseline_ratios_to_a_numpy_scan(tmp_path):
    baseline = json.loads(BASELINE.read_text())
    assert baseline["size"] == 10_000 and baseline["corpus"] == "synthetic"
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "read_speed.py"), "--check", str(BASELINE),
                          "--workdir", str(tmp_path)], capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr[-4000:]
    assert "speed guard: every row within 1.15x" in out.stdout


def test_the_guard_fails_a_row_over_its_baseline(tmp_path):
    """The same check against a baseline whose ratios are a tenth of the measured: it fails."""
    baseline = json.loads(BASELINE.read_text())
    strict = baseline | {"size": 2_000, "questions": 10, "repeats": 1,
                         "ratio_best_pass": {row: (1.0 if row == "numpy" else ratio / 10)
                                             for row, ratio in baseline["ratio_best_pass"].items()}}
    path = tmp_path / "strict.json"
    path.write_text(json.dumps(strict))
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "read_speed.py"), "--check", str(path),
                          "--workdir", str(tmp_path), "--retries", "0"], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 1, out.stdout + out.stderr[-4000:]
    assert "speed guard FAILED" in out.stdout
