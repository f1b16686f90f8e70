"""The facts model: what the probes observed, each value with the place it was read.

Facts hold no judgements. Every version is a :class:`packaging.version.Version`; every group of
facts carries the :class:`Source` it came from; a probe that could not read something records a
:class:`ProbeError` instead of guessing. The JSON form (``cudadoctor snapshot``) is produced and
read back by :mod:`cudadoctor.facts.codec`; its layout is documented in ``docs/facts-schema.md`` and
versioned by :data:`SCHEMA_VERSION`.

Names say which version they mean:

* ``driver.version``: the NVIDIA driver (``580.159.04``);
* ``driver.cuda_api``: the newest CUDA version that driver supports (``13.0``);
* ``ToolkitInstall.version``: an installed CUDA toolkit (``13.0.2``);
* ``InstalledPackage.cuda_variant``: the CUDA build of a wheel (``cu130``), and
  ``InstalledPackage.cuda_build``: the CUDA version that variant stands for (``13.0``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, field
from typing import Any

from packaging.version import Version

# torch.compile's facts (CD210-CD213) live in their own module; imported here so the codec resolves their
# annotations in this namespace, and re-exported as part of the model.
from cudadoctor.facts.compile import CCompiler, CompileEnv, LibcudaDir, PtxasBinary, PythonHeaders
from cudadoctor.facts.health import (
    DcgmDiag,
    DcgmEntityResult,
    DcgmTest,
    GpuHealth,
    HealthInfo,
    HostHealth,
    UtilSample,
    XidEvent,
)

# The runtime facts of `check --deep` live in their own module; imported here so the codec resolves
# their annotations in this namespace, and re-exported as part of the model.
from cudadoctor.facts.runtime import (
    DriverApiResult,
    FrameworkRuntime,
    LoadedLibrary,
    NcclSmoke,
    RuntimeDevice,
    RuntimeInfo,
)
from cudadoctor.facts.source import Source, SourceKind
from cudadoctor.record import record

__all__ = [
    "SCHEMA_VERSION",
    "CCompiler",
    "CompileEnv",
    "ContainerInfo",
    "CudaWheels",
    "DcgmDiag",
    "DcgmEntityResult",
    "DcgmTest",
    "DriverApiResult",
    "DriverInfo",
    "DriverReading",
    "DriverVersion",
    "EnvVar",
    "FactSpec",
    "Facts",
    "FrameworkRuntime",
    "GpuHealth",
    "GpuInfo",
    "HealthInfo",
    "HostHealth",
    "HostInfo",
    "InstalledPackage",
    "KernelLogNote",
    "KernelModule",
    "LibcudaDir",
    "LibcudaFile",
    "LibcudaResolution",
    "LibraryCopy",
    "LinkedFile",
    "LlamaCppBuild",
    "LoadedLibrary",
    "LoaderView",
    "ManagedPlatform",
    "NcclSmoke",
    "NeededLibrary",
    "NvccInfo",
    "NvidiaModuleState",
    "PciGpu",
    "ProbeError",
    "PtxasBinary",
    "PythonEnv",
    "PythonHeaders",
    "RootKind",
    "RootMarker",
    "RuntimeDevice",
    "RuntimeInfo",
    "Source",
    "SourceKind",
    "SubLibrary",
    "ToolkitInstall",
    "TorchBuild",
    "UtilSample",
    "VisibleDevices",
    "WheelComponent",
    "XidEvent",
]

#: Version of the facts JSON layout. Bump it when a field is renamed, removed or changes meaning;
#: adding an optional field does not need a bump (readers ignore unknown fields).
SCHEMA_VERSION = 2
#: Version 2 (cudadoctor 0.2): a finding's status is ``ok`` / ``warn`` / ``fail`` / ``not-applicable`` /
#: ``unknown`` / ``error`` (version 1 had ``skip`` for both of the middle two) and its ``skip_reason`` is
#: ``reason``; reports carry ``counts``; a probe error may be ``crashed``. Facts are unchanged, so a
#: version 1 snapshot reads as it is.


class DriverVersion(Version):
    """An NVIDIA driver version that prints as the driver writes it.

    PEP 440 normalises ``580.159.04`` to ``580.159.4`` when printed; driver versions are compared
    like versions but must be shown exactly as NVIDIA writes them (they name files such as
    ``libcuda.so.580.159.04``).
    """

    def __init__(self, version: str) -> None:
        super().__init__(version)
        self._text = version.strip()

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"<DriverVersion({self._text!r})>"


@record
class ProbeError:
    """Why a fact is unknown. The fact is then absent, never guessed."""

    probe: str  #: the probe that failed (``driver``, ``gpus``, ``toolkit`` …)
    message: str  #: one line, for people
    source: str | None = None  #: the file, call or command that failed
    #: the probe itself crashed, so everything it would have reported is unknown (not absent)
    crashed: bool = False


# --- driver ---------------------------------------------------------------------------------------


@record
class DriverReading:
    """One source's answer about the driver. Every source is kept: disagreement is itself a fact."""

    source: Source
    version: DriverVersion | None = None  #: the driver's version, e.g. 580.159.04
    cuda_api: Version | None = None  #: the newest CUDA the driver supports, e.g. 13.0
    detail: str | None = None  #: e.g. the libcuda path that answered


