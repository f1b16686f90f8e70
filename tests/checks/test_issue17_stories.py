"""Issue #17, "Tried as a new user would": each story's facts, and the answer cudadoctor must give.

The H200 snapshot supplies a real machine's facts; each test replaces the driver, the GPU and the
installed framework with the story's, so the only thing that decides is compat data and the rules.
"""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version
from typer.testing import CliRunner

from cudadoctor.checks.findings import Status
from cudadoctor.cli import app
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import (
    DriverInfo,
    DriverReading,
    DriverVersion,
    GpuInfo,
    InstalledPackage,
    Source,
    SourceKind,
)
from cudadoctor.rules.gpus import build_runs_on_gpu, cuda_knows_arch
from cudadoctor.testing import run_check

M = CompatMatrix(cache_dir=False)
ASSUMED = Source(SourceKind.ASSUMED, "story")


def _driver(version: str) -> DriverInfo:
    return DriverInfo(DriverVersion(version), None, readings=(DriverReading(ASSUMED, DriverVersion(version)),))


def _gpu(name: str, cc: str) -> tuple[GpuInfo, ...]:
    return (GpuInfo(0, name, cc, ASSUMED),)


def _only(facts, name: str, version: str, variant: str, build: str) -> dict[str, InstalledPackage]:
    """The story's one framework build, instead of the H200's packages."""
    pkg = InstalledPackage(name, Version(version), "/opt/venv/lib/python3.8/site-packages", ASSUMED, variant, build)
    return {name: pkg}


def test_driver_396_with_torch_1_2_0_cuda_10_0_fails_cd111(h200):
    # torch 1.2.0 from PyPI is the CUDA 10.0 build; CUDA 10.0 needs driver >= 410.48 (Table 3).
    facts = replace(h200, driver=_driver("396.54"), packages=_only(h200, "torch", "1.2.0", "cu100", "10.0"))
    finding = run_check("CD111", facts)
    assert finding.status is Status.FAIL
    assert "410.48" in finding.message and finding.evidence["CUDA 10.0"].startswith("needs driver >= 410.48")


def test_torch_1_2_0_on_driver_410_48_passes_cd111(h200):
    facts = replace(h200, driver=_driver("410.48"), packages=_only(h200, "torch", "1.2.0", "cu100", "10.0"))
    assert run_check("CD111", facts).status is Status.OK


def test_gtx_1080_ti_on_570_with_torch_2_7_1_cu128_fails_cd113(h200):
    facts = replace(
        h200,
        driver=_driver("570.133.20"),
        gpus=_gpu("NVIDIA GeForce GTX 1080 Ti", "6.1"),
        packages=_only(h200, "torch", "2.7.1+cu128", "cu128", "12.8"),
    )
    finding = run_check("CD113", facts)
    assert finding.status is Status.FAIL
    assert "no kernel image is available" in finding.message and "inferred" not in finding.message


def test_a30_with_torch_1_6_0_cu101_fails_cd113_inferred(h200):
    facts = replace(h200, gpus=_gpu("NVIDIA A30", "8.0"), packages=_only(h200, "torch", "1.6.0+cu101", "cu101", "10.1"))
    finding = run_check("CD113", facts)
    assert finding.status is Status.FAIL
    assert "inferred: CUDA 10.1 predates compute capability 8.x (Ampere)" in finding.message


def test_titan_v_with_a_cuda_8_build_fails_cd113_inferred(h200):
    facts = replace(
        h200, gpus=_gpu("NVIDIA TITAN V", "7.0"), packages=_only(h200, "cupy-cuda80", "4.0.0", "cuda80", "8.0")
    )
    finding = run_check("CD113", facts)
    assert finding.status is Status.FAIL and "inferred: CUDA 8.0 predates compute capability 7.x" in finding.message


def test_rtx_5070_ti_with_torch_2_4_1_cu121_fails_cd113_inferred(h200):
    facts = replace(
        h200,
        gpus=_gpu("NVIDIA GeForce RTX 5070 Ti", "12.0"),
        packages=_only(h200, "torch", "2.4.1+cu121", "cu121", "12.1"),
    )
    finding = run_check("CD113", facts)
    # 2.4 cu121's published list (sm_50 ... sm_90) decides; the inferred rule agrees.
    assert finding.status is Status.FAIL and "sm_90" in finding.message
    assert cuda_knows_arch(M, Version("12.1"), "12.0", "RTX 5070 Ti").is_problem


def test_an_unknown_arch_list_with_a_cuda_that_knows_the_gpu_is_not_ok(h200):
    facts = replace(h200, gpus=_gpu("NVIDIA A30", "8.0"), packages=_only(h200, "torch", "2.6.0+cu124", "cu124", "12.4"))
    finding = run_check("CD113", facts)
    assert finding.status is Status.UNKNOWN and "no arch list for torch 2.6.0+cu124" in finding.reason


def test_sass_of_a_lower_minor_runs_on_ada(h200):
    # CUDA 11.7 predates 8.9 but knows 8.0/8.6, whose SASS runs on 8.9: not a problem.
    assert not build_runs_on_gpu(M, None, Version("11.7"), "8.9", "RTX 4090").is_problem
    assert build_runs_on_gpu(M, None, Version("11.7"), "9.0", "H100").is_problem


def _suggest(*args: str):
    return CliRunner().invoke(app, ["suggest", "--no-probe", "--format", "json", *args])


def test_suggest_torch_2_8_for_a_gtx_1080_ti_recommends_only_pascal_builds():
    import json

    result = _suggest("--target", "torch==2.8.0", "--gpu", "GTX 1080 Ti", "--driver", "580.95.05")
    assert result.exit_code == 0, result.output
    plans = json.loads(result.stdout)["suggestion"]["plans"]
    assert plans and all(p["variant"] != "pypi" and "cu128" not in (p["index_url"] or "") for p in plans)
    assert {p["variant"] for p in plans} == {"cu126"}


def test_suggest_accepts_torch_2_0_cu117_for_an_rtx_4090():
    import json

    result = _suggest("--target", "torch==2.0.1", "--gpu", "RTX 4090", "--driver", "535.104.05")
    assert result.exit_code == 0, result.output
    suggestion = json.loads(result.stdout)["suggestion"]
    assert any(p["cuda"] == "11.7" for p in suggestion["plans"])
    assert not any("11.7" in e["observed"] for e in suggestion["excluded"] if e["rule"] == "cuda-predates-arch")
