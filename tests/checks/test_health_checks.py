"""The CD15x/CD16x health checks, on NVML answers replayed from a record.

tests/fixtures/health/h200.json is the record bench/capture_health.py captured on a real H200 (driver
580.159.04, 2026-12-01); h200-derived.json, derived earlier from measurements and NVML's documented return
codes, is kept for the fields the capture could not exercise. Each test changes one answer of the healthy
record the way NVML reports the fault.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import replace
from typing import Any

import pytest

from cudadoctor.checks import ALL_CHECKS
from cudadoctor.checks._base import CannotJudge, NotApplicable
from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.health import HealthInfo, HostHealth, XidEvent
from cudadoctor.facts.model import ContainerInfo, HostInfo
from cudadoctor.probes.health_parse import parse_gpu

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "health", "h200.json")
NS = {"e": "Not Supported", "c": 3}
M = CompatMatrix()


def record() -> dict[str, Any]:
    with open(FIXTURE, encoding="utf-8") as handle:
        return json.load(handle)


def health(changes: dict[str, Any] | None = None, *, host: HostHealth | None = None, gpus: int = 1) -> HealthInfo:
    rec = record()
    device = rec["devices"][0]
    device.update(changes or {})
    parsed = []
    for i in range(gpus):
        d = copy.deepcopy(device)
        d["index"] = i
        parsed.append(parse_gpu(d))
    return HealthInfo(
        nvml_count=gpus,
        driver_version="580.159.04",
        gpus=tuple(parsed),
        host=host or HostHealth(pci_functions=("0000:00:06.0",), pci_drivers=("nvidia",), uptime_s=3600.0),
    )


def run(code: str, **kwargs: Any) -> Any:
    return ALL_CHECKS[code].check(**kwargs)  # type: ignore[attr-defined]


BARE = HostInfo(os="Linux", arch="x86_64")
CONTAINER = HostInfo(
    os="Linux", arch="x86_64", container=ContainerInfo(in_container=True, runtime="docker", markers=("/.dockerenv",))
)


def test_the_healthy_h200_passes_every_health_check_or_says_why_not():
    h = health()
    assert run("CD150", health=h, host=BARE) is None
    for code in ("CD151", "CD152", "CD153", "CD154", "CD155", "CD157", "CD158", "CD161", "CD162", "CD163"):
        assert run(code, health=h) is None, code
    assert run("CD156", health=h, matrix=M) is None
    for code in ("CD159", "CD160", "CD165", "CD166"):
        with pytest.raises(NotApplicable):
            run(code, health=h)


# --- CD150 presence --------------------------------------------------------------------------------


def test_cd150_fails_for_a_lost_gpu():
    h = health({"power_usage_mw": {"e": "GPU is lost", "c": 15}})
    problem = run("CD150", health=h, host=BARE)
    assert "lost" in problem.message


def test_cd150_fails_when_nvml_sees_fewer_gpus_than_the_bus_outside_a_container():
    pci = HostHealth(pci_functions=("0000:00:06.0", "0000:18:00.0"), pci_drivers=("nvidia", "nvidia"))
    h = health(host=pci)
    assert "NVML sees 1" in run("CD150", health=h, host=BARE).message
    assert run("CD150", health=h, host=CONTAINER) is None  # a container's subset is explained


def test_cd150_a_vfio_bound_gpu_is_not_missing():
    pci = HostHealth(pci_functions=("0000:00:06.0", "0000:18:00.0"), pci_drivers=("nvidia", "vfio-pci"))
    assert run("CD150", health=health(host=pci), host=BARE) is None


def test_cd150_not_applicable_without_gpus_and_unknown_when_nvml_fails_without_pci_binding():
    with pytest.raises(NotApplicable):
        run("CD150", health=HealthInfo(), host=BARE)
    unbound = HostHealth(pci_functions=("0000:00:06.0",), pci_drivers=("",))
    with pytest.raises(CannotJudge):
        run("CD150", health=HealthInfo(nvml_error="Driver Not Loaded", host=unbound), host=BARE)
    bound = HostHealth(pci_functions=("0000:00:06.0",), pci_drivers=("nvidia",))
    assert run("CD150", health=HealthInfo(nvml_error="Unknown Error", host=bound), host=BARE) is not None


# --- CD151 recovery action -------------------------------------------------------------------------


def test_cd151_fails_when_the_driver_asks_for_a_reset():
    fields = record()["devices"][0]["field_values"]
    fields["v"]["recovery_action"] = {"c": 0, "v": 1}
    problem = run("CD151", health=health({"field_values": fields}))
    assert "GPU reset" in problem.message
    assert problem.remediation.commands == ("sudo nvidia-smi -r -i 0",)


def test_cd151_could_not_judge_when_the_field_is_refused():
    fields = record()["devices"][0]["field_values"]
    fields["v"]["recovery_action"] = {"c": 2, "v": None}  # an older driver: INVALID_ARGUMENT for the field
    with pytest.raises(CannotJudge):
        run("CD151", health=health({"field_values": fields}))


# --- CD152 row remapping ---------------------------------------------------------------------------


def test_cd152_pending_warns_and_failure_fails():
    pending = run("CD152", health=health({"remapped_rows": {"v": [0, 1, 1, 0]}}))
    assert pending.status is Status.WARN and "next GPU reset" in pending.message
    failed = run("CD152", health=health({"remapped_rows": {"v": [0, 9, 0, 1]}}))
    assert failed.status is None and "RMA" in failed.remediation.text


def test_cd152_reads_page_retirement_before_ampere_and_is_na_without_either():
    volta = {"architecture": {"v": 5}, "remapped_rows": NS, "retired_pages_pending": {"v": 1}}
    assert run("CD152", health=health(volta)).status is Status.WARN
    with pytest.raises(NotApplicable):
        run("CD152", health=health({**volta, "retired_pages_pending": NS}))


def test_cd152_unknown_when_nvml_fails_on_an_ampere_gpu():
    with pytest.raises(CannotJudge):
        run("CD152", health=health({"remapped_rows": {"e": "Unknown Error", "c": 999}}))


# --- CD153/CD154/CD155 ECC -------------------------------------------------------------------------


def test_cd153_fails_on_uncorrectable_volatile_errors():
    problem = run("CD153", health=health({"ecc_uncorrected_volatile": {"v": 2}}))
    assert "uncorrectable" in problem.message


def test_ecc_checks_are_not_applicable_on_a_sku_without_ecc():
    no_ecc = {"ecc_mode": NS, "ecc_uncorrected_volatile": NS, "ecc_corrected_volatile": NS}
    for code in ("CD153", "CD154", "CD155"):
        with pytest.raises(NotApplicable):
            run(code, health=health(no_ecc))
    with pytest.raises(NotApplicable):
        run("CD153", health=health({"ecc_mode": {"v": [0, 0]}}))


def test_cd153_could_not_judge_when_the_counter_fails():
    with pytest.raises(CannotJudge):
        run("CD153", health=health({"ecc_uncorrected_volatile": {"e": "Unknown Error", "c": 999}}))


def test_cd154_warns_above_the_sram_threshold_with_a_rate():
    problem = run(
        "CD154", health=health({"ecc_corrected_volatile": {"v": 36000}, "ecc_corrected_volatile_sram": {"v": 12000}})
    )
    assert problem.status is None and "36000/h" in next(iter(problem.evidence.values()))
    assert run("CD154", health=health({"ecc_corrected_volatile": {"v": 5000}})) is None


def test_cd155_warns_on_a_pending_ecc_change():
    assert "pending" in run("CD155", health=health({"ecc_mode": {"v": [1, 0]}})).message


# --- CD156 Xid history -----------------------------------------------------------------------------


def _with_xids(*events: XidEvent, error: str | None = None) -> HostHealth:
    return HostHealth(pci_functions=("0000:00:06.0",), pci_drivers=("nvidia",), xids=events, kernel_log_error=error)


def test_cd156_could_not_judge_an_unreadable_log():
    with pytest.raises(CannotJudge, match="dmesg_restrict"):
        run("CD156", health=health(host=_with_xids(error="/dev/kmsg: Operation not permitted")), matrix=M)


def test_cd156_app_xids_are_not_a_node_problem():
    assert (
        run("CD156", health=health(host=_with_xids(XidEvent(13, "0000:00:06"), XidEvent(31, "0000:00:06"))), matrix=M)
        is None
    )


def test_cd156_a_reset_xid_fails_while_the_driver_asks_for_recovery_and_warns_after():
    fields = record()["devices"][0]["field_values"]
    fields["v"]["recovery_action"] = {"c": 0, "v": 1}
    xid = _with_xids(XidEvent(119, "0000:00:06"))
    failing = run("CD156", health=health({"field_values": fields}, host=xid), matrix=M)
    assert failing.status is Status.FAIL and "GSP_RPC_TIMEOUT" in next(iter(failing.evidence.values()))
    assert run("CD156", health=health(host=xid), matrix=M).status is Status.WARN


def test_cd156_an_xid_not_in_the_table_is_reported_with_the_catalog():
    problem = run("CD156", health=health(host=_with_xids(XidEvent(999, "0000:99:00"))), matrix=M)
    assert problem.status is Status.FAIL and "analyzing-xid-catalog" in next(iter(problem.evidence.values()))


def test_every_xid_row_has_a_known_verdict():
    assert {x.verdict for x in M.xid_entries.values()} <= {"app", "watch", "reset", "reboot", "replace"}


# --- CD157 throttling ------------------------------------------------------------------------------


def test_cd157_sw_power_cap_and_idle_are_normal_hw_slowdown_is_not():
    assert run("CD157", health=health({"clock_event_reasons": {"v": 0x4 | 0x1}})) is None
    assert "HW slowdown" in run("CD157", health=health({"clock_event_reasons": {"v": 0x8}})).message


def test_cd157_thermal_history_as_a_share_of_uptime():
    hot = {"violation_thermal": {"v": {"referenceTime": 0, "violationTime": int(0.05 * 3600e9)}}}
    assert "5.0%" in run("CD157", health=health(hot)).message


def test_cd157_could_not_judge_without_reasons():
    with pytest.raises(CannotJudge):
        run("CD157", health=health({"clock_event_reasons": {"e": "Unknown Error", "c": 999}}))


# --- CD158 PCIe ------------------------------------------------------------------------------------


def test_cd158_narrow_link_fails_idle_gen_is_fine_busy_gen_warns():
    assert "x8 of x16" in next(iter(run("CD158", health=health({"pcie_width_current": {"v": 8}})).evidence.values()))
    assert run("CD158", health=health({"pcie_gen_current": {"v": 1}})) is None  # idle downshift
    busy = {"pcie_gen_current": {"v": 3}, "utilization_rates": {"v": {"gpu": 90, "memory": 10}}}
    assert run("CD158", health=health(busy)).status is Status.WARN


def test_cd158_could_not_judge_without_width():
    with pytest.raises(CannotJudge):
        run("CD158", health=health({"pcie_width_current": {"e": "Unknown Error", "c": 999}}))


# --- CD159/CD160 NVLink and fabric -----------------------------------------------------------------


def test_cd159_inactive_link_fails():
    states = [{"v": 1}] * 17 + [{"v": 0}]
    assert "links down: [17]" in next(iter(run("CD159", health=health({"nvlink_states": states})).evidence.values()))
    assert run("CD159", health=health({"nvlink_states": [{"v": 1}] * 18})) is None


def test_cd160_fabric_manager_version_must_equal_the_driver():
    fm = HostHealth(nvswitches=4, fabric_manager_version="580.95.05")
    assert "differs from driver 580.159.04" in run("CD160", health=health(host=fm)).message
    same = HostHealth(nvswitches=4, fabric_manager_version="580.159.04")
    assert run("CD160", health=health({"fabric": {"v": {"state": 3, "status": 0}}}, host=same)) is None
    assert "not trained" in run("CD160", health=health({"fabric": {"v": {"state": 2, "status": 0}}}, host=same)).message
    assert "without an installed" in run("CD160", health=health(host=HostHealth(nvswitches=4))).message


# --- CD161-CD163 -----------------------------------------------------------------------------------


def test_cd161_persistence_off_warns_unless_a_display_keeps_the_driver():
    assert "1-3 s" in run("CD161", health=health({"persistence_mode": {"v": 0}})).message
    assert run("CD161", health=health({"persistence_mode": {"v": 0}, "display_active": {"v": 1}})) is None


def test_cd162_pending_mig_change_warns():
    assert "pending" in run("CD162", health=health({"mig_mode": {"v": [0, 1]}})).message
    with pytest.raises(NotApplicable):
        run("CD162", health=health({"mig_mode": NS}))


def test_cd163_gsp_firmware_must_be_the_drivers():
    problem = run("CD163", health=health({"gsp_firmware_version": {"v": "550.54.15"}}))
    assert "550.54.15" in next(iter(problem.evidence.values()))
    with pytest.raises(NotApplicable):
        run("CD163", health=health({"gsp_firmware_version": NS}))
    with pytest.raises(CannotJudge):
        run("CD163", health=replace(health(), driver_version=None))


# --- CD164-CD166 NCCL host prerequisites -----------------------------------------------------------


def test_cd164_small_shm_in_a_multi_gpu_container_warns():
    small = HostHealth(shm_bytes=64 << 20)
    assert "64 MiB" in run("CD164", health=health(host=small, gpus=2), host=CONTAINER).message
    with pytest.raises(NotApplicable):
        run("CD164", health=health(host=small, gpus=2), host=BARE)
    with pytest.raises(CannotJudge):
        run("CD164", health=health(host=HostHealth(), gpus=2), host=CONTAINER)
    assert run("CD164", health=health(host=HostHealth(shm_bytes=2 << 30), gpus=2), host=CONTAINER) is None


def test_cd165_and_cd166_with_an_infiniband_hca():
    ib = {"mlx5_0/1": "4: ACTIVE"}
    limited = HostHealth(ib_ports=ib, memlock_bytes=65536, pci_functions=("0000:00:06.0",))
    assert "65536" in run("CD165", health=health(host=limited)).message
    assert run("CD165", health=health(host=replace(limited, memlock_bytes=-1))) is None
    with pytest.raises(CannotJudge):
        run("CD165", health=health(host=replace(limited, memlock_bytes=None)))
    assert "nvidia_peermem" in run("CD166", health=health(host=limited)).message
    assert run("CD166", health=health(host=replace(limited, modules=("nvidia_peermem",)))) is None
