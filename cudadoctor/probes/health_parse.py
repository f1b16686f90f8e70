"""Parsing the health answers: NVML's record (:mod:`cudadoctor.probes.nvml_health`) and the kernel log.

Pure functions over data, so a record captured on a real GPU and a kernel log written by a test
parse the same way as the live machine's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cudadoctor.facts.health import GpuHealth, UtilSample, XidEvent, short_pci

__all__ = ["NVML_ERROR_GPU_IS_LOST", "NVML_ERROR_NOT_SUPPORTED", "parse_gpu", "parse_kmsg", "short_pci"]

# nvmlReturn_t values (nvml.h): https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_INVALID_ARGUMENT = 2

# The driver's Xid line: "NVRM: Xid (PCI:0000:17:00): 79, pid=..., GPU has fallen off the bus."
# (form as NVIDIA documents it: https://docs.nvidia.com/deploy/xid-errors/index.html)
_XID = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?\): (\d+)\b(.*)")


def _value(record: Mapping[str, Any], key: str) -> Any:
    answer = record.get(key)
    return answer.get("v") if isinstance(answer, dict) else None


def _int(record: Mapping[str, Any], key: str) -> int | None:
    value = _value(record, key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _pair(record: Mapping[str, Any], key: str) -> tuple[bool | None, bool | None]:
    value = _value(record, key)
    if isinstance(value, list) and len(value) >= 2:
        return bool(value[0]), bool(value[1])
    return None, None


def _refusals(record: Mapping[str, Any]) -> tuple[list[str], list[str], bool]:
    """(unsupported calls, other errors, lost) from every answer of one device."""
    unsupported: list[str] = []
    errors: list[str] = []
    lost = False
    for key, answer in record.items():
        if not isinstance(answer, dict) or "e" not in answer:
            continue
        code = answer.get("c")
        if code == NVML_ERROR_NOT_SUPPORTED:
            unsupported.append(key)
        else:
            errors.append(f"{key}: {answer['e']}")
        lost = lost or code == NVML_ERROR_GPU_IS_LOST
    return unsupported, errors, lost


def _fields(record: Mapping[str, Any]) -> dict[str, int]:
    """Field values that answered (each field has its own return code)."""
    values = _value(record, "field_values")
    if not isinstance(values, dict):
        return {}
    return {
        name: int(v["v"])
        for name, v in values.items()
        if isinstance(v, dict) and v.get("c") == 0 and isinstance(v.get("v"), (int, float))
    }


def _violation(record: Mapping[str, Any], key: str) -> int | None:
    value = _value(record, key)
    return int(value["violationTime"]) if isinstance(value, dict) and "violationTime" in value else None


def _nvlink(record: Mapping[str, Any]) -> tuple[bool, ...]:
    states = record.get("nvlink_states")
    if not isinstance(states, list):
        return ()
    return tuple(bool(s["v"]) for s in states if isinstance(s, dict) and "v" in s)


def _samples(record: Mapping[str, Any]) -> tuple[UtilSample, ...]:
    value = _value(record, "samples_gpu")
    if not isinstance(value, list):
        return ()
    return tuple(UtilSample(int(ts), int(pct)) for ts, pct in value)


def _watts(record: Mapping[str, Any], key: str) -> float | None:
    mw = _int(record, key)
    return mw / 1000 if mw is not None else None


def _flag(record: Mapping[str, Any], key: str) -> bool | None:
    value = _int(record, key)
    return None if value is None else bool(value)


def _memory_errors(record: Mapping[str, Any]) -> dict[str, Any]:
    """ECC counters and mode, row remapping and page retirement."""
    remap = _value(record, "remapped_rows")
    remap = remap if isinstance(remap, list) and len(remap) == 4 else [None] * 4
    ecc_current, ecc_pending = _pair(record, "ecc_mode")
    retired = [_int(record, "retired_pages_single_bit"), _int(record, "retired_pages_double_bit")]
    return {
        "ecc_current": ecc_current,
        "ecc_pending": ecc_pending,
        "ecc_corrected_volatile": _int(record, "ecc_corrected_volatile"),
        "ecc_uncorrected_volatile": _int(record, "ecc_uncorrected_volatile"),
        "ecc_corrected_aggregate": _int(record, "ecc_corrected_aggregate"),
        "ecc_uncorrected_aggregate": _int(record, "ecc_uncorrected_aggregate"),
        "sram_corrected_volatile": _int(record, "ecc_corrected_volatile_sram"),
        "sram_uncorrected_volatile": _int(record, "ecc_uncorrected_volatile_sram"),
        "dram_uncorrected_volatile": _int(record, "ecc_uncorrected_volatile_dram"),
        "remapped_correctable": None if remap[0] is None else int(remap[0]),
        "remapped_uncorrectable": None if remap[1] is None else int(remap[1]),
        "remap_pending": None if remap[2] is None else bool(remap[2]),
        "remap_failure": None if remap[3] is None else bool(remap[3]),
        "retired_pages_pending": _flag(record, "retired_pages_pending"),
        "retired_pages": None if None in retired else sum(r for r in retired if r is not None),
    }


def _links(record: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """Clocks' throttle reasons, PCIe, NVLink and the NVSwitch fabric."""
    fabric = _value(record, "fabric")
    fabric = fabric if isinstance(fabric, dict) else {}
    return {
        "clock_event_reasons": _int(record, "clock_event_reasons"),
        "violation_power_ns": _violation(record, "violation_power"),
        "violation_thermal_ns": _violation(record, "violation_thermal"),
        "pcie_gen_current": _int(record, "pcie_gen_current"),
        "pcie_gen_max": _int(record, "pcie_gen_max"),
        "pcie_gen_gpu_max": _int(record, "pcie_gen_gpu_max"),
        "pcie_width_current": _int(record, "pcie_width_current"),
        "pcie_width_max": _int(record, "pcie_width_max"),
        "pcie_replays": _int(record, "pcie_replay_counter"),
        "nvlink_active": _nvlink(record),
        "nvlink_errors": {k: v for k, v in fields.items() if k.startswith("nvlink_")},
        "fabric_state": fabric.get("state"),
        "fabric_status": fabric.get("status"),
    }


