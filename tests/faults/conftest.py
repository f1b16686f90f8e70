"""Fixtures of the fault-injection suite: the H200 machine built once, copied for each fault.

The suite is slow (real file trees, CLI subprocesses): every test in this folder is marked ``slow``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cudadoctor.facts.model import Facts
from tests.conftest import fixture_path
from tests.faults.envs import Fault, collect_live, fresh_tree
from tests.h200_fixture import build_tree, h200_env

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def h200_template(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The H200 machine's files in a real directory; never modified (each fault edits a copy)."""
    root = tmp_path_factory.mktemp("h200-template") / "rootfs"
    root.mkdir()
    build_tree(str(root))
    return str(root)


@pytest.fixture(scope="session")
def h200_image_env() -> dict[str, str]:
    """The H200 container's environment (VIRTUAL_ENV included: the venv is in the image)."""
    return h200_env()


@pytest.fixture(scope="session")
def good_snapshot() -> bytes:
    """The real H200's snapshot (tests/fixtures/h200-device), the start of every broken snapshot."""
    with open(fixture_path("h200-device", "snapshot.json"), "rb") as handle:
        return handle.read()


@pytest.fixture(scope="session")
def fault_tree(h200_template: str, tmp_path_factory: pytest.TempPathFactory):
    """``fault_tree(fault)``: the H200 tree with the fault's edits, made once per session and only read
    after that (cudadoctor never writes to what it examines)."""
    memo: dict[str, str] = {}

    def get(fault: Fault) -> str:
        if fault.id not in memo:
            memo[fault.id] = fresh_tree(h200_template, str(tmp_path_factory.mktemp("fault") / "root"), fault)
        return memo[fault.id]

    return get


@pytest.fixture(scope="session")
def live_facts(fault_tree, h200_image_env: dict[str, str]):  # type: ignore[no-untyped-def]
    """``live_facts(fault)``: (facts, seconds) of the broken machine examined live, collected once per session
    (the in-process suite judges them; the subprocess suite replays them with ``check --from``)."""
    memo: dict[str, tuple[Facts, float]] = {}

    def get(fault: Fault) -> tuple[Facts, float]:
        if fault.id not in memo:
            tree = fault_tree(fault)
            start = time.perf_counter()
            facts = collect_live(tree, fault.env(dict(h200_image_env)), fault)
            memo[fault.id] = (facts, time.perf_counter() - start)
        return memo[fault.id]

    return get
