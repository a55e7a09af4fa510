"""What every report reads: a run's rows, and the paired sign test. Kept apart from report.py so
that the benchmarks report.py dispatches to (context_bench) can use them without a circle."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def read_rows(run: Path) -> list[dict[str, Any]]:
    with open(run / "rows.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test (= exact McNemar on the discordant pairs); ties dropped."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(0, min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)
