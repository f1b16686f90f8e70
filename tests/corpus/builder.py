"""Lay out a corpus case's declared environment the way real machines, pip, conda, apt and the NVIDIA
images do, so the probes read it as they would read the machine the thread was about.

A case only *describes* (tests/corpus/README.md); this module is the one reviewed place that turns the
description into files, links, environment variables and the answers of the two native calls (NVML and
``cuDriverGetVersion``) and of the commands the probes run (``nvcc --version``, the target interpreter's
``sys.path``). Layouts, with their public sources:

* kernel module: ``/proc/driver/nvidia/version`` and ``/sys/module/nvidia/version`` as the proprietary and
  open modules write them; procfs and sysfs are the host's, so a container started without ``--gpus``
  still shows them (https://docs.docker.com/engine/containers/resource_constraints/#gpu);
* user-space driver: ``libcuda.so.<driver>`` with its ``libcuda.so.1`` soname link and NVML's
  ``libnvidia-ml.so.<driver>`` in the distribution's multiarch directory, where the NVIDIA Container
  Toolkit also injects them (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/);
  device nodes ``/dev/nvidia0…``, ``/dev/nvidiactl``, ``/dev/nvidia-uvm``;
* WSL2: ``/usr/lib/wsl/lib/libcuda.so*`` as plain files and ``/dev/dxg``
  (https://docs.nvidia.com/cuda/wsl-user-guide/index.html);
* toolkits: ``/usr/local/cuda-X.Y`` with ``version.json`` (11.1 and later) or ``version.txt``,
  ``bin/nvcc``, ``lib64/libcudart.so.*``, ``lib64/stubs/libcuda.so`` and, when declared, ``compat/``
  (https://docs.nvidia.com/deploy/cuda-compatibility/);
* Python: a venv (``pyvenv.cfg``), a conda prefix (``conda-meta/``) or Debian's system layout
  (``/usr/local/lib/pythonX.Y/dist-packages``); each distribution as a ``*.dist-info`` directory with
  ``METADATA`` (core metadata, https://packaging.python.org/en/latest/specifications/core-metadata/) and
  ``INSTALLER``; torch with its generated ``torch/version.py``; NVIDIA's CUDA wheels with their
  libraries under ``nvidia/<component>/lib`` (``-cu11``/``-cu12``) or ``nvidia/cu13/lib`` (CUDA 13);
* system libraries: the versioned file and its soname link, as the Debian packages install them.

Library files are empty, except the shared objects whose dynamic section the loader's view reads: those
are minimal ELF files written by ``tests/elfwriter.py`` with the DT_NEEDED and RUNPATH of the real wheels
(torch's ``libtorch_cuda.so`` with the RUNPATH ``$ORIGIN/../../nvidia/<component>/lib`` that PyTorch's
wheel build sets, https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_cuda.sh; cuSPARSE 12
needing nvJitLink, https://docs.nvidia.com/cuda/archive/12.0.0/cuda-toolkit-release-notes/; onnxruntime-gpu's
CUDA provider with the sonames ``compat/ecosystem.toml`` read from the wheel). A CUDA 12+ toolkit's
``lib64`` holds its ``libnvJitLink.so.<version>`` (https://docs.nvidia.com/cuda/nvjitlink/).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

import tomllib

from cudadoctor.gpu_models import load_models, lookup
from cudadoctor.probes.interpreter import SYS_PATH_SCRIPT
from cudadoctor.probes.native import LibcudaResult, NvmlDevice, NvmlResult
from tests.conftest import FakeNative, FakeRunner
from tests.elfwriter import shared_object

CORPUS = os.path.dirname(os.path.abspath(__file__))

#: The newest CUDA each driver branch supports (NVIDIA's CUDA Toolkit release notes, Table 3,
#: https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html), what NVML's
#: nvmlSystemGetCudaDriverVersion answers, as major*1000 + minor*10.
_BRANCH_CUDA = (
    (580, 13000), (575, 12090), (570, 12080), (565, 12070), (560, 12060), (555, 12050), (550, 12040),
    (545, 12030), (535, 12020), (530, 12010), (525, 12000), (520, 11080), (515, 11070), (510, 11060),
    (495, 11050), (470, 11040), (465, 11030), (460, 11020), (455, 11010), (450, 11000), (440, 10020),
    (418, 10010), (410, 10000), (396, 9020), (390, 9010), (384, 9000), (375, 8000), (367, 8000),
)  # fmt: skip

#: Library name -> (file name stem, whether the soname's number is the CUDA major rather than the
#: library's own major). NCCL's soname is always libnccl.so.2.
_SONAMES: dict[str, tuple[str, ...]] = {
    "cudnn": ("libcudnn",),
    "nccl": ("libnccl",),
    "cublas": ("libcublas", "libcublasLt"),
    "cudart": ("libcudart",),
    "cuda-runtime": ("libcudart",),
    "nvjitlink": ("libnvJitLink",),
    "cusparse": ("libcusparse",),
    "cufft": ("libcufft",),
    "curand": ("libcurand",),
    "cusolver": ("libcusolver",),
    "cuda-nvrtc": ("libnvrtc",),
    "nvrtc": ("libnvrtc",),
    "cuda-cupti": ("libcupti",),
    "cupti": ("libcupti",),
    "tensorrt": ("libnvinfer",),
    "nvinfer": ("libnvinfer",),
}

_LOCAL_CUDA = re.compile(r"\+cu(\d+)(\d)$")
# Both METADATA spellings: "nvidia-cuda-runtime-cu12==12.1.105" and the older "(==12.1.105)";
# torch 2.9+ pins cuda-toolkit[...] instead.
_CUDA_PIN = re.compile(r"^(?:nvidia-cuda-runtime(?:-cu\d+)?|cuda-toolkit(?:\[[^\]]*\])?)\s*\(?\s*==\s*(\d+)\.(\d+)")


@dataclass
class Replay:
    """Everything a probe context needs to see the case's machine."""

    files: dict[str, str] = field(default_factory=dict)
    binaries: dict[str, bytes] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    env: dict[str, str] = field(default_factory=dict)
    runner: FakeRunner = field(default_factory=FakeRunner)
    native: FakeNative = field(default_factory=FakeNative)
    python: str | None = None
    machine: str = "x86_64"

    def write(self, prefix: str = "/") -> None:
        """Create the files and links under ``prefix`` (``/`` under pyfakefs)."""
        prefix = prefix.rstrip("/")
        for directory in sorted(self.dirs):
            os.makedirs(prefix + directory, exist_ok=True)
        for path, content in self.files.items():
            full = prefix + path
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as handle:
                handle.write(content)
        for path, data in self.binaries.items():
            full = prefix + path
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as binary:
                binary.write(data)
        for link, target in self.links.items():
            full = prefix + link
            os.makedirs(os.path.dirname(full), exist_ok=True)
            if not os.path.lexists(full):
                os.symlink(target, full)


