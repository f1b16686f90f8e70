"""``cudadoctor usage``: how busy each GPU really is, from one look, said honestly.

``utilization.gpu`` is "percent of time over the past sample period during which one or more kernels was
executing on the GPU" (https://docs.nvidia.com/deploy/nvml-api/structnvmlUtilization__t.html): a kernel
that keeps one SM busy reads 100 %. Measured on an H200: a one-thread spin kernel read 100 % while GPM's
SM activity was 0.76 % and the board drew its idle 116 W (tests/fixtures/health/usage-h200-spin.json).
So this view puts three things side by side, per GPU:

* the driver's own sample buffer of utilization.gpu (``nvmlDeviceGetSamples``; about 14 s of samples on
  the H200), which gives the recent past without watching;
* SM activity and occupancy over a short measured window, from GPM (``nvmlGpmMetricsGet``, Hopper and
  newer: https://docs.nvidia.com/deploy/nvml-api/group__nvmlGpmFunctions.html), the same counters DCGM
  exports as ``DCGM_FI_PROF_SM_ACTIVE``/``_SM_OCCUPANCY``;
* each process's memory and its latest utilization sample (``nvmlDeviceGetProcessUtilization``): memory
  allocated by a process that runs nothing is the waste a one-shot look can name.

Everything here is pure over the record :func:`cudadoctor.probes.nvml_health.query_health` writes
(``utilization=True``), so a capture from a real GPU replays in tests.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, field, replace
from typing import TYPE_CHECKING, Any

from cudadoctor.errors import UsageError
from cudadoctor.facts.health import GpuHealth
from cudadoctor.probes.health_parse import parse_gpu
from cudadoctor.record import record

if TYPE_CHECKING:
    from cudadoctor.probes.context import HealthSource

__all__ = [
    "CANNOT_TELL",
    "CAN_TELL",
    "MAX_SAMPLE_SECONDS",
    "USAGE_KIND",
    "GpuUse",
    "ProcessUse",
    "UsageView",
    "render_usage_json",
    "render_usage_text",
    "usage_command",
    "usage_view",
]

USAGE_KIND = "cudadoctor-usage"
#: The longest --sample window: a one-shot look, not a monitor.
MAX_SAMPLE_SECONDS = 60.0
USAGE_SCHEMA = 1

#: A duty cycle at or above this (percent) reads as "busy" to anyone looking at utilization.gpu.
BUSY_DUTY = 50.0
#: SM activity (percent of the window SMs had a warp) below this, while the duty cycle reads busy, is the
#: "busy but light" signature (a GEMM measured 96 %, a copy loop 99 %, a one-thread kernel 0.76 %).
LIGHT_SM = 10.0
#: Power below this share of the enforced limit while the duty cycle reads busy: consistent with a light or
#: stalled kernel (inferred from the H200 measurements: 116 W idle and spin kernel, 692 W GEMM, of 700 W).
LOW_POWER_SHARE = 0.3

CAN_TELL = (
    "whether each GPU is idle or running kernels now, and over the driver's sample buffer (the last few "
    "seconds, about 14 s on an H200)",
    "with GPM (Hopper and newer): how much of the GPU those kernels fill (SM activity and occupancy) over "
    "the measured window",
    "which processes hold GPU memory, and whether the driver's latest sample saw each one's kernels running",
)
CANNOT_TELL = (
    "whether a GPU was idle for minutes or hours: that needs monitoring over time (DCGM, dcgm-exporter, "
    "Slurm's gres/gpuutil accounting)",
    "why a process is idle (waiting for data, for another rank, for a person) or whether it will resume",
    "the efficiency of a whole job: one window is a sample, not an average",
    "processes of other containers or PID namespaces by name: NVML reports host PIDs",
)


@record
class ProcessUse:
    """One compute process on one GPU."""

    pid: int
    name: str | None  #: the executable's file name (the path is left out)
    memory_mib: int | None  #: None: NVML did not say (a process of another PID namespace, or MIG)
    #: the driver's latest per-process reading (nvmlDeviceGetProcessUtilization): percent of its sample period
    #: during which this process's kernels ran; None: NVML kept no sample for it
    sm_percent: int | None = None

    @property
    def idle(self) -> bool | None:
        """True: its latest sample saw no kernel of it running; None: no sample."""
        return None if self.sm_percent is None else self.sm_percent == 0


@record
class GpuUse:
    """What one look says about one GPU's use."""

    index: int
    name: str | None
    pci_bus_id: str | None
    util_now: int | None  #: utilization.gpu now (percent of the last sample period with a kernel running)
    window_s: float | None  #: span of the driver's sample buffer read
    samples: int  #: entries of that buffer
    duty_mean: float | None
    duty_max: int | None
    gpm: dict[str, float] = field(default_factory=dict)  #: GPM metrics, percent, over ``gpm["seconds"]``
    gpm_supported: bool | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    mig: bool | None = None
    processes: tuple[ProcessUse, ...] = ()
    #: idle | allocated-but-idle | partly-busy | busy | busy-but-light | busy-unmeasured | unknown
    verdict: str = "unknown"
    explanation: tuple[str, ...] = ()