@record
class KernelModule:
    """The loaded NVIDIA kernel module, from ``/proc/driver/nvidia/version``."""

    version: DriverVersion
    flavour: str  #: ``open`` or ``proprietary``
    arch: str | None  #: ``x86_64``, ``aarch64`` … as the module reports it
    source: Source


@record
class LibcudaFile:
    """A user-space driver library file found on disk, versioned by its file name."""

    path: str
    version: DriverVersion | None  #: from ``libcuda.so.<version>``; None for unversioned names
    #: ``driver`` (a normal install), ``compat`` (a cuda-compat forward-compatibility copy),
    #: ``stub`` (the toolkit's link-time stub) or ``wsl`` (the WSL2 driver store)
    kind: str
    #: the directories through which the dynamic loader would find it (LD_LIBRARY_PATH, ld.so.conf)
    on_search_path: bool = False
    source: Source | None = None


@record
class LibcudaResolution:
    """Where the loader model (probes/linkage.py) finds a libcuda name, without loading anything."""

    soname: str  #: ``libcuda.so.1`` (what cudart and ``-lcuda`` binaries ask for) or ``libcuda.so``
    path: str  #: the name the loader opens
    real: str  #: the file it reaches
    via: str  #: ``LD_PRELOAD``, ``LD_LIBRARY_PATH``, ``ld.so.cache``, ``ld.so.conf`` or ``default``


@record
class DriverInfo:
    """The NVIDIA driver, as every source saw it."""

    #: The driver version the sources agree on (kernel module first, then NVML, then nvidia-smi).
    version: DriverVersion | None
    #: The newest CUDA version the user-space driver supports (NVML, then cuDriverGetVersion).
    cuda_api: Version | None
    kernel_module: KernelModule | None = None
    readings: tuple[DriverReading, ...] = ()
    libcuda_files: tuple[LibcudaFile, ...] = ()
    #: The libcuda the dynamic loader picked when asked for ``libcuda.so.1``, with its path.
    loaded_libcuda: str | None = None
    wsl: bool = False
    #: ``libcuda.so.1`` and ``libcuda.so`` as the loader model resolves them (live and under --root);
    #: the live answer (``loaded_libcuda``) comes first where both exist.
    resolved_libcuda: tuple[LibcudaResolution, ...] = ()
    #: the file names in /usr/lib/wsl/lib, the WSL2 driver store as this system (or container) maps it
    wsl_libraries: tuple[str, ...] = ()


# --- GPUs -----------------------------------------------------------------------------------------


@record
class GpuInfo:
    """One GPU. No UUID or serial number is ever kept."""

    index: int
    name: str
    compute_capability: str | None  #: ``"9.0"``; None when no source said and the model is unknown
    source: Source
    memory_mib: int | None = None
    mig_mode: str | None = None  #: ``Enabled`` / ``Disabled`` / None when not reported
    pci_bus_id: str | None = None
    brand: str | None = None  #: NVML brand (``Tesla``, ``GeForce`` …) when known
    #: MIG devices on this GPU that the process may use (NVML); None when MIG is off or not reported
    mig_devices: int | None = None
    #: where the compute capability came from when it differs from ``source`` (the compat/ GPU table)
    compute_capability_source: Source | None = None
    #: where ``mig_mode`` and ``mig_devices`` came from when it differs from ``source`` (the MIG capability files)
    mig_source: Source | None = None


