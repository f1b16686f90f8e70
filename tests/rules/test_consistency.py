"""`check` and `suggest` ask the same rules with the same inputs, so they agree about a machine.

Regressions: CD111 accepted forward compatibility (a cuda-compat libcuda the loader picks) while the
planner's driver rule did not, so on such a host `check` said a CUDA 13 torch fits and `suggest` excluded
every CUDA 13 build; and CD404 read only vLLM's Requires-Python while the planner also read its wheel tags.
"""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import (
    DriverInfo,
    DriverReading,
    DriverVersion,
    GpuInfo,
    KernelModule,
    LibcudaFile,
    Source,
    SourceKind,
)
from cudadoctor.rules.driver import forward_compat
from cudadoctor.suggest import Constraints, Gpu, suggest_torch, suggest_vllm
from cudadoctor.testing import run_check

M = CompatMatrix(cache_dir=False)
COMPAT = "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"


def _forward_driver(h200) -> DriverInfo:
    """Kernel driver 535 (CUDA 12.2) with the CUDA 13.0 cuda-compat libcuda picked by the loader."""
    return replace(
        h200.driver,
        version=DriverVersion("535.104.05"),
        cuda_api=Version("12.2"),
        kernel_module=KernelModule(DriverVersion("535.104.05"), "open", "x86_64", Source(SourceKind.FILE, "/proc")),
        readings=(
            DriverReading(Source(SourceKind.API, "cuDriverGetVersion"), cuda_api=Version("13.0"), detail=COMPAT),
        ),
        libcuda_files=(LibcudaFile(COMPAT, DriverVersion("580.95.05"), "compat", on_search_path=True),),
        loaded_libcuda=COMPAT,
    )


def _machine(h200, gpu: str, cc: str, segment: str):
    facts = replace(
        h200,
        driver=_forward_driver(h200),
        gpus=(GpuInfo(0, gpu, cc, Source(SourceKind.ASSUMED, "--assume-gpu")),),
    )
    constraints = Constraints(
        driver=facts.driver.version,
        driver_cuda=Version("13.0"),
        gpus=(Gpu(gpu, cc, "probed", segment),),
        python=Version("3.12"),
        forward_compat=forward_compat(facts.driver),
    )
    return facts, constraints


def _cu13_plans(s):
    return [p for p in s.plans if p.cuda is not None and p.cuda.major == 13]


def test_forward_compatibility_on_a_data_center_gpu_both_accept(h200):
    facts, c = _machine(h200, "NVIDIA H200", "9.0", "datacenter")
    assert c.forward_compat is not None
    assert run_check("CD111", facts).status is Status.OK  # the installed torch 2.11.0+cu130
    plans = _cu13_plans(suggest_torch(M, c, limit=10))
    assert plans, "the planner must count on the cuda-compat libcuda that check counts on"
    assert any("forward compatibility" in w for w in plans[0].why)


def test_forward_compatibility_on_a_geforce_gpu_both_refuse(h200):
    facts, c = _machine(h200, "NVIDIA GeForce RTX 4090", "8.9", "geforce")
    finding = run_check("CD111", facts)
    assert finding.status is Status.FAIL
    assert finding.message.startswith("driver 535.104.05 supports CUDA 12.2 and is too old for")
    assert "not supported on NVIDIA GeForce RTX 4090" in finding.evidence["forward compatibility"]
    s = suggest_torch(M, c, limit=10)
    assert not _cu13_plans(s)
    assert any(e.rule == "driver-floor" and "cu130" in e.candidate for e in s.excluded)


def test_a_host_without_a_compat_libcuda_gets_no_plan_that_counts_on_one(h200):
    facts, c = _machine(h200, "NVIDIA H200", "9.0", "datacenter")
    plain = replace(facts.driver, readings=(), libcuda_files=(), loaded_libcuda=None)
    assert run_check("CD111", replace(facts, driver=plain)).status is Status.FAIL
    assert not _cu13_plans(suggest_torch(M, replace(c, forward_compat=None), limit=10))


def test_cd404_and_the_planner_agree_on_vllm_wheel_tags(h200):
    vllm = replace(h200.packages["torch"], name="vllm", version=Version("0.4.0"), cuda_variant=None, cuda_build=None)
    facts = replace(h200, packages={**h200.packages, "vllm": vllm})
    finding = run_check("CD404", facts)  # Python 3.12; vLLM 0.4.0 has cp38-cp311 wheels only
    assert finding.status is Status.WARN
    assert "vLLM 0.4.0 has wheels for Python 3.8, 3.9, 3.10, 3.11" in finding.message
    s = suggest_vllm(M, Constraints(python=Version("3.12")), "vllm==0.4.0")
    assert not s.plans and [e.rule for e in s.excluded] == ["python"]