@record
class UsageView:
    """The whole view: every GPU, or why NVML could not be asked."""

    gpus: tuple[GpuUse, ...] = ()
    error: str | None = None  #: NVML did not answer (no driver, no library, a timeout)
    sample_seconds: float = 0.0
    driver_version: str | None = None


def _value(record: Mapping[str, Any], key: str) -> Any:
    answer = record.get(key)
    return answer.get("v") if isinstance(answer, dict) else None


def _processes(record: Mapping[str, Any]) -> tuple[ProcessUse, ...]:
    procs = _value(record, "compute_processes")
    if not isinstance(procs, list):
        return ()
    names = _value(record, "process_names")
    names = names if isinstance(names, dict) else {}
    rows = _value(record, "process_samples")
    # one row per process: [pid, timestamp µs, smUtil, memUtil] (measured on the H200: the latest sample only)
    latest = {r[0]: r[2] for r in rows if isinstance(r, list) and len(r) >= 3} if isinstance(rows, list) else {}
    found = []
    for proc in procs:
        if not isinstance(proc, dict) or not isinstance(proc.get("pid"), int):
            continue
        pid = int(proc["pid"])
        used = proc.get("usedGpuMemory")
        name = names.get(str(pid))
        found.append(
            ProcessUse(
                pid=pid,
                name=os.path.basename(name) if isinstance(name, str) else None,
                memory_mib=int(used) // (1 << 20) if isinstance(used, int) else None,
                sm_percent=int(latest[pid]) if isinstance(latest.get(pid), int) else None,
            )
        )
    return tuple(found)


def _window(g: GpuHealth) -> tuple[float | None, float | None, int | None]:
    """(span in seconds, mean, max) of the driver's utilization samples."""
    if not g.samples:
        return None, None, None
    values = [s.percent for s in g.samples]
    stamps = [s.timestamp_us for s in g.samples]
    span = (max(stamps) - min(stamps)) / 1e6 if len(stamps) > 1 else 0.0
    return round(span, 1), round(sum(values) / len(values), 1), max(values)


def _gpu_use(record: Mapping[str, Any]) -> GpuUse:
    g = parse_gpu(record)
    span, mean, peak = _window(g)
    total = _value(record, "memory_total_bytes")
    use = GpuUse(
        index=g.index,
        name=g.name,
        pci_bus_id=g.pci_bus_id,
        util_now=g.util_gpu_percent,
        window_s=span,
        samples=len(g.samples),
        duty_mean=mean,
        duty_max=peak,
        gpm={k: round(v, 2) for k, v in g.gpm.items()},
        gpm_supported=g.gpm_supported,
        power_w=g.power_w,
        power_limit_w=g.power_limit_w,
        memory_used_mib=g.memory_used_mib,
        memory_total_mib=int(total) // (1 << 20) if isinstance(total, int) else None,
        mig=g.mig_current,
        processes=_processes(record),
    )
    verdict, why = judge(use)
    return replace(use, verdict=verdict, explanation=why)


def usage_view(record: Mapping[str, Any], sample_seconds: float = 0.0) -> UsageView:
    """The view of a record written by ``query_health(utilization=True, sample_seconds=…)``."""
    init = record.get("init")
    if "skipped" in record:
        return UsageView(error=str(record["skipped"]), sample_seconds=sample_seconds)
    if isinstance(init, dict) and "e" in init:
        return UsageView(error=str(init["e"]), sample_seconds=sample_seconds)
    devices = record.get("devices")
    gpus = tuple(_gpu_use(d) for d in devices if isinstance(d, dict)) if isinstance(devices, list) else ()
    driver = _value(record, "driver_version")
    return UsageView(gpus=gpus, sample_seconds=sample_seconds, driver_version=driver)


