"""The package has no import cycles, and every module imports on its own (first, in a fresh
interpreter): a cycle hidden by import order breaks whoever imports the other side first."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "diarist"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    # A C extension's source is a module too (it imports nothing of diarist's).
    for path in PACKAGE.rglob("*.c"):
        out[".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)] = path
    return out


def _top_level_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The diarist modules a module imports when it is loaded (not inside functions)."""
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


def _imports(name: str, path: Path, known: set[str], *, deferred: bool) -> set[str]:
    """The diarist modules a module imports: when it is loaded, or (``deferred``) anywhere in it,
    inside functions and ``if TYPE_CHECKING:`` blocks too."""
    if not deferred:
        return _top_level_imports(name, path, known)
    if path.suffix == ".c":
        return set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out |= {f"{target}.{a.name}" if f"{target}.{a.name}" in known else target for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return (out & known) - {name}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph (a list of modules, the first repeated last), or None."""
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target, path + [target])
                if found:
                    return found
        state[node] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module, [module])
            if found:
                return found
    return None


# In the fast loop (under a second): a cycle made by a merge escaped it once (settings -> read.fusion).
@pytest.mark.parametrize("deferred", [False, True], ids=["import-time", "deferred-and-typing"])
def test_no_import_cycles(deferred):
    """No circle at import time, nor through imports inside functions or for typing only: a
    deferred import hides a circle from the interpreter, not from the reader (issue 29)."""
    modules = _modules()
    graph = {m: _imports(m, p, set(modules), deferred=deferred) for m, p in modules.items()}
    found = _cycle(graph)
    assert found is None, "import cycle: " + " -> ".join(found or [])


def test_the_cycle_check_sees_a_deferred_import():
    deferred = _write_module("def f():\n    from . import a\n")
    assert _imports("diarist.b", deferred, {"diarist.a"}, deferred=False) == set()
    graph = {"diarist.a": {"diarist.b"}, "diarist.b": _imports("diarist.b", deferred, {"diarist.a"}, deferred=True)}
    assert _cycle(graph) == ["diarist.a", "diarist.b", "diarist.a"]
    typing_only = _write_module("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n")
    assert _imports("diarist.b", typing_only, {"diarist.a"}, deferred=True) == {"diarist.a"}


def _write_module(text: str) -> Path:
    import tempfile

    folder = Path(tempfile.mkdtemp())
    (folder / "b.py").write_text(text)
    return folder / "b.py"


def _store_probes(path: Path) -> list[str]:
    """hasattr/getattr calls whose object is a store (``store``, ``memory.store``, ``self.store``...)."""
    return [f"{path.name}:{node.lineno}: {ast.unparse(node)}" for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr")
            and node.args and "store" in ast.unparse(node.args[0]).lower().split(".")[-1]]


#: Outside store/, these may still name a backend module (each with why). None do: the server
#: asks the store to translate its backend's errors (``Store.translate_error``, issue 29 item 4).
BACKEND_IMPORTS_ALLOWED: dict[str, str] = {}


@pytest.mark.slow
def test_no_store_is_probed_outside_the_store_package():
    """Optional capabilities are methods of the contract with defaults (``store/base.py``): no
    caller asks a store what it has (hasattr/getattr) or reaches into a backend's modules."""
    modules = _modules()
    probes, backend = [], []
    for name, path in modules.items():
        if name.startswith("diarist.store") or path.suffix != ".py":
            continue
        probes += _store_probes(path)
        imports = _imports(name, path, set(modules), deferred=True)
        reached = sorted(m for m in imports if m.startswith(("diarist.store.sqlite", "diarist.store.postgres")))
        if reached and name not in BACKEND_IMPORTS_ALLOWED:
            backend.append(f"{name} imports {', '.join(reached)}")
    assert not probes, "stores probed outside store/:\n" + "\n".join(probes)
    assert not backend, "backend modules imported outside store/:\n" + "\n".join(backend)


def test_the_server_names_no_backend_driver():
    """The HTTP and MCP servers answer a backend's errors as the store translates them
    (``Store.translate_error``): no module of server/ imports a database driver."""
    drivers = ("sqlite3", "psycopg", "psycopg_pool")
    found = []
    for path in sorted((PACKAGE / "server").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.name}:{node.lineno}: {n}" for n in names if n.split(".")[0] in drivers]
    assert not found, "server modules import a database driver:\n" + "\n".join(found)


def test_the_probe_check_sees_a_probe():
    path = _write_module("def f(memory, store):\n    return getattr(memory.store, 'page_size', None), hasattr(store, 'x')\n")
    assert len(_store_probes(path)) == 2
    assert _store_probes(_write_module("def f(memory):\n    return getattr(memory.embedder, 'dim')\n")) == []


#: What a Memory is called where its store would be read (``memory``, ``mem``, ``m``,
#: ``self._memory``, ``request.app.state.memory``, ``scratch_memory``...): the last name of the
#: object, leading underscores aside.
MEMORY_NAMES = re.compile(r"(m|mem|memory|\w+_memory)")
#: What a probe may not ask: a memory, an embedder, a reranker, a dense index (or an index), an
#: embedding cache, by the last name of the object (``self.dense``, ``memory.embedder``...).
PROBED_NAMES = re.compile(r"(m|mem|memory|\w+_memory|\w*embedder|\w*reranker|\w*dense|\w*index|exact|\w*cache)")
#: Probes the rule lets stand, each with why: (module path under src/diarist, the call).
PROBES_ALLOWED: dict[tuple[str, str], str] = {
    ("vectors/hnsw.py", "getattr(self.index, '_compiled', None)"):
        "usearch's own Index, a foreign library's object: its compiled handle differs across its versions",
}


def _last_name(node: ast.expr) -> str | None:
    """The last name of ``a.b.c`` (``c``) or of ``a`` (``a``), leading underscores aside; None for
    anything else (a call, a subscript)."""
    if isinstance(node, ast.Attribute):
        return node.attr.lstrip("_")
    if isinstance(node, ast.Name):
        return node.id.lstrip("_")
    return None


def _store_reaches(tree: ast.AST, where: str) -> list[str]:
    """Each ``<memory>.store`` read: the store reached around ``Memory``'s doors."""
    return [f"{where}:{node.lineno}: {ast.unparse(node)}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == "store"
            and (name := _last_name(node.value)) is not None and MEMORY_NAMES.fullmatch(name)]


def _probes(tree: ast.AST, where: str) -> list[str]:
    """``inspect.signature`` (or ``signature`` imported from inspect) anywhere, and each
    getattr/hasattr whose object is a memory, an embedder, a reranker, a dense index or a cache."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "inspect" and any(a.name == "signature" for a in node.names):
            found.append(f"{where}:{node.lineno}: from inspect import signature")
        elif isinstance(node, ast.Attribute) and node.attr == "signature" and _last_name(node.value) == "inspect":
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
              and node.args and (name := _last_name(node.args[0])) is not None and PROBED_NAMES.fullmatch(name.lower())
              and (where, ast.unparse(node)) not in PROBES_ALLOWED):
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def _trees(skip: tuple[str, ...] = ()) -> list[tuple[str, ast.AST]]:
    return [(str(path.relative_to(PACKAGE)), ast.parse(path.read_text())) for path in sorted(PACKAGE.rglob("*.py"))
            if not str(path.relative_to(PACKAGE)).startswith(skip)]


def test_no_memory_store_outside_the_store_and_memory():
    """``Memory`` is the only door (issue 44): outside ``store/`` and ``memory.py`` nothing reads a
    memory's ``.store``; what a caller needs is a door of ``Memory``'s (``list``, ``location``,
    ``health``...)."""
    reached = [line for where, tree in _trees(skip=("store/", "memory.py")) for line in _store_reaches(tree, where)]
    assert not reached, "the store reached around Memory:\n" + "\n".join(reached)


def test_no_memory_embedder_reranker_or_dense_index_is_probed():
    """What ``Memory``, ``Embedder``, ``Reranker``, ``DenseIndex`` and the embedding cache offer is
    declared on them (issue 44): no caller asks with getattr/hasattr, nor reads a signature."""
    found = [line for where, tree in _trees() for line in _probes(tree, where)]
    assert not found, "probes:\n" + "\n".join(found)
    allowed = {(where, ast.unparse(node)) for where, tree in _trees() for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert set(PROBES_ALLOWED) <= allowed, f"allowed probes that are gone (remove them): {set(PROBES_ALLOWED) - allowed}"


def test_the_door_and_probe_rules_see_a_planted_violation():
    """Each rule finds what it forbids, in the shapes the code had before issue 44, and passes
    what is allowed: a rule that cannot fail is no rule."""
    planted = ast.parse(
        "import inspect\n"
        "def page(memory, mem, request, self):\n"
        "    memory.store.fetch_chunks('a', [1])\n"                      # ui/browse.py before
        "    mem.store.location\n"
        "    request.app.state.memory.store.translate_error(None)\n"     # server/handlers.py before
        "    self._memory.store\n"
        "    inspect.signature(memory.search)\n"                          # ui/explain.py before
        "    getattr(memory, 'context_result', None)\n"
        "    getattr(self.embedder, 'whitespace_splits', False)\n"       # write/writer.py before
        "    getattr(reranker, 'error', None)\n"                          # read/search.py before
        "    getattr(memory.dense, 'state', None)\n"                      # health.py before
        "    getattr(self.dense, 'exact', None)\n"                        # memory.py before
        "    hasattr(cache, 'embed_int8')\n")                             # checks.py before
    assert len(_store_reaches(planted, "planted.py")) == 4
    assert len(_probes(planted, "planted.py")) == 7
    assert len(_probes(ast.parse("from inspect import signature\n"), "planted.py")) == 1
    clean = ast.parse(
        "def write(self, search, hit, channels, os):\n"
        "    self.store.add(1)\n"                   # a writer's own store
        "    search.channels.store.fetch_chunks()\n"  # the read path's channels
        "    getattr(hit, 'why', None)\n"           # a hit, not a door
        "    getattr(os, 'O_CLOEXEC', 0)\n"
        "    memory.search('q', explain=True)\n")
    assert _store_reaches(clean, "clean.py") == [] and _probes(clean, "clean.py") == []


ENTRY_MODULES = [
    "diarist.cli", "diarist.cli.commands", "diarist.server.cli", "diarist.server.app", "diarist.server.mcp_server",
    "diarist.server.protocol",  # uvicorn's worker processes load it by name, before the app
    "diarist.bench.cli", "diarist.health", "diarist.context", "diarist.memory", "diarist.store.sqlite",
    "diarist.lexical.postings", "diarist.vectors", "diarist.keys", "diarist.export",
]


@pytest.mark.parametrize("module", ENTRY_MODULES)
@pytest.mark.slow
def test_module_imports_first(module):
    if module not in _modules():
        pytest.skip(f"{module} is not in this tree")
    result = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_ann_index_and_the_embedder_load_together():
    """usearch's extension loaded before onnxruntime made onnxruntime's import segfault: diarist
    loads onnxruntime first whenever it loads the ANN index."""
    pytest.importorskip("usearch", reason="the 'ann' extra is not installed")
    code = ("import diarist.vectors.hnsw, usearch.index; from diarist.embed import get_embedder; "
            "print(get_embedder('minilm').embed(['hello']).shape)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "(1, 384)" in result.stdout


def test_the_readme_layout_names_every_module_and_package():
    """README's Layout section matches the tree: each top-level module and package of
    src/diarist, and each module of store/, is named there."""
    readme = (PACKAGE.parents[1] / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("```", 2)[1]
    names = [p.name for p in PACKAGE.iterdir() if (p.suffix == ".py" and not p.name.startswith("__"))
             or (p.is_dir() and (p / "__init__.py").exists())]
    names += [f"store/{p.name}" for p in (PACKAGE / "store").iterdir() if p.suffix == ".py" and not p.name.startswith("__")]
    missing = sorted(n for n in names if n.removesuffix(".py") not in layout)
    assert not missing, f"README's Layout section does not name: {missing}"
