"""Shared test helpers: a fake command runner, fake native calls, and a probe context builder.

File-reading probes run under pyfakefs's ``fs`` fixture over fixtures copied from real captured
machines (``tests/fixtures/``); command-running probes get a :class:`FakeRunner` (subprocesses
cannot run under pyfakefs). ``fixture_text`` reads fixtures from the real disk *before* the fake
file system is switched on, or through ``fs.add_real_file``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from cudadoctor.probes.context import ProbeContext
from cudadoctor.probes.native import LibcudaResult, NvmlResult
from cudadoctor.rootfs import RootFS
from cudadoctor.runner import CommandResult

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def _import_every_probe_module() -> None:
    """Import the probe modules now, outside any pyfakefs session: a module first imported inside one keeps
    that session's fake ``os``/``posixpath`` after it ends, and a later test then fails in unrelated ways."""
    from cudadoctor.probes import collect, runtime  # noqa: F401 - imported for the side effect described
    from cudadoctor.probes.registry import probe_function, probed

    for spec in probed().values():
        probe_function(spec)
    # The loader probe reads compat/runtime_libraries.toml once per process: read it now, from the real disk.
    from cudadoctor.probes.libraries import bundled_cudnn_rows
    from cudadoctor.probes.linkage import framework_preload_rows, runtime_load_rows

    runtime_load_rows()
    framework_preload_rows()  # its preload rows, likewise
    bundled_cudnn_rows()  # compat/torch.toml's bundled_cudnn, likewise
    from cudadoctor.probes.compile import triton_rows

    triton_rows()  # compat/triton.toml's releases, likewise


_import_every_probe_module()


def fixture_path(*parts: str) -> str:
    return os.path.join(FIXTURES, *parts)


def fixture_text(*parts: str) -> str:
    with open(fixture_path(*parts), encoding="utf-8") as handle:
        return handle.read()


@dataclass
class FakeRunner:
    """Maps argv tuples to canned results and records every call."""

    outputs: dict[tuple[str, ...], CommandResult] = field(default_factory=dict)
    calls: list[tuple[str, ...]] = field(default_factory=list)
    timeouts: list[float] = field(default_factory=list)

    def add(
        self, argv: Sequence[str], stdout: str = "", returncode: int = 0, stderr: str = "", error: str | None = None
    ) -> None:
        key = tuple(argv)
        self.outputs[key] = CommandResult(key, None if error else returncode, stdout, stderr, error)

    def run(self, argv: Sequence[str], *, timeout: float = 10.0, env: Mapping[str, str] | None = None) -> CommandResult:
        key = tuple(argv)
        self.calls.append(key)
        self.timeouts.append(timeout)
        if key in self.outputs:
            return self.outputs[key]
        return CommandResult(key, None, error="not found")


@dataclass
class FakeNative:
    nvml_result: NvmlResult = field(default_factory=lambda: NvmlResult(error="NVML Shared Library Not Found"))
    libcuda_result: LibcudaResult = field(
        default_factory=lambda: LibcudaResult(error="libcuda.so.1: cannot open shared object file")
    )

    def nvml(self) -> NvmlResult:
        return self.nvml_result

    def libcuda_version(self) -> LibcudaResult:
        return self.libcuda_result


def make_ctx(
    *,
    root: str = "/",
    env: Mapping[str, str] | None = None,
    runner: FakeRunner | None = None,
    native: FakeNative | None = None,
    python: str | None = None,
    machine: str = "x86_64",
    system: str = "Linux",
) -> ProbeContext:
    """A probe context over a (usually fake) file system with fake commands and native calls."""
    return ProbeContext(
        fs=RootFS(root),
        env=dict(env or {}),
        runner=runner or FakeRunner(),
        native=native or FakeNative(),
        python=python,
        machine=machine,
        system=system,
    )


@pytest.fixture
def runner() -> FakeRunner:
    return FakeRunner()


@pytest.fixture(autouse=True)
def _no_user_cache(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never read the user's `cudadoctor update` cache: results depend on shipped data only."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rendering tests must not depend on the caller's colour settings or terminal width."""
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "TERM"):
        monkeypatch.delenv(name, raising=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/* from the current output")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))