def load_case(path: str) -> dict[str, Any]:
    with open(path, "rb") as handle:
        return tomllib.load(handle)


def case_paths(kind: str = "cases") -> list[str]:
    base = os.path.join(CORPUS, kind)
    return sorted(os.path.join(base, d, "case.toml") for d in os.listdir(base) if not d.startswith("."))


def _multiarch(arch: str) -> str:
    return f"/usr/lib/{'aarch64' if arch == 'aarch64' else 'x86_64'}-linux-gnu"


def _major(version: str) -> str:
    return version.split(".")[0]


def _lib_with_link(replay: Replay, directory: str, stem: str, version: str, soname: str) -> None:
    """A system library: the versioned file and its soname link (``libcudnn.so.8`` -> ``libcudnn.so.8.9.2``)."""
    real = f"{directory}/{stem}.so.{version}"
    replay.files[real] = ""
    if soname != version:
        replay.links[f"{directory}/{stem}.so.{soname}"] = f"{stem}.so.{version}"


def _cudnn_parts(version: str) -> tuple[str, ...]:
    """The file stems of the sub-libraries cuDNN ``version`` ships beside its shim (compat/libraries.toml
    ``cudnn_sublibrary``: cuDNN 8's six, cuDNN 9's seven, libcudnn_engines_tensor_ir from 9.21)."""
    from packaging.version import Version

    from cudadoctor.data import CompatMatrix

    sonames = CompatMatrix(cache_dir=False).cudnn_sublibraries_shipped(Version(version)) or ()
    return tuple(s.split(".so.")[0] for s in sonames)


def _cuda_api(driver: str) -> int:
    branch = int(_major(driver))
    return next((api for floor, api in _BRANCH_CUDA if branch >= floor), 0)


# --- host ------------------------------------------------------------------------------------------


def _host(replay: Replay, env: dict[str, Any]) -> None:
    os_name = str(env.get("os", "Ubuntu 22.04"))
    name, _, version = os_name.partition(" ")

    replay.files["/etc/os-release"] = (
        f'PRETTY_NAME="{os_name}"\nNAME="{name}"\nVERSION_ID="{version}"\nID={name.lower()}\n'
    )
    replay.files["/etc/ld.so.conf"] = "include /etc/ld.so.conf.d/*.conf\n"
    lib = _multiarch(replay.machine)
    replay.files[f"/etc/ld.so.conf.d/{lib.rsplit('/', 1)[1]}.conf"] = f"/usr/local{lib[4:]}\n{lib[4:]}\n{lib}\n"
    container = env.get("container", "none")
    if container in ("docker", "kubernetes", "colab", "kaggle"):
        replay.files["/.dockerenv"] = ""
    if container == "kubernetes":
        replay.env["KUBERNETES_SERVICE_HOST"] = "10.96.0.1"
    # The platforms' own variables (their public sources are in cudadoctor/probes/origin.py): Colab's GPU runtime
    # sets COLAB_GPU=1, Kaggle KAGGLE_KERNEL_RUN_TYPE (Interactive in a notebook).
    if container == "colab":
        replay.env["COLAB_GPU"] = "1"
    if container == "kaggle":
        replay.env["KAGGLE_KERNEL_RUN_TYPE"] = "Interactive"
    if container == "wsl2" or (env.get("driver") or {}).get("windows"):
        replay.files["/proc/version"] = "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@1c4b) (gcc 11.2.0)\n"
        if container == "wsl2":  # written by WSL's init on the distribution, not inside a container
            replay.files["/etc/ld.so.conf.d/ld.wsl.conf"] = "/usr/lib/wsl/lib\n"
    else:
        replay.files["/proc/version"] = "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) (gcc 13.2.0)\n"
    replay.env.setdefault("HOME", "/root")


# --- driver and GPUs -------------------------------------------------------------------------------


def _proc_version(version: str, flavor: str, arch: str) -> str:
    if flavor == "open":
        return (
            f"NVRM version: NVIDIA UNIX Open Kernel Module for {arch}  {version}  Release Build  "
            "(dvs-builder@U22-I3-AE18-23-3)  Wed Oct 16 00:00:00 UTC 2024\nGCC version:  gcc version 12.3.0\n"
        )
    return (
        f"NVRM version: NVIDIA UNIX {arch} Kernel Module  {version}  Wed Oct 16 00:00:00 UTC 2024\n"
        "GCC version:  gcc version 12.3.0\n"
    )


def _gpu_devices(env: dict[str, Any]) -> tuple[NvmlDevice, ...]:
    models = load_models()
    devices = []
    for index, gpu in enumerate(env.get("gpus", [])):
        model = lookup(str(gpu["name"]), models)
        cc = model.compute_capability if model else None
        # `mig = [profiles]` declares MIG mode on, with those MIG devices visible to the process
        # (`mig = []`: MIG on, none created or assigned); NVML counts them per GPU.
        declared = gpu.get("mig")
        mig = "Enabled" if declared is not None else "Disabled"
        count = len(declared) if declared is not None else None
        bus = f"00000000:{index + 1:02x}:00.0"
        devices.append(NvmlDevice(index, str(gpu["name"]), cc, None, mig, bus, None, count))
    return tuple(devices)


