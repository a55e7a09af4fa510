"""Every lab script a document names can be run: it is in ``benchmarks/``, or it is a closed
study that ``benchmarks/README.md`` lists with the commit that still holds it.

A doc that says "Reproduce: python benchmarks/x.py" for a script deleted since is a dead end for
a reader; this caught six such names in RELIABILITY.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT_NAME = re.compile(r"benchmarks/([a-z0-9_]+\.py)")  # NAME.py is a placeholder
CLOSED_ROW = re.compile(r"^\|\s*(`[A-Za-z0-9_]+\.py`(?:,\s*`[A-Za-z0-9_]+\.py`)*)\s*\|", re.M)


def _documents() -> list[Path]:
    top = [ROOT / name for name in ("README.md", "BENCHMARKS.md", "RELIABILITY.md")]
    return [p for p in top if p.exists()] + sorted((ROOT / "docs").rglob("*.md"))


def _closed_studies() -> set[str]:
    text = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    closed = text.split("## Closed studies", 1)[1]
    return {name.strip("` ") for row in CLOSED_ROW.findall(closed) for name in row.split(",")}


def test_the_closed_table_is_read() -> None:
    # the parser must see the table, or every dead name would pass unnoticed
    assert {"health_cost.py", "server_search_breakdown.py"} <= _closed_studies()


def test_every_named_script_exists_or_is_a_listed_closed_study() -> None:
    closed = _closed_studies()
    present = {p.name for p in (ROOT / "benchmarks").glob("*.py")}
    dead = []
    for doc in _documents():
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for name in SCRIPT_NAME.findall(line):
                if name not in present and name not in closed:
                    dead.append(f"{doc.relative_to(ROOT)}:{number} benchmarks/{name}")
    assert not dead, "scripts named but neither present nor listed as closed: " + ", ".join(dead)
