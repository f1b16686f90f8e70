"""Every plan `suggest` emits fits by the rules `check` asks, and a machine with it installed passes `check`.

Machines are drawn from compat data: a driver from the CUDA release notes' table (or none), GPUs from
compat/gpus.toml, a Python version, a platform, and on data center GPUs sometimes a cuda-compat libcuda
the loader picks (forward compatibility).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from cudadoctor import gpu_models
from cudadoctor.checks.engine import run_checks
from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import (
    DriverInfo,
    DriverReading,
    DriverVersion,
    Facts,
    GpuInfo,
    HostInfo,
    InstalledPackage,
    KernelModule,
    LibcudaFile,
    PythonEnv,
    Source,
    SourceKind,
    TorchBuild,
)
from cudadoctor.fixes.parse import parse
from cudadoctor.fixes.verify import verify
from cudadoctor.planning import PLANNERS
from cudadoctor.rules.driver import ForwardCompat, driver_runs_cuda, driver_supports_gpu
from cudadoctor.rules.gpus import build_runs_on_gpu, vllm_supports_gpu
from cudadoctor.rules.wheels import torch_has_wheels, vllm_has_wheels
from cudadoctor.suggest import (
    Constraints,
    Gpu,
    Plan,
)
from tests.property.strategies import property_settings
from tests.unverifiable import allowed

M = CompatMatrix(cache_dir=False)
MODELS = [m for m in gpu_models.load_models() if m.compute_capability]
DRIVERS = sorted(
    {str(r.min_driver_linux) for r in M.cuda_releases if r.min_driver_linux}
    | {"470.82.01", "535.104.05", "550.54.15", "570.86.10", "575.57.08", "580.95.05", "590.44.01"},
    key=Version,
)
COMPAT = "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"
SAID = Source(SourceKind.ASSUMED, "property test")


@dataclass(frozen=True)
class Machine:
    constraints: Constraints
    host: HostInfo


@st.composite
def machines(draw: st.DrawFn) -> Machine:
    models = draw(st.lists(st.sampled_from(MODELS), min_size=0, max_size=2))  # none: the GPU is unknown
    driver_text = draw(st.sampled_from([None, *DRIVERS]))
    driver = DriverVersion(driver_text) if driver_text else None
    platform = draw(st.sampled_from(["linux-x86_64"] * 4 + ["linux-aarch64", "windows"]))
    forward = None
    data_center = models and all(m.segment in ("datacenter", "embedded") for m in models)
    if data_center and driver is not None and driver.major < 580 and platform != "windows" and draw(st.booleans()):
        forward = ForwardCompat(Version("13.0"), COMPAT)
    python = draw(st.sampled_from([None, "3.9", "3.10", "3.11", "3.11", "3.12", "3.12", "3.13", "3.14"]))
    c = Constraints(
        driver=driver,
        driver_cuda=forward.cuda if forward else M.cuda_for_driver(driver) if driver else None,
        gpus=tuple(Gpu(m.name, m.compute_capability, "--gpu", m.segment) for m in models),
        python=Version(python) if python else None,
        platform=platform,
        forward_compat=forward,
    )
    host = HostInfo(
        os="Windows" if platform == "windows" else "Linux", arch="aarch64" if "aarch64" in platform else "x86_64"
    )
    return Machine(c, host)


def _segments(c: Constraints) -> list[tuple[str, str | None]]:
    return [(g.name, g.segment) for g in c.gpus]


def _fits_driver(c: Constraints, cuda: Version) -> None:
    verdict = driver_runs_cuda(
        M, cuda.major, c.driver, windows=c.platform == "windows", forward=c.forward_compat, gpus=_segments(c)
    )
    assert not verdict.is_problem, verdict
    for gpu in c.gpus:
        windows = c.platform == "windows"  # the planner asks the rule for this platform, as CD114 does for its host
        assert not driver_supports_gpu(M, c.driver, gpu.compute_capability, gpu.name, windows=windows).is_problem


def _torch_of(plan: Plan) -> tuple[Version, str, Version]:
    """(torch version, variant tag, CUDA) that a torch or vLLM plan installs."""
    if plan.target == "torch":
        assert plan.cuda is not None
        return Version(plan.packages[0][1]), f"cu{plan.cuda.major}{plan.cuda.minor}", plan.cuda
    release = next(r for r in M.vllm_releases if str(r.version) == plan.packages[0][1])
    assert release.torch is not None
    torch = max(
        (t for t in M.torch_releases if release.torch.contains(t.version, prereleases=True)), key=lambda t: t.version
    )
    if plan.variant.startswith("cu") and plan.cuda is not None:
        # vLLM's build published outside PyPI (vllm 0.31.0+cu129): its command takes torch from that CUDA's index
        return torch.version, plan.variant, plan.cuda
    assert torch.pypi_default_cuda is not None
    cuda = torch.pypi_default_cuda
    return torch.version, f"cu{cuda.major}{cuda.minor}", cuda


def _assert_rules_accept(c: Constraints, plan: Plan) -> None:
    assert plan.cuda is not None
    _fits_driver(c, plan.cuda)
    if plan.target not in ("torch", "vllm"):
        return
    version, variant, cuda = _torch_of(plan)
    _fits_driver(c, cuda)
    archs = M.torch_arch_list(version, variant, aarch64=c.platform == "linux-aarch64")  # the platform's own wheels
    for gpu in c.gpus:
        assert not build_runs_on_gpu(M, archs, cuda, gpu.compute_capability, gpu.name).is_problem
    torch = M.torch_release(version)
    assert torch is not None
    if c.python is not None:
        assert not torch_has_wheels(torch, c.python, c.platform).is_problem
    if plan.target == "vllm":
        release = next(r for r in M.vllm_releases if str(r.version) == plan.packages[0][1])
        if c.python is not None:
            assert not vllm_has_wheels(release, c.python).is_problem
        for gpu in c.gpus:
            assert not vllm_supports_gpu(release.min_compute_capability, gpu.compute_capability, gpu.name).is_problem


def _package(name: str, version: Version, cuda: Version | None, variant: str | None) -> InstalledPackage:
    build = f"{cuda.major}.{cuda.minor}" if cuda else None
    torch_build = TorchBuild(version, build, None, False, None, SAID) if name == "torch" else None
    return InstalledPackage(
        name, version, "/site-packages", SAID, cuda_variant=variant, cuda_build=build, torch_build=torch_build
    )


def _installed(plan: Plan) -> dict[str, InstalledPackage]:
    version, variant, cuda = _torch_of(plan)
    other_build = plan.target == "vllm" and plan.variant.startswith("cu")  # vLLM's wheel published outside PyPI
    local = (
        Version(f"{version.public}+{variant}")
        if (plan.target == "torch" or other_build) and plan.index_url
        else version
    )
    packages = {"torch": _package("torch", local, cuda, variant)}
    if plan.target == "vllm":
        release = next(r for r in M.vllm_releases if str(r.version) == plan.packages[0][1])
        if other_build:  # the wheel's own version carries its build: vllm-0.31.0+cu129-….whl
            packages["vllm"] = _package("vllm", Version(f"{release.version}+{variant}"), plan.cuda, variant)
        else:
            packages["vllm"] = _package("vllm", release.version, release.cuda, None)
    return packages


def _driver_facts(c: Constraints) -> DriverInfo | None:
    if c.driver is None:
        return None
    own = M.cuda_for_driver(c.driver, windows=c.platform == "windows")
    if c.forward_compat is None:
        return DriverInfo(c.driver, own, readings=(DriverReading(SAID, c.driver),))
    compat = DriverVersion("580.95.05")
    return DriverInfo(
        c.driver,
        own,
        kernel_module=KernelModule(c.driver, "open", "x86_64", SAID),
        readings=(DriverReading(Source(SourceKind.API, "cuDriverGetVersion"), cuda_api=c.forward_compat.cuda),),
        libcuda_files=(LibcudaFile(COMPAT, compat, "compat", on_search_path=True),),
        loaded_libcuda=COMPAT,
    )


def _facts(m: Machine, plan: Plan) -> Facts:
    c = m.constraints
    python = PythonEnv("/usr/bin/python3", c.python, None, "venv", (), SAID) if c.python else None
    gpus = tuple(GpuInfo(i, g.name, g.compute_capability, SAID) for i, g in enumerate(c.gpus))
    return Facts(host=m.host, driver=_driver_facts(c), gpus=gpus, python=python, packages=_installed(plan))


#: torch and vLLM plans are also installed and checked, so they are drawn more often
TARGETS = ["torch", "torch", "torch", "vllm", "vllm", "vllm", *PLANNERS]


@property_settings(250)
@given(machines(), st.sampled_from(TARGETS))
def test_every_plan_fits_by_the_rules_and_passes_check(machine: Machine, target: str) -> None:
    suggestion = PLANNERS[target](M, machine.constraints, limit=3)
    for plan in suggestion.plans:
        _assert_rules_accept(machine.constraints, plan)
        if plan.target in ("torch", "vllm"):
            findings = run_checks(_facts(machine, plan), M)
            failing = [(f.code, f.message) for f in findings if f.status in (Status.FAIL, Status.ERROR)]
            assert not failing, (plan.packages, plan.variant, failing)
        _assert_commands_verify(machine.constraints, plan)


def _assert_commands_verify(c: Constraints, plan: Plan) -> None:
    """Every command of the plan names a release, build, index and Python compat data has (issue #28); what the
    data cannot verify is allowed only as tests/unverifiable.py says."""
    installed = {"torch": c.installed_torch} if c.installed_torch is not None else {}
    for line in plan.commands:
        command = parse(line)
        assert command is not None, line
        found = verify(command, M, installed, python=c.python, platform=c.platform)
        assert found.problems == (), (line, found.problems)
        assert [u for u in found.unverified if allowed(u) is None] == [], (line, found.unverified)
