"""Static guarantees about cudadoctor's own code, checked on its syntax trees (not by grep).

* no ``shell=True``; no process is started anywhere but :mod:`cudadoctor.runner` (``os.system`` and
  ``os.popen`` not at all), and every ``Runner.run`` call passes an argv list or tuple (provably,
  following names, parameters and helper functions) and an explicit ``timeout=``;
* no module imports a GPU framework: not by statement, not through ``importlib`` / ``__import__``
  with such a name or with a name that is not a literal; the framework imports that do exist live
  in the ``load`` function of the child programs (``probes/children/``), which use only the standard
  library, are imported by no module, and reach nothing but the runner's argv as ``python -I <path>``;
* nothing read from disk, a snapshot, an image root or the network can become code: no ``eval``,
  ``exec``, ``compile``, ``pickle``, ``marshal``, ``yaml``, ``runpy``, file-based import machinery,
  no ``sys.path`` edits (a child's ``add_sites`` edits its own), and native libraries are loaded only by
  fixed names in ``probes/native.py`` (and ``libcuda.so.1`` in the driver-API child).
"""

from __future__ import annotations

import ast
import functools
import os
import re
import sys
from collections.abc import Iterator

import pytest

import cudadoctor

PKG = os.path.dirname(os.path.abspath(cudadoctor.__file__))

FRAMEWORKS = frozenset({"torch", "vllm", "tensorflow", "jax", "jaxlib", "tensorrt", "cupy", "flash_attn", "xformers"})


def _modules() -> list[str]:
    found = []
    for directory, dirs, files in os.walk(PKG):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found += [os.path.relpath(os.path.join(directory, f), PKG) for f in files if f.endswith(".py")]
    return sorted(found)


MODULES = _modules()


#: Syntax trees that are not files of the package (the prover's own test registers one).
EXTRA: dict[str, ast.Module] = {}


def tree(module: str) -> ast.Module:
    return EXTRA[module] if module in EXTRA else _parse(module)


@functools.cache
def _parse(module: str) -> ast.Module:
    with open(os.path.join(PKG, module), encoding="utf-8") as handle:
        return ast.parse(handle.read(), filename=module)


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes on a name; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


@functools.cache
def aliases(module: str) -> dict[str, str]:
    """Local name -> what it was imported as (``sp`` -> ``subprocess``, ``Popen`` -> ``subprocess.Popen``)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree(module)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def qualified(module: str, node: ast.AST) -> str | None:
    """The imported name a call's function refers to: ``subprocess.run``, ``os.system``, ``eval``."""
    name = dotted(node)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    full = aliases(module).get(head, head)
    return f"{full}.{rest}" if rest else full


def calls(module: str) -> Iterator[tuple[ast.Call, str | None]]:
    for node in ast.walk(tree(module)):
        if isinstance(node, ast.Call):
            yield node, qualified(module, node.func)


def where(module: str, node: ast.AST) -> str:
    return f"cudadoctor/{module}:{getattr(node, 'lineno', '?')}"


