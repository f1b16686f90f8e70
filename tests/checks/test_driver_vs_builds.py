"""CD111 and CD112: the driver and GPUs against the CUDA the installed frameworks were built for."""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverInfo, DriverReading, DriverVersion, GpuInfo, KernelModule, Source, SourceKind
from cudadoctor.rules.driver import effective_cuda
from cudadoctor.testing import run_check

ASSUMED = Source(SourceKind.ASSUMED, "--assume-driver")


def _driver(version: str, cuda: str | None = None) -> DriverInfo:
    return DriverInfo(
        DriverVersion(version),
        Version(cuda) if cuda else None,
        readings=(DriverReading(ASSUMED, DriverVersion(version)),),
    )


def _torch(facts, variant: str, build: str):
    """The H200's packages with torch (and torchvision/torchaudio) rebuilt for another CUDA, and
    without its other CUDA 13 frameworks (CuPy, the JAX CUDA plugin)."""
    kept = {n: p for n, p in facts.packages.items() if not n.startswith(("cupy", "jax-cuda"))}
    for name in ("torch", "torchvision", "torchaudio"):
        kept[name] = replace(facts.packages[name], cuda_variant=variant, cuda_build=build)
    return kept


def test_cd111_healthy_h200(h200):
    assert run_check("CD111", h200).status is Status.OK


def test_cd111_cuda13_torch_on_a_cuda12_driver(h200):
    facts = replace(h200, driver=_driver("550.54.15"))
    finding = run_check("CD111", facts)
    assert finding.status is Status.FAIL
    assert finding.message.startswith("driver 550.54.15 supports CUDA 12.4 and is too old for cupy-cuda13x 14.2.0")
    assert "torch 2.11.0+cu130" in finding.message
    assert "these need driver 580.65.06 or newer" in finding.message
    assert "CUDA 13.x" in finding.evidence


def test_cd111_minor_version_compatibility_is_not_a_problem(h200):
    # torch built for CUDA 12.6 on a driver whose own CUDA is 12.2: minor-version compatibility applies.
    facts = replace(h200, driver=_driver("535.104.05", "12.2"), packages=_torch(h200, "cu126", "12.6"))
    assert run_check("CD111", facts).status is Status.OK


def test_cd111_below_the_cuda12_floor(h200):
    facts = replace(h200, driver=_driver("470.82.01", "11.4"), packages=_torch(h200, "cu124", "12.4"))
    finding = run_check("CD111", facts)
    assert finding.status is Status.FAIL
    assert "these need driver 525.60.13 or newer" in finding.message


def test_cd111_forward_compatibility_counts(h200):
    compat = "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"
    driver = replace(
        h200.driver,
        version=DriverVersion("535.104.05"),
        cuda_api=Version("12.2"),
        kernel_module=KernelModule(DriverVersion("535.104.05"), "open", "x86_64", Source(SourceKind.FILE, "/proc")),
        readings=(
            DriverReading(Source(SourceKind.API, "cuDriverGetVersion"), cuda_api=Version("13.0"), detail=compat),
        ),
        loaded_libcuda=compat,
    )
    facts = replace(h200, driver=driver)
    assert effective_cuda(driver, CompatMatrix()) == (Version("13.0"), f"forward compatibility through {compat}")
    assert run_check("CD111", facts).status is Status.OK


def test_cd111_windows_floor(h200):
    host = replace(h200.host, os="Windows")
    facts = replace(h200, host=host, driver=_driver("527.41", "12.0"), packages=_torch(h200, "cu126", "12.6"))
    assert run_check("CD111", facts).status is Status.OK


def test_effective_cuda_of_an_assumed_driver_comes_from_the_table():
    assert effective_cuda(_driver("550.54.15"), CompatMatrix()) == (
        Version("12.4"),
        "the CUDA release notes' driver table",
    )


