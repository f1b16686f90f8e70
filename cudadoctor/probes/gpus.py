"""The GPUs (name, compute capability, memory, MIG mode) and what limits which ones a process sees.

GPUs come from the first source that answers: NVML's device list, else the nvidia-smi query
(run once per context and shared with :mod:`cudadoctor.probes.driver`), else
``/proc/driver/nvidia/gpus/*/information`` (tests/fixtures/h200/tree/proc/driver/nvidia/gpus), which has no compute
capability: that is looked up by model name in ``compat/gpus.toml``
(:mod:`cudadoctor.gpu_models`). No UUID or serial number is ever read or kept.

A GPU with MIG enabled appears once in NVML's list, with ``mig_mode`` "Enabled"; its MIG
devices are counted (``mig_devices``), never listed: their UUIDs are not kept. Without NVML the MIG
capability files give the count (:mod:`cudadoctor.probes.mig_caps`).
"""

from __future__ import annotations

import posixpath
import re

from cudadoctor import gpu_models
from cudadoctor.errors import CompatDataError
from cudadoctor.facts.model import GpuInfo, Source, SourceKind, VisibleDevices
from cudadoctor.probes.context import ProbeContext
from cudadoctor.probes.driver import SmiQuery, query_nvidia_smi
from cudadoctor.probes.mig_caps import mig_from_caps
from cudadoctor.probes.native import NvmlResult
from cudadoctor.record import record

__all__ = ["GpuInformation", "parse_gpu_information", "probe_gpus", "probe_visible"]

PROC_GPUS = "/proc/driver/nvidia/gpus"
#: Where a looked-up compute capability came from.
TABLE_SOURCE = Source(SourceKind.FILE, "compat/gpus.toml")


@record
class GpuInformation:
    """The fields of one ``information`` file that cudadoctor keeps (never ``GPU UUID``)."""

    model: str
    bus_location: str | None = None
    device_minor: int | None = None


def parse_gpu_information(text: str) -> GpuInformation | None:
    """Model, bus location and minor number from ``/proc/driver/nvidia/gpus/<bdf>/information``.

    Parse, e.g. (captured; key, colon, padding, tabs, one space, value)::

        Model: \t\t NVIDIA H200
        IRQ:   \t\t 41
        GPU UUID: \t GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
        Video BIOS: \t 96.00.a5.00.1a
        Bus Type: \t PCIe
        Bus Location: \t 0000:00:06.0
        Device Minor: \t 0
        GPU Excluded:\t No

    :return: None when there is no ``Model`` line.
    """
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or not key or key == "GPU UUID":  # the UUID identifies the machine: never kept
            continue
        fields.setdefault(key, value.strip())
    model = fields.get("Model", "")
    if not model or not model.isprintable():
        return None
    minor = fields.get("Device Minor", "")
    return GpuInformation(
        model=model,
        bus_location=fields.get("Bus Location") or None,
        # ASCII digits only: str.isdigit accepts "²", which int refuses (as it refuses 4300+ digits).
        device_minor=int(minor) if re.fullmatch(r"[0-9]{1,9}", minor) else None,
    )


# --- compute capability from the table ------------------------------------------------------------


def _table(ctx: ProbeContext) -> tuple[gpu_models.GpuModel, ...] | None:
    def compute() -> tuple[gpu_models.GpuModel, ...] | None:
        try:
            return gpu_models.load_models()
        except CompatDataError as exc:
            ctx.fail("gpus", str(exc), "compat/gpus.toml")
            return None

    return ctx.once("gpus.table", compute)


def _lookup_cc(ctx: ProbeContext, name: str, where: str) -> tuple[str | None, Source | None]:
    """(compute capability, TABLE_SOURCE) for a model name, or (None, None) with the reason recorded."""
    table = _table(ctx)
    if table is None:
        return None, None
    model = gpu_models.lookup(name, table)
    if model is None:
        ctx.fail("gpus", f"unknown GPU model '{name}': compute capability not in compat/gpus.toml", where)
        return None, None
    return model.compute_capability, TABLE_SOURCE


# --- sources --------------------------------------------------------------------------------------


def _from_nvml(ctx: ProbeContext, nvml: NvmlResult) -> tuple[GpuInfo, ...]:
    source = Source(SourceKind.API, "nvml")
    gpus: list[GpuInfo] = []
    for device in nvml.devices:
        cc, cc_source = device.compute_capability, None
        if cc is None:
            cc, cc_source = _lookup_cc(ctx, device.name, "nvml")
        gpus.append(
            GpuInfo(
                index=device.index,
                name=device.name,
                compute_capability=cc,
                source=source,
                memory_mib=device.memory_mib,
                mig_mode=device.mig_mode,
                pci_bus_id=device.pci_bus_id,
                brand=device.brand,
                mig_devices=device.mig_devices,
                compute_capability_source=cc_source,
            )
        )
    return tuple(gpus)


