"""Issue #17 Deliver 3: torch 2.14/2.15 builds, from the wheels themselves and PyTorch's 2.14 build matrix.

The GPU targets of the PyPI wheels of 2.12 to 2.15 were read from torch/lib/libtorch_cuda.so's .nv_fatbin
(compat/torch.toml source ``pypi-wheel-fatbin``, compat/tools/fatbin_archs.py); the 2.14 variants from
RELEASE.md's 2.14 row and the 2.14.0 candidate matrix (test-infra#8497).
"""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.suggest import Constraints, Plan, suggest_torch
from tests.machines import described

M = CompatMatrix()
MEASURED_X86 = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")


def _machine(driver: str, gpu: tuple[str, str], platform: str = "linux-x86_64") -> Constraints:
    return described(driver, gpu, platform=platform)


def _pypi_plan(constraints: Constraints, requirement: str) -> Plan:
    plans = suggest_torch(M, constraints, requirement).plans
    pypi = [p for p in plans if p.index_url is None]
    assert pypi, plans
    return pypi[0]


def test_torch_2_15_on_an_rtx_5090_has_a_verified_arch_list():
    # driver 595.71.05 is CUDA 13.2's (the runfile name in pytorch/pytorch#196351)
    plan = _pypi_plan(_machine("595.71.05", ("RTX 5090", "12.0")), "torch==2.15.0")
    assert plan.cuda == Version("13.2")
    assert any("GPU targets (sm_75 sm_80 sm_86 sm_90 sm_100 sm_120) cover RTX 5090" in w for w in plan.why)
    assert not [c for c in plan.caveats if c.startswith("inferred") or "not in compat data" in c]


def test_torch_2_15_on_an_h200_with_driver_580_no_longer_says_the_list_is_missing():
    plan = _pypi_plan(_machine("580.95.05", ("H200", "9.0")), "torch==2.15.0")
    assert any("GPU targets" in w and "sm_90" in w for w in plan.why)
    assert not [c for c in plan.caveats if "architecture list" in c]


def test_torch_2_15_on_a_gh200_reads_the_aarch64_wheels_list():
    plan = _pypi_plan(_machine("595.71.05", ("GH200", "9.0"), "linux-aarch64"), "torch==2.15.0")
    assert any("GPU targets (sm_80 sm_90 sm_100 sm_110 sm_120) cover GH200" in w for w in plan.why)


def test_a_gpu_without_sass_in_the_2_15_wheel_is_not_planned_from_it():
    # Volta (7.0): the CUDA 13 wheels carry no sm_70 and no PTX to JIT from
    s = suggest_torch(M, _machine("595.71.05", ("Tesla V100-SXM2-16GB", "7.0")), "torch==2.15.0")
    assert not [p for p in s.plans if p.index_url is None]
    assert any(e.rule == "gpu-arch-list" for e in s.excluded)


def test_the_cuda_13_wheels_of_2_12_to_2_14_carry_no_ptx_as_measured():
    for version in ("2.12.0", "2.13.0", "2.14.1"):
        assert M.torch_arch_list(Version(version), "cu130") == MEASURED_X86, version
        aarch64 = M.torch_arch_list(Version(version), "cu130", aarch64=True)
        assert aarch64 is not None and not [a for a in aarch64 if a.startswith("compute_")], version
    assert M.torch_arch_list(Version("2.15.0"), "cu132") == MEASURED_X86


def test_torch_2_14_on_an_amd_gpu_gets_its_rocm_7_14_build():
    release = M.torch_release(Version("2.14.0"))
    assert release is not None and {"cpu", "rocm7.2", "rocm7.14", "xpu"} <= set(release.variants)
    assert M.torch_variants["rocm7.14"].index_url == "https://download.pytorch.org/whl/rocm7.14"
    amd = Constraints(python=Version("3.12"), accelerator="rocm", rocm=Version("7.14"))
    plans = [p for p in suggest_torch(M, amd, "torch==2.14.0").plans if p.variant.startswith("rocm")]
    assert plans and plans[0].variant == "rocm7.14"
    assert any("ROCm 7.14 has the major" in w for w in plans[0].why)


def test_uv_on_an_amd_gpu_stays_on_its_own_rocm_table_while_cudadoctor_plans_rocm_7_14():
    from cudadoctor.suggest.uv_auto import uv_auto_indexes, uv_auto_pick

    amd = Constraints(python=Version("3.12"), accelerator="rocm")
    assert "rocm7.14" not in uv_auto_indexes(M, amd)  # uv's LINUX_AMD_GPU_DRIVERS stops at rocm7.2
    pick = uv_auto_pick(M, amd)
    assert pick.index == "rocm7.2" and pick.version == Version("2.14.0")
    assert "compat data also has rocm7.14" in pick.note
