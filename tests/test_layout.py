"""The package has no import cycles, and every module imports on its own (first, in a fresh
interpreter): a cycle hidden by import order breaks whoever imports the other side first."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "vestige"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    # A C extension's source is a module too (it imports nothing of vestige's).
    for path in PACKAGE.rglob("*.c"):
        out[".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)] = path
    return out


def _top_level_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The vestige modules a module imports when it is loaded (not inside functions)."""
    if path.suffix == ".c":
        return set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:` imports do not run
            continue
        for inner in ast.walk(node) if isinstance(node, ast.Try) else [node]:
            if isinstance(inner, ast.ImportFrom) and inner.level:
                base = package.split(".")[: len(package.split(".")) - (inner.level - 1)]
                target = ".".join(base + ([inner.module] if inner.module else []))
                for alias in inner.names:
                    out.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target)
    return out & known


def test_no_import_cycles():
    modules = _modules()
    graph = {m: _top_level_imports(m, p, set(modules)) for m, p in modules.items()}
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                pytest.fail("import cycle: " + " -> ".join(path[path.index(target):] + [target]))
            if target not in state:
                visit(target, path + [target])
        state[node] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


ENTRY_MODULES = [
    "vestige.cli", "vestige.cli.commands", "vestige.server.cli", "vestige.server.app", "vestige.server.mcp_server",
    "vestige.bench.cli", "vestige.health", "vestige.context", "vestige.memory", "vestige.store.sqlite",
    "vestige.lexical.postings", "vestige.vectors", "vestige.keys", "vestige.export",
]


@pytest.mark.parametrize("module", ENTRY_MODULES)
def test_module_imports_first(module):
    if module not in _modules():
        pytest.skip(f"{module} is not in this tree")
    result = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_ann_index_and_the_embedder_load_together():
    """usearch's extension loaded before onnxruntime made onnxruntime's import segfault: vestige
    loads onnxruntime first whenever it loads the ANN index."""
    pytest.importorskip("usearch", reason="the 'ann' extra is not installed")
    code = ("import vestige.vectors.hnsw, usearch.index; from vestige.embed import get_embedder; "
            "print(get_embedder('minilm').embed(['hello']).shape)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "(1, 384)" in result.stdout
