"""Derived facts: values computed once from the probed facts and injected into checks by name.

A check that needs "the installed torch" or "the directories of LD_LIBRARY_PATH" asks for it by
parameter name, like a probed fact; the computation lives here, once, instead of inside each check.
Each function is pure: facts in, value out; ``None`` (or an empty collection) means absent.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from cudadoctor.facts.health import HealthInfo
from cudadoctor.facts.model import (
    DriverInfo,
    DriverVersion,
    Facts,
    GpuInfo,
    HostInfo,
    InstalledPackage,
    LibcudaFile,
    VisibleDevices,
)
from cudadoctor.record import record
from cudadoctor.rules.scheduler import detect_scheduler
from cudadoctor.rules.toolchain import build_toolkit

if TYPE_CHECKING:
    from cudadoctor.data import CompatMatrix
    from cudadoctor.rules.driver import ForwardCompat

__all__ = [
    "DERIVED",
    "Derived",
    "GpuEvidence",
    "effective_cuda",
    "env_map",
    "forward_compat",
    "frameworks_by_cuda_major",
    "gpu_evidence",
    "gpu_segments",
    "ld_library_path",
    "loaded_libcuda",
    "with_data_builds",
]


@record
class Derived:
    """One derived fact: how to compute it and why a check needing it is not applicable when absent."""

    #: (the facts, the compat data) -> the value
    compute: Callable[[Facts, CompatMatrix], Any]
    absent: str
    doc: str


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


def with_data_builds(
    packages: dict[str, InstalledPackage], matrix: CompatMatrix, arch: str
) -> dict[str, InstalledPackage]:
    """The packages, where a release's CUDA build shows nowhere in its files but is known from the data
    (ctranslate2 links cudart statically: compat/runtime_libraries.toml ``cuda_build``) carrying that build."""
    out = dict(packages)
    for name, pkg in packages.items():
        if pkg.cuda_build:
            continue
        build = next((r.cuda_build for r in matrix.runtime_loads_for(name, pkg.version, arch) if r.cuda_build), None)
        if build is not None:
            out[name] = dataclasses.replace(
                pkg, cuda_build=f"{build.major}.{build.minor}", cuda_variant=f"cu{build.major}{build.minor}",
                cuda_variant_source="compat/runtime_libraries.toml",
            )  # fmt: skip
    return out


def forward_compat(driver: DriverInfo) -> ForwardCompat | None:
    """The forward compatibility in effect: a cuda-compat libcuda newer than the kernel module, picked by
    the loader, and the CUDA version it reports (cuDriverGetVersion through it); None when there is none.

    NVIDIA CUDA Compatibility guide, "Forward Compatibility":
    https://docs.nvidia.com/deploy/cuda-compatibility/
    """
    from cudadoctor.rules.driver import ForwardCompat

    loaded = loaded_libcuda(driver)
    kernel = driver.kernel_module.version if driver.kernel_module else driver.version
    if loaded is None or loaded.kind != "compat" or not loaded.version or not kernel or loaded.version <= kernel:
        return None
    cuda = next((r.cuda_api for r in driver.readings if r.source.where == "cuDriverGetVersion" and r.cuda_api), None)
    return ForwardCompat(cuda, loaded.path) if cuda is not None else None


def gpu_segments(gpus: tuple[GpuInfo, ...]) -> tuple[tuple[str, str | None], ...]:
    """(name, segment in compat/gpus.toml) of each GPU; the segment is None for a model the table lacks."""
    from cudadoctor import gpu_models

    table = gpu_models.load_models()
    models = [gpu_models.lookup(gpu.name, table) for gpu in gpus]
    return tuple((gpu.name, model.segment if model else None) for gpu, model in zip(gpus, models, strict=True))


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


def effective_cuda(driver: DriverInfo, matrix: CompatMatrix) -> tuple[Version | None, str]:
    """The CUDA version CUDA applications get from this driver, and why.

    Under forward compatibility (:func:`forward_compat`) applications get the compat library's CUDA
    version. Otherwise it is the driver's own (NVML, cuDriverGetVersion), or for an assumed driver the one
    the release notes' driver table gives.
    """
    forward = forward_compat(driver)
    if forward is not None:
        return forward.cuda, f"forward compatibility through {forward.library}"
    if driver.cuda_api is not None:
        return driver.cuda_api, "reported by the driver"
    if driver.version is not None:
        derived = matrix.cuda_for_driver(driver.version)
        if derived is not None:
            return derived, "the CUDA release notes' driver table"
    return None, "unknown"


def _package(name: str) -> Callable[[Facts, CompatMatrix], InstalledPackage | None]:
    def compute(facts: Facts, _matrix: CompatMatrix) -> InstalledPackage | None:
        return facts.packages.get(name)

    return compute


DERIVED: dict[str, Derived] = {
    "torch": Derived(_package("torch"), "torch is not installed", "the installed torch distribution"),
    "vllm": Derived(_package("vllm"), "vLLM is not installed", "the installed vLLM distribution"),
    "env": Derived(lambda f, _m: env_map(f.host), "", "the examined environment's variables, by name"),
    "build_toolkit": Derived(
        lambda f, _m: build_toolkit(f.toolkits, f.nvcc),
        "no CUDA toolkit to build extensions with",
        "the toolkit torch.utils.cpp_extension builds with (CUDA_HOME, else nvcc on PATH, else /usr/local/cuda)",
    ),
    "ld_library_path": Derived(
        lambda f, _m: ld_library_path(f.host), "LD_LIBRARY_PATH is not set", "LD_LIBRARY_PATH's directories, in order"
    ),
    "driver_cuda": Derived(
        lambda f, m: effective_cuda(f.driver, m) if f.driver is not None else None,
        "no NVIDIA driver found",
        "the CUDA version applications get from the driver, and how that was decided",
    ),
    "forward": Derived(
        lambda f, _m: forward_compat(f.driver) if f.driver is not None else None,
        "no forward compatibility in effect",
        "the cuda-compat libcuda in effect and the CUDA it reports",
    ),
    "gpu_evidence": Derived(
        lambda f, _m: gpu_evidence(f.gpus, f.visible, f.health),
        "no GPU found (NVML, nvidia-smi, /proc/driver/nvidia/gpus, /dev/nvidia0..N, the PCI bus)",
        "what shows NVIDIA GPUs (the probed GPUs, the /dev/nvidiaN device nodes, the PCI bus) and how many a "
        "process reaches",
    ),
    "scheduler": Derived(
        lambda f, _m: detect_scheduler(
            env_map(f.host),
            f.packages,
            f.visible.cuda_visible_devices if f.visible else None,
            f.host.container.markers if f.host.container else (),
        ),
        "no scheduler (Ray, Slurm, Kubernetes) detected",
        "the scheduler that hands this process its GPUs (Ray, Slurm, Kubernetes), and what showed it",
    ),
    "cuda_builds": Derived(
        lambda f, _m: frameworks_by_cuda_major(f.packages),
        "no framework built for CUDA installed",
        "the installed frameworks by the CUDA major they were built for",
    ),
}