def _driver(replay: Replay, env: dict[str, Any]) -> None:
    driver = env.get("driver")
    if not driver:
        return
    version = str(driver["version"])
    userspace = str(driver.get("userspace", version))
    devices = bool(driver.get("devices", True))
    container = env.get("container", "none")
    lib = _multiarch(replay.machine)
    gpus = _gpu_devices(env)
    if container == "wsl2" or driver.get("windows"):
        # WSL2, or a container on a WSL2 host: no kernel module in /proc, the GPU through /dev/dxg and
        # the driver store the NVIDIA Container Toolkit mounts at /usr/lib/wsl/lib.
        windows = str(driver.get("windows", version))
        _wsl_driver(replay, windows, gpus, _maps_dxgdmal(windows, container, driver.get("container_toolkit")))
        return
    if driver.get("loaded", True) is False:
        _not_loaded(replay, driver, env, userspace, lib)
        return
    flavor = str(driver.get("flavor", "proprietary"))
    replay.files["/proc/driver/nvidia/version"] = _proc_version(version, flavor, replay.machine)
    replay.files["/sys/module/nvidia/version"] = version + "\n"
    for device in gpus:
        replay.files[f"/proc/driver/nvidia/gpus/{device.pci_bus_id}/information"] = (
            f"Model: \t\t {device.name}\nIRQ:   \t\t 150\nBus Location: \t {device.pci_bus_id}\n"
            f"Device Minor: \t {device.index}\n"
        )
    _mig_capabilities(replay, gpus, in_container=container != "none" and devices)
    if devices:
        for device in gpus:
            replay.files[f"/dev/nvidia{device.index}"] = ""
        replay.files["/dev/nvidiactl"] = ""
        replay.files["/dev/nvidia-uvm"] = ""
    if userspace == "none" or (not devices and container != "none"):
        # A container without the NVIDIA runtime: nothing of the user-space driver is injected.
        replay.native = FakeNative()
        return
    # `libcuda_dir`: where the platform puts the user-space driver instead of the multiarch directory, on no
    # ld.so.conf line (Colab's /usr/lib64-nvidia, https://github.com/pytorch/pytorch/issues/107960, reached through
    # LD_LIBRARY_PATH, which the case states).
    lib = str(driver.get("libcuda_dir", lib))
    _lib_with_link(replay, lib, "libcuda", userspace, "1")
    # `unversioned_link = false`: no libcuda.so development link beside the soname (a driver installed without it,
    # as in https://github.com/triton-lang/triton/pull/1981, where creating it was the fix)
    if driver.get("unversioned_link", True):
        replay.links[f"{lib}/libcuda.so"] = "libcuda.so.1"
    _lib_with_link(replay, lib, "libnvidia-ml", userspace, "1")
    api = _cuda_api(userspace)
    if userspace != version:
        nvml = NvmlResult(error="Driver/library version mismatch")
    else:
        nvml = NvmlResult(driver_version=version, cuda_driver_version=api, devices=gpus)
    replay.native = FakeNative(nvml, LibcudaResult(path=f"{lib}/libcuda.so.{userspace}", returncode=0, version=api))


#: the running kernel of every replayed Linux host (its /proc/version above)
_KERNEL_RELEASE = "6.8.0-45-generic"


def _pci_device_id(gpu: dict[str, Any]) -> tuple[str, str]:
    """The GPU's PCI device ID and subsystem ("" for none): ``pci`` where the case states it (a GPU before Turing,
    which compat/gpu_devices.toml does not list), else what that table lists for its name (its first row)."""
    from cudadoctor.data import CompatMatrix

    if gpu.get("pci"):
        return str(gpu["pci"]), ""
    row = next(d for d in CompatMatrix().gpu_devices if d.name == str(gpu["name"]))
    return row.pci, row.subsystems[0] if row.subsystems else ""


#: efivarfs's SecureBoot variable: 4 attribute bytes (non-volatile, boot-service and runtime access: 0x06), then
#: the value (https://docs.kernel.org/filesystems/efivarfs.html; the UEFI specification's global variable GUID)
_SECURE_BOOT = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
#: Ubuntu's MOK that DKMS signs with (shim-signed's update-secureboot-policy)
_UBUNTU_MOK = "/var/lib/shim-signed/mok/MOK.der"


def _kernel_log(release: str, lines: list[str]) -> str:
    """``kernel_log`` as rsyslog writes /var/log/kern.log (Debian, Ubuntu): the boot's first kernel line, then each
    line the case quotes, with syslog's date, host and ``kernel:`` and dmesg's time stamp."""
    head = "Dec  1 10:00:00 host kernel: "
    text = f"{head}[    0.000000] Linux version {release} (buildd@lcy02-amd64-075) (gcc 13.2.0)\n"
    for line in lines:
        for part in str(line).splitlines():
            text += f"{head}[    5.100000] {part}\n"
    return text


def _firmware_and_log(replay: Replay, driver: dict[str, Any], release: str, module: str | None) -> None:
    """Secure Boot (``secure_boot``, with the MOK key DKMS signs with, ``signing_key``), the kernel log
    (``kernel_log``) and the other installed kernels that have the module (``other_kernels``)."""
    if driver.get("secure_boot") is not None:
        replay.binaries[_SECURE_BOOT] = b"\x06\x00\x00\x00" + bytes([1 if driver["secure_boot"] else 0])
    if driver.get("signing_key"):
        replay.files[_UBUNTU_MOK if driver["signing_key"] is True else str(driver["signing_key"])] = ""
    if driver.get("kernel_log"):
        replay.files["/var/log/kern.log"] = _kernel_log(release, list(driver["kernel_log"]))
    for kernel in driver.get("other_kernels", []):
        replay.files[f"/lib/modules/{kernel}/modules.dep"] = f"{module or 'updates/dkms/nvidia.ko'}:\n"


def _not_loaded(replay: Replay, driver: dict[str, Any], env: dict[str, Any], userspace: str, lib: str) -> None:
    """The GPUs on the PCI bus with no NVIDIA kernel module loaded: no /proc/driver/nvidia, /sys/module/nvidia or
    /dev/nvidia*; sysfs lists each GPU (vendor 0x10de, class 0x030000) and the modules loaded, and the running
    kernel's modules.dep the module files installed for it (``module_file``), as depmod(8) writes them; DKMS keeps
    a registered source under /var/lib/dkms/nvidia/<version>/source (dkms(8))."""
    nouveau = bool(driver.get("nouveau", False))
    for index, gpu in enumerate(env.get("gpus", [])):
        address = f"/sys/bus/pci/devices/0000:{index + 1:02x}:00.0"
        replay.files[f"{address}/vendor"] = "0x10de\n"
        device, subsystem = _pci_device_id(gpu)
        replay.files[f"{address}/device"] = f"0x{device.lower()}\n"
        if subsystem:  # sysfs writes each as 0x and four hex digits
            vendor, sub = subsystem.lower().split()
            replay.files[f"{address}/subsystem_vendor"] = f"0x{vendor}\n"
            replay.files[f"{address}/subsystem_device"] = f"0x{sub}\n"
        replay.files[f"{address}/class"] = "0x030000\n"
        if nouveau:
            replay.dirs.add("/sys/bus/pci/drivers/nouveau")
            replay.links[f"{address}/driver"] = "../../../bus/pci/drivers/nouveau"
    replay.files["/sys/module/drm/refcnt"] = "1\n"
    if nouveau:
        replay.files["/sys/module/nouveau/refcnt"] = "1\n"
    release = str(driver.get("kernel", _KERNEL_RELEASE))
    replay.files["/proc/sys/kernel/osrelease"] = release + "\n"
    module = driver.get("module_file")
    replay.files[f"/lib/modules/{release}/modules.dep"] = "kernel/drivers/gpu/drm/drm.ko.zst:\n" + (
        f"{module}: kernel/drivers/gpu/drm/drm.ko.zst\n" if module else ""
    )
    _firmware_and_log(replay, driver, release, module)
    if driver.get("dkms_source") or driver.get("dkms"):  # the tree a DKMS package of the driver installs
        replay.files[f"/usr/src/nvidia-{userspace}/dkms.conf"] = (
            f'PACKAGE_NAME="nvidia"\nPACKAGE_VERSION="{userspace}"\n'
        )
    if driver.get("dkms"):  # registered with DKMS (dkms add)
        replay.links[f"/var/lib/dkms/nvidia/{userspace}/source"] = f"/usr/src/nvidia-{userspace}"
    if userspace == "none":
        replay.native = FakeNative()
        return
    _lib_with_link(replay, lib, "libcuda", userspace, "1")
    replay.links[f"{lib}/libcuda.so"] = "libcuda.so.1"
    _lib_with_link(replay, lib, "libnvidia-ml", userspace, "1")
    # NVML's NVML_ERROR_DRIVER_NOT_LOADED; cuInit's CUDA_ERROR_NO_DEVICE (100) without the module
    replay.native = FakeNative(
        NvmlResult(error="Driver Not Loaded"), LibcudaResult(path=f"{lib}/libcuda.so.{userspace}", returncode=100)
    )