@record
class VisibleDevices:
    """What limits which GPUs a process sees."""

    cuda_visible_devices: str | None = None  #: the variable's raw value, None when unset
    nvidia_visible_devices: str | None = None
    device_nodes: tuple[str, ...] = ()  #: ``/dev/nvidia0``, ``/dev/nvidiactl``, ``/dev/nvidia-uvm`` …
    #: /dev is a running system's: it holds /dev/null as a character device, as every running machine and container
    #: has (the OCI runtime spec's default devices); False for an image root or a copied disk, whose /dev holds no
    #: device, so the absence of /dev/nvidia0 there says nothing; None when not read (an older snapshot)
    live_dev: bool | None = None


# --- CUDA toolkits --------------------------------------------------------------------------------


@record
class ToolkitInstall:
    """One CUDA toolkit directory."""

    root: str  #: the directory as found (``/usr/local/cuda-13.0``)
    version: Version | None  #: the toolkit's version (``13.0.2`` from version.json, else 13.0 …)
    source: Source | None  #: where ``version`` was read
    found_via: tuple[str, ...] = ()  #: ``CUDA_HOME``, ``/usr/local/cuda link``, ``glob`` …
    nvcc_version: Version | None = None  #: the nvcc inside this root (``13.0.88``), when read
    real_path: str | None = None  #: ``root`` with symlinks resolved


@record
class NvccInfo:
    """The first ``nvcc`` on PATH and what it says."""

    path: str
    release: Version | None  #: ``13.0`` from "release 13.0"
    version: Version | None  #: ``13.0.88`` from "V13.0.88"
    source: Source


# --- libraries ------------------------------------------------------------------------------------


@record
class WheelComponent:
    """One CUDA component installed as a pip wheel (``nvidia-cuda-runtime``, ``nvidia-cublas-cu12``)."""

    distribution: str  #: canonical distribution name
    version: Version
    lib_dir: str | None  #: ``…/nvidia/cu13/lib`` or ``…/nvidia/cuda_runtime/lib``
    source: Source


@record
class CudaWheels:
    """The CUDA runtime and math libraries that pip wheels put in site-packages."""

    #: ``cu13`` (one ``nvidia/cu13/lib``), ``cu12`` (``nvidia/<component>/lib`` + ``-cu12`` names),
    #: ``cu11``, ``mixed`` (runtime wheels of two layouts) or ``unknown`` (only the meta-package)
    layout: str
    components: tuple[WheelComponent, ...]
    #: the ``cuda-toolkit`` meta-package version, the natural "pip CUDA toolkit" version
    toolkit_meta: Version | None = None
    #: the CUDA runtime version the wheels provide (the ``nvidia-cuda-runtime*`` version)
    runtime_version: Version | None = None


@record
class LibraryCopy:
    """One installed copy of cuDNN, NCCL or TensorRT."""

    library: str  #: ``cudnn`` / ``nccl`` / ``tensorrt``
    version: Version | None
    origin: str  #: ``pip`` / ``system`` / ``conda`` / ``toolkit`` / ``tarball``
    path: str  #: the header, library file or dist-info it was read from
    source: Source
    distribution: str | None = None  #: the pip distribution that owns it (``nvidia-cudnn-cu13``)
    #: the CUDA major this copy was built for, when its name says (``-cu13``, ``+cuda13.0``)
    cuda_major: int | None = None
    lib_paths: tuple[str, ...] = ()  #: library files of this copy (``libcudnn.so.9.14.0`` …)
    #: the package that ships this copy inside its own directory (``torch`` for torch 1.x's ``torch/lib``)
    bundled_by: str | None = None


@record
class LinkedFile:
    """One file the dynamic loader could load for a soname, and where in its search order it sits."""

    path: str
    #: how the loader reaches it: ``LD_PRELOAD``, ``RPATH``, ``LD_LIBRARY_PATH``, ``RUNPATH``,
    #: ``ld.so.cache``, ``ld.so.conf`` (no cache readable: its directories), ``default``
    via: str
    version: Version | None = None  #: from the file name, its link target, or the owning wheel
    distribution: str | None = None  #: the pip distribution that ships it (``nvidia-nvjitlink-cu12``)
    #: who bundles it when it is neither a CUDA wheel nor a system copy (``torch`` for torch/lib)
    bundled_by: str | None = None


