"""Rendering: the text report's shape (golden file of the real H200), and non-NVIDIA machines said as such."""

from __future__ import annotations

import os

from packaging.version import Version

from cudadoctor.checks.engine import run_checks
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.codec import facts_from_json
from cudadoctor.facts.model import Facts, HostInfo, InstalledPackage, Source, SourceKind, TorchBuild
from cudadoctor.report.text import render_text
from tests.conftest import fixture_text

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "h200-check.txt")


def _h200():
    return facts_from_json(fixture_text("h200-device", "snapshot.json"))


def test_h200_text_report_matches_golden(update_golden):
    facts = _h200()
    matrix = CompatMatrix(False)
    text = render_text(facts, run_checks(facts, matrix), width=100, dates=matrix.dates)
    if update_golden:
        with open(GOLDEN, "w", encoding="utf-8") as handle:
            handle.write(text)
    with open(GOLDEN, encoding="utf-8") as handle:
        assert text == handle.read()


def test_verbose_shows_sources_and_passed_checks():
    facts = _h200()
    text = render_text(facts, run_checks(facts, CompatMatrix()), verbose=True, width=100)
    assert "(file: /proc/driver/nvidia/version)" in text
    assert "CD102 ok:" in text
    assert "probes took" in text


def test_colour_only_when_asked():
    facts = _h200()
    assert "\x1b[" not in render_text(facts, [], color=False)
    assert "\x1b[" in render_text(facts, [], color=True)


def _pkg(name: str, version: str, variant: str | None, **kw) -> InstalledPackage:
    return InstalledPackage(
        name, Version(version), "/site", Source(SourceKind.METADATA, f"/site/{name}"), cuda_variant=variant, **kw
    )


def test_apple_silicon_and_cpu_torch_are_not_cuda_failures():
    torch = _pkg(
        "torch",
        "2.5.1",
        "cpu",
        torch_build=TorchBuild(Version("2.5.1"), None, None, False, None, Source(SourceKind.FILE, "v.py")),
    )
    facts = Facts(host=HostInfo(os="Darwin", arch="arm64", apple_silicon=True), packages={"torch": torch})
    findings = run_checks(facts, CompatMatrix())
    text = render_text(facts, findings)
    assert "Apple Silicon: GPU work runs on Metal (MPS / MLX), not CUDA" in text
    assert "torch 2.5.1 (cpu)" in text
    assert "[✗]" not in text and "[!]" not in text


def test_the_data_date_comes_from_the_matrix_the_checks_used():
    facts = _h200()
    unused = CompatMatrix(False)
    assert unused.dates.compat is None  # nothing loaded yet: no date to state
    findings = run_checks(facts, unused)
    assert unused.dates.compat is not None
    assert f"compatibility data as of {unused.dates.compat}" in render_text(facts, findings, dates=unused.dates)
    assert "compatibility data as of" not in render_text(facts, findings)


def test_rocm_torch_is_named_as_such():
    facts = Facts(
        host=HostInfo(os="Linux", arch="x86_64"), packages={"torch": _pkg("torch", "2.4.1+rocm6.1", "rocm6.1")}
    )
    text = render_text(facts, run_checks(facts, CompatMatrix()))
    assert "torch 2.4.1+rocm6.1 (rocm6.1)" in text
    assert "[✗]" not in text
