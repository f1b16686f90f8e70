"""The package's shape: no long functions; every room on a floor and no import up a floor; no import cycle. Imports
inside functions and for type checkers count as much as those at module level (a lazy import hides an inversion as
well as any). mypy --strict is checked in CI (.ci/run)."""

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
                # the whole function: decorators, signature, docstring and body (issue #29: no function over 60)
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                length = (node.end_lineno or node.lineno) - start + 1
                found.append((str(path.relative_to(PKG)), node.name, length))
    return found


def test_no_function_is_longer_than_sixty_lines() -> None:
    assert [f for f in _functions() if f[2] > LONGEST] == []


#: The floors of the house, lowest first: a room (a top-level module or a subpackage of cudadoctor) imports only
#: rooms on its own floor or below, at module level, inside functions and for type checkers alike. What a lower
#: floor needs from a higher one is handed to it (a value, a function) or registered by the higher one.
FLOORS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "basics: records, errors, bounded reading, files, commands, caches, the pip configuration",
        frozenset(
            [
                "<package>",
                "record",
                "errors",
                "bounded",
                "fileread",
                "rootfs",
                "runner",
                "cachedir",
                "redact",
                "didyoumean",
                "nvreq",
                "envfile",
                "pythonarg",
                "output",
                "config",
                "pipconfig",
                "terminal",
            ]
        ),
    ),
    ("the `cudadoctor update` cache and the refresh", frozenset({"update"})),
    ("the facts model: what a machine is, no judgement, nothing of how it is read", frozenset({"facts"})),
    ("the compat data and the questions it answers", frozenset({"data"})),
    ("the GPU models table", frozenset({"gpu_models"})),
    ("the rules check and suggest both ask", frozenset({"rules"})),
    ("the fix commands: their model, builders and verifier against the data", frozenset({"fixes"})),
    ("facts assumed from the command line (--assume-driver, --assume-gpu)", frozenset({"assume"})),
    ("the planners", frozenset({"suggest"})),
    ("the constraints a plan must fit", frozenset({"planning"})),
    ("the checks, the derived facts they are given and the engine", frozenset({"checks"})),
    ("the report and its renderers", frozenset({"report"})),
    (
        "`cudadoctor compare`: reports and snapshots of many nodes, read as check --from reads one",
        frozenset({"compare"}),
    ),
    ("the probes and the collector (what fills the facts, and fast)", frozenset({"probes"})),
    ("the application", frozenset({"app", "usage", "catalog", "testing"})),
    ("the options of the command line, declared once as plain data", frozenset({"cli_options"})),
    ("the command bodies", frozenset({"commands"})),
    ("`cudadoctor why`: an error's text, recognised, answered from check's own findings", frozenset({"why"})),
    ("the command line", frozenset({"cli"})),
    ("the entry point", frozenset({"entry", "__main__"})),
)
FLOOR: dict[str, int] = {room: level for level, (_, rooms) in enumerate(FLOORS) for room in rooms}

#: Imports allowed to run up a floor, each with why ("importer -> imported": "reason"). Keep it empty.
UPWARD: dict[str, str] = {}


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<package>"


def _targets(module: str, names: list[str], modules: dict[str, pathlib.Path]) -> set[str]:
    """The package's modules ``from module import names`` loads: a submodule named, else the module itself."""
    found = {f"{module}.{n}" for n in names if f"{module}.{n}" in modules}
    if len(found) < len(names) and module in modules:
        found.add(module)
    return found


def _imports(path: pathlib.Path, modules: dict[str, pathlib.Path]) -> set[tuple[str, str]]:
    """(module of the package imported, where): ``module`` level, inside a ``function``, or for ``types`` only
    (``if TYPE_CHECKING:``); ``importlib.import_module`` of a fixed name counts as an import inside a function."""
    found: set[tuple[str, str]] = set()

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and where == "module":
                inner = "function"
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for branch, kind in ((child.body, "types"), (child.orelse, where)):
                    for statement in branch:
                        note(statement, kind)
                        visit(statement, kind)
                continue
            note(child, inner)
            visit(child, inner)

    def note(node: ast.AST, where: str) -> None:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cudadoctor"):
            found.update((m, where) for m in _targets(node.module, [a.name for a in node.names], modules))
        elif isinstance(node, ast.Import):
            found.update((a.name, where) for a in node.names if a.name in modules)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in modules
        ):
            found.add((str(node.args[0].value), "function"))

    visit(ast.parse(path.read_text(encoding="utf-8")), "module")
    return found


def _graph() -> dict[str, set[tuple[str, str]]]:
    modules = _modules()
    return {name: {(m, w) for m, w in _imports(path, modules) if m != name} for name, path in modules.items()}


def test_imports_inside_functions_for_type_checkers_and_by_fixed_name_are_seen(tmp_path: pathlib.Path) -> None:
    source = tmp_path / "example.py"
    source.write_text(
        "from __future__ import annotations\n"
        "import importlib\n"
        "from typing import TYPE_CHECKING\n"
        "from cudadoctor.facts import model\n"
        "if TYPE_CHECKING:\n"
        "    from cudadoctor.data.rows import GpuModel\n"
        "def later() -> None:\n"
        "    from cudadoctor.probes.host import probe_host\n"
        "    importlib.import_module('cudadoctor.app')\n",
        encoding="utf-8",
    )
    assert _imports(source, _modules()) == {
        ("cudadoctor.facts.model", "module"),
        ("cudadoctor.data.rows", "types"),
        ("cudadoctor.probes.host", "function"),
        ("cudadoctor.app", "function"),
    }


def test_every_room_is_on_a_floor() -> None:
    assert {_room(m) for m in _modules()} - set(FLOOR) == set()
    assert len(FLOOR) == sum(len(rooms) for _, rooms in FLOORS)  # no room on two floors


def test_no_import_runs_up_a_floor() -> None:
    """Not at module level, not inside a function (lazy imports hide inversions too), not for type checkers."""
    upward = sorted(
        f"{name} -> {target} ({where})"
        for name, imports in _graph().items()
        for target, where in imports
        if FLOOR[_room(target)] > FLOOR[_room(name)] and f"{name} -> {target}" not in UPWARD
    )
    assert upward == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle() -> None:
    """Between modules, counting imports inside functions and for type checkers."""
    graph = {name: {target for target, _ in imports} for name, imports in _graph().items()}
    assert _cycles(graph) == []


def test_the_package_has_no_stray_module_files() -> None:
    assert not [p for p in os.listdir(PKG) if p.endswith((".pyc", ".orig", ".rej"))]