def _from_smi(ctx: ProbeContext, smi: SmiQuery) -> tuple[GpuInfo, ...]:
    gpus: list[GpuInfo] = []
    for row in smi.gpus:
        cc, cc_source = row.compute_capability, None
        if cc is None:  # drivers before compute_cap existed, or "[N/A]"
            cc, cc_source = _lookup_cc(ctx, row.name, smi.source.where)
        gpus.append(
            GpuInfo(
                index=row.index,
                name=row.name,
                compute_capability=cc,
                source=smi.source,
                memory_mib=row.memory_mib,
                mig_mode=row.mig_mode,
                pci_bus_id=row.pci_bus_id,
                compute_capability_source=cc_source,
            )
        )
    return tuple(gpus)


def _from_proc(ctx: ProbeContext) -> tuple[GpuInfo, ...]:
    gpus: list[GpuInfo] = []
    # Directory names are PCI addresses; sorted, they give NVML's enumeration order (and CUDA's
    # under CUDA_DEVICE_ORDER=PCI_BUS_ID), which is the best index a file can give.
    for directory in ctx.fs.glob(PROC_GPUS, "*"):
        path = posixpath.join(directory, "information")
        try:
            text = ctx.fs.read_text(path, limit=64 * 1024)
        except FileNotFoundError:
            continue
        except OSError as exc:
            ctx.fail("gpus", f"cannot read: {exc.strerror or exc}", path)
            continue
        info = parse_gpu_information(text)
        if info is None:
            ctx.fail("gpus", "unrecognised contents: no Model line", path)
            continue
        cc, cc_source = _lookup_cc(ctx, info.model, path)
        # NVML did not answer: the MIG capability files say which MIG devices the GPU has (CD130, CD131)
        mig = mig_from_caps(ctx, info.device_minor) if info.device_minor is not None else None
        gpus.append(
            GpuInfo(
                index=len(gpus),
                name=info.model,
                compute_capability=cc,
                source=Source(SourceKind.FILE, path),
                mig_mode="Enabled" if mig is not None else None,
                pci_bus_id=info.bus_location or posixpath.basename(directory),
                mig_devices=mig.devices if mig is not None else None,
                compute_capability_source=cc_source,
                mig_source=mig.source if mig is not None else None,
            )
        )
    return tuple(gpus)


def probe_gpus(ctx: ProbeContext) -> tuple[GpuInfo, ...]:
    """Every GPU, from NVML, else nvidia-smi, else ``/proc/driver/nvidia/gpus``.

    NVML and nvidia-smi failures are recorded by the driver probe; NVML's per-device errors here.
    :return: the GPUs in index order; empty when no source shows any.
    """
    if ctx.live:
        nvml = ctx.native.nvml()
        for error in nvml.device_errors:
            ctx.fail("gpus", f"NVML: {error}", "nvml")
        if nvml.error is None and nvml.devices:
            return _from_nvml(ctx, nvml)
        smi = query_nvidia_smi(ctx)
        if smi is not None and smi.gpus:
            return _from_smi(ctx, smi)
    return _from_proc(ctx)


def probe_visible(ctx: ProbeContext) -> VisibleDevices:
    """The visibility variables as set (None unset, ``""`` set empty: no GPU at all) and the device nodes.

    Device nodes (as measured on a real H200, tests/fixtures/h200/capture.txt): ``/dev/nvidia0..N``, ``/dev/nvidiactl``,
    ``/dev/nvidia-uvm``, ``/dev/nvidia-uvm-tools``, ``/dev/nvidia-caps/nvidia-cap*`` (MIG), and
    ``/dev/dxg`` on WSL2.
    """
    nodes: list[str] = []
    for path in ctx.fs.glob("/dev", "nvidia*"):
        if not ctx.fs.is_dir(path):  # /dev/nvidia-caps is a directory; its entries are listed below
            nodes.append(path)
    nodes += [p for p in ctx.fs.glob("/dev/nvidia-caps", "*") if not ctx.fs.is_dir(p)]
    if ctx.fs.exists("/dev/dxg"):
        nodes.append("/dev/dxg")
    return VisibleDevices(
        cuda_visible_devices=ctx.env.get("CUDA_VISIBLE_DEVICES"),
        nvidia_visible_devices=ctx.env.get("NVIDIA_VISIBLE_DEVICES"),
        device_nodes=tuple(nodes),
        # the OCI runtime spec's default devices: https://github.com/opencontainers/runtime-spec/blob/main/config-linux.md
        live_dev=ctx.fs.is_char_device("/dev/null"),
    )
