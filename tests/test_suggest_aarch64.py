"""Issue #12: Grace Hopper / Grace Blackwell (Linux aarch64) get plans from PyTorch's aarch64 CUDA wheels.

PyPI's aarch64 torch is a CPU build up to 2.10 (compat/torch.toml ``pypi_aarch64_cpu``); the CUDA builds
for aarch64 are on download.pytorch.org (``variants_aarch64``) with their own GPU targets.
"""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.suggest import Constraints, suggest_torch
from tests.machines import described

M = CompatMatrix()


def _arm(driver: str, gpu: tuple[str, str]) -> Constraints:
    return described(driver, gpu, platform="linux-aarch64")


def test_gh200_on_driver_570_plans_an_aarch64_cu128_wheel():
    s = suggest_torch(M, _arm("570.133.20", ("GH200", "9.0")))
    assert s.plans, s.advice
    assert all(p.cuda <= Version("12.8") and p.index_url for p in s.plans)  # driver 570: CUDA 12.8 at most
    every = suggest_torch(M, _arm("570.133.20", ("GH200", "9.0")), limit=50).plans
    cu128 = [p for p in every if p.variant == "cu128"]
    assert cu128 and all(p.index_url == "https://download.pytorch.org/whl/cu128" for p in cu128)
    assert "--index-url https://download.pytorch.org/whl/cu128" in cu128[0].commands[0]
    assert any("GPU targets" in w and "sm_90" in w for w in cu128[0].why)
    assert {p.packages[0][1] for p in cu128} >= {"2.7.0", "2.7.1", "2.9.1", "2.10.0", "2.11.0"}
    # CUDA 13 builds need a newer driver than 570
    assert any(e.rule.startswith("driver") and "cu130" in e.candidate for e in s.excluded) or any(
        e.rule.startswith("driver") and "PyPI" in e.candidate for e in s.excluded
    )


def test_gb200_on_driver_570_never_gets_the_aarch64_cu126_build():
    # The aarch64 cu126 build targets sm_80 and sm_90 only (RELEASE.md, pytorch/pytorch#182849).
    s = suggest_torch(M, _arm("570.133.20", ("GB200", "10.0")))
    assert s.plans, s.advice
    assert {p.variant for p in s.plans} == {"cu128"}
    assert any(e.rule == "gpu-arch-list" and "cu126" in e.candidate for e in s.excluded)


def test_a_release_whose_pypi_aarch64_wheel_is_a_cpu_build_says_so():
    s = suggest_torch(M, _arm("570.133.20", ("GH200", "9.0")))
    cpu = [e for e in s.excluded if e.candidate == "torch 2.8.0"]
    assert cpu and cpu[0].observed == "PyPI's aarch64 wheel is a CPU build"
