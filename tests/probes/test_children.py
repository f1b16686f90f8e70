"""The child programs of ``check --deep`` (cudadoctor/probes/children/), read as syntax trees and run by path.

Each child runs in the target interpreter by file path, without cudadoctor on its path, so it cannot
share code with its siblings: the result protocol is repeated in each, and these tests keep the
copies identical and in step with the parent's parsers.
"""

from __future__ import annotations

import ast
import os
import sys

import pytest

from cudadoctor.probes import runtime
from cudadoctor.probes.runtime import (
    DRIVER_CHILD,
    FRAMEWORK_CHILD,
    FRAMEWORKS,
    MARKER,
    NCCL_CHILD,
    STAGE_MARKER,
    nccl_argv,
    parse_worker_output,
)
from cudadoctor.runner import SubprocessRunner

CHILDREN = (DRIVER_CHILD, FRAMEWORK_CHILD, NCCL_CHILD)
#: The protocol every child carries, and the children that also put the examined site directories back.
PROTOCOL = ("stage", "mapped", "emit", "one_line")
SITES = ("add_sites", "load")


def _tree(path: str) -> ast.Module:
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read(), filename=path)


def _defs(path: str) -> dict[str, str]:
    """Top-level functions and assignments of a child, each dumped without line numbers."""
    found = {}
    for node in _tree(path).body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = ast.dump(node)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = ast.dump(node.value)
    return found


def test_the_children_live_beside_the_parent():
    here = os.path.join(os.path.dirname(os.path.abspath(runtime.__file__)), "children")
    assert all(os.path.dirname(c) == here and os.path.isfile(c) for c in CHILDREN)


@pytest.mark.parametrize("name", PROTOCOL)
def test_every_child_carries_the_same_protocol(name):
    copies = {os.path.basename(c): _defs(c)[name] for c in CHILDREN}
    assert len(set(copies.values())) == 1, copies


@pytest.mark.parametrize("name", SITES)
def test_the_framework_and_nccl_children_add_sites_and_load_alike(name):
    assert _defs(FRAMEWORK_CHILD)[name] == _defs(NCCL_CHILD)[name]


@pytest.mark.parametrize("child", CHILDREN, ids=os.path.basename)
def test_the_markers_are_the_parents(child):
    defs = _defs(child)
    assert defs["MARKER"] == ast.dump(ast.Constant(MARKER))
    assert defs["STAGE"] == ast.dump(ast.Constant(STAGE_MARKER))


def test_the_framework_child_runs_every_framework_the_parent_tries():
    run = next(
        n.value
        for n in _tree(FRAMEWORK_CHILD).body
        if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == "RUN"
    )
    assert isinstance(run, ast.Dict)
    assert [k.value for k in run.keys if isinstance(k, ast.Constant)] == list(FRAMEWORKS)


def test_the_nccl_child_runs_here_with_a_broken_torch(tmp_path):
    """Run by path under -I (no cudadoctor on its path): it reports the failed import, not a crash."""
    site = tmp_path / "site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("raise ImportError('libtorch_cuda.so: fake')\n")
    argv = nccl_argv(sys.executable, 0, 2, "29555", 5.0, str(site))
    result = SubprocessRunner().run(argv, timeout=60)
    assert result.returncode == 0, result.stderr
    parsed = parse_worker_output(result.stdout)
    assert parsed is not None, result.stdout + result.stderr
    assert (parsed["rank"], parsed["world"], parsed["ok"]) == (0, 2, False)
    assert parsed["error"] == "ImportError: libtorch_cuda.so: fake"
