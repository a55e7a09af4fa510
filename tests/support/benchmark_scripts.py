"""Load a script of benchmarks/ as a module, for tests that call its functions directly."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark_script(filename: str) -> ModuleType:
    """``benchmarks/<filename>`` as a fresh module; scripts beside it (peers.py imports scale.py)
    are importable while it loads."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{Path(filename).stem}", BENCHMARKS / filename)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def load_study(name: str) -> ModuleType:
    """``benchmarks/studies/<name>.py`` as ``benchmarks.studies.<name>`` (the studies import each
    other as a package, as ``python -m benchmarks.studies.<name>`` runs them)."""
    import importlib

    root = str(BENCHMARKS.parent)
    if root not in sys.path:
        sys.path.append(root)
    return importlib.import_module(f"benchmarks.studies.{name}")