def _mig_capabilities(replay: Replay, gpus: tuple[NvmlDevice, ...], *, in_container: bool) -> None:
    """The MIG capabilities of the declared MIG devices (one GPU instance with one compute instance each), as the
    driver lists them (MIG user guide, "Device Nodes and Capabilities",
    https://docs.nvidia.com/datacenter/tesla/mig-user-guide/device-nodes-and-capabilities.html): on the host
    ``/proc/driver/nvidia/capabilities/gpu<minor>/mig/gi<G>/ci0/access``; in a container, where the NVIDIA Container
    Toolkit hides /proc/driver/nvidia, the ``/dev/nvidia-caps/nvidia-cap<N>`` nodes it injects for the devices it
    gives, ``N`` as ``/proc/driver/nvidia-caps/mig-minors`` names it. The GPU's minor is its index here."""
    migs = [d for d in gpus if d.mig_mode == "Enabled"]
    if not migs:
        return
    minors, next_minor = ["config 1", "monitor 2"], 3
    for device in migs:
        if not in_container:
            replay.dirs.add(f"/proc/driver/nvidia/capabilities/gpu{device.index}/mig")
        for gi in range(1, (device.mig_devices or 0) + 1):
            for name in (f"gpu{device.index}/gi{gi}/access", f"gpu{device.index}/gi{gi}/ci0/access"):
                minors.append(f"{name} {next_minor}")
                if in_container:
                    replay.files[f"/dev/nvidia-caps/nvidia-cap{next_minor}"] = ""
                else:
                    path = name.replace(f"gpu{device.index}/", f"gpu{device.index}/mig/", 1)
                    replay.files[f"/proc/driver/nvidia/capabilities/{path}"] = ""
                next_minor += 1
    replay.files["/proc/driver/nvidia-caps/mig-minors"] = "\n".join(minors) + "\n"


def _maps_dxgdmal(windows: str, container: str, toolkit: object) -> bool:
    """Whether /usr/lib/wsl/lib holds libnvdxgdmal.so.1: Windows drivers 555+ ship it; a container gets it only
    from NVIDIA Container Toolkit 1.14.4 or newer (`[env.driver] container_toolkit`, when the case states one;
    https://github.com/NVIDIA/nvidia-container-toolkit/issues/520)."""
    if int(_major(windows)) < 555:
        return False
    if container == "wsl2" or toolkit is None:
        return True
    return Version_tuple(str(toolkit)) >= (1, 14, 4)


def _wsl_driver(replay: Replay, windows: str, gpus: tuple[NvmlDevice, ...], dxgdmal: bool = False) -> None:
    names = ["libcuda.so", "libcuda.so.1", "libcuda.so.1.1", "libnvidia-ml.so.1", "libdxcore.so"]
    for name in names + (["libnvdxgdmal.so.1"] if dxgdmal else []):
        replay.files[f"/usr/lib/wsl/lib/{name}"] = ""
    replay.files["/dev/dxg"] = ""
    api = _cuda_api(windows)
    replay.native = FakeNative(
        NvmlResult(driver_version=windows, cuda_driver_version=api, devices=gpus),
        LibcudaResult(path="/usr/lib/wsl/lib/libcuda.so.1", returncode=0, version=api),
    )


# --- toolkits and system libraries -----------------------------------------------------------------


def _nvcc_output(version: str) -> str:
    parts = version.split(".")
    release = ".".join(parts[:2])
    full = ".".join([*parts, "0", "0"][:3])
    return (
        "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation\n"
        f"Cuda compilation tools, release {release}, V{full}\nBuild cuda_{release}.r{release}/compiler.0_0\n"
    )


#: The math libraries a toolkit's lib64 holds, by CUDA major, with their soname numbers (the CUDA
#: Toolkit release notes' component versions: cuBLAS follows the CUDA major, cuFFT 11 / cuSOLVER 11 in
#: CUDA 12, cuRAND 10 throughout, https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/). Written as
#: soname files only: their own full versions are not derived from the toolkit's.
_TOOLKIT_MATH: dict[int, tuple[tuple[str, int], ...]] = {
    11: (("libcublas", 11), ("libcublasLt", 11), ("libcufft", 10), ("libcurand", 10), ("libcusolver", 11),
         ("libcusparse", 11)),
    12: (("libcublas", 12), ("libcublasLt", 12), ("libcufft", 11), ("libcurand", 10), ("libcusolver", 11),
         ("libcusparse", 12)),
    13: (("libcublas", 13), ("libcublasLt", 13), ("libcufft", 12), ("libcurand", 10), ("libcusolver", 12),
         ("libcusparse", 12)),
}  # fmt: skip