def _now(g: GpuUse) -> float | None:
    """utilization.gpu now: NVML's current reading, else the buffer's newest sample."""
    if g.util_now is not None:
        return float(g.util_now)
    return None if g.duty_mean is None else float(g.duty_mean)


def _pct(value: float) -> str:
    return f"{value:.0f} %" if value >= 10 or value == 0 else f"{value:.2g} %"


def judge(g: GpuUse) -> tuple[str, tuple[str, ...]]:
    """The verdict for one GPU and the sentences that explain it.

    idle, allocated-but-idle, partly-busy (kernels ran in the buffer's span, none now), busy, busy-but-light
    (busy by utilization.gpu, SMs nearly empty), busy-unmeasured (no GPM), unknown.
    """
    now = _now(g)
    if now is None:
        missing = "NVML did not report utilization for this GPU"
        return "unknown", (missing + (" (MIG mode: per-GPU utilization is not reported)" if g.mig else ""),)
    if now < BUSY_DUTY:
        return _judge_quiet(g, now)
    verdict, why = _judge_busy(g, now)
    return verdict, (*why, *_idle_holders(g))


def _recent(g: GpuUse) -> str:
    return (
        f" (mean {_pct(g.duty_mean)} over the last {g.window_s:.0f} s)"
        if g.duty_mean is not None and g.window_s
        else ""
    )


def _judge_busy(g: GpuUse, now: float) -> tuple[str, tuple[str, ...]]:
    sm = g.gpm.get("sm")
    window = f"the {g.gpm.get('seconds', 0):g} s window"
    if sm is not None and sm < LIGHT_SM:
        return "busy-but-light", (
            f"utilization.gpu reads {_pct(now)} now{_recent(g)}, but SMs had work only {_pct(sm)} of {window}: a "
            "kernel runs almost all the time, and it fills a small part of the GPU. utilization.gpu counts the "
            "time any kernel runs, however few of the SMs it uses (one SM of 132 on an H200 reads 100 %).",
        )
    if sm is not None:
        return "busy", (f"utilization.gpu reads {_pct(now)} now{_recent(g)}, and SMs had work {_pct(sm)} of {window}.",)
    return "busy-unmeasured", _unmeasured(g, now)


def _unmeasured(g: GpuUse, duty: float) -> tuple[str, ...]:
    why = [
        f"utilization.gpu reads {_pct(duty)}: a kernel was running; how much of the GPU it fills is not measured "
        + ("(GPM needs Hopper or newer; DCGM's DCGM_FI_PROF_SM_ACTIVE measures it on older data-center GPUs)."
           if g.gpm_supported is False else "(run with --sample 1 for GPM's SM activity).")
    ]  # fmt: skip
    if g.power_w is not None and g.power_limit_w and g.power_w < LOW_POWER_SHARE * g.power_limit_w:
        why.append(
            f"It draws {g.power_w:.0f} W of its {g.power_limit_w:.0f} W limit: low for a GPU doing heavy work, "
            "consistent with a light or stalled kernel (a hint, not a measurement)."
        )
    return tuple(why)


def _judge_quiet(g: GpuUse, now: float) -> tuple[str, tuple[str, ...]]:
    span = f"the last {g.window_s:.0f} s" if g.window_s else "the last sample period"
    sm = g.gpm.get("sm")
    holders = [p for p in g.processes if p.memory_mib]
    quiet = (g.duty_max or 0) == 0 and now == 0 and (sm is None or sm < 1)
    if quiet and holders:
        held = sum(p.memory_mib or 0 for p in holders)
        return "allocated-but-idle", (
            f"{len(holders)} process(es) hold {held / 1024:.1f} GiB of GPU memory, and no kernel ran in {span}: "
            "the GPU is reserved but does no work.",
        )
    if quiet:
        return "idle", (f"No kernel ran in {span}.",)
    mean = g.duty_mean if g.duty_mean is not None else now
    return "partly-busy", (
        f"utilization.gpu reads {_pct(now)} now; kernels ran {_pct(mean)} of {span} on average.",
        *_idle_holders(g),
    )


def _idle_holders(g: GpuUse) -> tuple[str, ...]:
    """Processes that hold memory and ran no kernel while others on the same GPU did."""
    idle = [p for p in g.processes if p.memory_mib and p.idle]
    return tuple(
        f"Process {p.pid} ({p.name or '?'}) holds {p.memory_mib / 1024:.1f} GiB and its latest sample saw no "
        "kernel of it running: allocated but idle while others work."
        for p in idle
        if p.memory_mib is not None
    )


