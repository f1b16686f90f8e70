"""CD150-CD199: GPU hardware health (the driver/GPU family's health part), from the ``health`` fact.

# CD150  every NVIDIA GPU on the PCI bus is reachable through NVML (or the gap is explained)
# CD151  the driver asks for no recovery action (reset, reboot, drain)
# CD152  no row remap is pending or has failed (Ampere+); no page retirement pending (older)
# CD153  no uncorrectable ECC error since the driver loaded
# CD154  corrected ECC errors stay below fleet thresholds
# CD155  no ECC mode change is pending
# CD156  the kernel log holds no Xid that needs a reset, reboot or replacement
# CD157  clocks are not held down by hardware slowdown or thermal limits
# CD158  each PCIe link runs at its full width (and, under load, full generation)
# CD159  every NVLink link is up
# CD160  on NVSwitch systems the fabric is trained and the fabric manager matches the driver
# CD161  persistence is on where nothing else keeps the driver loaded
# CD162  no MIG mode change is pending
# CD163  the GSP firmware is the driver's own
# CD164  /dev/shm is large enough for NCCL in a container
# CD165  the memlock limit lets NCCL pin memory
# CD166  nvidia_peermem is loaded where an InfiniBand HCA is present

Every check reads NVML's answers as recorded (:mod:`cudadoctor.probes.nvml_health`); a question NVML
refused with NOT_SUPPORTED makes the check *not applicable* for that GPU (a SKU without ECC has no ECC
errors to count), any other refusal makes it *could not judge*.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.checks.hostfix import driver_fixed_by
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.health import GpuHealth, HealthInfo
from cudadoctor.facts.model import DriverInfo, HostInfo, ManagedPlatform, VisibleDevices

__all__ = [
    "CD150",
    "CD151",
    "CD152",
    "CD153",
    "CD154",
    "CD155",
    "CD156",
    "CD157",
    "CD158",
    "CD159",
    "CD160",
    "CD161",
    "CD162",
    "CD163",
    "CD164",
    "CD165",
    "CD166",
    "RECOVERY_ACTIONS",
]

#: nvmlGpuRecoveryAction_t (nvml.h; https://docs.nvidia.com/deploy/nvml-api/group__nvmlFieldValueEnums.html)
RECOVERY_ACTIONS = {
    0: "none",
    1: "GPU reset",
    2: "node reboot",
    3: "drain peer-to-peer traffic",
    4: "drain and reset",
    5: "recover the IMEX domain",
    6: "bus reset",
    7: "system reboot",
}
_AMPERE = 7  # NVML_DEVICE_ARCH_AMPERE: row remapping replaces page retirement from here on
_XID_CATALOG = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"


def _nvml_gpus(health: HealthInfo) -> tuple[GpuHealth, ...]:
    if health.nvml_error and not health.gpus:
        raise CannotJudge(f"NVML did not answer: {health.nvml_error}")
    if not health.gpus:
        raise NotApplicable("NVML reports no GPU")
    return health.gpus


def _answered(
    gpus: Iterable[GpuHealth], calls: tuple[str, ...], value: Callable[[GpuHealth], object]
) -> list[GpuHealth]:
    """GPUs that answered: NotApplicable when every GPU refused with NOT_SUPPORTED, CannotJudge when one
    could not answer for another reason."""
    gpus = list(gpus)
    answered = [g for g in gpus if value(g) is not None]
    unsupported = [g for g in gpus if value(g) is None and any(c in g.unsupported for c in calls)]
    failed = [g for g in gpus if value(g) is None and g not in unsupported]
    if failed:
        errors = [e for g in failed for e in g.errors if e.split(":", 1)[0] in calls] or ["no answer"]
        raise CannotJudge(f"NVML did not answer {calls[0]} for GPU {failed[0].index}: {errors[0]}")
    if not answered:
        raise NotApplicable(f"not supported on {_names(unsupported)}")
    return answered


def _names(gpus: Iterable[GpuHealth]) -> str:
    return ", ".join(f"GPU {g.index} ({g.name or 'unknown'})" for g in gpus)


def _gpu(g: GpuHealth) -> str:
    return f"GPU {g.index} ({g.pci_bus_id or 'bus id unknown'})"


class _Health(Check):
    category = "health"


class CD150(_Health):
    """Every NVIDIA GPU on the PCI bus is reachable through NVML, or the gap has an explanation.

    What it checks: the NVIDIA display/3D controllers in /sys/bus/pci/devices and the kernel driver each is
    bound to, against the GPUs NVML counts; a GPU NVML reports as lost (NVML_ERROR_GPU_IS_LOST, Xid 79).
    A smaller NVML count is explained, not failed, inside a container (the runtime mounts a subset of the
    /dev/nvidia* nodes) and for functions bound to vfio-pci (passed through to a virtual machine).

    Why it matters: a GPU that fell off the bus or failed to initialise is invisible to every framework; jobs
    that ask for all GPUs of the node fail or silently run on fewer.

    How to fix: drain the node and reboot it; if the GPU stays missing, reseat or replace it.
    """

    name = "gpu-reachable"

    def check(self, health: HealthInfo, host: HostInfo, visible: VisibleDevices | None = None) -> Problem | None:
        pci = health.host.pci_functions
        bound = [f for f, d in zip(pci, health.host.pci_drivers, strict=False) if d == "nvidia"]
        lost = [g for g in health.gpus if g.lost]
        fix = Remediation(
            "drain the node and reboot it; if the GPU stays missing, reseat or replace it", ("sudo reboot",)
        )
        if lost:
            return Problem(f"NVML reports {_names(lost)} as lost (fallen off the bus)", {"lost": _names(lost)}, fix)
        if not pci and not health.gpus:
            raise NotApplicable("no NVIDIA GPU on the PCI bus")
        if health.nvml_error and not health.gpus:
            if bound:
                return Problem(
                    f"{len(bound)} GPU(s) are bound to the nvidia driver but NVML cannot reach them: "
                    f"{health.nvml_error}",
                    {"pci": " ".join(bound), "nvml": health.nvml_error},
                    fix,
                )
            raise CannotJudge(f"NVML did not answer: {health.nvml_error}")
        count = health.nvml_count if health.nvml_count is not None else len(health.gpus)
        in_container = bool(host.container and host.container.in_container)
        if count < len(bound) and not in_container:
            return Problem(
                f"{len(bound)} NVIDIA GPUs are bound to the nvidia driver on the PCI bus but NVML sees {count}: "
                "a GPU failed to initialise or fell off the bus",
                {"pci (nvidia)": " ".join(bound), "nvml count": str(count)},
                fix,
            )
        return None


class CD151(_Health):
    """The driver asks for no recovery action on any GPU.

    What it checks: NVML's field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION for each GPU: none, GPU reset, node
    reboot, drain peer-to-peer, drain and reset (nvmlGpuRecoveryAction_t).

    Why it matters: after a fault the driver records what it needs before the GPU can be trusted again.
    DCGM's health watches have reported "Healthy" for a GPU whose recovery action was Reset
    (https://github.com/NVIDIA/DCGM/issues/263); new jobs on it fail or compute wrong results.

    How to fix: drain the node, then do what the driver asks: `nvidia-smi -r -i <index>` for a GPU reset
    (no process may use the GPU), a reboot for a node reboot.
    """

    name = "gpu-recovery-action"

    def check(self, health: HealthInfo) -> Problem | None:
        gpus = _answered(_nvml_gpus(health), ("field_values",), lambda g: g.recovery_action)
        pending = [g for g in gpus if g.recovery_action]
        if not pending:
            return None
        said = {_gpu(g): RECOVERY_ACTIONS.get(g.recovery_action or 0, str(g.recovery_action)) for g in pending}
        reboot = any(g.recovery_action in (2, 7) for g in pending)
        commands = ("sudo reboot",) if reboot else tuple(f"sudo nvidia-smi -r -i {g.index}" for g in pending)
        return Problem(
            "the driver asks for recovery: " + "; ".join(f"{k}: {v}" for k, v in said.items()),
            said,
            Remediation(
                "drain the node, then " + ("reboot it" if reboot else "reset the GPU while nothing uses it"), commands
            ),
        )


class CD152(_Health):
    """No row remap is pending or has failed (Ampere and newer); no page retirement is pending (older GPUs).

    What it checks: nvmlDeviceGetRemappedRows (correctable, uncorrectable, pending, failure) on Ampere and
    newer; nvmlDeviceGetRetiredPagesPendingStatus and the retired-page count before Ampere.

    Why it matters: a pending remap takes effect at the next GPU reset; until then the faulty row stays in
    use, although "unaffected applications can continue running" (NVIDIA, A100 memory error management,
    https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html). A
    remapping failure (a bank out of spare rows) is the criterion for replacing the board.

    How to fix: pending: drain the node and reset the GPU at the next idle moment (`nvidia-smi -r`).
    Failure: take the GPU out of service and open a support case (RMA).
    """

    name = "gpu-row-remap"

    def check(self, health: HealthInfo) -> Problem | None:
        gpus = _nvml_gpus(health)
        if all(g.mig_current for g in gpus) and all(g.remap_pending is None for g in gpus):
            raise CannotJudge("row remapping is not queryable while MIG instances exist")
        newer = [g for g in gpus if (g.architecture or 0) >= _AMPERE]
        older = [g for g in gpus if g not in newer]
        failed = (
            [g for g in _answered(newer, ("remapped_rows",), lambda g: g.remap_pending) if g.remap_failure]
            if newer
            else []
        )
        if failed:
            return Problem(
                f"row remapping failed on {_names(failed)}: the board is out of spare rows",
                {_gpu(g): f"uncorrectable remaps {g.remapped_uncorrectable}" for g in failed},
                Remediation("take the GPU out of service and open an RMA case with the vendor"),
            )
        pending = [g for g in newer if g.remap_pending] + [g for g in older if g.retired_pages_pending]
        if not newer and not any(g.retired_pages_pending is not None for g in older):
            raise NotApplicable(f"neither row remapping nor page retirement is reported by {_names(older)}")
        if pending:
            return Problem(
                f"a memory row remap / page retirement is pending on {_names(pending)}: it takes effect at the next "
                "GPU reset",
                {_gpu(g): "pending" for g in pending},
                Remediation(
                    "drain the node and reset the GPU when it is idle",
                    tuple(f"sudo nvidia-smi -r -i {g.index}" for g in pending),
                ),
                Status.WARN,
            )
        return None


class CD153(_Health):
    """No uncorrectable ECC error happened since the driver loaded.

    What it checks: nvmlDeviceGetTotalEccErrors (uncorrected, volatile) and the SRAM part of it
    (nvmlDeviceGetMemoryErrorCounter, NVML_MEMORY_LOCATION_SRAM). Volatile counters start at zero when
    the driver loads; aggregate ones are the board's lifetime and are not judged here. A GPU without ECC
    (NOT_SUPPORTED) or with ECC disabled is not applicable, never "0 errors".

    Why it matters: an uncorrectable error corrupts or kills the job that touched the memory; SRAM
    uncorrectable errors fail Azure's health check outright
    (https://github.com/Azure/azurehpc-health-checks/blob/main/customTests/azure_gpu_ecc.nhc).

    How to fix: drain the node, check CD152 (a remap may be pending) and reset the GPU; if errors recur
    after the reset, replace the GPU.
    """

    name = "gpu-ecc-uncorrectable"

    def check(self, health: HealthInfo) -> Problem | None:
        gpus = _answered(_nvml_gpus(health), ("ecc_mode",), lambda g: g.ecc_current)
        enabled = [g for g in gpus if g.ecc_current]
        if not enabled:
            raise NotApplicable(f"ECC is disabled on {_names(gpus)}")
        counted = _answered(enabled, ("ecc_uncorrected_volatile",), lambda g: g.ecc_uncorrected_volatile)
        bad = [g for g in counted if (g.ecc_uncorrected_volatile or 0) > 0 or (g.sram_uncorrected_volatile or 0) > 0]
        if not bad:
            return None
        return Problem(
            f"uncorrectable ECC errors since the driver loaded on {_names(bad)}",
            {_gpu(g): f"{g.ecc_uncorrected_volatile} uncorrected (SRAM {g.sram_uncorrected_volatile})" for g in bad},
            Remediation(
                "drain the node and reset the GPU; replace it if the errors recur",
                tuple(f"sudo nvidia-smi -r -i {g.index}" for g in bad),
            ),
        )


#: Azure's thresholds for ND H100 v5 (check_gpu_ecc 20000000 10000):
#: https://github.com/Azure/azurehpc-health-checks/blob/main/conf/nd96isr_h100_v5.conf
DRAM_CORRECTED_LIMIT = 20_000_000
SRAM_CORRECTED_LIMIT = 10_000


class CD154(_Health):
    """Corrected ECC errors since the driver loaded stay below fleet thresholds.

    What it checks: corrected volatile ECC errors per GPU, total and SRAM, against the thresholds Azure
    applies to ND H100 v5 nodes (DRAM 20 000 000, SRAM corrected 10 000), with the rate per hour since
    boot in the evidence (a lower bound: the driver may have loaded after boot).

    Why it matters: corrected errors are routine, but a high rate marks degrading memory; a degrading HBM
    showed thousands of corrected errors per second only under load
    (https://github.com/NVIDIA/NVSentinel/issues/1748).

    How to fix: schedule the GPU for a reset and a DCGM memory test (`dcgmi diag -r 2`); replace it if the
    rate stays high.
    """

    name = "gpu-ecc-corrected-rate"
    severity = Status.WARN

    def check(self, health: HealthInfo) -> Problem | None:
        gpus = _answered(_nvml_gpus(health), ("ecc_mode",), lambda g: g.ecc_current)
        enabled = [g for g in gpus if g.ecc_current]
        if not enabled:
            raise NotApplicable(f"ECC is disabled on {_names(gpus)}")
        counted = _answered(enabled, ("ecc_corrected_volatile",), lambda g: g.ecc_corrected_volatile)
        high = [
            g
            for g in counted
            if (g.ecc_corrected_volatile or 0) > DRAM_CORRECTED_LIMIT
            or (g.sram_corrected_volatile or 0) > SRAM_CORRECTED_LIMIT
        ]
        if not high:
            return None
        hours = (health.host.uptime_s or 0) / 3600

        def rate(g: GpuHealth) -> str:
            per_hour = f", {(g.ecc_corrected_volatile or 0) / hours:.0f}/h since boot" if hours > 0 else ""
            return f"{g.ecc_corrected_volatile} corrected (SRAM {g.sram_corrected_volatile}){per_hour}"

        return Problem(
            f"corrected ECC errors above fleet thresholds on {_names(high)}",
            {_gpu(g): rate(g) for g in high},
            Remediation(
                "reset the GPU and run DCGM's memory test; replace the GPU if the rate stays high", ("dcgmi diag -r 2",)
            ),
        )


def _on(value: object) -> str:
    return "on" if value else "off"


def _pending_mode(
    health: HealthInfo, query: str, modes: Callable[[GpuHealth], tuple[object, object]]
) -> list[GpuHealth]:
    """The GPUs whose pending mode (ECC, MIG) differs from the current one; could not judge when unanswered."""
    gpus = _answered(_nvml_gpus(health), (query,), lambda g: modes(g)[0])
    return [g for g in gpus if modes(g)[1] is not None and modes(g)[1] != modes(g)[0]]


class CD155(_Health):
    """No ECC mode change is waiting for a reboot.

    What it checks: nvmlDeviceGetEccMode's pending mode against the current one.

    Why it matters: a pending change takes effect only after a reboot or GPU reset; until then the GPU runs
    in the old mode and memory capacity and error reporting differ from what was configured.

    How to fix: reset the GPU or reboot the node to apply the change, or set the mode back with
    `nvidia-smi -e`.
    """

    name = "gpu-ecc-pending"
    severity = Status.WARN

    def check(self, health: HealthInfo) -> Problem | None:
        pending = _pending_mode(health, "ecc_mode", lambda g: (g.ecc_current, g.ecc_pending))
        if not pending:
            return None
        return Problem(
            f"an ECC mode change is pending on {_names(pending)}",
            {_gpu(g): f"current {_on(g.ecc_current)}, pending {_on(g.ecc_pending)}" for g in pending},
            Remediation("reboot the node (or reset the GPU) to apply it", ("sudo reboot",)),
        )


class CD156(_Health):
    """The kernel log since boot holds no Xid that needs a reset, a reboot or a replacement.

    What it checks: every "NVRM: Xid (PCI:…): N" line of /dev/kmsg, per GPU by bus id, decoded with
    NVIDIA's Xid catalog (compat/xid.toml). Application Xids (13, 31, 43 …) follow the job and are not a
    node problem. A reset/reboot Xid fails while the driver still asks for recovery or the GPU is lost;
    once the GPU answers with no recovery action pending it is history and warns. When the log cannot be
    read (kernel.dmesg_restrict=1) the check could not judge: it never says "no Xid".

    Why it matters: Xids are the driver's fault reports: fallen off the bus (79), double-bit ECC (48), GSP
    errors (119/120) need a drain before the next job.

    How to fix: follow the action of the Xid's row (drain and reset, or reboot). To let cudadoctor read the
    kernel log as an ordinary user: `sudo sysctl kernel.dmesg_restrict=0`, or run it as root or with
    CAP_SYSLOG.
    """

    name = "gpu-xid-history"

    def check(self, health: HealthInfo, matrix: CompatMatrix) -> Problem | None:
        log = health.host
        if log.kernel_log_error:
            raise CannotJudge(
                f"the kernel log is not readable ({log.kernel_log_error}); run as root, with "
                "CAP_SYSLOG, or after `sudo sysctl kernel.dmesg_restrict=0`"
            )
        if not health.gpus and not log.pci_functions:
            raise NotApplicable("no NVIDIA GPU")
        table = matrix.xid_entries
        by_pci = {_short(g.pci_bus_id): g for g in health.gpus if g.pci_bus_id}
        evidence: dict[str, str] = {}
        status: Status | None = None
        actions: list[str] = []
        for event in log.xids:
            entry = table.get(event.code)
            verdict = entry.verdict if entry else "unknown"
            if verdict == "app":
                continue
            gpu = by_pci.get(event.pci)
            still = gpu is None or gpu.lost or bool(gpu.recovery_action)
            level = Status.FAIL if verdict in ("reset", "reboot", "replace", "unknown") and still else Status.WARN
            status = level if status is None or level.rank > status.rank else status
            meaning = (
                f"{entry.mnemonic}, {entry.description}; NVIDIA: {entry.immediate}, then {entry.investigatory}; "
                f"{entry.action}"
                if entry
                else f"not in cudadoctor's table, see {_XID_CATALOG}"
            )
            evidence[f"Xid {event.code} on {event.pci}"] = meaning
            if entry and entry.action not in actions:
                actions.append(entry.action)
        if status is None:
            return None
        return Problem(
            f"the kernel log holds {len(evidence)} kind(s) of hardware Xid: " + ", ".join(evidence),
            evidence,
            Remediation("; ".join(actions) or f"look the Xid up in NVIDIA's catalog: {_XID_CATALOG}"),
            status,
        )


def _short(bus_id: str) -> str:
    from cudadoctor.facts.health import short_pci

    return short_pci(bus_id)


# nvmlClocksEventReasons bits (https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html)
_HW_REASONS = {0x8: "HW slowdown", 0x20: "SW thermal slowdown", 0x40: "HW thermal slowdown", 0x80: "HW power brake"}
#: Share of uptime held by the thermal policy above which history is reported (inferred threshold).
THERMAL_SHARE_LIMIT = 0.01


class CD157(_Health):
    """Clocks are not held down by hardware slowdown, thermal limits or a power brake.

    What it checks: the current clock-event reasons (nvmlDeviceGetCurrentClocksEventReasons) for HW
    slowdown, SW/HW thermal slowdown and HW power brake, and the thermal policy's violation time since
    the driver loaded (nvmlDeviceGetViolationStatus) as a share of uptime (above 1 %, an inferred
    threshold). Idle and the SW power cap are normal: a healthy GEMM runs at the power cap.

    Why it matters: HW slowdown halves the clocks or worse (temperature, an external power-brake signal);
    the job runs, just slowly, and nothing else reports it.

    How to fix: check cooling and airflow (nvidia-smi -q -d TEMPERATURE,PERFORMANCE), the power supply and
    the chassis' power-brake signal; open a case with the system vendor if it persists.
    """

    name = "gpu-throttling"
    severity = Status.WARN

    def check(self, health: HealthInfo) -> Problem | None:
        gpus = _answered(_nvml_gpus(health), ("clock_event_reasons",), lambda g: g.clock_event_reasons)
        uptime_ns = (health.host.uptime_s or 0) * 1e9
        evidence: dict[str, str] = {}
        for g in gpus:
            now = [name for bit, name in _HW_REASONS.items() if (g.clock_event_reasons or 0) & bit]
            share = (g.violation_thermal_ns or 0) / uptime_ns if uptime_ns else 0.0
            if now:
                evidence[_gpu(g)] = "now: " + ", ".join(now)
            elif share > THERMAL_SHARE_LIMIT:
                evidence[_gpu(g)] = f"thermally limited {share:.1%} of the time since boot"
        if not evidence:
            return None
        return Problem(
            "clocks held down by hardware or thermal limits: " + "; ".join(evidence.values()),
            evidence,
            Remediation("check cooling, airflow and power delivery", ("nvidia-smi -q -d TEMPERATURE,PERFORMANCE",)),
        )


class CD158(_Health):
    """Each GPU's PCIe link runs at its full width, and at full generation when busy.

    What it checks: nvmlDeviceGetCurrPcieLinkWidth against nvmlDeviceGetMaxPcieLinkWidth (a narrower link
    is a hardware fault: fail), and the current generation against the maximum while the GPU is busy
    (utilization above 0: warn). Links downshift their generation when idle by design ("These may be
    reduced when the GPU is not in use", nvidia-smi(1)), so an idle GPU's generation is not judged.

    Why it matters: a link trained at x8 instead of x16 halves host-device bandwidth; data loading and
    NCCL over PCIe slow down without any error.

    How to fix: reseat the GPU or its riser, check the slot's BIOS settings; open a case with the system
    vendor if the link stays narrow.
    """

    name = "gpu-pcie-link"

    def check(self, health: HealthInfo) -> Problem | None:
        gpus = _answered(_nvml_gpus(health), ("pcie_width_current",), lambda g: g.pcie_width_current)
        narrow = [g for g in gpus if g.pcie_width_max and (g.pcie_width_current or 0) < g.pcie_width_max]
        fix = Remediation("reseat the GPU or riser and check the slot's BIOS link settings", ("nvidia-smi -q -d PCIE",))
        if narrow:
            return Problem(
                f"PCIe link narrower than its maximum on {_names(narrow)}",
                {_gpu(g): f"x{g.pcie_width_current} of x{g.pcie_width_max}" for g in narrow},
                fix,
            )
        slow = [
            g
            for g in gpus
            if (g.util_gpu_percent or 0) > 0 and g.pcie_gen_max and (g.pcie_gen_current or 0) < g.pcie_gen_max
        ]
        if slow:
            return Problem(
                f"PCIe link below its generation while busy on {_names(slow)}",
                {_gpu(g): f"gen {g.pcie_gen_current} of {g.pcie_gen_max}" for g in slow},
                fix,
                Status.WARN,
            )
        return None


class CD159(_Health):
    """Every NVLink link of every GPU is active.

    What it checks: nvmlDeviceGetNvLinkState for each link NVML reports; GPUs without NVLink (PCIe cards)
    are not applicable. Error totals (CRC, replay, recovery) are shown as evidence.

    Why it matters: an inactive link forces peer traffic onto fewer links or PCIe; NCCL all-reduce slows
    down or fails to build its rings; Azure's health check fails a node on any inactive link
    (https://github.com/Azure/azurehpc-health-checks/blob/main/customTests/azure_gpu_nvlink.nhc).

    How to fix: reset the GPUs or reboot the node; if a link stays down, open a case with the system vendor.
    """

    name = "gpu-nvlink"

    def check(self, health: HealthInfo) -> Problem | None:
        gpus = [g for g in _nvml_gpus(health) if g.nvlink_active]
        if not gpus:
            raise NotApplicable("no GPU reports NVLink links")
        down = {
            _gpu(g): f"links down: {[i for i, up in enumerate(g.nvlink_active) if not up]}; errors {g.nvlink_errors}"
            for g in gpus
            if not all(g.nvlink_active)
        }
        if not down:
            return None
        return Problem(
            "inactive NVLink links: " + "; ".join(down),
            down,
            Remediation("reboot the node; open a vendor case if a link stays down", ("nvidia-smi nvlink -s",)),
        )


class CD160(_Health):
    """On NVSwitch systems the GPU fabric is trained and the fabric manager's version equals the driver's.

    What it checks: nvmlDeviceGetGpuFabricInfo's state (completed) and status for each GPU, and the
    installed nvidia-fabricmanager package's version against the driver's. Systems without NVSwitch
    functions on the PCI bus are not applicable.

    Why it matters: until the fabric is trained every CUDA initialisation fails with error 802 "system not
    yet initialized"; the fabric manager refuses to start when its version differs from the driver's
    (NVIDIA's release notes list both versions together, e.g.
    https://docs.nvidia.com/datacenter/tesla/tesla-release-notes-535-54-03).

    How to fix: install the nvidia-fabricmanager package of exactly the driver's version and start it:
    `sudo systemctl enable --now nvidia-fabricmanager`.
    """

    name = "gpu-fabric"

    def check(self, health: HealthInfo, driver: DriverInfo | None = None) -> Problem | None:
        if not health.host.nvswitches:
            raise NotApplicable("no NVSwitch on the PCI bus")
        fix = Remediation(
            "install nvidia-fabricmanager of the driver's exact version and start it",
            ("sudo systemctl enable --now nvidia-fabricmanager",),
        )
        version = health.driver_version or (str(driver.version) if driver and driver.version else None)
        fm = health.host.fabric_manager_version
        if fm is None:
            return Problem(
                "NVSwitch system without an installed nvidia-fabricmanager package (dpkg)",
                {"nvswitches": str(health.host.nvswitches)},
                fix,
            )
        if version and fm != version:
            return Problem(
                f"fabric manager {fm} differs from driver {version}: it refuses to start",
                {"fabric manager": fm, "driver": version},
                fix,
            )
        untrained = [g for g in _nvml_gpus(health) if g.fabric_state is not None and g.fabric_state != 3]
        if untrained:
            return Problem(
                f"GPU fabric not trained on {_names(untrained)}",
                {_gpu(g): f"state {g.fabric_state}, status {g.fabric_status}" for g in untrained},
                fix,
            )
        return None


class CD161(_Health):
    """Persistence is on for GPUs that nothing else keeps initialised.

    What it checks: nvmlDeviceGetPersistenceMode for GPUs that drive no display (a display server keeps
    the driver loaded on its own). nvidia-persistenced, the recommended way, also shows as persistence on.

    Why it matters: without it every first CUDA client pays the GPU's initialisation, "on the order of 1-3
    seconds" per GPU (https://docs.nvidia.com/deploy/driver-persistence/overview.html), and settings such
    as application clocks are lost between jobs.

    How to fix: run the persistence daemon: `sudo systemctl enable --now nvidia-persistenced` (legacy
    `nvidia-smi -pm 1` is near end of life).
    """

    name = "gpu-persistence"
    severity = Status.WARN

    def check(self, health: HealthInfo) -> Problem | None:
        gpus = _answered(_nvml_gpus(health), ("persistence_mode",), lambda g: g.persistence)
        off = [g for g in gpus if not g.persistence and not g.display_active]
        if not off:
            return None
        return Problem(
            f"persistence is off on {_names(off)}: each first CUDA client pays 1-3 s of initialisation",
            {_gpu(g): "persistence off" for g in off},
            Remediation("run nvidia-persistenced", ("sudo systemctl enable --now nvidia-persistenced",)),
        )


class CD162(_Health):
    """No MIG mode change is waiting for a GPU reset.

    What it checks: nvmlDeviceGetMigMode's pending mode against the current one.

    Why it matters: the pending mode applies only after a GPU reset; until then jobs see the old layout, and
    schedulers configured for the new one hand out devices that do not exist.

    How to fix: reset the GPU when idle (`nvidia-smi -r -i <index>`), or set the mode back
    (`nvidia-smi -i <index> -mig <0|1>`).
    """

    name = "gpu-mig-pending"
    severity = Status.WARN

    def check(self, health: HealthInfo) -> Problem | None:
        pending = _pending_mode(health, "mig_mode", lambda g: (g.mig_current, g.mig_pending))
        if not pending:
            return None
        return Problem(
            f"a MIG mode change is pending on {_names(pending)}",
            {_gpu(g): f"current {g.mig_current}, pending {g.mig_pending}" for g in pending},
            Remediation("reset the GPU when idle", tuple(f"sudo nvidia-smi -r -i {g.index}" for g in pending)),
        )


class CD163(_Health):
    """The GSP firmware each GPU runs is the driver's own.

    What it checks: nvmlDeviceGetGspFirmwareVersion against the driver version (the firmware ships inside
    the driver package; on a healthy H200 both read 580.159.04). GPUs running without GSP are not applicable.

    Why it matters: a mismatch means a partial driver upgrade (new kernel module, old firmware files) and
    leads to GSP errors (Xid 119/120) or a GPU that does not initialise.

    How to fix: reinstall the driver package so kernel module, firmware and user-space libraries match, then
    reboot. On a managed platform, whose driver the user cannot change, start a new session (another machine).
    """

    name = "gpu-gsp-firmware"

    def check(self, health: HealthInfo, platform: ManagedPlatform | None = None) -> Problem | None:
        gpus = _answered(_nvml_gpus(health), ("gsp_firmware_version",), lambda g: g.gsp_firmware)
        if not health.driver_version:
            raise CannotJudge("NVML did not report the driver version")
        odd = [g for g in gpus if g.gsp_firmware and g.gsp_firmware != health.driver_version]
        if not odd:
            return None
        return Problem(
            f"GSP firmware differs from driver {health.driver_version} on {_names(odd)}",
            {_gpu(g): f"GSP firmware {g.gsp_firmware}" for g in odd},
            Remediation(
                "reinstall the driver package and reboot"
                if platform is None
                else f"{driver_fixed_by(platform)} Start a new session there (another machine), and report the GPU "
                "to the platform if it happens again."
            ),
        )


#: NCCL's troubleshooting guide gives Docker `--shm-size=1g`
#: (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html)
SHM_MIN_BYTES = 1 << 30


class CD164(_Health):
    """The shared-memory mount /dev/shm in a container holds at least 1 GiB, as NCCL's guide asks.

    What it checks: the size of /dev/shm inside a container with more than one GPU (Docker's default is
    64 MiB). Outside containers /dev/shm is half of RAM and not judged.

    Why it matters: NCCL's shared-memory transport fails with "failed to extend /dev/shm/nccl-… to … bytes"
    (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html); PyTorch DataLoader
    workers die with "bus error".

    How to fix: start the container with `--shm-size=1g` (or `--ipc=host`).
    """

    name = "nccl-dev-shm"
    severity = Status.WARN

    def check(self, health: HealthInfo, host: HostInfo) -> Problem | None:
        if not (host.container and host.container.in_container):
            raise NotApplicable("not in a container")
        if len(health.gpus) < 2:
            raise NotApplicable("fewer than two GPUs: NCCL's shared-memory transport is not used")
        if health.host.shm_bytes is None:
            raise CannotJudge("could not read the size of /dev/shm")
        if health.host.shm_bytes >= SHM_MIN_BYTES:
            return None
        return Problem(
            f"shared memory (/dev/shm) is {health.host.shm_bytes >> 20} MiB; NCCL needs room for its buffers",
            {"shm size": f"{health.host.shm_bytes} bytes"},
            Remediation(
                "restart the container with a larger /dev/shm", ("docker run --shm-size=1g --ulimit memlock=-1 ...",)
            ),
        )


class CD165(_Health):
    """The memlock limit is unlimited where NCCL runs across nodes.

    What it checks: RLIMIT_MEMLOCK of the running process (what a job started the same way inherits), on
    machines with an InfiniBand HCA.

    Why it matters: NCCL's network transport pins memory; NCCL's guide asks for `--ulimit memlock=-1` in
    containers (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html) and a low
    limit makes RDMA registration fail.

    How to fix: raise the limit (`ulimit -l unlimited`, `LimitMEMLOCK=infinity` in the unit, or
    `--ulimit memlock=-1` for a container).
    """

    name = "nccl-memlock"
    severity = Status.WARN

    def check(self, health: HealthInfo) -> Problem | None:
        if not health.host.ib_ports:
            raise NotApplicable("no InfiniBand HCA")
        if health.host.memlock_bytes is None:
            raise CannotJudge("could not read RLIMIT_MEMLOCK")
        if health.host.memlock_bytes == -1:
            return None
        return Problem(
            f"memlock is limited to {health.host.memlock_bytes} bytes; RDMA needs it unlimited",
            {"RLIMIT_MEMLOCK": str(health.host.memlock_bytes)},
            Remediation("raise the memlock limit", ("ulimit -l unlimited",)),
        )


class CD166(_Health):
    """nvidia_peermem is loaded where an InfiniBand HCA is present.

    What it checks: /proc/modules for nvidia_peermem (or the older nv_peer_mem) when /sys/class/infiniband
    lists an HCA and NVIDIA GPUs are present.

    Why it matters: without it NCCL cannot use GPUDirect RDMA and stages every transfer through host memory;
    NCCL's guide says it "must be loaded on each node boot with sudo modprobe nvidia-peermem"
    (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html).

    How to fix: `sudo modprobe nvidia-peermem`, and add it to /etc/modules-load.d/ so it loads at boot.
    """

    name = "nccl-peermem"
    severity = Status.WARN

    def check(self, health: HealthInfo) -> Problem | None:
        if not health.host.ib_ports:
            raise NotApplicable("no InfiniBand HCA")
        if not health.gpus and not health.host.pci_functions:
            raise NotApplicable("no NVIDIA GPU")
        if {"nvidia_peermem", "nv_peer_mem"} & set(health.host.modules):
            return None
        return Problem(
            "an InfiniBand HCA is present but nvidia_peermem is not loaded: no GPUDirect RDMA",
            {"HCA ports": ", ".join(f"{k} {v}" for k, v in health.host.ib_ports.items())},
            Remediation(
                "load the module now and at boot",
                (
                    "sudo modprobe nvidia-peermem",
                    "echo nvidia-peermem | sudo tee /etc/modules-load.d/nvidia-peermem.conf",
                ),
            ),
        )