def _toolkits(replay: Replay, env: dict[str, Any]) -> None:
    path_dirs: list[str] = []
    for index, tk in enumerate(env.get("toolkits", [])):
        version = str(tk["version"])
        root = str(tk.get("path") or f"/usr/local/cuda-{'.'.join(version.split('.')[:2])}")
        major, minor = (int(x) for x in version.split(".")[:2])
        if (major, minor) >= (11, 1):
            replay.files[f"{root}/version.json"] = json.dumps(
                {"cuda": {"name": "CUDA SDK", "version": version}, "cuda_cudart": {"version": version}}
            )
        else:
            replay.files[f"{root}/version.txt"] = f"CUDA Version {version}\n"
        replay.files[f"{root}/bin/nvcc"] = ""
        _lib_with_link(replay, f"{root}/lib64", "libcudart", version, str(major))
        replay.files[f"{root}/lib64/stubs/libcuda.so"] = ""
        if major >= 12:
            _lib_with_link(replay, f"{root}/lib64", "libnvJitLink", version, str(major))
        for stem, number in _TOOLKIT_MATH.get(major, ()):
            replay.files.setdefault(f"{root}/lib64/{stem}.so.{number}", "")
        if index == 0:
            replay.links.setdefault("/usr/local/cuda", root)
        if tk.get("nvcc"):
            replay.runner.add((f"{root}/bin/nvcc", "--version"), _nvcc_output(version))
            if index == 0:  # the same binary through the /usr/local/cuda link (PATH=/usr/local/cuda/bin:…)
                replay.runner.add(("/usr/local/cuda/bin/nvcc", "--version"), _nvcc_output(version))
            path_dirs.append(f"{root}/bin")
        if tk.get("compat_driver"):
            compat = str(tk["compat_driver"])
            replay.files[f"{root}/compat/libcuda.so.{compat}"] = ""
            replay.links[f"{root}/compat/libcuda.so.1"] = f"libcuda.so.{compat}"
            replay.links[f"{root}/compat/libcuda.so"] = "libcuda.so.1"
    path = ":".join([*path_dirs, "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"])
    replay.env.setdefault("PATH", path)


def _system_libraries(replay: Replay, env: dict[str, Any]) -> None:
    for library in env.get("libraries", []):
        name = str(library["name"]).lower()
        version = str(library["version"])
        directory = str(library.get("dir") or _multiarch(replay.machine))
        major = _major(version)
        soname = "2" if name == "nccl" else major
        for stem in _SONAMES.get(name, (f"lib{name}",)):
            _lib_with_link(replay, directory, stem, version, soname)
        if name == "cudnn":
            for stem in _cudnn_parts(version):
                _lib_with_link(replay, directory, stem, version, major)


# --- Python and its packages -----------------------------------------------------------------------


def _site_dirs(python: dict[str, Any]) -> tuple[str, str, list[str]]:
    """(executable, prefix, site-packages directories) of the declared interpreter."""
    version = str(python.get("version", "3.10.12"))
    xy = ".".join(version.split(".")[:2])
    kind = python.get("kind", "venv")
    prefix = str(python.get("prefix") or ("/usr" if kind == "system" else "/opt/venv"))
    if re.match(r"^[A-Za-z]:/", prefix):  # a Windows case is replayed on a Linux layout: keep the path absolute
        prefix = "/" + prefix
    if kind == "system" or prefix == "/usr":
        sites = [f"/usr/local/lib/python{xy}/dist-packages", "/usr/lib/python3/dist-packages"]
        return "/usr/bin/python3", "/usr", sites
    return f"{prefix}/bin/python3", prefix, [f"{prefix}/lib/python{xy}/site-packages"]


def _python(replay: Replay, env: dict[str, Any]) -> str | None:
    python = env.get("python")
    if not python:
        return None
    version = str(python.get("version", "3.10.12"))
    executable, prefix, sites = _site_dirs(python)
    kind = python.get("kind", "venv")
    base = prefix
    replay.files[executable] = ""
    if kind == "venv":
        base = "/usr"
        replay.files[f"{prefix}/pyvenv.cfg"] = (
            f"home = /usr/bin\ninclude-system-site-packages = false\nversion = {version}\n"
        )
        replay.env.setdefault("VIRTUAL_ENV", prefix)
    elif kind == "conda":
        replay.files[f"{prefix}/conda-meta/history"] = "==> 2024-01-01 00:00:00 <==\n"
        replay.env.setdefault("CONDA_PREFIX", prefix)
    replay.dirs.update(sites)
    answer = {
        "version": [int(x) for x in version.split(".")[:3]],
        "prefix": prefix,
        "base_prefix": base,
        "path": ["", f"{base}/lib/python{'.'.join(version.split('.')[:2])}", *sites],
        "executable": executable,
    }
    replay.runner.add((executable, "-I", "-c", SYS_PATH_SCRIPT), json.dumps(answer) + "\n")
    replay.python = executable
    return sites[0]


def _dist_dir(name: str, version: str) -> str:
    return f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"


#: The CUDA build that a plain ``pip install torch==X.Y.*`` got on Linux x86_64 (PyPI's default wheel,
#: whose dist-info carries no local tag while torch/version.py names its CUDA), per release line, from
#: PyTorch's "previous versions" page (https://pytorch.org/get-started/previous-versions/) and release
#: notes (2.11+: https://github.com/pytorch/pytorch/releases). Releases not listed get no CUDA build.
_PYPI_DEFAULT_CUDA = {
    "0.1": "8.0", "1.0": "9.0", "1.1": "10.0", "1.2": "10.0", "1.3": "10.1", "1.4": "10.1", "1.5": "10.2",
    "1.6": "10.2", "1.7": "10.2", "1.8": "10.2", "1.9": "10.2", "1.10": "10.2", "1.11": "10.2", "1.12": "10.2",
    "1.13": "11.7", "2.0": "11.7", "2.1": "12.1", "2.2": "12.1", "2.3": "12.1", "2.4": "12.1", "2.5": "12.4",
    "2.6": "12.4", "2.7": "12.6", "2.8": "12.8", "2.11": "13.0", "2.12": "13.0", "2.14": "13.0",
}  # fmt: skip

#: conda's CPU mutex packages: their presence selects the ``*_cpu_*`` pytorch build
#: (https://pytorch.org/get-started/previous-versions/, ``cpuonly``; ``cpu-only`` for the 2019 nightlies).
_CONDA_CPU_MUTEX = ("cpuonly", "cpu-only")
#: conda packages whose version is the CUDA a conda pytorch build was made for.
_CONDA_CUDA_PACKAGES = ("cudatoolkit", "pytorch-cuda")
#: A torch build the case does not determine: its version.py is written without a ``cuda`` line.
_UNKNOWN = "unknown"


def _conda_torch_cuda(env: dict[str, Any]) -> str | None:
    """A conda pytorch without a tag: CPU when a CPU mutex is installed, else the CUDA package's X.Y."""
    names = {str(p["name"]).lower(): str(p["version"]) for p in env.get("packages", [])}
    if any(n in names for n in _CONDA_CPU_MUTEX):
        return None
    return next((".".join(names[n].split(".")[:2]) for n in _CONDA_CUDA_PACKAGES if n in names), "")