def imported_modules(module: str) -> Iterator[tuple[ast.AST, str]]:
    for node in ast.walk(tree(module)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node, node.module
            for alias in node.names:
                yield node, f"{node.module}.{alias.name}"


def test_the_package_is_parsed() -> None:
    assert "runner.py" in MODULES and "cli.py" in MODULES and os.path.join("probes", "runtime.py") in MODULES
    assert len(MODULES) > 30


# --- processes ------------------------------------------------------------------------------------

#: Ways to start a process that must appear nowhere in cudadoctor/.
NEVER = re.compile(
    r"^(os\.(system|popen|exec\w*|spawn\w*|posix_spawnp?|fork|forkpty)|pty\.(spawn|fork)|platform\.popen"
    r"|subprocess\.(getoutput|getstatusoutput)|asyncio\.create_subprocess_\w+|multiprocessing(\..*)?|commands\..*)$"
)


#: Calls whose ``shell=`` names a shell's dialect and starts nothing: typer's completion script for that shell.
NOT_A_PROCESS = frozenset({"get_completion_script"})


def test_no_shell_true_anywhere() -> None:
    found = []
    for module in MODULES:
        for node in ast.walk(tree(module)):
            if isinstance(node, ast.Call) and (dotted(node.func) or "").rsplit(".", 1)[-1] in NOT_A_PROCESS:
                continue
            for keyword in node.keywords if isinstance(node, ast.Call) else ():
                is_false = isinstance(keyword.value, ast.Constant) and keyword.value.value is False
                if keyword.arg == "shell" and not is_false:
                    found.append(where(module, keyword.value))
            if isinstance(node, ast.Dict) and any(
                isinstance(k, ast.Constant) and k.value == "shell" for k in node.keys
            ):
                found.append(where(module, node))  # shell passed through **kwargs
    assert found == []


def test_no_os_system_popen_or_other_spawners() -> None:
    found = []
    for module in MODULES:
        for node in ast.walk(tree(module)):
            if isinstance(node, (ast.Attribute, ast.Name)):
                name = qualified(module, node)
                imported = (dotted(node) or "").split(".")[0] in aliases(module)
                if name and imported and NEVER.match(name):
                    found.append(f"{where(module, node)} {name}")
        for node, name in imported_modules(module):
            if NEVER.match(name) or name.split(".")[0] in ("pty", "multiprocessing", "commands"):
                found.append(f"{where(module, node)} import {name}")
    assert found == []


def test_only_the_runner_uses_subprocess() -> None:
    users = {}
    for module in MODULES:
        hits = [where(module, node) for node, name in imported_modules(module) if name.split(".")[0] == "subprocess"]
        hits += [
            where(module, node)
            for node in ast.walk(tree(module))
            if isinstance(node, ast.Attribute) and (qualified(module, node) or "").startswith("subprocess.")
        ]
        if hits:
            users[module] = hits
    assert set(users) == {"runner.py"}, users
    # … and there only Popen is called, with no shell; every wait has a timeout, and the output is
    # streamed with a cap (never communicate(), which buffers all a runaway child writes: issue #14).
    spawned = [name for _, name in calls("runner.py") if name and name.startswith("subprocess.")]
    assert spawned == ["subprocess.Popen"]
    waits = [c for c, name in calls("runner.py") if dotted(c.func) in ("proc.wait", "proc.communicate")]
    assert waits and all(any(k.arg == "timeout" for k in c.keywords) for c in waits)
    assert not [c for c, name in calls("runner.py") if dotted(c.func) == "proc.communicate"]


def test_the_real_runner_is_made_only_for_the_live_machine() -> None:
    """``--root`` and ``--from`` get a NullRunner: SubprocessRunner() is built in ``live_context`` alone."""
    made = []
    for module in MODULES:
        for node in ast.walk(tree(module)):
            if isinstance(node, ast.FunctionDef):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Call) and (qualified(module, inner.func) or "").endswith(
                        "SubprocessRunner"
                    ):
                        made.append((module, node.name))
    assert made == [("probes/collect.py", "live_context")]


# Proving that an expression is an argv list or tuple ------------------------------------------------


def _functions(module: str) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree(module).body if isinstance(n, ast.FunctionDef)}


def _enclosing(module: str, target: ast.AST) -> ast.FunctionDef | None:
    best: ast.FunctionDef | None = None
    for node in ast.walk(tree(module)):
        inside = isinstance(node, ast.FunctionDef) and any(n is target for n in ast.walk(node))
        if inside and isinstance(node, ast.FunctionDef) and (best is None or node.lineno > best.lineno):
            best = node
    return best


