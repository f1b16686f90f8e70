"""The NVIDIA kernel module from files: the GPUs on the PCI bus, whether the module is loaded, and why it may not be.

NVML, nvidia-smi and /proc/driver/nvidia/gpus answer only through a loaded kernel module, so where it is missing the
doctor would otherwise see no GPU. Everything here is a file: sysfs (the PCI functions, their bound driver, the loaded
modules), /proc/sys/kernel/osrelease (the running kernel, as `uname -r`) and the running kernel's modules.dep, which
depmod writes and modprobe reads (depmod(8), modules.dep(5)): a module it does not list cannot be loaded by name.
"""

from __future__ import annotations

import os
import re

from cudadoctor.facts.model import NvidiaModuleState, PciGpu
from cudadoctor.probes.context import ProbeContext

__all__ = ["nvidia_module_files", "nvidia_pci", "probe_nvidia_module"]

# PCI class codes (PCI Code and ID Assignment spec; the kernel's include/linux/pci_ids.h):
# 0x0300 VGA controller, 0x0302 3D controller (data-center GPUs), 0x0680 other bridge (NVSwitch).
_GPU_CLASSES = ("0x0300", "0x0302")
_NVSWITCH_CLASS = "0x0680"
_NVIDIA_VENDOR = "0x10de"
#: modules.dep of a distribution kernel is about 0.3 to 1 MiB; a bound keeps a hostile root from costing more.
_MODULES_DEP_LIMIT = 8 << 20
#: a module path in modules.dep: the nvidia module itself (not nvidia-uvm, nvidia-drm …), compressed or not.
_NVIDIA_KO = re.compile(r"^([^:\s]*/)?nvidia\.ko(\.[a-z]{1,4})?:", re.MULTILINE)
#: a driver version as /usr/src/nvidia-<version> spells it
_VERSION = re.compile(r"[0-9]{2,4}(\.[0-9]{1,4}){1,2}")
#: what a kernel release may look like (it becomes part of a path)
_RELEASE = re.compile(r"[A-Za-z0-9._+~-]{1,128}")


def _read(ctx: ProbeContext, path: str, limit: int = 4096) -> str | None:
    try:
        return ctx.fs.read_text(path, limit).strip()
    except OSError:
        return None


def nvidia_pci(ctx: ProbeContext) -> tuple[tuple[PciGpu, ...], int]:
    """(the NVIDIA display and 3D controllers in /sys/bus/pci/devices with the driver each is bound to, the number of
    NVSwitches). This probe and the health probe's host part ask; a server's bus holds hundreds of functions, each
    with a vendor and a class file, so it is read once per run (``ctx.once``), whichever asks first."""
    return ctx.once("kmod.pci", lambda: _scan_pci(ctx))


def _scan_pci(ctx: ProbeContext) -> tuple[tuple[PciGpu, ...], int]:
    gpus: list[PciGpu] = []
    nvswitches = 0
    for path in ctx.fs.glob("/sys/bus/pci/devices", "*"):
        if (_read(ctx, f"{path}/vendor") or "").lower() != _NVIDIA_VENDOR:
            continue
        klass = (_read(ctx, f"{path}/class") or "").lower()[:6]
        nvswitches += klass == _NVSWITCH_CLASS
        if klass not in _GPU_CLASSES:
            continue
        device = (_read(ctx, f"{path}/device") or "").lower().removeprefix("0x").upper()
        try:
            driver = os.path.basename(ctx.fs.readlink(f"{path}/driver"))
        except OSError:
            driver = ""
        gpus.append(PciGpu(os.path.basename(path), device[:4], driver))
    return tuple(gpus), nvswitches


def nvidia_module_files(modules_dep: str) -> tuple[str, ...]:
    """The nvidia module files a modules.dep lists (``updates/dkms/nvidia.ko.zst``, ``kernel/nvidia-550/nvidia.ko``)."""
    return tuple(m.group(0)[:-1] for m in _NVIDIA_KO.finditer(modules_dep))


def probe_nvidia_module(ctx: ProbeContext) -> NvidiaModuleState | None:
    """The NVIDIA GPUs on the PCI bus and the state of the kernel module for them; None when the bus shows none.

    :param ctx: the probe context (the live machine, or a root whose /sys is a host's).
    """
    gpus, _nvswitches = nvidia_pci(ctx)
    if not gpus:
        return None
    if ctx.fs.exists("/proc/driver/nvidia/version") or ctx.fs.is_dir("/sys/module/nvidia"):
        # what follows only explains a module that is not loaded: a healthy run asks two paths, lists no /sys/module
        # (hundreds of entries on a host) and skips modules.dep
        return NvidiaModuleState(pci_gpus=gpus, nvidia_loaded=True, nouveau_loaded=ctx.fs.is_dir("/sys/module/nouveau"))
    try:
        modules: set[str] | None = set(ctx.fs.listdir("/sys/module"))
    except OSError:
        modules = None
    release = _read(ctx, "/proc/sys/kernel/osrelease")
    if release is not None and not _RELEASE.fullmatch(release):
        release = None
    files: tuple[str, ...] | None = None
    if release is not None:
        dep = _read(ctx, f"/lib/modules/{release}/modules.dep", _MODULES_DEP_LIMIT)
        files = nvidia_module_files(dep) if dep is not None else None
    return NvidiaModuleState(
        pci_gpus=gpus,
        nvidia_loaded=None if modules is None else False,
        nouveau_loaded=modules is not None and "nouveau" in modules,
        kernel_release=release,
        nvidia_module_files=files,
        dkms_registered=ctx.fs.is_dir("/var/lib/dkms/nvidia"),
        dkms_sources=_dkms_sources(ctx),
    )


def _dkms_sources(ctx: ProbeContext) -> tuple[str, ...]:
    """The versions of /usr/src/nvidia-<version>: the source tree a DKMS package of the driver installs, which
    `dkms install -m nvidia -v <version>` builds for the running kernel (dkms(8))."""
    found = [os.path.basename(p).removeprefix("nvidia-") for p in ctx.fs.glob("/usr/src", "nvidia-*")]
    return tuple(sorted(v for v in found if _VERSION.fullmatch(v)))