def _gpu(name: str, cc: str) -> tuple[GpuInfo, ...]:
    return (GpuInfo(0, name, cc, Source(SourceKind.ASSUMED, "--assume-gpu")),)


def test_cd112_pascal_with_a_cuda13_torch(h200):
    facts = replace(h200, gpus=_gpu("NVIDIA GeForce GTX 1080 Ti", "6.1"))
    finding = run_check("CD112", facts)
    assert finding.status is Status.FAIL
    assert "torch 2.11.0+cu130" in finding.message
    assert "CUDA 13, which dropped compute capability 6.1 (Pascal)" in finding.message


def test_cd112_names_the_build_that_runs_on_every_gpu_kepler_beside_pascal(h200):
    """Kepler's last CUDA is 11, Pascal's 12: the fix names 11, whichever GPU comes last."""
    gpus = (*_gpu("NVIDIA Tesla K80", "3.7"), replace(_gpu("NVIDIA GeForce GTX 1080 Ti", "6.1")[0], index=1))
    finding = run_check("CD112", replace(h200, gpus=gpus))  # torch 2.11.0+cu130: both dropped
    assert finding.status is Status.FAIL and finding.remediation is not None
    assert "Install builds for CUDA 11.x or older (e.g. torch from a cu11x index)" in finding.remediation.text


def test_cd112_pascal_with_a_cu126_torch_is_fine(h200):
    facts = replace(h200, gpus=_gpu("NVIDIA GeForce GTX 1080 Ti", "6.1"), packages=_torch(h200, "cu126", "12.6"))
    assert run_check("CD112", facts).status is Status.OK
    # ... but CuPy for CUDA 13 beside it is not.
    packages = {**facts.packages, "cupy-cuda13x": h200.packages["cupy-cuda13x"]}
    finding = run_check("CD112", replace(facts, packages=packages))
    assert finding.status is Status.FAIL
    assert "torch" not in finding.message and "cupy-cuda13x 14.2.0" in finding.message


def test_cd112_hopper_is_fine(h200):
    assert run_check("CD112", h200).status is Status.OK


def test_cd113_h200_is_covered(h200):
    assert run_check("CD113", h200).status is Status.OK


def test_cd113_pascal_with_torch_cu130(h200):
    finding = run_check("CD113", replace(h200, gpus=_gpu("NVIDIA GeForce GTX 1080 Ti", "6.1")))
    assert finding.status is Status.FAIL
    assert "torch 2.11.0+cu130 (cu130) has no GPU code for GPU 0 NVIDIA GeForce GTX 1080 Ti" in finding.message
    assert "no kernel image is available" in finding.message


def test_cd113_ada_runs_ampere_cubins(h200):
    assert run_check("CD113", replace(h200, gpus=_gpu("NVIDIA GeForce RTX 4090", "8.9"))).status is Status.OK


def test_cd113_could_not_judge_without_an_arch_list(h200):
    facts = replace(h200, packages=_torch(h200, "cu118", "11.8"))
    finding = run_check("CD113", facts)
    assert finding.status is Status.UNKNOWN and "no arch list" in finding.reason


def test_cd114_b200_needs_r570(h200):
    facts = replace(h200, driver=_driver("550.54.15"), gpus=_gpu("NVIDIA B200", "10.0"))
    finding = run_check("CD114", facts)
    assert finding.status is Status.FAIL
    assert finding.message.startswith(
        "driver 550.54.15 is older than the R570 branch that GPU 0 NVIDIA B200 (Blackwell"
    )
    assert run_check("CD114", replace(facts, driver=_driver("570.86.15"))).status is Status.OK


def test_cd114_could_not_judge_without_data(h200):
    # No sourced minimum for Hopper, and R470 is older than every newer architecture's minimum: unknown, not OK.
    finding = run_check("CD114", replace(h200, driver=_driver("470.82.01")))
    assert finding.status is Status.UNKNOWN and "Hopper" in finding.reason
