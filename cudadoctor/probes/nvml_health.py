"""NVML's health answers, recorded as plain JSON so that a capture on a real GPU replays in tests.

Every NVML call the health probe makes goes through :func:`query_health` and is stored under a
stable key as ``{"v": value}`` or ``{"e": message, "c": nvmlReturn}``: a value, or why there is none
(``NVML_ERROR_NOT_SUPPORTED`` = 3 on a SKU without the feature is an answer, not a failure). The probe
parses that record (:mod:`cudadoctor.probes.health`); it never sees pynvml. Probes reach NVML only
through the :class:`HealthSource` protocol: :class:`cudadoctor.probes.native.RealHealthSource` on the
machine itself (a daemon thread with a deadline, so a wedged driver cannot hang the doctor),
:class:`RecordedHealthSource` in tests (the JSON ``bench/capture_health.py`` wrote on the device),
:class:`NullHealthSource` for an image root or ``--no-health``.

Cost measured on an H200 (driver 580.159.04): the per-device calls below take about 9 ms together,
``nvmlDeviceGetSamples`` 2.8 ms; only the utilization view asks for samples and GPM.
"""

from __future__ import annotations

import ctypes
import time

from cudadoctor.probes.nvml_calls import load_nvml_library, nvml_binding

__all__ = [
    "HEALTH_TIMEOUT",
    "NO_NVML",
    "RECORD_SCHEMA",
    "NullHealthSource",
    "RecordedHealthSource",
    "init_failure",
    "query_health",
]

#: Seconds allowed for the whole health query; NVML answers in ~10 ms per GPU on a healthy driver.
HEALTH_TIMEOUT = 5.0
#: The ``init`` code recorded when there is no NVML library or binding at all (not an nvmlReturn_t).
NO_NVML = -3
#: Version of the recorded layout (bump when a key changes meaning).
RECORD_SCHEMA = 1

# The helper process imports this module: no `typing` at run time (with `re`, which it pulls in, ~1.7 MB of the
# helper's memory, measured on the H200). Type checkers read the names below.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    Record: TypeAlias = dict[str, Any]

# Field ids from nvml.h (pynvml constants of the same names); read as one nvmlDeviceGetFieldValues call.
# NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (230) replaces the deprecated RESET_STATUS / DRAIN_AND_RESET_STATUS
# (226/227): https://docs.nvidia.com/deploy/nvml-api/group__nvmlFieldValueQueries.html
FIELD_IDS: dict[str, int] = {
    "recovery_action": 230,
    "nvlink_crc_flit_total": 38,
    "nvlink_crc_data_total": 45,
    "nvlink_replay_total": 52,
    "nvlink_recovery_total": 59,
}
#: NVML_PERF_POLICY_POWER / _THERMAL (nvmlPerfPolicyType_t) for nvmlDeviceGetViolationStatus.
VIOLATION_POLICIES: dict[str, int] = {"power": 0, "thermal": 1}
#: NVML_MEMORY_LOCATION_DRAM / _SRAM for nvmlDeviceGetMemoryErrorCounter.
MEMORY_LOCATIONS: dict[str, int] = {"dram": 2, "sram": 7}
#: NVML_GPM_METRIC_GRAPHICS_UTIL, _SM_UTIL, _SM_OCCUPANCY, _ANY_TENSOR_UTIL, _DRAM_BW_UTIL.
GPM_METRICS: dict[str, int] = {"graphics": 1, "sm": 2, "sm_occupancy": 3, "tensor": 5, "dram_bw": 10}
NVLINK_MAX_LINKS = 18  # links per GPU on NVLink 4/5 (H100/B200); NVML stops answering past the last one


