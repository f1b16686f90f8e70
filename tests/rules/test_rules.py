"""The rules layer: each rule's three answers (ok, problem, could not judge) from compat data."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverVersion
from cudadoctor.rules.archs import build_covers_gpu
from cudadoctor.rules.driver import (
    ForwardCompat,
    driver_runs_cuda,
    driver_supports_gpu,
    forward_compat_on_gpu,
    forward_compat_on_gpus,
)
from cudadoctor.rules.gpus import build_runs_on_gpu, cuda_knows_arch, cuda_major_supports_arch, vllm_supports_gpu
from cudadoctor.rules.verdict import Outcome
from cudadoctor.rules.wheels import (
    python_has_wheels,
    tensorflow_has_wheels,
    torch_has_wheels,
    vllm_has_wheels,
    wheel_platform,
)

M = CompatMatrix(cache_dir=False)
COMPAT = ForwardCompat(Version("13.0"), "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05")


def test_driver_floor_minor_version_compatibility():
    ok = driver_runs_cuda(M, 12, DriverVersion("535.104.05"))
    assert ok.is_ok and ok.basis == "minor-version compatibility" and str(ok.detail) == "525.60.13"
    bad = driver_runs_cuda(M, 13, DriverVersion("535.104.05"))
    assert bad.is_problem and bad.rule == "driver-floor"
    assert (bad.observed, bad.required) == ("driver 535.104.05", "driver >= 580.65.06 (any CUDA 13.x build)")
    assert str(driver_runs_cuda(M, 13, DriverVersion("575.57.08"), windows=True).detail) == "580.88"


def test_driver_floor_could_not_judge_says_what_is_missing():
    assert driver_runs_cuda(M, 13, None).missing == "the driver version"
    no_floor = driver_runs_cuda(M, 14, DriverVersion("610.43.02"))
    assert no_floor.outcome is Outcome.UNKNOWN and "CUDA 14.x driver floor" in no_floor.missing
    before_data = driver_runs_cuda(M, 6, DriverVersion("340.29"), cuda_minor=5)
    assert before_data.outcome is Outcome.UNKNOWN and "CUDA 6.5 driver floor" in before_data.missing


def test_forward_compatibility_counts_only_with_a_compat_libcuda_and_a_gpu_that_supports_it():
    old = DriverVersion("535.104.05")
    via = driver_runs_cuda(M, 13, old, forward=COMPAT, gpus=[("NVIDIA H100", "datacenter")])
    assert via.is_ok and via.basis == f"forward compatibility through {COMPAT.library}"
    assert driver_runs_cuda(M, 13, old, forward=COMPAT, gpus=[("RTX 4090", "geforce")]).is_problem
    assert driver_runs_cuda(M, 13, old, gpus=[("NVIDIA H100", "datacenter")]).is_problem  # no compat package
    newer = ForwardCompat(Version("12.8"), COMPAT.library)
    assert driver_runs_cuda(M, 13, old, forward=newer, gpus=[("H100", "datacenter")]).is_problem  # 12.x only
    # The driver's own floor is the answer where it suffices.
    assert driver_runs_cuda(M, 12, old, forward=COMPAT).basis == "minor-version compatibility"


@pytest.mark.parametrize(
    ("segment", "outcome"),
    [("datacenter", Outcome.OK), ("embedded", Outcome.OK), ("geforce", Outcome.PROBLEM),
     ("workstation", Outcome.UNKNOWN), (None, Outcome.UNKNOWN)],
)  # fmt: skip
def test_forward_compatibility_by_gpu_segment(segment, outcome):
    assert forward_compat_on_gpu("GPU", segment).outcome is outcome


def test_forward_compatibility_on_several_gpus_the_problem_wins():
    assert forward_compat_on_gpus([("H100", "datacenter"), ("RTX 4090", "geforce")]).is_problem
    assert forward_compat_on_gpus([]).is_unknown


def test_driver_branch_for_a_gpu():
    bad = driver_supports_gpu(M, DriverVersion("560.35.03"), "12.0", "RTX 5090")
    assert bad.is_problem and bad.required == "driver branch R570 or newer" and bad.detail.name == "Blackwell"
    assert driver_supports_gpu(M, DriverVersion("570.86.10"), "12.0", "RTX 5090").is_ok
    assert driver_supports_gpu(M, DriverVersion("470.82.01"), "9.0", "H100").is_unknown  # no branch in data
    assert driver_supports_gpu(M, DriverVersion("570.86.10"), "99.0", "future").is_unknown


def test_cuda_major_and_arch():
    assert cuda_major_supports_arch(M, 13, "6.1", "GTX 1080 Ti").is_problem
    assert cuda_major_supports_arch(M, 12, "6.1", "GTX 1080 Ti").is_ok
    assert cuda_major_supports_arch(M, 13, None, "unknown GPU").is_unknown
    late = cuda_knows_arch(M, Version("12.6"), "12.0", "RTX 5090")
    assert late.is_problem and late.required == "a build for CUDA 12.8 or newer"
    assert cuda_knows_arch(M, Version("12.8"), "12.0", "RTX 5090").is_ok


def test_arch_list_coverage():
    assert build_covers_gpu(("sm_80", "sm_90"), "8.6", M.gpu_archs).detail == "sm_80"
    assert build_covers_gpu(("sm_80", "sm_90"), "7.5", M.gpu_archs, "T4").is_problem
    assert build_covers_gpu(None, "9.0", M.gpu_archs).is_unknown
    # Without an arch list, what CUDA dropped or predates still decides; the rest cannot be judged.
    assert build_runs_on_gpu(M, None, Version("13.0"), "7.0", "V100").rule == "cuda-dropped-arch"
    assert build_runs_on_gpu(M, None, Version("12.4"), "9.0", "H100").is_unknown


def test_vllm_floor():
    assert vllm_supports_gpu("7.0", "6.1", "GTX 1080 Ti").is_problem
    assert vllm_supports_gpu("7.0", "9.0a", "H100").is_ok
    assert vllm_supports_gpu(None, "9.0", "H100").is_unknown
    assert vllm_supports_gpu("7.0", None, "GPU").is_unknown


def test_python_wheels():
    py312 = Version("3.12")
    assert python_has_wheels(py312, pythons=("3.10", "3.11")).detail == "tags"
    assert python_has_wheels(py312, requires_python=SpecifierSet(">=3.13")).detail == "requires-python"
    assert python_has_wheels(py312, pythons=("3.8",), abi3=True).is_ok
    assert python_has_wheels(py312).is_unknown
    torch = M.torch_release(Version("2.11.0"))
    assert torch_has_wheels(torch, py312, "linux-x86_64").is_ok
    assert torch_has_wheels(torch, Version("3.8"), "linux-x86_64").is_problem
    # per platform: torch 2.5.1 had cp313 wheels for manylinux x86_64 only (PyPI file names)
    torch251 = M.torch_release(Version("2.5.1"))
    assert torch_has_wheels(torch251, Version("3.13"), "linux-x86_64").is_ok
    assert torch_has_wheels(torch251, Version("3.13"), "windows").is_problem
    # no Windows wheel on PyPI is not "no wheels" (the project's index had them); Requires-Python still rules
    torch160 = M.torch_release(Version("1.6.0"))
    assert torch_has_wheels(torch160, Version("3.8"), "windows").is_unknown
    assert torch_has_wheels(torch160, Version("3.5"), "windows").detail == "requires-python"
    tf = next(r for r in M.tensorflow_releases if r.version == Version("2.18.0"))
    assert tensorflow_has_wheels(tf, Version("3.13"), "windows").is_problem
    assert tensorflow_has_wheels(tf, py312, "linux-aarch64").is_ok
    vllm = next(r for r in M.vllm_releases if r.version == Version("0.4.0"))
    assert vllm_has_wheels(vllm, py312).is_problem  # cp38-cp311 wheels, though Requires-Python allows 3.12
    assert wheel_platform("Windows", "AMD64") == "windows"
    assert wheel_platform("Linux", "aarch64") == "linux-aarch64"


def test_jaxlib_cudnn_build_from_the_local_tag():
    from cudadoctor.rules.jax import cudnn_meets_jaxlib_build, jaxlib_cudnn_build

    assert jaxlib_cudnn_build(Version("0.4.14+cuda11.cudnn86")) == Version("8.6")
    assert jaxlib_cudnn_build(Version("0.3.25+cuda11.cudnn805")) == Version("8.0.5")
    assert jaxlib_cudnn_build(Version("0.4.28+cuda12.cudnn89")) == Version("8.9")
    assert jaxlib_cudnn_build(Version("0.1.65+cuda112")) is None
    assert jaxlib_cudnn_build(Version("0.4.30")) is None
    assert cudnn_meets_jaxlib_build(Version("8.6"), Version("8.5.0")).is_problem
    assert cudnn_meets_jaxlib_build(Version("8.6"), Version("8.9.7")).is_ok
    assert cudnn_meets_jaxlib_build(Version("8.6"), Version("9.1.0")).is_problem  # another major