@record
class SubLibrary:
    """A sub-library the loaded cuDNN shim loads by soname with ``dlopen`` (``libcudnn_ops_infer.so.8``):
    its copy beside the shim and the copy the loader's own search finds (which one loads is the rule of
    that cuDNN major, in compat/libraries.toml)."""

    soname: str
    beside: LinkedFile | None  #: in the shim's own directory
    #: the first copy LD_LIBRARY_PATH, ld.so.cache (or ld.so.conf) and the default directories give
    searched: LinkedFile | None


@record
class NeededLibrary:
    """A CUDA library one package's shared object needs (DT_NEEDED), resolved the way ld.so would."""

    package: str  #: the distribution (or top-level directory) that ships the needing object
    needer: str  #: the shared object that needs it
    soname: str  #: ``libcublas.so.12``
    loaded: LinkedFile | None  #: the copy that will load; None when it resolves nowhere
    #: copies of the same soname later in the search order (or outside it, such as the package's
    #: own pinned wheel), which the loaded one hides
    shadowed: tuple[LinkedFile, ...] = ()
    #: files of the same library with another soname number (``libcublas.so.11`` when ``.so.12`` is needed)
    other_majors: tuple[str, ...] = ()
    #: DT_VERNEED versions the needer wants from this soname (``libcudart.so.12``)
    versions: tuple[str, ...] = ()
    #: for a cuDNN shim (``libcudnn.so.N``) that loads: the sub-libraries found beside it or on the loader's path
    sublibraries: tuple[SubLibrary, ...] = ()
    #: how the needer asks for it: ``DT_NEEDED``, or ``dlopen`` (by name at run time, from
    #: compat/runtime_libraries.toml: invisible in DT_NEEDED)
    how: str = "DT_NEEDED"
    #: the package works without it (a feature is off): it matters only when another major is installed
    optional: bool = False
    #: copies on its search path that ld.so skips: built for another CPU, class or byte order
    #: (``/usr/lib/libcudart.so.12 (for AArch64)``)
    foreign: tuple[str, ...] = ()


@record
class LoaderView:
    """What ld.so would load for the CUDA libraries that installed packages need."""

    #: LD_PRELOAD entries that are CUDA libraries, as the loader would load them first
    preloaded: tuple[LinkedFile, ...] = ()
    needs: tuple[NeededLibrary, ...] = ()
    #: where the loader's cache came from: ``/etc/ld.so.cache (N entries)`` or why ld.so.conf stood in
    cache: str = ""
    scanned: int = 0  #: shared objects found in site-packages (each read once, then taken from the scan cache)
    #: what the scan could not read or left out, and why (``<path>: not read: truncated``, the object cap): what
    #: those objects need is unknown, so a check finding nothing missing could not judge
    unread: tuple[str, ...] = ()  #: the first 20
    unread_total: int = 0  #: how many were not read in all


@record
class LlamaCppBuild:
    """llama-cpp-python's shared objects as the build that installed it left them (PyPI has only its sdist,
    so pip compiles it on the machine: with CUDA only when CMAKE_ARGS asked for it)."""

    directory: str  #: the ``llama_cpp`` package directory
    objects: tuple[str, ...]  #: its shared objects (``llama_cpp/lib/libggml-cuda.so``, ``llama_cpp/libllama.so``)
    #: the CUDA libraries those objects need (DT_NEEDED ``libcudart.so.12``, ``libcublas.so.12``), sorted
    cuda_needs: tuple[str, ...]
    #: objects whose dynamic section could not be read, with why: what they need is unknown
    unread: tuple[str, ...]
    source: Source


# --- Python packages ------------------------------------------------------------------------------


@record
class PythonEnv:
    """The interpreter whose packages are examined (not necessarily cudadoctor's own)."""

    executable: str
    version: Version | None
    prefix: str | None
    kind: str  #: ``venv`` / ``conda`` / ``system`` / ``unknown``
    site_paths: tuple[str, ...]
    source: Source
    #: why this interpreter was chosen (``--python``, ``VIRTUAL_ENV``, ``CONDA_PREFIX``, ``this interpreter`` …)
    chosen_by: str = ""