def _activity(record: Mapping[str, Any]) -> dict[str, Any]:
    """Modes, firmware and what the GPU is doing: utilization, power, processes, samples, GPM."""
    mig_current, mig_pending = _pair(record, "mig_mode")
    util = _value(record, "utilization_rates")
    util = util if isinstance(util, dict) else {}
    procs = _value(record, "compute_processes")
    used = _int(record, "memory_used_bytes")
    gpm = _value(record, "gpm")
    return {
        "persistence": _flag(record, "persistence_mode"),
        "display_active": _flag(record, "display_active"),
        "mig_current": mig_current,
        "mig_pending": mig_pending,
        "gsp_firmware": _value(record, "gsp_firmware_version") or None,
        "util_gpu_percent": util.get("gpu"),
        "util_memory_percent": util.get("memory"),
        "power_w": _watts(record, "power_usage_mw"),
        "power_limit_w": _watts(record, "enforced_power_limit_mw"),
        "processes": len(procs) if isinstance(procs, list) else None,
        "memory_used_mib": used // (1024 * 1024) if used is not None else None,
        "samples": _samples(record),
        "gpm_supported": _flag(record, "gpm_supported"),
        "gpm": {k: float(v) for k, v in gpm.items()} if isinstance(gpm, dict) else {},
    }


def parse_gpu(record: Mapping[str, Any]) -> GpuHealth:
    """One device's record -> :class:`GpuHealth`."""
    unsupported, errors, lost = _refusals(record)
    fields = _fields(record)
    return GpuHealth(
        index=int(record.get("index", 0)),
        name=_value(record, "name"),
        pci_bus_id=_value(record, "pci_bus_id"),
        architecture=_int(record, "architecture"),
        lost=lost,
        unsupported=tuple(unsupported),
        errors=tuple(errors),
        recovery_action=fields.get("recovery_action"),
        **_memory_errors(record),
        **_links(record, fields),
        **_activity(record),
    )


def parse_kmsg(text: str) -> tuple[float | None, tuple[XidEvent, ...]]:
    """(the first record's seconds after boot, the Xid events) from /dev/kmsg records.

    A /dev/kmsg record is ``priority,sequence,microseconds,flags;message``
    (https://www.kernel.org/doc/Documentation/ABI/testing/dev-kmsg); lines without that prefix (a
    saved ``dmesg`` file) are read as messages with no time.
    """
    first: float | None = None
    events: list[XidEvent] = []
    for line in text.splitlines():
        header, sep, message = line.partition(";")
        seconds: float | None = None
        if sep:
            parts = header.split(",")
            if len(parts) >= 3 and parts[2].isdigit():
                seconds = int(parts[2]) / 1e6
        else:
            message = line
        if first is None and seconds is not None:
            first = seconds
        match = _XID.search(message)
        if match:
            events.append(XidEvent(int(match.group(2)), short_pci(match.group(1)), seconds, message.strip()[:300]))
    return first, tuple(events)
