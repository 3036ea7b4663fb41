"""Imports only go down: hympi's Python layers (the `layers` contract of import-linter in pyproject.toml, mapped in
docs/architecture.md) hold, no module imports itself back through others, and no hympi import hides inside a
function or under `if TYPE_CHECKING` to dodge a cycle."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

import hympi

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "python" / "hympi"
CONTRACT = "hympi layers: imports only go down"

# Cycles of modules tolerated: none. (The test fails when a listed cycle is gone, so an entry never outlives it.)
KNOWN_CYCLES: tuple[frozenset[str], ...] = ()

# hympi imports inside functions, allowed: none. hympi.cli imports a subcommand's module only when it runs, by the
# name in its COMMANDS table (test_startup.py); the module imports its work at its top.
DEFERRED: frozenset[tuple[str, str]] = frozenset()


def _lint_imports(root: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports (the venv's, next to this interpreter) with the repository's contracts, on the hympi package
    under `root` (the directory that holds hympi/)."""
    tool = Path(sys.executable).parent / "lint-imports"
    if not tool.exists():
        pytest.fail(f"{tool} is missing: import-linter is in the project's [test] extras")
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(tool), "--no-cache", "--no-logo", str(REPO / "pyproject.toml")], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_the_layers_contract_is_kept():
    proc = _lint_imports(REPO / "python", REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{CONTRACT} KEPT" in proc.stdout, proc.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path):
    """The check can fail: the store (a low layer) importing the command line is reported, by module and line."""
    copy = tmp_path / "python"
    shutil.copytree(PACKAGE, copy / "hympi", ignore=shutil.ignore_patterns("__pycache__"))
    db = copy / "hympi" / "store" / "db.py"
    lines = db.read_text().count("\n")
    with db.open("a") as stream:
        stream.write("import hympi.cli  # upward: the layers contract must refuse it\n")
    proc = _lint_imports(copy, tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert f"{CONTRACT} BROKEN" in out, out
    assert f"hympi.store.db -> hympi.cli (l.{lines + 1})" in out, out


def _cycles(graph: grimp.ImportGraph) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_no_module_imports_itself_back():
    assert Path(hympi.__file__).resolve().parent == PACKAGE.resolve(), \
        f"hympi is imported from {hympi.__file__}, not from this checkout's python/ (set PYTHONPATH)"
    cycles = _cycles(grimp.build_graph("hympi", cache_dir=None))
    unknown = [sorted(c) for c in cycles if c not in KNOWN_CYCLES]
    assert unknown == [], f"import cycles: {unknown}"
    gone = [sorted(c) for c in KNOWN_CYCLES if c not in cycles]
    assert gone == [], f"no longer cycles, take them out of KNOWN_CYCLES: {gone}"


def test_the_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    for name in ("a", "a.b", "a.c", "a.d"):
        graph.add_module(name)
    graph.add_import(importer="a.b", imported="a.c")
    graph.add_import(importer="a.c", imported="a.b")
    graph.add_import(importer="a.d", imported="a.b")
    assert _cycles(graph) == [frozenset({"a.b", "a.c"})]


def _hidden_imports(path: Path) -> list[tuple[int, str]]:
    """(line, statement) of each hympi import inside a function body or under `if TYPE_CHECKING` in a file."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, hidden: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = hidden or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or (
                isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
            if inside and isinstance(child, ast.Import) and any(
                    a.name == "hympi" or a.name.startswith("hympi.") for a in child.names):
                found.append((child.lineno, ast.unparse(child)))
            if inside and isinstance(child, ast.ImportFrom) and (
                    child.level > 0 or (child.module or "").split(".")[0] == "hympi"):
                found.append((child.lineno, ast.unparse(child)))
            visit(child, inside)

    visit(ast.parse(path.read_text(), str(path)), False)
    return found


def test_no_hympi_import_hides_in_a_function_or_under_type_checking():
    seen: set[tuple[str, str]] = set()
    hidden = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        for line, statement in _hidden_imports(path):
            seen.add((name, statement))
            if (name, statement) not in DEFERRED:
                hidden.append(f"python/hympi/{name}:{line}: {statement}")
    assert hidden == [], "import at module top (a cycle is fixed by moving code down a layer):\n" + "\n".join(hidden)
    assert not DEFERRED - seen, f"no longer deferred, take them out of DEFERRED: {sorted(DEFERRED - seen)}"


def test_the_scan_sees_imports_in_functions_and_under_type_checking(tmp_path: Path):
    sample = tmp_path / "sample.py"
    sample.write_text("from typing import TYPE_CHECKING\nimport hympi.errors\nif TYPE_CHECKING:\n"
                      "    from hympi.store import Run\n\ndef f():\n    import json\n    import hympi.cli\n"
                      "    from . import x\n")
    assert _hidden_imports(sample) == [(4, "from hympi.store import Run"), (8, "import hympi.cli"),
                                       (9, "from . import x")]