# --- rendering -----------------------------------------------------------------------------------------

_GPM_LABELS = (("sm", "SM activity"), ("sm_occupancy", "SM occupancy"), ("tensor", "tensor"), ("dram_bw", "DRAM bw"))


def _gpu_lines(g: GpuUse) -> list[str]:
    head = f"GPU {g.index}  {g.name or 'unknown GPU'}  ({g.pci_bus_id or 'bus id unknown'})"
    lines = [f"{head}  — {g.verdict.replace('-', ' ')}"]
    now = f"now {g.util_now} %" if g.util_now is not None else "now unknown"
    if g.duty_mean is not None:
        now += f"; last {g.window_s:.1f} s: mean {g.duty_mean:.0f} %, max {g.duty_max} % ({g.samples} driver samples)"
    lines.append(f"  utilization.gpu   {now}")
    if g.gpm:
        parts = [f"{label} {_pct(g.gpm[key])}" for key, label in _GPM_LABELS if key in g.gpm]
        label = f"GPM over {g.gpm.get('seconds', 0):g} s"
        lines.append(f"  {label:<18}" + " · ".join(parts))
    elif g.gpm_supported is False:
        lines.append("  GPM               not supported on this GPU (Hopper and newer)")
    if g.power_w is not None:
        limit = f" of {g.power_limit_w:.0f} W" if g.power_limit_w else ""
        lines.append(f"  power             {g.power_w:.0f} W{limit}")
    if g.memory_used_mib is not None:
        total = f" of {g.memory_total_mib / 1024:.0f} GiB" if g.memory_total_mib else ""
        lines.append(f"  memory            {g.memory_used_mib / 1024:.1f} GiB used{total}")
    lines += [_process_line(p) for p in g.processes]
    lines += [f"  → {sentence}" for sentence in g.explanation]
    return lines


def _process_line(p: ProcessUse) -> str:
    memory = f"{p.memory_mib / 1024:.1f} GiB" if p.memory_mib is not None else "memory unknown"
    if p.sm_percent is None:
        ran = "no per-process sample from NVML"
    elif p.sm_percent == 0:
        ran = "its latest sample saw no kernel of it running"
    else:
        ran = f"its kernels ran {p.sm_percent} % of its latest sample"
    return f"  process {p.pid} {p.name or '?'}: {memory}; {ran}"


def render_usage_text(view: UsageView) -> str:
    """The view for people."""
    if view.error is not None:
        return f"Could not judge GPU use: NVML did not answer: {view.error}\n"
    if not view.gpus:
        return "No GPU: NVML reports none.\n"
    lines: list[str] = []
    for g in view.gpus:
        lines += [*_gpu_lines(g), ""]
    lines.append("What one look can tell:")
    lines += [f"  ✓ {t}" for t in CAN_TELL]
    lines.append("What it cannot:")
    lines += [f"  ✗ {t}" for t in CANNOT_TELL]
    return "\n".join(lines) + "\n"


def render_usage_json(view: UsageView) -> str:
    """The view for tools: one versioned JSON object."""
    gpus = []
    for g in view.gpus:
        entry = asdict(g)
        for proc, use in zip(entry["processes"], g.processes, strict=True):
            proc["idle"] = use.idle
        gpus.append(entry)
    document = {
        "kind": USAGE_KIND,
        "schema_version": USAGE_SCHEMA,
        "driver_version": view.driver_version,
        "sample_seconds": view.sample_seconds,
        "error": view.error,
        "gpus": gpus,
        "can_tell": list(CAN_TELL),
        "cannot_tell": list(CANNOT_TELL),
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def usage_command(source: HealthSource, sample_seconds: float, fmt: str) -> tuple[str, int]:
    """``cudadoctor usage``: the rendered view and the exit code (0 shown, 3 NVML did not answer).

    ``sample_seconds`` 0 reads only the driver's sample buffer (no GPM window).
    """
    if not 0 <= sample_seconds <= MAX_SAMPLE_SECONDS:
        raise UsageError(f"--sample {sample_seconds:g}: give 0 to {MAX_SAMPLE_SECONDS:g} seconds")
    record = source.query(utilization=True, sample_seconds=sample_seconds)
    view = usage_view(record, sample_seconds)
    text = render_usage_json(view) if fmt == "json" else render_usage_text(view)
    return text, 3 if view.error is not None else 0