def _torch_cuda(package: dict[str, Any], env: dict[str, Any] | None = None) -> str | None:
    """The CUDA version torch/version.py states: the declared one (``cuda = "none"``: a CPU build), the
    local tag's, the runtime wheel pin's, conda's CUDA package's, the CUDA of the NVIDIA image a source
    build (``2.2.0a0+6a974be``) comes with, else PyPI's default build of that release."""
    env = env or {}
    if package.get("cuda"):
        return None if str(package["cuda"]) == "none" else str(package["cuda"])
    version = str(package["version"])
    local = _LOCAL_CUDA.search(version)
    if local:
        return f"{local.group(1)}.{local.group(2)}"
    if "+" in version and not re.search(r"\+[0-9a-f]{7,}$", version):
        return None  # +cpu, +rocm…, +xpu
    for line in package.get("requires", []):
        pin = _CUDA_PIN.match(line)
        if pin:
            return f"{pin.group(1)}.{pin.group(2)}"
    if package.get("installer") == "conda" and (conda := _conda_torch_cuda(env)) != "":
        return conda
    if "+" in version or env.get("arch", "x86_64") != "x86_64":
        # A source build (NVIDIA's images, Jetson): built with the image's or the machine's CUDA; when
        # the case names neither, the build is unknown and version.py gets no cuda line.
        image = str(env.get("env", {}).get("CUDA_VERSION", "")) or next(
            (str(t["version"]) for t in env.get("toolkits", [])), ""
        )
        return ".".join(image.split(".")[:2]) or _UNKNOWN
    if str(env.get("os", "")).startswith("Windows"):
        return None  # PyPI's Windows wheels are CPU builds
    return _pypi_default_cuda(package) or _PYPI_DEFAULT_CUDA.get(".".join(version.split(".")[:2]))


def env_os(replay: Replay) -> str:
    """The case's OS as its os-release file names it (a case on Windows is replayed on a Linux layout)."""
    match = re.search(r'PRETTY_NAME="([^"]*)"', replay.files.get("/etc/os-release", ""))
    return match.group(1) if match else ""


def _pypi_default_cuda(package: dict[str, Any]) -> str | None:
    """The CUDA of PyPI's default Linux x86_64 wheel of a torch release that pins no CUDA wheel (1.x).

    Such a wheel's torch/version.py states its CUDA (``cuda = '10.2'``) though nothing else does; the
    release's default CUDA is sourced data (compat/torch.toml ``pypi_default_cuda``).
    """
    from packaging.version import InvalidVersion, Version

    from cudadoctor.data import CompatMatrix

    try:
        release = CompatMatrix(cache_dir=False).torch_release(Version(str(package["version"])))
    except InvalidVersion:
        return None
    cuda = release.pypi_default_cuda if release is not None else None
    return f"{cuda.major}.{cuda.minor}" if cuda is not None else None


def _torch_files(replay: Replay, site: str, package: dict[str, Any], env: dict[str, Any]) -> None:
    version = str(package["version"])
    cuda = _torch_cuda(package, env)
    hip = re.search(r"\+rocm([\d.]+)$", version)
    replay.files[f"{site}/torch/__init__.py"] = ""
    cuda_line = "" if cuda == _UNKNOWN else f"cuda: Optional[str] = {cuda!r}\n"
    cuda = None if cuda == _UNKNOWN else cuda
    replay.files[f"{site}/torch/version.py"] = (
        f"__version__ = '{version}'\ndebug = False\n{cuda_line}"
        f"git_version = '0000000000000000000000000000000000000000'\nhip: Optional[str] = "
        f"{(hip.group(1) if hip else None)!r}\n"
    )
    replay.files[f"{site}/torch/lib/libtorch_cpu.so"] = ""
    if cuda:
        replay.files[f"{site}/torch/lib/libtorch_cuda.so"] = ""
        linked = _pinned_sonames(package.get("requires", []))
        if linked:
            # The wheels' libraries carry DT_RPATH, not DT_RUNPATH, so LD_LIBRARY_PATH cannot override the
            # nvidia-* wheels they pin: forced in pytorch/builder PRs #1150 and #1183 (2022-09/10, the first
            # releases with pip CUDA dependencies); `readelf -d` of torch 2.11.0+cu130's libtorch_cuda.so on
            # the H200 device shows (RPATH) $ORIGIN/../../nvidia/cudnn/lib:…:$ORIGIN.
            rpath = [f"$ORIGIN/../../nvidia/{c}/lib" for c in sorted({c for c, _s in linked})] + ["$ORIGIN"]
            replay.binaries[f"{site}/torch/lib/libtorch_cuda.so"] = shared_object(
                [s for _c, s in linked], "libtorch_cuda.so", rpath=rpath
            )
    if cuda and not _pinned_sonames(package.get("requires", [])):
        _torch_bundled_cudnn(replay, site, version, cuda)
    abi = "1" if Version_tuple(version) >= (2, 7) else "0"
    replay.files[f"{site}/torch/share/cmake/Torch/TorchConfig.cmake"] = (
        f'set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI={abi}")\n'
    )


def _torch_bundled_cudnn(replay: Replay, site: str, version: str, cuda: str) -> None:
    """A torch 1.x wheel that copies cuDNN into torch/lib (compat/torch.toml ``bundled_cudnn``): the shim and its
    sub-libraries under cuDNN's own names, and libtorch_cuda.so needing ``libcudnn.so.8`` with the RUNPATH
    ``$ORIGIN`` the wheel build sets with patchelf (pytorch/builder release/1.12 manywheel/build_common.sh)."""
    from packaging.version import InvalidVersion, Version

    from cudadoctor.data import CompatMatrix

    try:
        row = CompatMatrix(cache_dir=False).torch_bundled_cudnn(Version(version), "cu" + cuda.replace(".", ""))
    except InvalidVersion:
        return
    if row is None:
        return
    for name in row.files:
        replay.files[f"{site}/torch/lib/{name}"] = ""
    shim = next(n for n in row.files if n.startswith("libcudnn.so."))
    replay.binaries[f"{site}/torch/lib/libtorch_cuda.so"] = shared_object([shim], "libtorch_cuda.so", ["$ORIGIN"])


#: The CUDA libraries libtorch_cuda.so links (DT_NEEDED), by the component of the wheel that ships them.
_TORCH_LINKS = ("cuda-runtime", "cublas", "cudnn", "nccl", "cusparse", "cufft", "curand")
_PIN = re.compile(r"^nvidia-([a-z-]+?)-cu(\d+)\s*\(?\s*==\s*(\d+)")


def _pinned_sonames(requires: list[str]) -> list[tuple[str, str]]:
    """(wheel directory, soname) of the CUDA libraries torch links, from its ``nvidia-*-cuNN==`` pins."""
    out = []
    for line in requires:
        match = _PIN.match(line.strip())
        if not match or match.group(1) not in _TORCH_LINKS:
            continue
        component, cuda, major = match.groups()
        number = "2" if component == "nccl" else cuda if component == "cuda-runtime" else major
        out += [(component.replace("-", "_"), f"{stem}.so.{number}") for stem in _SONAMES[component]]
    return out


def Version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version.split("+")[0])[:2])


