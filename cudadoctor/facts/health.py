"""Health facts: what NVML, sysfs and the kernel log say about the GPUs' hardware state.

No judgement here: the CD15x checks judge. ``None`` means NVML did not answer that question for this
GPU; :attr:`GpuHealth.unsupported` names the questions NVML refused with NOT_SUPPORTED (a SKU without
ECC), which is an answer ("not applicable"), not a missing fact. Counters are NVML's own units.
"""

from __future__ import annotations

import re
from dataclasses import field

from cudadoctor.record import record

__all__ = [
    "DcgmDiag",
    "DcgmEntityResult",
    "DcgmTest",
    "GpuHealth",
    "HealthInfo",
    "HostHealth",
    "UtilSample",
    "XidEvent",
]


@record
class UtilSample:
    """One entry of the driver's utilization ring buffer (``nvmlDeviceGetSamples``)."""

    timestamp_us: int
    percent: int


@record
class GpuHealth:
    """One GPU's health answers from NVML."""

    index: int
    name: str | None = None
    pci_bus_id: str | None = None  #: NVML's form, ``00000000:17:00.0``
    architecture: int | None = None  #: nvmlDeviceArchitecture_t: 7 Ampere, 8 Ada, 9 Hopper, 10 Blackwell
    lost: bool = False  #: a call returned NVML_ERROR_GPU_IS_LOST
    #: calls NVML refused with NOT_SUPPORTED (an answer: the SKU lacks the feature)
    unsupported: tuple[str, ...] = ()
    #: calls that failed for another reason, "call: message"
    errors: tuple[str, ...] = ()
    recovery_action: int | None = None  #: nvmlGpuRecoveryAction_t: 0 none, 1 GPU reset, 2 node reboot, …
    ecc_current: bool | None = None
    ecc_pending: bool | None = None
    ecc_corrected_volatile: int | None = None
    ecc_uncorrected_volatile: int | None = None
    ecc_corrected_aggregate: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    sram_corrected_volatile: int | None = None
    sram_uncorrected_volatile: int | None = None
    dram_uncorrected_volatile: int | None = None
    remapped_correctable: int | None = None
    remapped_uncorrectable: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    retired_pages_pending: bool | None = None
    retired_pages: int | None = None  #: single-bit + double-bit retired pages (before Ampere)
    clock_event_reasons: int | None = None  #: nvmlClocksEventReasons bit mask
    violation_power_ns: int | None = None  #: time clocks were held by the power policy since driver load
    violation_thermal_ns: int | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None  #: the system's maximum (GPU and host)
    pcie_gen_gpu_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    pcie_replays: int | None = None
    nvlink_active: tuple[bool, ...] = ()  #: per link; empty without NVLink
    nvlink_errors: dict[str, int] = field(default_factory=dict)  #: totals by counter name
    fabric_state: int | None = None  #: nvmlGpuFabricState_t: 0 n/a, 1 not started, 2 in progress, 3 completed
    fabric_status: int | None = None  #: an nvmlReturn_t; 0 = success
    persistence: bool | None = None
    display_active: bool | None = None
    mig_current: bool | None = None
    mig_pending: bool | None = None
    gsp_firmware: str | None = None
    util_gpu_percent: int | None = None  #: utilization.gpu: any kernel running in the last sample period
    util_memory_percent: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    processes: int | None = None  #: compute processes NVML lists (host PIDs; may be empty in a container)
    memory_used_mib: int | None = None
    samples: tuple[UtilSample, ...] = ()  #: only with the utilization view
    gpm_supported: bool | None = None
    gpm: dict[str, float] = field(default_factory=dict)  #: GPM metrics over ``gpm["seconds"]``


@record
class XidEvent:
    """One ``NVRM: Xid`` line of the kernel log."""

    code: int
    pci: str  #: as the driver wrote it, ``0000:17:00``
    seconds_after_boot: float | None = None
    text: str = ""


@record
class HostHealth:
    """What the host (not NVML) says: PCI functions, the kernel log, NCCL prerequisites."""

    #: NVIDIA display/3D controllers in /sys/bus/pci/devices (class 0x0300/0x0302, vendor 0x10de)
    pci_functions: tuple[str, ...] = ()
    #: the kernel driver each of those functions is bound to ("" unbound), same order
    pci_drivers: tuple[str, ...] = ()
    #: None: the kernel log was read; else why not (e.g. "/dev/kmsg: Permission denied")
    kernel_log_error: str | None = None
    kernel_log_first_s: float | None = None  #: the oldest record's time after boot (0 = the log starts at boot)
    xids: tuple[XidEvent, ...] = ()
    uptime_s: float | None = None
    shm_bytes: int | None = None
    memlock_bytes: int | None = None  #: -1 = unlimited
    modules: tuple[str, ...] = ()  #: loaded modules of interest: nvidia_peermem, nvidia_fs, ib_core …
    ib_ports: dict[str, str] = field(default_factory=dict)  #: "mlx5_0/1" -> "4: ACTIVE"
    nvswitches: int = 0  #: NVSwitch PCI functions (class 0x0680, vendor 0x10de)
    fabric_manager_version: str | None = None


@record
class HealthInfo:
    """The health category's facts."""

    #: None when NVML answered; else why not ("NVML did not answer within 5 s")
    nvml_error: str | None = None
    nvml_count: int | None = None
    driver_version: str | None = None
    gpus: tuple[GpuHealth, ...] = ()
    host: HostHealth = field(default_factory=HostHealth)
    query_ms: float | None = None


@record
class DcgmEntityResult:
    """One entity's result of one DCGM diagnostic test, as ``dcgmi diag -j`` reported it."""

    entity: str  #: ``GPU 0`` (DCGM's entity group and id)
    status: str  #: DCGM's word: ``Pass``, ``Fail``, ``Warn``, ``Skip``
    warnings: tuple[str, ...] = ()


@record
class DcgmTest:
    """One test of a DCGM diagnostic run (``software``, ``memory``, ``pcie`` …)."""

    category: str  #: ``Deployment``, ``Hardware``, ``Integration`` …
    name: str
    status: str  #: the test's summary status (DCGM 4), else the worst of its results (DCGM 3)
    results: tuple[DcgmEntityResult, ...] = ()
    info: tuple[str, ...] = ()  #: the test summary's info lines


@record
class DcgmDiag:
    """What ``dcgmi diag -r LEVEL -j`` answered, when ``check --dcgm-diag LEVEL`` asked for it."""

    level: int
    command: str  #: the command line run
    #: why there is no result: dcgmi missing, no host engine, timed out, not JSON, DCGM's runtime_error
    error: str | None = None
    returncode: int | None = None
    seconds: float | None = None
    dcgm_version: str | None = None  #: ``metadata.version``
    driver_version: str | None = None  #: ``Driver Version Detected``
    tests: tuple[DcgmTest, ...] = ()


def short_pci(bus_id: str) -> str:
    """``00000000:17:00.0`` (NVML) or ``0000:17:00`` (Xid line) -> ``0000:17:00``, lower case."""
    text = bus_id.strip().lower()
    text = text.split(".", 1)[0]
    parts = text.split(":")
    if len(parts) != 3:
        return text
    domain, bus, device = parts
    return f"{int(domain, 16) & 0xFFFF:04x}:{bus}:{device}" if re.fullmatch(r"[0-9a-f]+", domain) else text
