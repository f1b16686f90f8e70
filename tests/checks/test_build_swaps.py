"""The build that replaces a CuPy or ctranslate2 build the machine cannot run (CD111, CD303, CD113), on the real
H200 capture (driver 580.159.04, cupy-cuda13x) changed one fact at a time."""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import DriverVersion, Facts, InstalledPackage, Source, SourceKind
from cudadoctor.testing import run_check


def _driver(facts: Facts, version: str) -> Facts:
    assert facts.driver is not None
    return replace(facts, driver=replace(facts.driver, version=DriverVersion(version), cuda_api=None))


def test_cd111_cupy_for_cuda_13_on_a_cuda_12_driver_swaps_to_the_cuda_12_package(h200):
    assert "cupy-cuda13x" in h200.packages
    finding = run_check("CD111", _driver(h200, "535.104.05"))
    assert finding.status is Status.FAIL and "cupy-cuda13x" in finding.message
    assert finding.remediation is not None
    swap = "python -m pip uninstall -y cupy-cuda13x && python -m pip install cupy-cuda12x"
    assert swap in finding.remediation.commands


def test_cd111_ctranslate2_4_on_a_cuda_11_driver_takes_3_24_0(h200):
    ct2 = InstalledPackage("ctranslate2", Version("4.5.0"), "/site", Source(SourceKind.METADATA, "/site/ctranslate2"))
    facts = _driver(replace(h200, packages={"ctranslate2": ct2}), "470.256.02")
    finding = run_check("CD111", facts)
    assert finding.status is Status.FAIL and "ctranslate2 4.5.0" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == ("python -m pip install ctranslate2==3.24.0",)


def test_cd111_a_release_that_fits_prints_no_ctranslate2_command(h200):
    ct2 = InstalledPackage("ctranslate2", Version("4.5.0"), "/site", Source(SourceKind.METADATA, "/site/ctranslate2"))
    assert run_check("CD111", replace(h200, packages={"ctranslate2": ct2})).status is Status.OK