def _nvidia_wheel(replay: Replay, site: str, name: str, version: str) -> None:
    """The libraries of one of NVIDIA's CUDA wheels, where pip puts them."""
    match = re.match(r"^nvidia-(.+?)(?:-cu(\d+))?$", name)
    if not match:
        return
    component, suffix = match.group(1), match.group(2)
    stems = _SONAMES.get(component)
    if stems is None:
        return
    major = _major(version)
    soname = "2" if component == "nccl" else major
    directory = f"{site}/nvidia/{component.replace('-', '_')}/lib" if suffix else f"{site}/nvidia/cu13/lib"
    for stem in stems:
        replay.files[f"{directory}/{stem}.so.{soname}"] = _wheel_content(name, version)
    if component == "cusparse" and int(major) >= 12:
        cuda = suffix or "13"
        runpath = ["$ORIGIN/../../nvjitlink/lib", "$ORIGIN"] if suffix else ["$ORIGIN"]
        replay.binaries[f"{directory}/libcusparse.so.{major}"] = shared_object(
            [f"libnvJitLink.so.{cuda}"], f"libcusparse.so.{major}", runpath
        )
        # nvidia-cusparse-cu12 requires nvidia-nvjitlink-cu12 (its Requires-Dist on PyPI): a case that does
        # not list it still has it installed.
        implied = f"{site}/nvidia/nvjitlink/lib/libnvJitLink.so.{cuda}"
        if suffix and not any(p.startswith(f"{site}/nvidia/nvjitlink/") for p in replay.files):
            replay.files.setdefault(implied, "")
    if component == "cudnn":
        for stem in _cudnn_parts(version):
            replay.files[f"{directory}/{stem}.so.{major}"] = _wheel_content(name, version)


def _wheel_content(name: str, version: str) -> str:
    """A stand-in for one wheel's library file: its own bytes, so that two wheels' copies of one path differ in
    size as real builds do (what the RECORD check of an overwritten file compares)."""
    line = f"{name}=={version}\n"
    return line * (1 + zlib.crc32(line.encode()) % 97)


def _wheel_record(replay: Replay, site: str, dist: str, name: str, version: str, binaries: set[str]) -> None:
    """``RECORD`` (https://packaging.python.org/en/latest/specifications/recording-installed-packages/): the
    files pip installed for this wheel, with their sha256 and size; a later wheel may overwrite them on disk."""
    content = _wheel_content(name, version)
    lines = []
    for path, data in [(p, c.encode()) for p, c in replay.files.items() if c == content] + [
        (p, replay.binaries[p]) for p in sorted(binaries)
    ]:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{path[len(site) + 1 :]},sha256={digest},{len(data)}")
    lines.append(f"{dist[len(site) + 1 :]}/RECORD,,")
    replay.files[f"{dist}/RECORD"] = "\n".join(lines) + "\n"


def _onnxruntime_files(replay: Replay, site: str, version: str) -> None:
    """onnxruntime-gpu's CUDA provider with the sonames read from that release's wheel (compat/ecosystem.toml)."""
    with open(os.path.join(CORPUS, "..", "..", "compat", "ecosystem.toml"), "rb") as handle:
        rows = tomllib.load(handle).get("onnxruntime_gpu", [])
    sonames: list[str] = next((r.get("wheel_sonames", []) for r in rows if r.get("version") == version), [])
    if sonames:
        replay.binaries[f"{site}/onnxruntime/capi/libonnxruntime_providers_cuda.so"] = shared_object(
            sonames, "libonnxruntime_providers_cuda.so"
        )


def _llama_cpp_files(replay: Replay, site: str, package: dict[str, Any]) -> None:
    """llama-cpp-python's shared objects where its CMakeLists.txt of that release installs them
    (https://github.com/abetlen/llama-cpp-python/blob/main/CMakeLists.txt): ``llama_cpp/libllama.so`` up to 0.2.79,
    ``llama_cpp/lib/libllama.so`` and ``libggml.so`` from 0.2.80, the split ``libggml-base``/``-cpu`` (and
    ``-cuda``) from 0.3.2. ``cuda`` (the CUDA it was built with) makes a CUDA build: the object holding the CUDA
    backend needs the CUDA runtime and cuBLAS of that major, as the prebuilt wheels do (their auditwheel step
    leaves libcudart.so.N, libcublas.so.N, libcublasLt.so.N and libcuda.so.1 out,
    .github/workflows/build-wheels-cuda.yaml); without it, a CPU build that needs none."""
    from packaging.version import Version

    version = Version(str(package["version"]))
    cuda = str(package.get("cuda") or "")
    major = cuda.split(".")[0]
    needs = (
        [f"libcudart.so.{major}.0" if major == "11" else f"libcudart.so.{major}", f"libcublas.so.{major}",
         f"libcublasLt.so.{major}", "libcuda.so.1"]
        if cuda else []
    )  # fmt: skip
    base = f"{site}/llama_cpp"
    if version < Version("0.2.80"):
        replay.binaries[f"{base}/libllama.so"] = shared_object(needs, "libllama.so")
        return
    replay.binaries[f"{base}/lib/libllama.so"] = shared_object([], "libllama.so")
    if version < Version("0.3.2"):
        replay.binaries[f"{base}/lib/libggml.so"] = shared_object(needs, "libggml.so")
        return
    for name in ("libggml.so", "libggml-base.so", "libggml-cpu.so"):
        replay.binaries[f"{base}/lib/{name}"] = shared_object([], name)
    if cuda:
        replay.binaries[f"{base}/lib/libggml-cuda.so"] = shared_object(needs, "libggml-cuda.so")


def _runtime_objects(replay: Replay, site: str, name: str, version: str) -> None:
    """The wheel objects that open CUDA libraries by name at run time (ctranslate2's libctranslate2 and its
    bundled cuDNN shim), named as in the wheel compat/runtime_libraries.toml read them from."""
    from packaging.version import InvalidVersion, Version

    from cudadoctor.data import CompatMatrix

    try:
        rows = CompatMatrix(cache_dir=False).runtime_loads_for(name, Version(version), replay.machine)
    except InvalidVersion:
        return
    for row in rows:
        path, _wheel = CompatMatrix.runtime_load_file(row)
        runpath = CompatMatrix.runtime_load_runpath(row)  # as read from the wheel (TensorRT 8.5's libnvinfer)
        replay.binaries[f"{site}/{path}"] = shared_object([], os.path.basename(path), runpath)


#: ELF e_machine of the CPUs bitsandbytes' wheels are built for (compat/bitsandbytes.toml ``arch``)
_E_MACHINE = {"x86_64": 62, "aarch64": 183}


