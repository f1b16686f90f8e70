"""Rendering: the text report's shape (golden file of the real H200), and non-NVIDIA machines said as such."""

from __future__ import annotations

import os

from packaging.version import Version

from cudadoctor.app import build_report
from cudadoctor.checks.engine import run_checks
from cudadoctor.checks.findings import Finding
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.codec import facts_from_json
from cudadoctor.facts.model import Facts, HostInfo, InstalledPackage, Source, SourceKind, TorchBuild
from cudadoctor.report import Format
from cudadoctor.report.document import Report
from cudadoctor.report.options import RenderOptions
from cudadoctor.report.render import RENDERERS
from cudadoctor.report.text import render_text as _render_text
from tests.conftest import fixture_text


def render_text(facts: Facts, findings: list[Finding], matrix: CompatMatrix | None = None, **options) -> str:
    report = build_report(facts, findings, matrix) if matrix is not None else Report(facts, tuple(findings))
    return _render_text(report, RenderOptions(**options))


GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "h200-check.txt")


def _h200():
    return facts_from_json(fixture_text("h200-device", "snapshot.json"))


def test_h200_text_report_matches_golden(update_golden):
    facts = _h200()
    matrix = CompatMatrix(False)
    text = render_text(facts, run_checks(facts, matrix), matrix)
    if update_golden:
        with open(GOLDEN, "w", encoding="utf-8") as handle:
            handle.write(text)
    with open(GOLDEN, encoding="utf-8") as handle:
        assert text == handle.read()


def test_verbose_shows_sources_and_passed_checks():
    facts = _h200()
    text = render_text(facts, run_checks(facts, CompatMatrix()), verbose=True)
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


def test_the_data_date_does_not_depend_on_the_checks_selected():
    """Regression (issue #10): `--select CD104` reported no data date while `--select CD111` did."""
    facts = _h200()
    dates = set()
    for code in ("CD104", "CD111"):
        matrix = CompatMatrix(False)
        report = build_report(facts, run_checks(facts, matrix, select=[code]), matrix)
        dates.add(report.compat_data_as_of)
        assert f"compatibility data as of {report.compat_data_as_of}" in _render_text(report, RenderOptions())
    assert len(dates) == 1 and None not in dates
    assert "compatibility data as of" not in render_text(facts, run_checks(facts, CompatMatrix()))


def test_every_format_has_a_renderer():
    assert set(RENDERERS) == set(Format)
    facts = _h200()
    matrix = CompatMatrix()
    report = build_report(facts, run_checks(facts, matrix), matrix)
    for fmt, renderer in RENDERERS.items():
        assert renderer(report, RenderOptions()).strip(), fmt


def test_could_not_judge_is_never_shown_as_ok():
    """A category whose check could not judge gets [?], the reason shows, and the closing line counts it."""
    import dataclasses

    from cudadoctor.checks.findings import Status

    facts = _h200()
    matrix = CompatMatrix()
    findings = [
        dataclasses.replace(f, status=Status.UNKNOWN, reason="no arch list for torch 2.11.0 cu130")
        if f.code == "CD113" else f
        for f in run_checks(facts, matrix)
    ]  # fmt: skip
    text = render_text(facts, findings, matrix)
    assert "[?] GPUs:" in text
    assert "? CD113 could not judge (no arch list for torch 2.11.0 cu130)" in text
    assert "No issues found, but not everything could be judged" in text and "1 could not be judged" in text
    assert "✓ No issues found" not in text


def test_rocm_torch_is_named_as_such():
    facts = Facts(
        host=HostInfo(os="Linux", arch="x86_64"), packages={"torch": _pkg("torch", "2.4.1+rocm6.1", "rocm6.1")}
    )
    text = render_text(facts, run_checks(facts, CompatMatrix()))
    assert "torch 2.4.1+rocm6.1 (rocm6.1)" in text
    assert "[✗]" not in text


def test_check_says_when_the_machine_is_amd_or_jetson():
    amd = Facts(host=HostInfo(os="Linux", arch="x86_64", rocm_version=Version("6.4.1"), amdgpu_driver=True))
    jetson = Facts(host=HostInfo(os="Linux", arch="aarch64", jetson_l4t="R36.4.3"))
    assert "AMD GPU stack (ROCm 6.4.1, amdgpu driver loaded)" in render_text(amd, run_checks(amd, CompatMatrix()))
    jetson_text = render_text(jetson, run_checks(jetson, CompatMatrix()))
    assert "NVIDIA Jetson (L4T R36.4.3)" in jetson_text


def test_check_says_which_intel_gpu_the_machine_has():
    arc = Facts(host=HostInfo(os="Linux", arch="x86_64", intel_gpu_driver="xe", intel_gpus=("0000:03:00.0 8086:56A0",)))
    igpu = Facts(host=HostInfo(os="Linux", arch="x86_64", intel_gpus=("0000:00:02.0 8086:5917",)))
    arc_text = render_text(arc, run_checks(arc, CompatMatrix()))
    assert "Intel GPU (0000:03:00.0 8086:56A0, driver xe): torch runs on it through PyTorch's XPU builds" in arc_text
    igpu_text = render_text(igpu, run_checks(igpu, CompatMatrix()))
    assert "integrated Intel GPU only (0000:00:02.0 8086:5917)" in igpu_text


def test_check_names_a_jetpack_7_jetson_as_sbsa():
    thor = Facts(host=HostInfo(os="Linux", arch="aarch64", jetson_l4t="R38.2.1"))
    assert "NVIDIA Jetson (L4T R38.2.1, JetPack 7): SBSA" in render_text(thor, run_checks(thor, CompatMatrix()))
