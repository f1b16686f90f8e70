"""``check --format slurm | npd | health-json``: the node's verdict in one line, with the exit codes schedulers read.

The healthy node is the real H200: the snapshot of tests/fixtures/h200-device with the health facts its NVML
and host answered on the device (tests/fixtures/health/h200.json, h200-host.json). Each fault changes one
NVML answer the way NVML reports it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from typing import Any

import pytest

from cudadoctor.app import build_report
from cudadoctor.checks.engine import run_checks
from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.codec import facts_from_json
from cudadoctor.facts.health import HealthInfo, HostHealth
from cudadoctor.probes.health_parse import parse_gpu
from cudadoctor.report import SCHEDULER_FORMATS, Format
from cudadoctor.report.document import Report
from cudadoctor.report.options import RenderOptions
from cudadoctor.report.render import render
from cudadoctor.report.scheduler import NPD_MAX, node_verdict, reason_line
from tests.conftest import fixture_text

HEALTH = os.path.join(os.path.dirname(__file__), "fixtures", "health")
M = CompatMatrix()


def _health(changes: dict[str, Any] | None = None, **host: Any) -> HealthInfo:
    with open(os.path.join(HEALTH, "h200.json"), encoding="utf-8") as handle:
        record = json.load(handle)
    with open(os.path.join(HEALTH, "h200-host.json"), encoding="utf-8") as handle:
        captured = json.load(handle)["host"]
    device = copy.deepcopy(record["devices"][0])
    device.update(changes or {})
    base = HostHealth(
        pci_functions=tuple(captured["pci_functions"]),
        pci_drivers=tuple(captured["pci_drivers"]),
        kernel_log_first_s=captured["kernel_log_first_s"],
        uptime_s=captured["uptime_s"],
        shm_bytes=captured["shm_bytes"],
        memlock_bytes=captured["memlock_bytes"],
    )
    return HealthInfo(nvml_count=1, driver_version="580.159.04", gpus=(parse_gpu(device),), host=replace(base, **host))


def replace(obj: Any, **changes: Any) -> Any:
    return dataclasses.replace(obj, **changes)


def report(health: HealthInfo | None, fail_on: str = "error") -> Report:
    facts = replace(facts_from_json(fixture_text("h200-device", "snapshot.json")), health=health)
    findings = run_checks(facts, M)
    return build_report(facts, findings, M, fail_on=fail_on)


def line(rep: Report, fmt: Format) -> str:
    return render(rep, fmt, RenderOptions())


def test_the_real_h200_is_ok_in_every_scheduler_format():
    rep = report(_health())
    verdict = node_verdict(rep)
    assert (verdict.status, verdict.exit_code) == ("ok", 0)
    assert line(rep, Format.SLURM) == "cudadoctor: OK: GPU health and driver checks passed\n"
    assert line(rep, Format.NPD) == "cudadoctor: OK: GPU health and driver checks passed\n"
    document = json.loads(line(rep, Format.HEALTH_JSON))
    assert document["kind"] == "cudadoctor-node-health" and document["status"] == "ok" and document["exit_code"] == 0
    assert document["gpus"][0]["name"] == "NVIDIA H200" and document["gpus"][0]["ecc_uncorrected_volatile"] == 0
    assert "samples" not in document["gpus"][0] and document["host"]["uptime_s"] == 85.15


def test_recovery_action_fails_the_node_with_its_code_first():
    rep = report(_health({"field_values": {"v": {"recovery_action": {"c": 0, "v": 1}}}}))
    verdict = node_verdict(rep)
    assert (verdict.status, verdict.exit_code, verdict.codes) == ("problem", 1, ("CD151",))
    slurm = line(rep, Format.SLURM)
    assert slurm.startswith("cudadoctor: FAIL CD151: the driver asks for recovery: GPU 0 (00000000:00:06.0): GPU reset")
    assert slurm.count("\n") == 1
    npd = line(rep, Format.NPD).rstrip("\n")
    assert len(npd.encode()) <= NPD_MAX and npd.startswith("cudadoctor: FAIL CD151: ") and npd.endswith("...")
    document = json.loads(line(rep, Format.HEALTH_JSON))
    assert document["codes"] == ["CD151"] and document["problems"][0]["commands"] == ["sudo nvidia-smi -r -i 0"]


def test_several_problems_list_every_code_worst_first():
    rep = report(
        _health({"ecc_uncorrected_volatile": {"v": 2}, "field_values": {"v": {"recovery_action": {"c": 0, "v": 2}}}})
    )
    assert node_verdict(rep).codes == ("CD151", "CD153")
    assert line(rep, Format.NPD).startswith("cudadoctor: FAIL CD151,CD153: ")


def test_a_warning_passes_at_the_default_level_and_drains_with_fail_on_warning():
    pending = {"remapped_rows": {"v": [0, 0, 1, 0]}}
    rep = report(_health(pending))
    verdict = node_verdict(rep)
    assert (verdict.status, verdict.exit_code) == ("ok", 0)
    assert line(rep, Format.SLURM).startswith("cudadoctor: OK: warning CD152: a memory row remap")
    strict = node_verdict(report(_health(pending), fail_on="warning"))
    assert (strict.status, strict.exit_code, strict.codes) == ("problem", 1, ("CD152",))


def test_an_unreadable_kernel_log_is_unknown_not_ok():
    rep = report(_health(kernel_log_error="/dev/kmsg: Operation not permitted (kernel.dmesg_restrict=1)"))
    verdict = node_verdict(rep)
    assert (verdict.status, verdict.exit_code, verdict.codes) == ("unknown", 2, ("CD156",))
    assert line(rep, Format.SLURM).startswith("cudadoctor: UNKNOWN CD156: could not judge: ")


def test_health_not_examined_is_unknown():
    verdict = node_verdict(report(None))
    assert (verdict.status, verdict.exit_code) == ("unknown", 2)
    assert "GPU health not examined" in reason_line(verdict)


def test_a_python_environment_problem_does_not_drain_the_node():
    rep = report(_health())
    python_problem = dataclasses.replace(
        next(f for f in rep.findings if f.code == "CD111"),
        status=Status.FAIL,
        message="torch needs a newer driver",
    )
    findings = tuple(python_problem if f.code == "CD111" else f for f in rep.findings)
    rep = dataclasses.replace(rep, findings=findings, exit_code=1)
    assert node_verdict(rep).exit_code == 0
    assert line(rep, Format.SLURM).startswith("cudadoctor: OK")


def test_scheduler_formats_set_the_exit_code(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    from cudadoctor.commands import CheckOptions, check_command

    rep = report(_health({"ecc_uncorrected_volatile": {"v": 1}}))
    monkeypatch.setattr("cudadoctor.app.run_check", lambda request, warn: rep)
    monkeypatch.setattr("cudadoctor.config.find_settings", lambda: _Settings())
    for fmt in SCHEDULER_FORMATS:
        assert check_command(CheckOptions(output_format=fmt)) == 1
    assert "CD153" in capsys.readouterr().out
    unknown = report(None)
    monkeypatch.setattr("cudadoctor.app.run_check", lambda request, warn: unknown)
    assert check_command(CheckOptions(output_format=Format.NPD)) == 2
    assert check_command(CheckOptions(output_format=Format.TEXT)) == unknown.exit_code


@dataclasses.dataclass
class _Settings:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    require: tuple[str, ...] = ()
    fail_on: str | None = None


def test_fast_path_takes_the_scheduler_formats():
    from cudadoctor.entry import fast_check_options

    for name in ("slurm", "npd", "health-json"):
        options = fast_check_options(["check", "-f", name])
        assert options is not None and options.output_format is Format(name)


def test_npd_line_is_cut_in_bytes_not_characters():
    from cudadoctor.report.scheduler import NodeVerdict

    finding = dataclasses.replace(
        next(f for f in report(_health()).findings if f.code == "CD151"), status=Status.FAIL, message="×" * 100
    )
    cut = reason_line(NodeVerdict("problem", 1, (finding,)), NPD_MAX)
    assert len(cut.encode()) <= NPD_MAX and cut.startswith("cudadoctor: FAIL CD151: ×") and cut.endswith("...")