@record
class TorchBuild:
    """``torch/version.py``, read as text (torch is never imported)."""

    version: Version | None
    cuda: str | None  #: ``"13.0"`` for a CUDA build
    hip: str | None  #: ROCm/HIP version for a ROCm build
    debug: bool | None
    git_version: str | None
    source: Source
    #: torch's C++ ABI: ``_GLIBCXX_USE_CXX11_ABI`` in ``torch/share/cmake/Torch/TorchConfig.cmake``
    #: (True = the C++11 ABI); None when that file is absent
    cxx11_abi: bool | None = None


@record
class InstalledPackage:
    """A Python distribution of interest in the target environment."""

    name: str  #: canonical name (``torch``, ``nvidia-cudnn-cu13``)
    version: Version
    location: str  #: the site-packages directory
    source: Source
    #: the wheel's CUDA build as a variant tag: ``cu130``, ``cu124``, ``rocm6.2``, ``cpu`` …
    cuda_variant: str | None = None
    #: the CUDA version the variant stands for (``13.0``); None for ROCm/CPU builds
    cuda_build: str | None = None
    #: how ``cuda_variant`` was established (``local version tag``, ``torch/version.py``,
    #: ``Requires-Dist cuda-toolkit==13.0.2``, ``package name``)
    cuda_variant_source: str | None = None
    #: Requires-Dist lines that pin CUDA components (``nvidia-*``, ``cuda-toolkit``), as written
    cuda_requires: tuple[str, ...] = ()
    #: every Requires-Dist line that applies without extras, as written
    requires: tuple[str, ...] = ()
    torch_build: TorchBuild | None = None
    installer: str | None = None  #: ``pip`` / ``uv`` / ``conda`` … from the INSTALLER file


# --- host and context -----------------------------------------------------------------------------


@record
class ContainerInfo:
    """Signs that this runs inside a container."""

    in_container: bool
    runtime: str | None  #: ``docker`` / ``podman`` / ``kubernetes`` / None when unknown
    markers: tuple[str, ...]  #: what was seen (``/.dockerenv``, ``KUBERNETES_SERVICE_HOST`` …)


@record
class RootMarker:
    """One sign of what the examined root is: a host's own system or a container image."""

    kind: str  #: ``host`` or ``image``: which of the two it speaks for
    source: Source  #: where it was seen (``file: /.dockerenv``, ``file: /boot/vmlinuz-6.8.0-45-generic`` …)


@record
class RootKind:
    """Whether the examined root is a machine's own system (a host) or a container image.

    The fixes differ: on a host a driver mismatch is mended by a reboot, in an image by removing the driver
    libraries baked into it. ``kind`` is ``host`` or ``image`` when the markers agree (or ``--root-kind`` said
    so), ``unknown`` when they are missing or contradict each other; a fix then takes the safe side (a host's).
    """

    kind: str  #: ``host`` / ``image`` / ``unknown``
    #: the marker that decided (``assumed: --root-kind image`` for the flag); None when nothing decided
    source: Source | None = None
    markers: tuple[RootMarker, ...] = ()  #: every sign seen, for and against
    #: driver libraries the container runtime mounted from the host (``/proc/self/mountinfo``; live only):
    #: they are the host's own, never to be removed inside the container
    mounted_driver_files: tuple[str, ...] = ()


@record
class PciGpu:
    """One NVIDIA display or 3D controller on the PCI bus (/sys/bus/pci/devices), whatever driver is loaded."""

    address: str  #: ``0000:01:00.0``
    device: str  #: the PCI device ID, four hex digits in capitals (``2204``)
    driver: str = ""  #: the kernel driver bound to it (``nvidia``, ``nouveau``, ``vfio-pci``); "" unbound
    #: its subsystem vendor and device (``10DE 12A2``), which some device IDs need to be named; "" unread
    subsystem: str = ""


@record
class KernelLogNote:
    """A kernel log message about why the nvidia module did not take a GPU (the driver's own NVRM lines, the
    kernel's module signature check)."""

    #: ``unsigned`` (the kernel refused an unsigned module), ``gsp`` (the open module refused a GPU without a GPU
    #: System Processor), ``legacy`` (a GPU of a legacy branch), ``unsupported`` (a GPU this release does not know)
    kind: str
    line: str  #: the message, its continuation lines joined
    #: ``legacy``: the legacy branch it names (``470``); ``unsupported``: the release (``550.54.14``); else ""
    release: str = ""


