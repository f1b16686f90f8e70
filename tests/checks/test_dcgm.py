"""CD167 and ``check --dcgm-diag``: DCGM's diagnostic run only when asked, with a deadline, its JSON read.

The outputs in tests/fixtures/dcgm follow DCGM 4's and DCGM 3's JSON layouts (README there says where each
layout is published and which values are ours); the runner is faked, so no dcgmi runs.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any

import pytest

from cudadoctor.checks import ALL_CHECKS
from cudadoctor.checks._base import CannotJudge
from cudadoctor.checks.engine import run_checks
from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.errors import UsageError
from cudadoctor.facts.health import DcgmDiag
from cudadoctor.facts.model import Facts, HostInfo
from cudadoctor.probes.context import ProbeContext
from cudadoctor.probes.dcgm import DCGM_TIMEOUTS, parse_dcgm_json, probe_dcgm_diag
from tests.conftest import FakeRunner

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "dcgm")
ARGV = ("dcgmi", "diag", "-r", "1", "-j")


def output(name: str) -> str:
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


def diag(name: str, level: int = 1, returncode: int = 0, **kwargs: Any) -> DcgmDiag:
    runner = FakeRunner()
    argv = ("dcgmi", "diag", "-r", str(level), "-j")
    runner.add(argv, output(name) if name else "", returncode=returncode, **kwargs)
    result = probe_dcgm_diag(ProbeContext(runner=runner), level)
    assert runner.calls == [argv] and runner.timeouts == [DCGM_TIMEOUTS[level]]
    return result


def cd167(result: DcgmDiag) -> Any:
    return ALL_CHECKS["CD167"].check(dcgm=result)  # type: ignore[attr-defined]


def test_dcgm4_pass_reads_version_driver_and_each_gpu():
    result = diag("dcgm4-level1-pass.json")
    assert (result.error, result.dcgm_version, result.driver_version) == (None, "4.4.1", "580.95.05")
    (software,) = result.tests
    assert (software.category, software.name, software.status) == ("Deployment", "software", "Pass")
    assert [r.entity for r in software.results] == ["GPU 0", "GPU 1"]
    assert cd167(result) is None


def test_dcgm4_failure_is_an_error_in_dcgms_own_words():
    """DCGM fails level 1 on a GPU without persistence mode (DCGM_FR_PERSISTENCE_MODE); cudadoctor says so."""
    result = diag("dcgm4-level1-persistence.json", returncode=226)
    problem = cd167(result)
    assert problem.status is Status.FAIL
    assert problem.message.startswith("DCGM 4.4.1 diagnostic level 1: software: GPU 0: Persistence Mode: ")
    assert "GPU 1" not in problem.message
    assert problem.evidence == {"Deployment/software": "Fail"}
    assert problem.remediation.commands == ("dcgmi diag -r 1 -v",)


def test_dcgm4_warning_is_a_warning():
    result = diag("dcgm4-level2-pcie-warn.json", level=2)
    problem = cd167(result)
    assert problem.status is Status.WARN
    assert "pcie: GPU 0: GPU 0 is running at PCI link width 8X" in problem.message
    assert problem.evidence == {"Deployment/software": "Pass", "Hardware/memory": "Pass", "Integration/pcie": "Warn"}


def test_every_test_skipped_could_not_be_judged():
    with pytest.raises(CannotJudge, match="ran no test"):
        cd167(diag("dcgm4-level2-skipped.json", level=2))


def test_dcgm3_layout_without_summaries():
    result = parse_dcgm_json(json.loads(output("dcgm3-level3-skips.json")))
    assert isinstance(result, DcgmDiag) and result.dcgm_version == "3.3.1"
    statuses = {t.name: t.status for t in result.tests}
    assert statuses == {
        "Denylist": "Pass",
        "Persistence Mode": "Pass",
        "PCIe": "Skip",
        "GPU Memory": "Skip",
        "Diagnostic": "Fail",
    }
    diagnostic = next(t for t in result.tests if t.name == "Diagnostic")
    assert diagnostic.results[0].entity == "GPU 0" and diagnostic.results[0].warnings[0].startswith("Diagnostic:")
    assert cd167(replace(result, level=3, command="dcgmi diag -r 3 -j")).status is Status.FAIL


def test_runtime_error_could_not_be_judged():
    result = diag("dcgm4-runtime-error.json", returncode=1)
    assert result.error is not None and result.error.startswith("DCGM reported: The diagnostic could not run")
    with pytest.raises(CannotJudge, match="could not run"):
        cd167(result)


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({"error": "not found"}, "dcgmi is not installed"),
        ({"error": "timed out after 90 s"}, "timed out after 90 s"),
        (
            {
                "returncode": 255,
                "stdout": "Error: unable to establish a connection to the specified host: localhost\n"
                "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n",
            },
            "Unable to connect to host engine",
        ),
    ],
)
def test_no_dcgm_no_host_engine_or_a_timeout_could_not_be_judged(kwargs: dict[str, Any], why: str):
    runner = FakeRunner()
    runner.add(ARGV, **kwargs)
    result = probe_dcgm_diag(ProbeContext(runner=runner), 1, timeout=5.0)
    assert runner.timeouts == [5.0]
    assert result.error is not None and why in result.error
    with pytest.raises(CannotJudge, match="nv-hostengine"):
        cd167(result)


def test_not_asked_means_not_applicable_and_never_run():
    facts = Facts(host=HostInfo(os="Linux", arch="x86_64"))
    (finding,) = run_checks(facts, CompatMatrix(), select=["CD167"])
    assert finding.status is Status.NOT_APPLICABLE and "--dcgm-diag 1" in (finding.reason or "")


def test_check_runs_dcgmi_only_with_the_flag(monkeypatch: pytest.MonkeyPatch):
    from cudadoctor import app
    from cudadoctor.probes import collect, dcgm

    ran: list[tuple[int, float | None]] = []
    monkeypatch.setattr(collect, "live_context", lambda **kw: ProbeContext(runner=FakeRunner()))
    monkeypatch.setattr(collect, "collect_facts", lambda ctx: Facts(host=HostInfo(os="Linux", arch="x86_64")))

    def fake_probe_dcgm_diag(ctx, level, timeout):
        ran.append((level, timeout))

    monkeypatch.setattr(dcgm, "probe_dcgm_diag", fake_probe_dcgm_diag)
    app._probed(app.FactSource(), lambda message: None)
    assert ran == []
    app._probed(app.FactSource(dcgm_level=2, dcgm_timeout=30.0), lambda message: None)
    assert ran == [(2, 30.0)]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"dcgm_level": 3}, "give 1 or 2"),
        ({"dcgm_level": 1, "root": "/img"}, "cannot be combined with --root"),
        ({"dcgm_level": 1, "health": False}, "--no-health"),
        ({"dcgm_level": 1, "dcgm_timeout": 0.0}, "positive"),
        ({"dcgm_timeout": 10.0}, "give both"),
    ],
)
def test_flag_combinations_are_checked(source: dict[str, Any], message: str):
    from cudadoctor.app import FactSource, _validate

    with pytest.raises(UsageError, match=message):
        _validate(FactSource(**source))


def test_cli_flags_reach_the_options(monkeypatch: pytest.MonkeyPatch):
    from typer.testing import CliRunner

    from cudadoctor import cli

    seen: list[Any] = []

    def fake_check_command(options):
        seen.append(options)
        return 0

    monkeypatch.setattr(cli, "check_command", fake_check_command)
    result = CliRunner().invoke(cli.app, ["check", "--dcgm-diag", "2", "--dcgm-timeout", "200"])
    assert result.exit_code == 0, result.output
    assert (seen[0].dcgm_diag, seen[0].dcgm_timeout) == (2, 200.0)