def _bitsandbytes_files(replay: Replay, site: str, version: str) -> None:
    """bitsandbytes' native libraries as its wheel for this CPU ships them (a py3-none-any wheel, up to 0.42.0,
    holds x86-64 ones wherever it is installed), each CUDA one needing the sonames read from the wheel
    (compat/bitsandbytes.toml)."""
    from packaging.version import InvalidVersion, Version

    from cudadoctor.data import CompatMatrix

    matrix = CompatMatrix(cache_dir=False)
    try:
        release = Version(version)
    except InvalidVersion:
        return
    wheel = matrix.bitsandbytes_wheel(release, replay.machine)
    if wheel is None:
        wheel = next(
            (w for w in matrix.bitsandbytes_wheels if w.version == release and w.wheel.endswith("-any.whl")), None
        )
    if wheel is None:
        return
    for name in wheel.libraries:
        needed = matrix.bitsandbytes_needed(name, release, wheel.arch) or ()
        replay.binaries[f"{site}/bitsandbytes/{name}"] = shared_object(
            list(needed), name, machine=_E_MACHINE[wheel.arch]
        )
    replay.files[f"{site}/bitsandbytes/__init__.py"] = ""


def _packages(replay: Replay, env: dict[str, Any], site: str | None) -> None:
    if site is None:
        return
    for package in env.get("packages", []):
        name = str(package["name"])
        version = str(package["version"])
        dist = f"{site}/{_dist_dir(name, version)}"
        lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        lines += [f"Requires-Dist: {req}" for req in package.get("requires", [])]
        replay.files[f"{dist}/METADATA"] = "\n".join(lines) + "\n"
        replay.files[f"{dist}/INSTALLER"] = str(package.get("installer", "pip")) + "\n"
        if name.lower() == "torch":
            _torch_files(replay, site, package, env)
        elif name.lower() == "onnxruntime-gpu":
            _onnxruntime_files(replay, site, version)
        elif name.lower() in ("triton", "pytorch-triton"):
            _triton_files(replay, site, package)
        elif re.sub(r"[-_.]+", "-", name.lower()) == "llama-cpp-python":
            _llama_cpp_files(replay, site, package)
        elif name.lower() == "bitsandbytes":
            _bitsandbytes_files(replay, site, version)
        elif name.lower().startswith("nvidia-"):
            before = dict(replay.binaries)
            _nvidia_wheel(replay, site, name.lower(), version)
            written = {p for p, b in replay.binaries.items() if before.get(p) != b}
            _wheel_record(replay, site, dist, name.lower(), version, written)
        _runtime_objects(replay, site, name.lower(), version)


def _triton_files(replay: Replay, site: str, package: dict[str, Any]) -> None:
    """Triton's bundled ptxas where its wheel puts it (compat/triton.toml ``ptxas_file``, ``ptxas_blackwell_file``,
    read from each release's wheel; 3.x's layout for a release the table lacks, such as a pytorch-triton build).
    The file holds the version line ``ptxas --version`` prints when the case states (or assumes) it, ``ptxas =
    "12.8.93"``; otherwise it is empty, as the table versions a release's own binary."""
    from packaging.version import Version

    from cudadoctor.data import CompatMatrix

    version = str(package["version"])
    row = CompatMatrix(cache_dir=False).triton_release(Version(version)) if package["name"] == "triton" else None
    files = [row.ptxas_file, row.ptxas_blackwell_file] if row is not None else ["triton/backends/nvidia/bin/ptxas"]
    stated = package.get("ptxas")
    for rel in files:
        if rel is None:
            continue
        text = ""
        if stated:
            release = ".".join(str(stated).split(".")[:2])
            text = f"\0Cuda compilation tools, release {release}, V{stated}\0"
        replay.binaries[f"{site}/{rel}"] = text.encode("ascii")


def _build_tools(replay: Replay, env: dict[str, Any]) -> None:
    """A C compiler (``/usr/bin/gcc``, as the distribution's gcc package installs it) and the target interpreter's
    ``Python.h`` (``<base prefix>/include/pythonX.Y``: Debian's pythonX.Y-dev for /usr, a conda prefix's own), present
    unless the case says ``c_compiler = false`` / ``python_headers = false``."""
    if env.get("c_compiler", True):
        replay.files["/usr/bin/gcc"] = ""
    python = env.get("python")
    if not python or not env.get("python_headers", True):
        return
    xy = ".".join(str(python.get("version", "3.10.12")).split(".")[:2])
    _executable, prefix, _sites = _site_dirs(python)
    base = prefix if python.get("kind") == "conda" else "/usr"
    replay.files[f"{base}/include/python{xy}/Python.h"] = ""


def build(case: dict[str, Any]) -> Replay:
    """The replay of one case's ``[env]``."""
    env = case.get("env", {})
    replay = Replay(machine=str(env.get("arch", "x86_64")))
    _host(replay, env)
    _driver(replay, env)
    _toolkits(replay, env)
    _system_libraries(replay, env)
    site = _python(replay, env)
    _build_tools(replay, env)
    _packages(replay, env, site)
    for name, value in env.get("env", {}).items():
        replay.env[str(name)] = str(value)
    if env.get("l4t"):  # a Jetson: L4T's release file (``# R36 (release), REVISION: 4.3, …``)
        major, _, revision = str(env["l4t"]).removeprefix("R").partition(".")
        replay.files["/etc/nv_tegra_release"] = f"# R{major} (release), REVISION: {revision}, GCID: 0, BOARD: generic\n"
    _compat_answer(replay, env)
    return replay


def _compat_answer(replay: Replay, env: dict[str, Any]) -> None:
    """The live ``cuDriverGetVersion`` answer through a cuda-compat libcuda.so.1 that LD_LIBRARY_PATH
    reaches first, as on the real machine (the call needs no cuInit, so it answers even where cuInit
    fails with 803 or 804)."""
    result = replay.native.libcuda_result
    if result.path is None or result.returncode != 0:
        return
    toolkits = [tk for tk in env.get("toolkits", []) if tk.get("compat_driver")]
    compat = {str(tk.get("path") or ""): str(tk["compat_driver"]) for tk in toolkits}
    for directory in replay.env.get("LD_LIBRARY_PATH", "").split(":"):
        real = directory.rstrip("/")
        for link, target in replay.links.items():  # /usr/local/cuda -> cuda-X.Y
            if real == link or real.startswith(link + "/"):
                real = target + real[len(link) :] if target.startswith("/") else real
        root = real[: -len("/compat")] if real.endswith("/compat") else None
        if root in compat:
            version = compat[root]
            replay.native = FakeNative(
                replay.native.nvml_result,
                LibcudaResult(path=f"{root}/compat/libcuda.so.{version}", returncode=0, version=_cuda_api(version)),
            )
            return
        if f"{real}/libcuda.so.1" in replay.links:
            return  # the driver's own copy comes first