@record
class NvidiaModuleState:
    """Whether the NVIDIA kernel module is loaded for the GPUs on the PCI bus, and what the files say about why not.

    Read from files only (sysfs, procfs, /lib/modules), so it answers where NVML cannot: nvidia-smi's "couldn't
    communicate with the NVIDIA driver" is this module missing.
    """

    pci_gpus: tuple[PciGpu, ...]  #: the NVIDIA GPUs on the PCI bus
    #: /sys/module/nvidia or /proc/driver/nvidia/version exists; None: /sys/module could not be listed
    nvidia_loaded: bool | None
    nouveau_loaded: bool = False  #: /sys/module/nouveau exists: the open-source driver holds the GPU
    kernel_release: str | None = None  #: the running kernel (/proc/sys/kernel/osrelease); None unreadable
    #: the nvidia module files depmod lists for that kernel (/lib/modules/<release>/modules.dep), as written
    #: there (``updates/dkms/nvidia.ko.zst``); None when modules.dep could not be read
    nvidia_module_files: tuple[str, ...] | None = None
    #: /var/lib/dkms/nvidia exists: the driver's source is registered with DKMS, so `dkms autoinstall` builds it
    dkms_registered: bool = False
    #: driver versions whose kernel-module source NVIDIA's DKMS packages left in /usr/src/nvidia-<version>
    dkms_sources: tuple[str, ...] = ()
    #: the other installed kernels (/lib/modules/*) whose modules.dep lists an nvidia module; None not looked at
    other_kernels: tuple[str, ...] | None = None
    #: UEFI Secure Boot is enforced (efivars SecureBoot is 1 and shim's validation is not turned off), so the
    #: kernel loads only signed modules; False booted without it; None when the firmware variables are unreadable
    secure_boot: bool | None = None
    #: the key DKMS signs the modules it builds with, where it exists (Ubuntu: /var/lib/shim-signed/mok/MOK.der)
    signing_key: str | None = None
    #: the kernel log read (``/var/log/kern.log``), None when none could be read
    kernel_log: str | None = None
    #: what that log says about the nvidia module (the newest of each kind)
    kernel_notes: tuple[KernelLogNote, ...] = ()
    #: the flavour of the running kernel's nvidia module from its .modinfo license (``Dual MIT/GPL``: ``open``,
    #: ``NVIDIA``: ``proprietary``); None when not read (a compressed module, or none)
    module_flavor: str | None = None
    #: where the module is loaded: the NVIDIA GPUs it did not take (no driver bound, or nouveau), by PCI address;
    #: SR-IOV virtual functions and GPUs passed through (vfio-pci, pci-stub) are left out
    unclaimed: tuple[str, ...] = ()


@record
class ManagedPlatform:
    """A managed notebook or training platform (Colab, Kaggle, SageMaker …): it installs the NVIDIA driver, and a
    user cannot change it there."""

    name: str  #: ``Google Colab``, ``Kaggle``, ``Amazon SageMaker`` …
    source: Source  #: the variable or file that says so (``env: COLAB_RELEASE_TAG``)


@record
class EnvVar:
    """One environment variable that matters to CUDA. Secret-looking values are masked on output."""

    name: str
    value: str
    #: what the variable claims, for image variables that can lie (``CUDA_VERSION``,
    #: ``NV_CUDNN_VERSION``, ``NCCL_VERSION``) — None for plain settings
    claims: str | None = None


@record
class HostInfo:
    """The operating system, CPU and context cudadoctor runs in (or, with ``--root``, the image)."""

    os: str  #: ``Linux``, ``Darwin``, ``Windows``
    arch: str  #: ``x86_64``, ``aarch64`` …
    distro: str | None = None  #: PRETTY_NAME from os-release
    kernel: str | None = None
    glibc: Version | None = None
    container: ContainerInfo | None = None
    wsl: bool = False
    apple_silicon: bool = False
    #: ROCm user space (/opt/rocm/.info/version), e.g. 6.4.1; None when absent
    rocm_version: Version | None = None
    #: the amdgpu kernel driver is loaded (/sys/module/amdgpu; live machine only)
    amdgpu_driver: bool = False
    #: NVIDIA Jetson's L4T release (/etc/nv_tegra_release), e.g. ``R36.4.3``; None elsewhere
    jetson_l4t: str | None = None
    #: an Intel GPU kernel driver is loaded (``xe`` or ``i915``, /sys/module; live machine only)
    intel_gpu_driver: str | None = None
    #: Intel display devices (PCI base class 03) under /sys/class/drm, as ``<PCI slot> <vendor:device>``
    #: (``0000:03:00.0 8086:56A0``); live machine only. The integrated one sits at 0000:00:02.0
    intel_gpus: tuple[str, ...] = ()
    env: tuple[EnvVar, ...] = ()
    #: the dynamic loader's search directories, in order: LD_LIBRARY_PATH, then ld.so.conf
    loader_paths: tuple[str, ...] = ()


