"""CD421's fix names xformers's download.pytorch.org build when no PyPI wheel has torch's CUDA major.

xformers's README at each release tag lists the indexes it is published on (compat/ecosystem.toml
``pytorch_indexes``, source ``xformers-readme``); the PyPI wheels of 0.0.34 and 0.0.35 are CUDA 12.8 builds.
"""

from __future__ import annotations

from cudadoctor.checks.findings import Status
from cudadoctor.testing import run_check
from tests.checks.test_loader_checks import package, torch, with_packages


def test_torch_2_10_cu130_with_the_pypi_xformers_gets_the_cu130_index_build(h200):
    # pip install torch --index-url .../whl/cu130, then plain `pip install xformers`: PyPI's CUDA 12.8 wheel
    facts = with_packages(h200, torch("2.10.0+cu130", "13.0", True), package("xformers", "0.0.35"))
    finding = run_check("CD421", facts)
    assert finding.status is Status.FAIL
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "python -m pip install --force-reinstall --no-deps xformers==0.0.35 "
        "--index-url https://download.pytorch.org/whl/cu130",
    )


def test_no_index_command_when_the_readme_does_not_name_torchs_index(h200):
    # torch 2.9.0+cu130 (whl/cu130): xformers 0.0.33.x's README names cu126, cu128, cu129 only, and the PyPI
    # wheels pinning 2.9.0 are 0.0.33 (CUDA 13.0: fits) and 0.0.33.post1 (12.8)
    facts = with_packages(h200, torch("2.9.0+cu130", "13.0", True), package("xformers", "0.0.33.post1"))
    finding = run_check("CD421", facts)
    assert finding.status is Status.FAIL and finding.remediation is not None
    assert finding.remediation.commands == ("python -m pip install xformers==0.0.33",)


def test_torch_2_4_1_cu118_with_the_pypi_xformers_gets_the_cu118_index_build(h200):
    # xformers 0.0.28.post1 pins torch 2.4.1; its PyPI wheel is a CUDA 12.1 build, its README names whl/cu118
    facts = with_packages(h200, torch("2.4.1+cu118", "11.8", False), package("xformers", "0.0.28.post1"))
    finding = run_check("CD421", facts)
    assert finding.status is Status.FAIL and finding.remediation is not None
    assert finding.remediation.commands == (
        "python -m pip install --force-reinstall --no-deps xformers==0.0.28.post1 "
        "--index-url https://download.pytorch.org/whl/cu118",
    )
    fixed = package("xformers", "0.0.28.post1+cu118", cuda_variant="cu118", cuda_build="11.8")
    assert run_check("CD421", with_packages(h200, torch("2.4.1+cu118", "11.8", False), fixed)).status is Status.OK


def test_the_pypi_build_of_the_installed_version_is_a_forced_reinstall(h200):
    # xformers 0.0.23.post1+cu118 (whl/cu118) beside PyPI's torch 2.1.2 (CUDA 12.1): PyPI's 0.0.23.post1 is the
    # CUDA 12.1 build, but `pip install 'xformers==0.0.23.post1'` finds the +cu118 one satisfying the pin and
    # changes nothing (a public pin admits any local version): the command must force the reinstall
    installed = package("xformers", "0.0.23.post1+cu118", cuda_variant="cu118", cuda_build="11.8")
    finding = run_check("CD421", with_packages(h200, torch("2.1.2", "12.1", False), installed))
    assert finding.status is Status.FAIL and finding.remediation is not None
    assert finding.remediation.commands == ("python -m pip install --force-reinstall --no-deps xformers==0.0.23.post1",)
