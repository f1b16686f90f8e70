"""CD115 and cudadoctor.rules.branches: an end-of-life driver branch, and the supported branch to move to
(compat/cuda.toml ``driver_branch``, NVIDIA's data center driver lifecycle; issue #17 item 3)."""

from __future__ import annotations

import datetime
from dataclasses import replace

from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverInfo, DriverReading, DriverVersion, GpuInfo, RootKind, Source, SourceKind
from cudadoctor.rules.branches import branch_status, lifecycle_covers, recommended_branch, supported_upgrades
from cudadoctor.rules.verdict import Outcome
from cudadoctor.testing import run_check

M = CompatMatrix()
DEC_2026 = datetime.date(2026, 12, 1)
ASSUMED = Source(SourceKind.ASSUMED, "--assume-driver")


def _driver(version: str) -> DriverInfo:
    return DriverInfo(DriverVersion(version), None, readings=(DriverReading(ASSUMED, DriverVersion(version)),))


def _gpu(name: str, cc: str) -> tuple[GpuInfo, ...]:
    return (GpuInfo(0, name, cc, Source(SourceKind.ASSUMED, "--assume-gpu")),)


def test_every_branch_the_issue_names():
    ended = {b: branch_status(M, b, DEC_2026) for b in (418, 450, 470, 525, 535, 545, 550, 570, 610)}
    assert all(v.is_problem for v in ended.values()), {b: v.outcome for b, v in ended.items()}
    assert branch_status(M, 580, DEC_2026).is_ok and branch_status(M, 595, DEC_2026).is_ok
    assert branch_status(M, 620, DEC_2026).is_ok


def test_an_end_of_life_month_counts_once_it_is_over():
    assert branch_status(M, 535, datetime.date(2026, 6, 30)).is_ok  # "June 2026": still in June
    assert branch_status(M, 535, datetime.date(2026, 7, 1)).is_problem


def test_branches_no_edition_read_could_not_be_judged():
    for branch in (590, 615):  # between listed branches
        verdict = branch_status(M, branch, DEC_2026)
        assert verdict.is_unknown and f"R{branch}" in verdict.missing


def test_a_branch_newer_than_the_data_is_never_end_of_life():
    # issue #30: a driver newer than every lifecycle table read is not warned about; the reason says it is inferred
    verdict = branch_status(M, 630, DEC_2026)
    assert verdict.outcome is Outcome.NOT_APPLICABLE
    assert verdict.basis.startswith("inferred: R630 is newer than") and "R620" in verdict.basis


def test_the_branch_to_move_to_is_a_supported_long_term_branch():
    verdict = branch_status(M, 470, DEC_2026)
    assert verdict.required == "a supported branch: R580 (long-term support branch, end of life June 2028)"
    assert recommended_branch(M, 610, DEC_2026).branch == 620  # R610 (new feature) ended: the next LTS
    assert recommended_branch(M, 470, datetime.date(2029, 1, 1)).branch == 620  # R580 ended by then
    # a Kepler GPU's last branch is R470: no supported branch runs it
    assert recommended_branch(M, 470, DEC_2026, last=470) is None


def test_suggest_never_proposes_an_end_of_life_branch():
    # "today a 470 machine is told 'upgrade to 525.60.13'": R525 and R535 are end of life in December 2026
    branches = [b for b, _d in supported_upgrades(M, DriverVersion("470.82.01"), DEC_2026)]
    assert branches[0] == 580 and 525 not in branches and 535 not in branches
    assert [b for b, _d in supported_upgrades(M, DriverVersion("470.82.01"), datetime.date(2025, 9, 1))][:2] == [
        535,
        580,
    ]  # long-term branches first, oldest first, while R535 was supported


def test_cd115_warns_on_an_end_of_life_branch_and_names_the_lts_to_move_to(h200):
    facts = replace(h200, driver=_driver("535.104.05"), collected_at="2026-12-01T00:00:00+00:00")
    finding = run_check("CD115", facts)
    assert finding.status is Status.WARN
    assert finding.message == (
        "driver 535.104.05: branch R535 (long-term support branch, end of life June 2026) is end of life; "
        "move to R580 (long-term support branch, end of life June 2028)"
    )
    assert finding.evidence["move to"].endswith("its oldest release in compat data is 580.65.06")
    assert "R580" in finding.remediation.text


def test_cd115_ok_on_a_supported_branch_and_judged_on_the_day_of_the_facts(h200):
    assert run_check("CD115", h200).status is Status.OK  # the H200 runs 580.x
    before = replace(h200, driver=_driver("535.104.05"), collected_at="2026-05-01T00:00:00+00:00")
    assert run_check("CD115", before).status is Status.OK


def test_cd115_a_legacy_gpu_with_no_supported_branch(h200):
    facts = replace(h200, driver=_driver("470.256.02"), gpus=_gpu("Tesla K80", "3.7"), collected_at="2026-12-01")
    finding = run_check("CD115", facts)
    assert finding.status is Status.WARN and "no supported branch to move to" in finding.message
    assert "Tesla K80 (last branch R470)" in finding.evidence["GPUs"]


def test_cd115_could_not_judge_what_the_data_lacks(h200):
    finding = run_check("CD115", replace(h200, driver=_driver("590.48.01"), collected_at="2026-12-01"))
    assert finding.status is Status.UNKNOWN and "R590" in finding.reason
    windows = replace(h200, host=replace(h200.host, os="Windows"), driver=_driver("581.57"))
    assert run_check("CD115", windows).status is Status.UNKNOWN