# --- everything -----------------------------------------------------------------------------------


@record
class FactSpec:
    """How one top-level fact is judged absent, reported and documented.

    The declaration lives on the :class:`Facts` field itself (its ``metadata``), so a fact is declared
    exactly once; :mod:`cudadoctor.facts.registry` reads these declarations for the report's categories and the
    schema document. What fills a fact is named above the model: the probe in
    :data:`cudadoctor.probes.registry.PROBES`, a value computed from facts in
    :data:`cudadoctor.checks.derived.DERIVED`.
    """

    #: the report category a probe error belongs to (``driver``, ``gpus``, ``python`` …)
    category: str
    #: why a check that needs this fact is not applicable when it is absent; "" when never absent
    absent: str
    #: the schema document's type and meaning columns
    type_doc: str
    doc: str


def fact(spec: FactSpec, *, default: Any = MISSING, default_factory: Callable[[], Any] | Any = MISSING) -> Any:
    """A :class:`Facts` field carrying its :class:`FactSpec`."""
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata={"fact": spec})
    if default is not MISSING:
        return field(default=default, metadata={"fact": spec})
    return field(metadata={"fact": spec})


@record
class Facts:
    """Everything the probes observed about one machine (or one image root).

    Each field is one fact, declared once with its :class:`FactSpec`. Adding a probe: write the
    probe function and name it in :data:`cudadoctor.probes.registry.PROBES`, add its field here (CONTRIBUTING.md).
    """

    host: HostInfo = fact(FactSpec("host", "no host facts", "HostInfo", "the OS, CPU and context"))
    driver: DriverInfo | None = fact(
        FactSpec(
            "driver",
            "no NVIDIA driver found",
            "DriverInfo or null",
            "the NVIDIA driver; null when there is no trace of one",
        ),
        default=None,
    )
    gpus: tuple[GpuInfo, ...] = fact(
        FactSpec("gpus", "no GPU found", "list of GpuInfo", "the GPUs, in index order"),
        default=(),
    )
    visible: VisibleDevices = fact(
        FactSpec("gpus", "", "VisibleDevices", "what limits which GPUs a process sees"),
        default_factory=VisibleDevices,
    )
    toolkits: tuple[ToolkitInstall, ...] = fact(
        FactSpec(
            "toolkit",
            "no CUDA toolkit installed",
            "list of ToolkitInstall",
            "every CUDA toolkit directory found",
        ),
        default=(),
    )
    nvcc: NvccInfo | None = fact(
        FactSpec(
            "toolkit",
            "no nvcc on PATH",
            "NvccInfo or null",
            "the first `nvcc` on PATH",
        ),
        default=None,
    )
    compile_env: CompileEnv | None = fact(
        FactSpec(
            "toolkit",
            "neither torch 2 nor triton is installed",
            "CompileEnv or null",
            "what Triton (torch.compile's GPU compiler) needs: its ptxas, the driver's libcuda by the names it "
            "looks for, a C compiler and Python.h",
        ),
        default=None,
    )
    cuda_wheels: CudaWheels | None = fact(
        FactSpec(
            "wheels",
            "no CUDA wheels installed",
            "CudaWheels or null",
            "CUDA runtime and math libraries installed as pip wheels",
        ),
        default=None,
    )
    cudnn: tuple[LibraryCopy, ...] = fact(
        FactSpec(
            "cudnn",
            "no cuDNN installed",
            "list of LibraryCopy",
            "every cuDNN copy (pip, system, conda, toolkit)",
        ),
        default=(),
    )
    nccl: tuple[LibraryCopy, ...] = fact(
        FactSpec(
            "nccl",
            "no NCCL installed",
            "list of LibraryCopy",
            "every NCCL copy",
        ),
        default=(),
    )
    tensorrt: tuple[LibraryCopy, ...] = fact(
        FactSpec(
            "tensorrt",
            "no TensorRT installed",
            "list of LibraryCopy",
            "every TensorRT copy",
        ),
        default=(),
    )
    loader: LoaderView | None = fact(
        FactSpec(
            "wheels",
            "no installed package needs a CUDA library",
            "LoaderView or null",
            "for each CUDA library an installed package's shared objects need: the copy ld.so will load "
            "(LD_PRELOAD, RPATH, LD_LIBRARY_PATH, RUNPATH, ld.so.cache, default directories), its version, "
            "and the copies it shadows",
        ),
        default=None,
    )
    llama_cpp: LlamaCppBuild | None = fact(
        FactSpec(
            "python",
            "llama-cpp-python is not installed",
            "LlamaCppBuild or null",
            "llama-cpp-python's shared objects (llama_cpp/, llama_cpp/lib/) and the CUDA libraries they need",
        ),
        default=None,
    )
    python: PythonEnv | None = fact(
        FactSpec(
            "python",
            "no Python environment found",
            "PythonEnv or null",
            "the interpreter whose packages were examined",
        ),
        default=None,
    )
    packages: dict[str, InstalledPackage] = fact(
        FactSpec(
            "python",
            "",
            "object: name → InstalledPackage",
            "Python distributions of interest, by canonical name",
        ),
        default_factory=dict,
    )
    health: HealthInfo | None = fact(
        FactSpec(
            "health",
            "GPU health not examined (--no-health, an image root, or a snapshot without it)",
            "HealthInfo or null",
            "the GPUs' hardware health: NVML's answers, PCI functions, kernel-log Xids, NCCL host prerequisites",
        ),
        default=None,
    )
    root_kind: RootKind | None = fact(
        FactSpec(
            "host",
            "the root's kind was not recorded (a snapshot of an older cudadoctor)",
            "RootKind or null",
            "whether the examined root is a host's own system or a container image, with the markers seen "
            "(`--root-kind` overrides it)",
        ),
        default=None,
    )
    platform: ManagedPlatform | None = fact(
        FactSpec(
            "host",
            "not on a managed notebook or training platform",
            "ManagedPlatform or null",
            "the managed platform (Colab, Kaggle, SageMaker …) whose NVIDIA driver the user cannot change",
        ),
        default=None,
    )
    nvidia_module: NvidiaModuleState | None = fact(
        FactSpec(
            "driver",
            "no NVIDIA GPU on the PCI bus (or an image root, whose kernel is the host's)",
            "NvidiaModuleState or null",
            "the NVIDIA GPUs on the PCI bus and whether the NVIDIA kernel module is loaded for them (nouveau, "
            "the module files of the running kernel, DKMS); null when the PCI bus shows no NVIDIA GPU",
        ),
        default=None,
    )
    errors: tuple[ProbeError, ...] = fact(
        FactSpec("host", "", "list of ProbeError", "why a fact is unknown"), default=()
    )
    runtime: RuntimeInfo | None = fact(
        FactSpec(
            "runtime",
            "runtime probes not run (use --deep)",
            "RuntimeInfo or null",
            "what child processes saw at run time (`check --deep`); null when not run",
        ),
        default=None,
    )
    dcgm: DcgmDiag | None = fact(
        FactSpec(
            "health",
            "DCGM's diagnostic was not run (check --dcgm-diag 1 runs it)",
            "DcgmDiag or null",
            "what `dcgmi diag -r LEVEL -j` answered (`check --dcgm-diag LEVEL`); null when not asked",
        ),
        default=None,
    )
    mode: str = fact(
        FactSpec(
            "host",
            "",
            "string",
            "how the facts were gathered: `live` (this machine) or `root:<dir>` (an image root); a snapshot keeps "
            "the mode it was gathered in",
        ),
        default="live",
    )
    tool_version: str = fact(
        FactSpec("host", "", "string", "the cudadoctor version that gathered the facts"), default=""
    )
    collected_at: str = fact(FactSpec("host", "", "string", "ISO 8601 UTC time"), default="")
    timings: dict[str, float] = fact(
        FactSpec("host", "", "object: probe → seconds", "how long each probe took"), default_factory=dict
    )
