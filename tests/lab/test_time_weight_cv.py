"""benchmarks/time_weight_cv.py replays the shipped second stage from the committed pools: with
the time signal at its shipped weight it must reproduce the committed default rows, or its
cross-validation of that weight measures something other than what ships."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark_scripts import load_benchmark_script

ROOT = Path(__file__).resolve().parents[2]


def _script():
    return load_benchmark_script("time_weight_cv.py")


@pytest.mark.slow
def test_replay_reproduces_the_committed_default_and_the_report_is_complete(tmp_path):
    from diarist.bench import fusion_lab

    registered = dict(fusion_lab.FUSIONS)
    out = tmp_path / "report.json"
    assert _script().main(["--out", str(out)]) == 0
    assert fusion_lab.FUSIONS == registered  # the lab's registry is left as it was
    report = json.loads(out.read_text())
    check = report["replay_check"]
    assert check["locomo"] == {"r_any@1_same": 1.0, "r_any@5_same": 1.0, "questions": 1529}
    assert check["longmemeval"]["r_any@5_same"] == 1.0 and check["longmemeval"]["r_any@1_same"] >= 0.99
    # w = 0 is the search without its second stage: the time signal must move something.
    grid = report["grid"]
    assert grid["0.0"]["locomo"] != grid["1.0"]["locomo"]
    cv = report["cross_validated"]
    assert set(cv["cross_dataset"]) == set(cv["kfold"]) == {"locomo", "longmemeval"}
    assert all(len(cv["kfold"][d]["params"]) == 5 for d in cv["kfold"])
    # The committed report is what the script writes today.
    committed = json.loads((ROOT / "benchmarks" / "results" / "fusion" / "time_weight_cv.json").read_text())
    assert committed == report