class NullHealthSource:
    """Calls nothing; the record says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def query(self, *, utilization: bool = False, sample_seconds: float = 0.0) -> Record:
        return {"schema": RECORD_SCHEMA, "skipped": self.reason}


class RecordedHealthSource:
    """Replays a record (a capture from a real GPU, or one a test wrote)."""

    def __init__(self, record: Record) -> None:
        self.record = record

    def query(self, *, utilization: bool = False, sample_seconds: float = 0.0) -> Record:
        return self.record


def _plain(value: Any) -> Any:
    """A JSON-able copy of what pynvml returned (ctypes structures become dicts)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (ctypes.Structure, ctypes.Union)):
        return {name: _plain(getattr(value, name)) for name, *_ in value._fields_}
    if isinstance(value, ctypes.Array):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if type(value).__name__ == "nvmlFriendlyObject":  # pynvml's process entries
        return {k: _plain(v) for k, v in vars(value).items()}
    return str(value)


def _bind(func: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """``functools.partial(func, *args)``, without importing functools and collections (the helper's memory)."""
    return lambda: func(*args)


def _call(nv: Any, out: Record, key: str, func: Callable[[], Any]) -> Any:
    try:
        value = _plain(func())
    except nv.NVMLError as exc:
        out[key] = {"e": str(exc), "c": int(getattr(exc, "value", -1))}
        return None
    except Exception as exc:  # an old binding lacks a function: record it like NVML's own refusal
        out[key] = {"e": f"{type(exc).__name__}: {exc}", "c": -2}
        return None
    out[key] = {"v": value}
    return value


def init_failure(why: str) -> Record:
    """The record of a health query that got no answer at all (a timeout, a helper that failed): init failed."""
    return {"schema": RECORD_SCHEMA, "init": {"e": why, "c": -1}}


def query_health(utilization: bool = False, sample_seconds: float = 0.0) -> Record:
    """Every NVML answer the health probe uses, as JSON-able data (the capture script calls this too)."""
    out: Record = {"schema": RECORD_SCHEMA}
    missing = load_nvml_library()
    if missing is not None:
        out["init"] = {"e": f"NVML Shared Library Not Found ({missing})", "c": NO_NVML}
        return out
    try:
        pynvml = nvml_binding()  # imported only on a machine that has NVML
    except ImportError:
        out["init"] = {"e": "nvidia-ml-py is not installed", "c": NO_NVML}
        return out
    start = time.perf_counter()
    if _call(pynvml, out, "init", pynvml.nvmlInit) is None and "e" in out["init"]:
        return out
    # No nvmlShutdown, as in cudadoctor.probes.native: one reference-counted init serves both probes.
    _call(pynvml, out, "driver_version", pynvml.nvmlSystemGetDriverVersion)
    _call(pynvml, out, "nvml_version", pynvml.nvmlSystemGetNVMLVersion)
    count = _call(pynvml, out, "count", pynvml.nvmlDeviceGetCount) or 0
    out["devices"] = [_device(pynvml, i, utilization) for i in range(int(count))]
    if utilization and sample_seconds > 0:
        _gpm_window(pynvml, out["devices"], sample_seconds)
    out["elapsed_ms"] = round((time.perf_counter() - start) * 1000, 2)
    return out


def _device(nv: Any, index: int, utilization: bool) -> Record:
    out: Record = {"index": index}
    handle = _call(nv, out, "handle", lambda: nv.nvmlDeviceGetHandleByIndex(index))
    if handle is None and "e" in out["handle"]:
        return out
    h = nv.nvmlDeviceGetHandleByIndex(index)
    out.pop("handle")
    _identity(nv, h, out)
    _memory_health(nv, h, out)
    _clocks_and_links(nv, h, out)
    if utilization:
        _utilization(nv, h, out)
    return out


def _identity(nv: Any, h: Any, out: Record) -> None:
    _call(nv, out, "name", lambda: nv.nvmlDeviceGetName(h))
    _call(nv, out, "pci_bus_id", lambda: nv.nvmlDeviceGetPciInfo(h).busId)
    _call(nv, out, "architecture", lambda: nv.nvmlDeviceGetArchitecture(h))
    _call(nv, out, "persistence_mode", lambda: nv.nvmlDeviceGetPersistenceMode(h))
    _call(nv, out, "display_active", lambda: nv.nvmlDeviceGetDisplayActive(h))
    _call(nv, out, "mig_mode", lambda: list(nv.nvmlDeviceGetMigMode(h)))
    _call(nv, out, "gsp_firmware_version", lambda: nv.nvmlDeviceGetGspFirmwareVersion(h))
    _call(nv, out, "gsp_firmware_mode", lambda: list(nv.nvmlDeviceGetGspFirmwareMode(h)))
    _call(nv, out, "utilization_rates", lambda: nv.nvmlDeviceGetUtilizationRates(h))
    _call(nv, out, "power_usage_mw", lambda: nv.nvmlDeviceGetPowerUsage(h))
    _call(nv, out, "enforced_power_limit_mw", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
    _call(nv, out, "compute_processes", lambda: nv.nvmlDeviceGetComputeRunningProcesses(h))
    _call(nv, out, "memory_used_bytes", lambda: nv.nvmlDeviceGetMemoryInfo(h).used)
    fields = _call(nv, out, "field_values", lambda: nv.nvmlDeviceGetFieldValues(h, list(FIELD_IDS.values())))
    if fields is not None:
        out["field_values"] = {"v": dict(zip(FIELD_IDS, (_field(f) for f in fields), strict=False))}


def _field(value: dict[str, Any]) -> dict[str, Any]:
    """One nvmlFieldValue_t: its own return code, and the union member its valueType names."""
    members = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")
    kind = int(value.get("valueType", 1))
    union = value.get("value") or {}
    member = members[kind] if 0 <= kind < len(members) else "uiVal"
    return {"c": int(value.get("nvmlReturn", 0)), "v": union.get(member) if isinstance(union, dict) else None}


def _memory_health(nv: Any, h: Any, out: Record) -> None:
    _call(nv, out, "ecc_mode", lambda: list(nv.nvmlDeviceGetEccMode(h)))
    for err_name, err in (("corrected", 0), ("uncorrected", 1)):
        for counter_name, counter in (("volatile", 0), ("aggregate", 1)):
            key = f"ecc_{err_name}_{counter_name}"
            _call(nv, out, key, _bind(nv.nvmlDeviceGetTotalEccErrors, h, err, counter))
        for loc_name, loc in MEMORY_LOCATIONS.items():
            key = f"ecc_{err_name}_volatile_{loc_name}"
            _call(nv, out, key, _bind(nv.nvmlDeviceGetMemoryErrorCounter, h, err, 0, loc))
    _call(nv, out, "remapped_rows", lambda: list(nv.nvmlDeviceGetRemappedRows(h)))
    _call(nv, out, "retired_pages_pending", lambda: nv.nvmlDeviceGetRetiredPagesPendingStatus(h))
    for cause_name, cause in (("single_bit", 0), ("double_bit", 1)):
        _call(nv, out, f"retired_pages_{cause_name}", _bind(_count, nv.nvmlDeviceGetRetiredPages, h, cause))


def _count(func: Callable[..., Any], *args: Any) -> int:
    return len(func(*args))


def _clocks_and_links(nv: Any, h: Any, out: Record) -> None:
    reasons = (
        getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
    )
    _call(nv, out, "clock_event_reasons", lambda: reasons(h))
    for name, policy in VIOLATION_POLICIES.items():
        _call(nv, out, f"violation_{name}", _bind(nv.nvmlDeviceGetViolationStatus, h, policy))
    _call(nv, out, "pcie_gen_current", lambda: nv.nvmlDeviceGetCurrPcieLinkGeneration(h))
    _call(nv, out, "pcie_gen_max", lambda: nv.nvmlDeviceGetMaxPcieLinkGeneration(h))
    _call(nv, out, "pcie_gen_gpu_max", lambda: nv.nvmlDeviceGetGpuMaxPcieLinkGeneration(h))
    _call(nv, out, "pcie_width_current", lambda: nv.nvmlDeviceGetCurrPcieLinkWidth(h))
    _call(nv, out, "pcie_width_max", lambda: nv.nvmlDeviceGetMaxPcieLinkWidth(h))
    _call(nv, out, "pcie_replay_counter", lambda: nv.nvmlDeviceGetPcieReplayCounter(h))
    states: list[Any] = []
    for link in range(NVLINK_MAX_LINKS):
        probe: Record = {}
        _call(nv, probe, "s", _bind(nv.nvmlDeviceGetNvLinkState, h, link))
        states.append(probe["s"])
        if "e" in probe["s"]:  # NOT_SUPPORTED (no NVLink) or INVALID_ARGUMENT (past the last link)
            break
    out["nvlink_states"] = states

    def fabric() -> Any:
        info = nv.c_nvmlGpuFabricInfo_t()
        nv.nvmlDeviceGetGpuFabricInfo(h, ctypes.byref(info))
        return {"state": int(info.state), "status": int(info.status)}

    _call(nv, out, "fabric", fabric)


def _utilization(nv: Any, h: Any, out: Record) -> None:
    """The driver's utilization ring buffer, per process too, and whether GPM metrics exist (Hopper and newer)."""

    def samples() -> list[list[int]]:
        # NVML_GPU_UTILIZATION_SAMPLES = 1; the values are unsigned ints (percent), timestamps in µs.
        _kind, rows = nv.nvmlDeviceGetSamples(h, 1, 0)
        return [[int(r.timeStamp), int(r.sampleValue.uiVal)] for r in rows]

    def process_samples() -> list[list[int]]:
        # nvmlDeviceGetProcessUtilization(h, 0): every sample the driver still holds, per process.
        rows = nv.nvmlDeviceGetProcessUtilization(h, 0)
        return [[int(r.pid), int(r.timeStamp), int(r.smUtil), int(r.memUtil)] for r in rows]

    def process_names() -> dict[str, str]:
        names: dict[str, str] = {}
        for proc in nv.nvmlDeviceGetComputeRunningProcesses(h):
            try:
                names[str(proc.pid)] = _plain(nv.nvmlSystemGetProcessName(proc.pid))
            except nv.NVMLError:  # a process of another PID namespace, or one that just ended
                continue
        return names

    _call(nv, out, "samples_gpu", samples)
    _call(nv, out, "process_samples", process_samples)
    _call(nv, out, "process_names", process_names)
    _call(nv, out, "memory_total_bytes", lambda: nv.nvmlDeviceGetMemoryInfo(h).total)
    _call(nv, out, "gpm_supported", lambda: nv.nvmlGpmQueryDeviceSupport(h).isSupportedDevice)


def _gpm_window(nv: Any, devices: list[Record], seconds: float) -> None:
    """GPM metrics of every GPU that has them, over one shared window of ``seconds`` (not one per GPU)."""
    taken: list[tuple[Record, Any, Any]] = []
    for device in devices:
        if not (device.get("gpm_supported") or {}).get("v"):
            continue
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(device["index"])
            first = nv.nvmlGpmSampleAlloc()
        except nv.NVMLError as exc:
            device["gpm"] = {"e": str(exc), "c": int(getattr(exc, "value", -1))}
            continue
        try:
            nv.nvmlGpmSampleGet(handle, first)
        except nv.NVMLError as exc:
            nv.nvmlGpmSampleFree(first)
            device["gpm"] = {"e": str(exc), "c": int(getattr(exc, "value", -1))}
            continue
        taken.append((device, handle, first))
    if not taken:
        return
    time.sleep(seconds)
    for device, handle, first in taken:
        _call(nv, device, "gpm", _bind(_gpm_metrics, nv, handle, first, seconds))


def _gpm_metrics(nv: Any, h: Any, first: Any, seconds: float) -> dict[str, Any]:
    second = nv.nvmlGpmSampleAlloc()
    try:
        nv.nvmlGpmSampleGet(h, second)
        request = nv.c_nvmlGpmMetricsGet_t()
        request.version = nv.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(GPM_METRICS)
        request.sample1, request.sample2 = first, second
        for slot, metric in enumerate(GPM_METRICS.values()):
            request.metrics[slot].metricId = metric
        nv.nvmlGpmMetricsGet(request)
        values = {name: float(request.metrics[i].value) for i, name in enumerate(GPM_METRICS)}
        return {"seconds": seconds, **values}
    finally:
        nv.nvmlGpmSampleFree(first)
        nv.nvmlGpmSampleFree(second)
