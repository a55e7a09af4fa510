"""BENCHMARKS.md's tables are the committed results: ``benchmarks/reference.py`` re-derives each
from its files, and each must appear in the reference byte for byte, under the comment that
names its command."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark_scripts import load_benchmark_script

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "BENCHMARKS.md"

pytestmark = pytest.mark.skipif(not (ROOT / "benchmarks" / "results").is_dir(), reason="no committed results")

reference = load_benchmark_script("reference.py")


@pytest.mark.parametrize("name", sorted(reference.TABLES))
def test_each_table_of_the_reference_is_re_derived_from_its_files(name):
    block = f"<!-- python benchmarks/reference.py {name} -->\n{reference.TABLES[name]()}\n"
    assert block in REFERENCE.read_text(encoding="utf-8"), (
        f"BENCHMARKS.md's table {name!r} is not what its files give; run `python benchmarks/reference.py {name}`")


def test_the_check_sees_a_changed_cell(tmp_path, monkeypatch):
    """A table computed from other figures no longer matches the page."""
    results = tmp_path / "results"
    source = ROOT / "benchmarks" / "results" / "scale" / "s24"
    (results / "scale" / "s24").mkdir(parents=True)
    for f in source.glob("*.json"):
        (results / "scale" / "s24" / f.name).write_text(f.read_text())
    run = results / "scale" / "s24" / "scale_1m_r1.json"
    run.write_text(run.read_text().replace('"hybrid_hnsw": 7.', '"hybrid_hnsw": 8.', 1))
    monkeypatch.setattr(reference, "RESULTS", results)
    assert f"{reference.scale()}\n" not in REFERENCE.read_text(encoding="utf-8")


def test_the_reference_stays_a_reference():
    """At most ~400 lines: the dated narrative lives in docs/lab-notes/."""
    assert len(REFERENCE.read_text(encoding="utf-8").splitlines()) <= 420


def test_the_readme_stays_a_first_hour():
    """At most 300 lines, the agent first: the rest is one page a subject in docs/, linked."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert text.index("## Give your agent a memory") < text.index("## Everyday commands") < text.index("## Layout")


def _layout_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Layout")
    return text[text.index("```", start):text.index("```", text.index("```", start) + 3)]


def test_the_readme_layout_names_every_module_of_the_package():
    """README's Layout is the map a newcomer reads first: every module of src/diarist and of
    read/ (one per stage), and every subpackage, is named in it."""
    layout = _layout_block()
    package = ROOT / "src" / "diarist"
    missing = [p.name for p in sorted(package.iterdir())
               if (p.suffix == ".py" and p.name != "__init__.py" or p.is_dir() and (p / "__init__.py").exists())
               and (p.name + ("/" if p.is_dir() else "")) not in layout]
    missing += [f"read/{p.name}" for p in sorted((package / "read").glob("*.py"))
                if p.name != "__init__.py" and p.name not in layout]
    assert not missing, "README's Layout does not name: " + ", ".join(missing)