def _sequence_annotation(node: ast.AST | None) -> bool:
    """``list[str]`` / ``tuple[str, ...]`` (a Sequence[str] annotation would admit a str)."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Name) and node.id in ("list", "tuple", "List", "Tuple")


def argv_problem(module: str, expr: ast.AST, scope: ast.FunctionDef | None, depth: int = 0) -> str | None:
    """None when ``expr`` is provably a list or tuple; else why not."""
    if depth > 8:
        return "too deep to follow"
    if isinstance(expr, (ast.List, ast.Tuple)):
        return None
    if isinstance(expr, ast.Call):
        func = dotted(expr.func)
        if func in ("list", "tuple"):
            return None
        if func in _functions(module):
            helper = _functions(module)[func]
            if not _sequence_annotation(helper.returns):
                return f"{func}() is not annotated to return a list or tuple"
            returns = [n for n in ast.walk(helper) if isinstance(n, ast.Return)]
            if not returns:
                return f"{func}() returns nothing"
            for ret in returns:
                if ret.value is None:
                    return f"{func}() has a bare return"
                problem = argv_problem(module, ret.value, helper, depth + 1)
                if problem:
                    return f"{func}(): {problem}"
            return None
        return f"the result of {func or 'a call'}() cannot be followed"
    if isinstance(expr, ast.Name):
        if scope is not None:
            bound = [
                n.value
                for n in ast.walk(scope)
                if isinstance(n, (ast.Assign, ast.AnnAssign))
                and n.value is not None
                and any(
                    isinstance(t, ast.Name) and t.id == expr.id
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                )
            ]
            if bound:
                for value in bound:
                    problem = argv_problem(module, value, scope, depth + 1)
                    if problem:
                        return f"{expr.id} = …: {problem}"
                return None
            params = scope.args.args + scope.args.kwonlyargs + scope.args.posonlyargs
            for position, param in enumerate(scope.args.args):
                if param.arg != expr.id:
                    continue
                if not _sequence_annotation(param.annotation):
                    return f"parameter {expr.id} of {scope.name}() is not annotated list/tuple"
                sites = [c for c, _ in calls(module) if dotted(c.func) == scope.name]
                if not sites:
                    return f"{scope.name}() is never called in its module: cannot follow {expr.id}"
                for site in sites:
                    if position >= len(site.args):
                        return f"{scope.name}() called without positional {expr.id}"
                    problem = argv_problem(module, site.args[position], _enclosing(module, site), depth + 1)
                    if problem:
                        return f"{where(module, site)}: {problem}"
                return None
            if any(p.arg == expr.id for p in params):
                return f"parameter {expr.id} of {scope.name}() cannot be followed"
        for node in tree(module).body:  # a module constant
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == expr.id:
                return argv_problem(module, node.value, None, depth + 1) if node.value else "no value"
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == expr.id for t in node.targets):
                return argv_problem(module, node.value, None, depth + 1)
        return f"{expr.id} is not bound to a list or tuple"
    return f"{type(expr).__name__} is not an argv list or tuple"


def runner_calls() -> list[tuple[str, ast.Call]]:
    found = []
    for module in MODULES:
        for node, _ in calls(module):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "run":
                found.append((module, node))
    return found


def test_every_run_call_is_a_runner_call_with_an_argv_sequence_and_a_timeout() -> None:
    sites = runner_calls()
    # nvidia-smi (driver), nvcc (toolkit), the --python interpreter (interpreter), the --deep children (runtime)
    assert {m for m, _ in sites} >= {
        os.path.join("probes", "driver.py"),
        os.path.join("probes", "toolkit.py"),
        os.path.join("probes", "interpreter.py"),
        os.path.join("probes", "runtime.py"),
    }
    problems = []
    for module, call in sites:
        assert isinstance(call.func, ast.Attribute)  # runner_calls keeps only `.run(...)` calls
        receiver = dotted(call.func.value) or ""
        if not receiver.split(".")[-1].endswith("runner"):
            problems.append(f"{where(module, call)}: .run() on {receiver or 'an expression'}, not a Runner")
            continue
        if len(call.args) != 1:
            problems.append(f"{where(module, call)}: expected exactly one positional argument (argv)")
            continue
        problem = argv_problem(module, call.args[0], _enclosing(module, call))
        if problem:
            problems.append(f"{where(module, call)}: argv: {problem}")
        timeout = [k for k in call.keywords if k.arg == "timeout"]
        if not timeout or (isinstance(timeout[0].value, ast.Constant) and timeout[0].value.value is None):
            problems.append(f"{where(module, call)}: no explicit timeout=")
        if any(k.arg is None for k in call.keywords):
            problems.append(f"{where(module, call)}: **kwargs hide what is passed")
    assert problems == []


def test_the_argv_prover_refuses_strings_and_accepts_sequences() -> None:
    EXTRA["<fake>"] = ast.parse(
        "ARGV = ('nvidia-smi', '-L')\n"
        "def f(ctx, cmd: str, argv: list[str]):\n"
        "    ctx.runner.run(cmd, timeout=1)\n"
        "    line = 'nvcc --version'\n"
        "    ctx.runner.run(line, timeout=1)\n"
        "    ctx.runner.run(f'{cmd} -v', timeout=1)\n"
        "    ctx.runner.run(cmd.split(), timeout=1)\n"
        "    ctx.runner.run(argv, timeout=1)\n"
        "    ctx.runner.run(['nvcc', '--version'], timeout=1)\n"
        "    ctx.runner.run(ARGV, timeout=1)\n"
        "f(None, 'x', 'nvcc --version')\n"
    )
    try:
        func = EXTRA["<fake>"].body[1]
        assert isinstance(func, ast.FunctionDef)
        runs = [n for n in ast.walk(func) if isinstance(n, ast.Call) and dotted(n.func) == "ctx.runner.run"]
        verdicts = [argv_problem("<fake>", r.args[0], func) is None for r in runs]
        # str parameter, str variable, f-string, str.split(), a list[str] parameter passed a str; list; tuple
        assert verdicts == [False, False, False, False, False, True, True]
    finally:
        del EXTRA["<fake>"]


# --- framework imports ------------------------------------------------------------------------------

IMPORTERS = ("importlib.import_module", "__import__", "importlib.__import__", "importlib.util.find_spec")

#: The programs ``check --deep`` runs as child interpreters (cudadoctor/probes/children/): the only
#: code that imports a framework, through its ``load`` function, in the child process only.
CHILDREN_DIR = os.path.join("probes", "children")
CHILDREN = tuple(
    m for m in MODULES if os.path.dirname(m) == CHILDREN_DIR and m != os.path.join(CHILDREN_DIR, "__init__.py")
)
DRIVER_CHILD = os.path.join(CHILDREN_DIR, "driver_api.py")
RUNTIME = os.path.join("probes", "runtime.py")


def test_the_children_are_parsed() -> None:
    assert {os.path.basename(c) for c in CHILDREN} == {"driver_api.py", "framework.py", "nccl.py"}


def test_no_framework_import_statement() -> None:
    found = [
        f"{where(module, node)} {name}"
        for module in MODULES
        for node, name in imported_modules(module)
        if name.split(".")[0] in FRAMEWORKS
    ]
    assert found == []


def _in_load(module: str, call: ast.Call) -> bool:
    """``return importlib.import_module(module)`` as the whole body of a child's ``load(module)``."""
    func = _enclosing(module, call)
    if module not in CHILDREN or func is None or func.name != "load" or len(func.args.args) != 1:
        return False
    body = [n for n in func.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    param = func.args.args[0].arg
    is_return = len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is call
    return is_return and len(call.args) == 1 and isinstance(call.args[0], ast.Name) and call.args[0].id == param


def test_no_dynamic_import_of_a_framework_or_of_a_computed_name() -> None:
    """Outside the children's ``load`` nothing imports a computed name; nothing anywhere a framework."""
    found = []
    for module in MODULES:
        for call, name in calls(module):
            if name not in IMPORTERS or _in_load(module, call):
                continue
            arg = call.args[0] if call.args else None
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                found.append(f"{where(module, call)} {name}() of a computed name")
            elif arg.value.split(".")[0] in FRAMEWORKS:
                found.append(f"{where(module, call)} {name}({arg.value!r})")
    assert found == []


def test_children_import_frameworks_only_through_load_and_the_driver_child_not_at_all() -> None:
    for child in CHILDREN:
        loads = [c for c, name in calls(child) if name in IMPORTERS]
        if child == DRIVER_CHILD:
            assert loads == [] and "load" not in _functions(child), child
            continue
        assert loads and all(_in_load(child, c) for c in loads), child
        # each load names its module literally: the framework named on argv is only a key of RUN's table
        named = [c for c, _ in calls(child) if dotted(c.func) == "load"]
        assert named and all(isinstance(c.args[0], ast.Constant) for c in named), child


def test_children_use_only_the_standard_library_and_never_cudadoctor() -> None:
    """The target interpreter may lack cudadoctor and anything it depends on; a child runs by file path."""
    stdlib = getattr(sys, "stdlib_module_names", None)
    found = []
    for child in CHILDREN:
        for node, name in imported_modules(child):
            top = name.split(".")[0]
            if top == "cudadoctor" or (stdlib is not None and top not in stdlib and top != "__future__"):
                found.append(f"{where(child, node)} {name}")
        found += [
            f"{where(child, n)} relative import"
            for n in ast.walk(tree(child))
            if isinstance(n, ast.ImportFrom) and n.level
        ]
    assert found == []


_IMPORT_TEXT = re.compile(
    r"^\s*(?:import|from)\s+(?:" + "|".join(sorted(FRAMEWORKS)) + r")\b|import_module\s*\(|__import__\s*\(", re.M
)


def _docstrings(module: str) -> set[int]:
    ids = set()
    for node in ast.walk(tree(module)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def test_no_string_holds_code_that_imports_a_framework() -> None:
    """The child programs are modules (linted, type-checked), not strings handed to ``python -c``."""
    holders = []
    for module in MODULES:
        docs = _docstrings(module)
        for node in ast.walk(tree(module)):
            code = isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            if code and isinstance(node, ast.Constant) and _IMPORT_TEXT.search(str(node.value)):
                holders.append(module)
    assert holders == []


CHILD_PATHS = ("DRIVER_CHILD", "FRAMEWORK_CHILD", "NCCL_CHILD")
ARGV_HELPERS = ("driver_argv", "framework_argv", "nccl_argv")


def test_the_child_paths_are_the_children() -> None:
    from cudadoctor.probes import runtime

    paths = {getattr(runtime, name) for name in CHILD_PATHS}
    assert paths == {os.path.join(PKG, child) for child in CHILDREN}
    assert all(os.path.isabs(p) and os.path.isfile(p) for p in paths)


def test_the_children_only_reach_the_runner_as_python_dash_i_path() -> None:
    """The child paths appear only right after ``-I`` in the argv helpers, the helpers are called only
    as the argv of ``_run``, ``_run`` hands it to ``ctx.runner.run``, and no module imports a child."""
    uses: dict[str, list[str]] = {}
    for func in ast.walk(tree(RUNTIME)):
        if not isinstance(func, ast.FunctionDef):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Name) and node.id in CHILD_PATHS and isinstance(node.ctx, ast.Load):
                uses.setdefault(node.id, []).append(func.name)
    assert uses == dict(zip(CHILD_PATHS, ([h] for h in ARGV_HELPERS), strict=True))
    for helper in ARGV_HELPERS:
        lists = [n for n in ast.walk(_functions(RUNTIME)[helper]) if isinstance(n, ast.List)]
        assert len(lists) == 1
        elts = lists[0].elts
        assert getattr(elts[1], "value", None) == "-I"
        assert isinstance(elts[2], ast.Name) and elts[2].id in CHILD_PATHS
        users = [
            (m, dotted(c.func), enclosing.name if (enclosing := _enclosing(m, c)) else None)
            for m in MODULES
            for c, _ in calls(m)
            if any(isinstance(n, ast.Name) and n.id == helper for n in ast.walk(c)) and dotted(c.func) != helper
        ]
        assert users and all(u[:2] == (RUNTIME, "_run") for u in users), users
        assert all(
            dotted(c.func) != helper
            or _enclosing(RUNTIME, c).name in ("_probe_driver", "_probe_framework", "_probe_rank")  # type: ignore[union-attr]
            for c, _ in calls(RUNTIME)
        )
    run = _functions(RUNTIME)["_run"]
    inner = [
        n
        for n in ast.walk(run)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "run"
    ]
    assert [dotted(c.func) for c in inner] == ["ctx.runner.run"]
    assert isinstance(inner[0].args[0], ast.Name) and inner[0].args[0].id == "argv"
    # No other module takes the child paths or the helpers, and none imports a child.
    for other in MODULES:
        names = {n for _, n in imported_modules(other)}
        assert not any(n.startswith("cudadoctor.probes.children") for n in names), other
        if other != RUNTIME:
            assert not any(n.endswith(tuple(f".{s}" for s in (*CHILD_PATHS, *ARGV_HELPERS, "_run"))) for n in names)


# --- nothing read becomes code ------------------------------------------------------------------

BANNED_CALLS = frozenset({"eval", "exec", "compile", "__import__", "breakpoint", "execfile", "input"})
BANNED_MODULES = frozenset(
    {"pickle", "_pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle", "jsonpickle", "yaml", "ruamel",
     "runpy", "code", "codeop", "imp", "zipimport", "site"}
)  # fmt: skip
BANNED_ATTRS = frozenset(
    {"load_module", "exec_module", "spec_from_file_location", "SourceFileLoader", "SourcelessFileLoader",
     "ExtensionFileLoader", "module_from_spec", "addsitedir", "unsafe_load", "full_load"}
)  # fmt: skip


def test_no_eval_exec_pickle_marshal_or_yaml() -> None:
    found = []
    for module in MODULES:
        for call, _ in calls(module):
            if isinstance(call.func, ast.Name) and call.func.id in BANNED_CALLS:
                found.append(f"{where(module, call)} {call.func.id}()")
        for node, name in imported_modules(module):
            if name.split(".")[0] in BANNED_MODULES:
                found.append(f"{where(module, node)} import {name}")
        for node in ast.walk(tree(module)):
            if isinstance(node, ast.Attribute) and node.attr in BANNED_ATTRS:
                found.append(f"{where(module, node)} .{node.attr}")
            if isinstance(node, ast.Attribute) and dotted(node) in ("marshal.loads", "pickle.loads", "yaml.load"):
                found.append(f"{where(module, node)} {dotted(node)}")
    assert found == []


def _in_add_sites(module: str, node: ast.AST) -> bool:
    add_sites = _functions(module).get("add_sites")
    return add_sites is not None and any(n is node for n in ast.walk(add_sites))


def test_sys_path_is_never_changed() -> None:
    """An image's or a target interpreter's site-packages must never become importable here.

    A child's ``add_sites`` puts the examined site directories back on its own path: in the child.
    """
    found = []
    for module in MODULES:
        for node in ast.walk(tree(module)):
            if module in CHILDREN and _in_add_sites(module, node):
                continue
            method = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if (
                method
                and isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and qualified(module, node.func.value) in ("sys.path", "sys.meta_path", "sys.path_hooks")
            ):
                found.append(f"{where(module, node)} sys.path.{node.func.attr}()")
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    base = target.value if isinstance(target, ast.Subscript) else target
                    if qualified(module, base) in ("sys.path", "sys.meta_path", "sys.path_hooks"):
                        found.append(f"{where(module, node)} assigns sys.path")
    assert found == []


NVML_CALLS = os.path.join("probes", "nvml_calls.py")
NVML_BINDING = os.path.join("probes", "nvml.py")  # its own library, libnvidia-ml.so.1


def test_native_libraries_are_loaded_by_fixed_name_in_the_nvml_modules_only() -> None:
    """dlopen runs a library's constructors: never one named by a path from an image or the environment."""
    found = []
    loaders = (
        "ctypes.CDLL",
        "ctypes.cdll.LoadLibrary",
        "ctypes.PyDLL",
        "ctypes.LibraryLoader",
        "ctypes.util.find_library",
    )
    for module in MODULES:
        for call, name in calls(module):
            if name and (name in loaders or name.startswith("ctypes.cdll.") or name.endswith(".LoadLibrary")):
                constant = call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
                native = module in (NVML_CALLS, NVML_BINDING, DRIVER_CHILD)
                if not native or not constant or name.endswith("find_library"):
                    found.append(f"{where(module, call)} {name}")
    assert found == []
    from cudadoctor.probes.collect import root_context
    from cudadoctor.probes.native import NullNative
    from cudadoctor.runner import NullRunner

    ctx = root_context(PKG, {})
    assert isinstance(ctx.native, NullNative) and isinstance(ctx.runner, NullRunner)


@pytest.mark.parametrize("module", MODULES)
def test_every_module_parses(module: str) -> None:
    assert isinstance(tree(module), ast.Module)
