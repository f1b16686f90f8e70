"""Values computed from the facts alone: pure functions, facts in, value out.

A check that needs "the libcuda the loader picked" or "the directories of LD_LIBRARY_PATH" is given it by
parameter name (:data:`cudadoctor.checks.derived.DERIVED`, which names these with the values the data and the
rules compute); the computation lives here, once, instead of inside each check. ``None`` (or an empty collection)
means absent.
"""

from __future__ import annotations

import re

from cudadoctor.facts.health import HealthInfo
from cudadoctor.facts.model import (
    DriverInfo,
    DriverVersion,
    GpuInfo,
    HostInfo,
    InstalledPackage,
    LibcudaFile,
    VisibleDevices,
)
from cudadoctor.record import record

__all__ = [
    "GpuEvidence",
    "env_map",
    "frameworks_by_cuda_major",
    "gpu_evidence",
    "host_driver_version",
    "intel_gpu_discrete",
    "ld_library_path",
    "loaded_libcuda",
    "picked_libcuda",
]


def env_map(host: HostInfo) -> dict[str, str]:
    """The examined environment's variables that matter to CUDA, by name."""
    return {v.name: v.value for v in host.env}


def ld_library_path(host: HostInfo) -> tuple[str, ...] | None:
    """The directories of LD_LIBRARY_PATH in order, empty entries dropped; None when it is unset.

    An empty entry means the current directory to ld.so (ld.so(8)); no library of interest is
    found that way in a report, so it is left out rather than guessed.
    """
    value = env_map(host).get("LD_LIBRARY_PATH")
    if value is None:
        return None
    return tuple(p for p in value.split(":") if p)


def loaded_libcuda(driver: DriverInfo) -> LibcudaFile | None:
    """The libcuda file the loader picked (``cuDriverGetVersion`` through it), with its kind."""
    if not driver.loaded_libcuda:
        return None
    for f in driver.libcuda_files:
        if f.path == driver.loaded_libcuda:
            return f
    kind = (
        "compat" if "/compat/" in driver.loaded_libcuda else "stub" if "/stubs/" in driver.loaded_libcuda else "driver"
    )
    return LibcudaFile(path=driver.loaded_libcuda, version=None, kind=kind)


def _file_for(driver: DriverInfo, real: str) -> LibcudaFile:
    for f in driver.libcuda_files:
        if f.path == real:
            return f
    kind = "compat" if "/compat/" in real else "stub" if "/stubs/" in real else "driver"
    return LibcudaFile(path=real, version=None, kind=kind)


def picked_libcuda(driver: DriverInfo, soname: str = "libcuda.so.1") -> tuple[LibcudaFile, str] | None:
    """(the libcuda file a program asking for ``soname`` gets, how that is known).

    The live answer (``cuDriverGetVersion`` through ``libcuda.so.1``) comes first; otherwise the loader
    model's resolution (probes/linkage.py), which also works under --root. None when neither knows.
    """
    if soname == "libcuda.so.1":
        loaded = loaded_libcuda(driver)
        if loaded is not None:
            return loaded, "cuDriverGetVersion"
    for hit in driver.resolved_libcuda:
        if hit.soname == soname:
            return _file_for(driver, hit.real), f"loader model: {hit.path} via {hit.via}"
    return None


def host_driver_version(driver: DriverInfo) -> DriverVersion | None:
    """The kernel module's version, else the agreed or assumed (--assume-driver) driver version."""
    return driver.kernel_module.version if driver.kernel_module else driver.version


def frameworks_by_cuda_major(packages: dict[str, InstalledPackage]) -> dict[int, list[InstalledPackage]]:
    """Frameworks by the CUDA major they were built for (the nvidia-*/cuda-* library wheels aside)."""
    by_major: dict[int, list[InstalledPackage]] = {}
    for pkg in packages.values():
        if not pkg.cuda_build or pkg.name.startswith(("nvidia-", "cuda-")):
            continue
        head = pkg.cuda_build.split(".")[0]
        if not (head.isascii() and head.isdigit() and len(head) <= 4):
            continue  # not a CUDA version (a snapshot or version.py may say anything): CD111 says so
        major = int(head)
        by_major.setdefault(major, []).append(pkg)
    return by_major


#: A GPU's own device node, one per GPU numbered by the driver's minor number (not /dev/nvidiactl, -uvm, -caps).
_GPU_NODE = re.compile(r"/dev/nvidia[0-9]+")


@record
class GpuEvidence:
    """What shows NVIDIA GPUs here: the one answer every check asking "is there a GPU" uses.

    The probed GPUs (NVML, nvidia-smi, /proc/driver/nvidia/gpus, ``--assume-gpu``) name their models; the device
    nodes /dev/nvidia0..N (one per GPU the process was given) and the NVIDIA functions on the PCI bus (the health
    probe, /sys/bus/pci/devices) only show that GPUs are there, for a container or root where NVML does not answer.
    """

    #: the GPUs a process here reaches: the probed GPUs or the GPU device nodes, whichever shows more; 0 when only
    #: the PCI bus shows one (sysfs is not namespaced: a container sees every GPU of the host there)
    count: int
    #: (the evidence, what it showed), strongest first: the probed GPUs, the device nodes, the PCI bus
    shown_by: tuple[tuple[str, str], ...]
    #: the probed GPUs name their models: a check that needs the model or compute capability can judge
    models_known: bool

    def strongest(self) -> str:
        """The strongest evidence in words, e.g. ``GPU device nodes: /dev/nvidia0``."""
        what, shown = self.shown_by[0]
        return f"{what}: {shown}"


def gpu_evidence(
    gpus: tuple[GpuInfo, ...], visible: VisibleDevices | None, health: HealthInfo | None
) -> GpuEvidence | None:
    """The evidence of NVIDIA GPUs: the probed GPUs, else the GPU device nodes /dev/nvidia0..N (for a container or
    image where neither NVML nor /proc shows them), else the NVIDIA functions on the PCI bus; None when nothing
    shows a GPU."""
    shown: list[tuple[str, str]] = []
    if gpus:
        where = gpus[0].source.where
        if where.startswith("/proc/driver/nvidia/gpus/"):
            where = "/proc/driver/nvidia/gpus"
        shown.append(("GPU", f"{len(gpus)}× {gpus[0].name} ({where})"))
    nodes = sorted({n for n in (visible.device_nodes if visible else ()) if _GPU_NODE.fullmatch(n)})
    if nodes:
        shown.append(("GPU device nodes", ", ".join(nodes)))
    pci = health.host.pci_functions if health is not None else ()
    if pci:
        shown.append(("NVIDIA GPUs on the PCI bus", f"{len(pci)} ({', '.join(pci)}; /sys/bus/pci/devices)"))
    if not shown:
        return None
    return GpuEvidence(max(len(gpus), len(nodes)), tuple(shown), bool(gpus))


def intel_gpu_discrete(entry: str) -> bool:
    """Whether an ``intel_gpus`` entry is a discrete card (Arc, Data Center GPU Max/Flex): Intel's integrated
    graphics device is always bus 0, device 2, function 0 (QEMU docs/igd-assign.txt: the IGD is at 00:02.0)."""
    return not entry.split(" ", 1)[0].endswith("00:02.0")
