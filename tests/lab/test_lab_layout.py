"""The benchmark lab's layout (issue 29): results live only under benchmarks/results/, each folder
of them with a manifest saying which command wrote it at which commit, and every result file is
named by its manifest or by BENCHMARKS.md; every result BENCHMARKS.md names exists."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import pytest

from diarist.bench.report import CONTEXT_RUN_FILES, RUN_FILES, find_runs
from diarist.bench.rows import has_rows
from diarist.bench.xquad_summary import RUN_FILES as XQUAD_RUN_FILES

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "benchmarks"
RESULTS = LAB / "results"
REFERENCE = ROOT / "BENCHMARKS.md"
COMMIT = re.compile(r"^[0-9a-f]{7,40}(-dirty)?$")

pytestmark = pytest.mark.skipif(not RESULTS.is_dir(), reason="no benchmarks/results in this tree")


def manifests() -> dict[Path, dict]:
    return {p.parent: json.loads(p.read_text(encoding="utf-8")) for p in sorted(RESULTS.rglob("manifest.json"))}


def result_files() -> list[Path]:
    return sorted(p for p in RESULTS.rglob("*") if p.is_file() and p.name != "manifest.json")


def owner(path: Path, found: dict[Path, dict]) -> Path | None:
    """The nearest folder above ``path`` (inside benchmarks/results) that has a manifest."""
    for folder in path.parents:
        if folder in found:
            return folder
        if folder == RESULTS:
            return None
    return None


def named_by_manifest(path: Path, folder: Path, manifest: dict) -> bool:
    relative = path.relative_to(folder).as_posix()
    return any(fnmatch.fnmatchcase(relative, pattern) for pattern in manifest.get("files", []))


def test_every_manifest_says_what_wrote_it_and_at_which_commit():
    found = manifests()
    assert found, "no manifest under benchmarks/results"
    for folder, manifest in found.items():
        where = folder.relative_to(ROOT)
        command = manifest.get("command")
        commands = [command] if isinstance(command, str) else command
        assert isinstance(commands, list) and commands and all(isinstance(c, str) and c.strip() for c in commands), \
            f"{where}: manifest.json has no command"
        assert COMMIT.match(str(manifest.get("commit", ""))), f"{where}: manifest.json commit {manifest.get('commit')!r}"
        assert manifest.get("what") and manifest.get("kind"), f"{where}: manifest.json lacks what/kind"
        assert folder.relative_to(RESULTS).parts, f"{where}: a manifest belongs to a folder of benchmarks/results"
        for pattern in manifest.get("files", []):
            assert [p for p in folder.rglob("*") if p.is_file() and fnmatch.fnmatchcase(p.relative_to(folder).as_posix(), pattern)], \
                f"{where}: manifest names {pattern!r}, which matches no file"


def test_every_committed_result_is_referenced_by_a_manifest_or_the_reference():
    found = manifests()
    reference = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else ""
    orphans = []
    for path in result_files():
        folder = owner(path, found)
        if folder is not None and named_by_manifest(path, folder, found[folder]):
            continue
        if path.relative_to(ROOT).as_posix() in reference:
            continue
        orphans.append(path.relative_to(ROOT).as_posix())
    assert not orphans, "results no manifest or BENCHMARKS.md names:\n" + "\n".join(orphans[:20])


def test_results_live_only_under_results():
    """benchmarks/ holds scripts, the question sets of data/ and results/: no loose result files."""
    loose = [p.name for p in LAB.iterdir() if p.is_file() and p.suffix not in (".py", ".md")]
    loose += [p.name for p in RESULTS.iterdir() if p.is_file()]
    assert not loose, f"results outside benchmarks/results/<topic>/<name>/: {loose}"


def test_every_bench_run_has_its_manifest_and_verify_finds_each():
    found = manifests()
    runs = find_runs([RESULTS])
    assert runs
    for run in runs:
        manifest = found.get(run)
        assert manifest is not None, f"{run}: no manifest.json"
        meta = json.loads((run / "config.json").read_text(encoding="utf-8"))
        assert manifest["kind"] == "bench-run" and manifest["files"] in (RUN_FILES, CONTEXT_RUN_FILES, XQUAD_RUN_FILES)
        assert manifest["command"] == meta["command"], f"{run}: manifest and config.json disagree on the command"
        assert manifest["commit"] == meta["code_version"].removeprefix("git:")
    others = [f for f, m in found.items() if has_rows(f) and m["kind"] != "bench-run"]
    assert not set(others) & set(runs), "a folder of another tool's rows is taken for a bench run"


def test_every_result_the_reference_names_exists():
    if not REFERENCE.exists():
        pytest.skip("no BENCHMARKS.md")
    named = set(re.findall(r"benchmarks/results/[\w./*{},-]+", REFERENCE.read_text(encoding="utf-8")))
    missing = []
    for name in named:
        name = name.rstrip(".,)")
        if any(c in name for c in "*{}") or "NAME" in name or "DIR" in name:
            continue  # a pattern or a placeholder in a command
        if not (ROOT / name).exists():
            missing.append(name)
    assert not missing, f"BENCHMARKS.md names results that are not there: {sorted(missing)}"
