"""The package's shape: no long functions, no import cycle, mypy-strict clean is checked in CI (.ci/run)."""

from __future__ import annotations

import ast
import os
import pathlib

PKG = pathlib.Path(__file__).resolve().parent.parent / "cudadoctor"
LONGEST = 60


def _functions() -> list[tuple[str, str, int]]:
    found = []
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # the body, docstring included; a typer command's long option signature is not counted
                length = (node.end_lineno or node.lineno) - node.body[0].lineno + 1
                found.append((str(path.relative_to(PKG)), node.name, length))
    return found


def test_no_function_is_longer_than_sixty_lines() -> None:
    assert [f for f in _functions() if f[2] > LONGEST] == []


def _imports(path: pathlib.Path) -> set[str]:
    """Modules of the package imported at module level (function-level imports are lazy by design)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cudadoctor"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("cudadoctor"))
        elif isinstance(node, ast.If):  # `if TYPE_CHECKING:` imports never run
            continue
    return found


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_no_import_cycle_at_module_level() -> None:
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph = {name: {m for m in _imports(path) if m in modules and m != name} for name, path in modules.items()}
    # a package imports its own submodules' names through __init__: only module-to-module edges count
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt] if nxt in stack else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == [], cycles


def test_the_package_has_no_stray_module_files() -> None:
    assert not [p for p in os.listdir(PKG) if p.endswith((".pyc", ".orig", ".rej"))]