def test_cd115_only_for_the_product_lines_nvidia_publishes_a_lifecycle_for(h200):
    # issue #30: the data center lifecycle is not a GeForce's or an RTX workstation GPU's
    for name, cc in (("GeForce RTX 4090", "8.9"), ("RTX A6000", "8.6")):
        facts = replace(h200, driver=_driver("550.54.15"), gpus=_gpu(name, cc), collected_at="2026-12-01")
        finding = run_check("CD115", facts)
        assert finding.status is Status.NOT_APPLICABLE, (name, finding)
        assert "data center GPUs only" in finding.reason
        supported = run_check("CD115", replace(facts, driver=_driver("580.95.05")))  # the same, whatever the branch
        assert supported.status is Status.NOT_APPLICABLE
    # the same driver on a data center GPU is end of life
    h100 = replace(h200, driver=_driver("550.54.15"), gpus=_gpu("H100", "9.0"), collected_at="2026-12-01")
    assert run_check("CD115", h100).status is Status.WARN
    # a GPU the table lacks: its product line, hence whether the ended branch is ended for it, is unknown
    unknown = replace(h100, gpus=_gpu("NVIDIA Zorblax 9000", "9.0"))
    finding = run_check("CD115", unknown)
    assert finding.status is Status.UNKNOWN and "product line of NVIDIA Zorblax 9000" in finding.reason
    assert "branch R550 (end of life) ended for data center GPUs" in finding.reason
    # ... but a branch the lifecycle still supports is supported whatever the line
    assert run_check("CD115", replace(unknown, driver=_driver("580.95.05"))).status is Status.OK
    # a fleet with one data center GPU is judged
    fleet = replace(h100, gpus=_gpu("GeForce RTX 4090", "8.9") + _gpu("H100", "9.0"))
    assert run_check("CD115", fleet).status is Status.WARN


def test_lifecycle_covers_by_segment():
    assert lifecycle_covers(M, [("H100", "datacenter"), ("RTX 4090", "geforce")]).detail == ("H100",)
    assert lifecycle_covers(M, [("Jetson Orin", "embedded")]).outcome is Outcome.NOT_APPLICABLE
    assert lifecycle_covers(M, []).is_unknown


def test_cd115_in_an_image_says_upgrade_the_hosts_driver(h200):
    # issue #30: a Dockerfile pre-flight never gets a driver install command (CD101: no driver in an image)
    facts = replace(h200, driver=_driver("535.104.05"), host=replace(h200.host, distro="Ubuntu 22.04"),
                    collected_at="2026-12-01", root_kind=RootKind("image"))  # fmt: skip
    finding = run_check("CD115", facts)
    assert finding.status is Status.WARN and finding.remediation.commands == ()
    assert finding.remediation.text.startswith("Upgrade the host's driver to the R580 branch")
    nvml = Source(SourceKind.API, "nvmlSystemGetDriverVersion")
    read = DriverInfo(DriverVersion("535.104.05"), None, readings=(DriverReading(nvml, DriverVersion("535.104.05")),))
    host = replace(facts, driver=read, root_kind=RootKind("host"))
    assert run_check("CD115", host).remediation.commands == ("sudo apt install nvidia-driver-580",)
    # a driver given with --assume-driver is another machine's (a build stage's host): nothing to install here
    given = run_check("CD115", replace(facts, root_kind=RootKind("host")))
    assert given.status is Status.WARN and given.remediation.commands == ()
    assert given.remediation.text.startswith("Upgrade the driver of the machine --assume-driver describes")


def test_cd115_a_branch_newer_than_the_data(h200):
    finding = run_check("CD115", replace(h200, driver=_driver("630.10.01"), collected_at="2026-12-01"))
    assert finding.status is Status.NOT_APPLICABLE and "inferred" in finding.reason


def test_cd115_not_applicable_on_jetson(h200):
    jetson = replace(h200, host=replace(h200.host, jetson_l4t="R36.4.3"), driver=_driver("540.4.0"))
    assert run_check("CD115", jetson).status is Status.NOT_APPLICABLE


def test_cd115_driver_branch_fields_are_typed():
    row = M.driver_branch(580)
    assert row is not None and row.designation == "long-term" and row.end_of_life == "2028-06"
    assert Version(str(M.driver_branches[0].branch)) >= Version("620")


def test_cuda_minimum_drivers_are_complete_from_cuda_7():
    """Every CUDA minor of NVIDIA's Table 3 from 7.0 has a Linux floor, and a Windows one before 13.x."""
    minors = ["7.0", "7.5", "8.0", "9.0", "9.1", "9.2", "10.0", "10.1", "10.2"]
    minors += (
        [f"11.{m}" for m in range(9)] + [f"12.{m}" for m in (0, 1, 2, 3, 4, 5, 6, 8, 9)] + ["13.0", "13.1", "13.2"]
    )
    by_minor: dict[str, list] = {}
    for release in M.cuda_releases:
        by_minor.setdefault(f"{release.version.major}.{release.version.minor}", []).append(release)
    assert sorted(by_minor, key=Version) == minors
    for minor, releases in by_minor.items():
        assert all(r.min_driver_linux is not None for r in releases), minor
        if Version(minor) < Version("13.0"):
            assert all(r.min_driver_windows is not None for r in releases), minor
    assert str(M.min_driver_for_cuda(Version("10.0"))) == "410.48"
    assert str(M.min_driver_for_cuda(Version("7.0"), windows=True)) == "347.62"
