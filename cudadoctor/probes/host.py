"""The host: operating system, CPU, distribution, C library, container and WSL signs, and the
environment variables that matter to CUDA.

With ``--root`` the "host" is the image: its architecture is read from its multiarch directories
or dynamic loader, its distribution from its os-release, its glibc from its files; nothing of the
machine running cudadoctor (kernel, cgroups, WSL) is reported for it.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping
from typing import NamedTuple

from packaging.version import Version

from cudadoctor.bounded import version_or_none
from cudadoctor.facts.model import ContainerInfo, EnvVar, HostInfo
from cudadoctor.probes import loader
from cudadoctor.probes.context import ProbeContext, kernel_release

__all__ = [
    "CLAIMING_VARS",
    "ENV_PREFIXES",
    "ENV_VARS",
    "NEAR_MISS_VARS",
    "collect_env",
    "image_arch",
    "parse_cgroup",
    "parse_dpkg_version",
    "parse_l4t_release",
    "parse_os_release",
    "parse_rocm_version",
    "probe_host",
]

#: Environment variables kept as facts, in the order they are reported. Only these (plus
#: :data:`ENV_PREFIXES` and :data:`NEAR_MISS_VARS`) are collected: tokens and other secrets in the
#: environment are never read into the facts in the first place.
ENV_VARS = (
    # NVIDIA container runtime (libnvidia-container) settings and image requirements
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "NVIDIA_DISABLE_REQUIRE",
    # CUDA runtime device selection and toolkit location
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_MODULE_LOADING",
    "CUDA_LAUNCH_BLOCKING",
    # set by the nvidia/cuda images; they describe what the image was built with, which may no
    # longer be what is installed
    "CUDA_VERSION",
    "NV_CUDA_LIB_VERSION",
    "NV_CUDNN_VERSION",
    "NCCL_VERSION",
    "NV_LIBNCCL_PACKAGE_VERSION",
    # the dynamic loader and the linker
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "LIBRARY_PATH",
    "PATH",
    # frameworks (BNB_CUDA_VERSION: which library bitsandbytes loads, cudadoctor/checks/bitsandbytes.py)
    "BNB_CUDA_VERSION",
    "TORCH_CUDA_ARCH_LIST",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
    "XLA_FLAGS",
    "JAX_PLATFORMS",
    # which Python environment is active
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    # schedulers that set CUDA_VISIBLE_DEVICES (cudadoctor/rules/scheduler.py): Slurm's job variables
    # and Ray's cluster address (https://docs.ray.io/en/latest/ray-core/configure.html); no secrets
    "SLURM_JOB_ID",
    "SLURM_STEP_GPUS",
    "SLURM_JOB_GPUS",
    "RAY_ADDRESS",
    # cudadoctor's own: this runs in an image build stage, where no GPU is expected (checks/access.py)
    "CUDADOCTOR_BUILD_STAGE",
)

#: Every variable with one of these prefixes is kept too (``NVIDIA_REQUIRE_CUDA``, ``NCCL_DEBUG``,
#: ``NCCL_P2P_DISABLE``, ``CUDNN_LOGINFO_DBG`` …).
ENV_PREFIXES = ("NVIDIA_REQUIRE_", "NCCL_", "CUDNN_")

#: Misspellings that look like settings but do nothing; kept so a check can point at them.
#: ``NVIDIA_DISABLE_REQUIRES``: libnvidia-container reads ``NVIDIA_DISABLE_REQUIRE`` (no S).
NEAR_MISS_VARS = ("NVIDIA_DISABLE_REQUIRES", "CUDA_VISIBLE_DEVICE", "NVIDIA_VISIBLE_DEVICE")

#: Image variables that claim a component version, and the component they name.
CLAIMING_VARS = {"CUDA_VERSION": "cuda", "NV_CUDNN_VERSION": "cudnn", "NCCL_VERSION": "nccl"}

#: Debian multiarch triplets and dynamic loaders -> the architecture they belong to.
_ARCH_DIRS = {
    "/usr/lib/x86_64-linux-gnu": "x86_64",
    "/usr/lib/aarch64-linux-gnu": "aarch64",
    "/usr/lib/powerpc64le-linux-gnu": "ppc64le",
    "/usr/lib/s390x-linux-gnu": "s390x",
}
_ARCH_LOADERS = {
    "/lib64/ld-linux-x86-64.so.2": "x86_64",
    "/lib/ld-linux-aarch64.so.1": "aarch64",
    "/lib64/ld64.so.2": "ppc64le",
    "/lib/ld64.so.1": "s390x",
    "/lib/ld-musl-x86_64.so.1": "x86_64",
    "/lib/ld-musl-aarch64.so.1": "aarch64",
}

#: ``/proc/1/cgroup`` path fragments -> the container runtime they reveal (cgroup v1, and v2 on
#: hosts that nest containers under named slices). A bare v2 ``0::/<path>`` says nothing.
_CGROUP_RUNTIMES = (
    ("kubepods", "kubernetes"),
    ("libpod", "podman"),
    ("docker", "docker"),
    ("containerd", "containerd"),
    ("lxc", "lxc"),
)

_RUNTIME_ORDER = ("kubernetes", "podman", "docker")

#: Files a container runtime writes into every container it starts, and so into ``docker export``'s root, with the
#: runtime: Docker's ``/.dockerenv`` (moby's daemon/initlayer/setup_unix.go,
#: https://github.com/moby/moby/blob/master/daemon/initlayer/setup_unix.go) and Podman's ``/run/.containerenv``
#: (podman-run(1), https://docs.podman.io/en/latest/markdown/podman-run.1.html).
CONTAINER_FILES = (("/.dockerenv", "docker"), ("/run/.containerenv", "podman"))


# --- parsers --------------------------------------------------------------------------------------


def parse_os_release(text: str) -> dict[str, str]:
    """The ``KEY=value`` pairs of os-release(5), with quotes and escapes removed.

    Parse, e.g.::

        PRETTY_NAME="Ubuntu 24.04.3 LTS"
        NAME="Ubuntu"
        VERSION_ID="24.04"
        ID=ubuntu
    """
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        values[key.strip()] = value
    return values


def parse_cgroup(text: str) -> list[tuple[str, str]]:
    """(cgroup path, runtime) for each ``/proc/<pid>/cgroup`` line whose path names a runtime.

    Parse, e.g.::

        12:memory:/docker/3f2a…             -> [("/docker/3f2a…", "docker")]
        0::/kubepods/burstable/pod1…        -> [("/kubepods/burstable/pod1…", "kubernetes")]
        0::/process_api/core                -> []   (cgroup v2 shows only a path: no signal)
    """
    found: list[tuple[str, str]] = []
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        path = parts[2]
        for fragment, runtime in _CGROUP_RUNTIMES:
            if fragment in path:
                found.append((path, runtime))
                break
    return found


def parse_dpkg_version(text: str, package: str) -> str | None:
    """A package's ``Version`` from dpkg's status database; None when it is not installed.

    Parse, e.g.::

        Package: libc6
        Status: install ok installed
        Version: 2.39-0ubuntu8.4
    """
    for stanza in text.split("\n\n"):
        if re.search(rf"^Package:\s*{re.escape(package)}\s*$", stanza, re.MULTILINE):
            match = re.search(r"^Version:\s*(\S+)", stanza, re.MULTILINE)
            if match:
                return match.group(1)
    return None


def _claimed_version(value: str) -> str | None:
    """``13.0.2`` from ``13.0.2``; ``9.14.0.64`` from ``9.14.0.64-1`` (a Debian revision dropped)."""
    match = re.match(r"\s*(\d+(?:\.\d+)*)", value)
    return match.group(1) if match else None


# --- probes ---------------------------------------------------------------------------------------


def collect_env(env: Mapping[str, str]) -> tuple[EnvVar, ...]:
    """The variables that matter (see :data:`ENV_VARS`), in report order, with what they claim."""
    names = [name for name in ENV_VARS if name in env]
    names += sorted(name for name in env if name.startswith(ENV_PREFIXES) and name not in names)
    names += [name for name in NEAR_MISS_VARS if name in env]
    out = []
    for name in names:
        value = env[name]
        claims = None
        if name in CLAIMING_VARS and (version := _claimed_version(value)):
            claims = f"{CLAIMING_VARS[name]} {version}"
        out.append(EnvVar(name=name, value=value, claims=claims))
    return tuple(out)


def image_arch(ctx: ProbeContext) -> str | None:
    """The architecture an image root was built for, from its dynamic loader or multiarch dirs."""
    for table in (_ARCH_LOADERS, _ARCH_DIRS):
        found = {arch for path, arch in table.items() if ctx.fs.exists(path)}
        if len(found) == 1:
            return found.pop()
    return None


def _distro(ctx: ProbeContext) -> str | None:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            values = parse_os_release(ctx.fs.read_text(path, limit=64 << 10))
        except OSError:
            continue
        if values.get("PRETTY_NAME"):
            return values["PRETTY_NAME"]
        name = values.get("NAME")
        if name:
            return f"{name} {values['VERSION']}" if values.get("VERSION") else name
    return None


def _glibc_version(text: str | None) -> Version | None:
    match = re.search(r"(\d+\.\d+)", text or "")
    if not match:
        return None
    return version_or_none(match.group(1))  # bounded: a 5,000-digit dpkg version crashed the probe


def _live_glibc() -> Version | None:
    """``glibc 2.39`` from ``confstr(CS_GNU_LIBC_VERSION)``; None on musl, macOS, Windows."""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return None
    if not text or not text.startswith("glibc"):
        return None
    return _glibc_version(text)


def _image_glibc(ctx: ProbeContext, arch: str) -> Version | None:
    """An image's glibc: ``libc-2.31.so`` (glibc < 2.34 names its file), else dpkg's libc6 entry."""
    triplet = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}.get(arch, f"{arch}-linux-gnu")
    for directory in (f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib64", "/usr/lib64", "/lib", "/usr/lib"):
        for path in ctx.fs.glob(directory, "libc-*.so"):
            if version := _glibc_version(posixpath.basename(path)):
                return version
    for path in ("/var/lib/dpkg/status.d/libc6", "/var/lib/dpkg/status"):
        try:
            text = ctx.fs.read_text(path, limit=32 << 20)
        except OSError:
            continue
        if raw := parse_dpkg_version(text, "libc6"):
            return _glibc_version(raw.split(":", 1)[-1])
    return None


def container_files(ctx: ProbeContext) -> tuple[tuple[str, ...], str, str]:
    """(the :data:`CONTAINER_FILES` that exist; live only: ``/run/systemd/container`` stripped, systemd's container
    interface, and ``/proc/1/cgroup``, each "" when absent), read once per run: the host probe's container facts and
    the root-kind probe's image markers (:mod:`cudadoctor.probes.origin`) ask the same files."""

    def read() -> tuple[tuple[str, ...], str, str]:
        present = tuple(path for path, _runtime in CONTAINER_FILES if ctx.fs.exists(path))
        if not ctx.live:  # an image root's /proc is this machine's (or empty), and no systemd runs in it
            return present, "", ""
        systemd = (_read_small(ctx, "/run/systemd/container", 256) or "").strip()
        return present, systemd, _read_small(ctx, "/proc/1/cgroup", 64 << 10) or ""

    return ctx.once("host.container_files", read)


def _container(ctx: ProbeContext) -> ContainerInfo:
    markers: list[str] = []
    runtimes: list[str] = []
    if not ctx.live:
        markers.append("image root")
    present, systemd, cgroup = container_files(ctx)
    for marker, name in CONTAINER_FILES:
        if marker in present:
            markers.append(marker)
            runtimes.append(name)
    if ctx.env.get("container"):  # systemd's convention; UBI images set container=oci
        markers.append(f"container={ctx.env['container']}")
        runtimes.append(ctx.env["container"])
    if ctx.live:
        if ctx.env.get("KUBERNETES_SERVICE_HOST"):
            markers.append("KUBERNETES_SERVICE_HOST")
            runtimes.append("kubernetes")
        if systemd:
            markers.append(f"/run/systemd/container: {systemd}")
            runtimes.append(systemd)
        for path, found in parse_cgroup(cgroup)[:1]:
            markers.append(f"/proc/1/cgroup: {path}")
            runtimes.append(found)
    runtime = next((r for r in _RUNTIME_ORDER if r in runtimes), runtimes[0] if runtimes else None)
    return ContainerInfo(in_container=bool(markers), runtime=runtime, markers=tuple(markers))


def parse_rocm_version(text: str) -> Version | None:
    """ROCm's /opt/rocm/.info/version (``6.4.1-120``): the release before the build number."""
    match = re.match(r"\s*(\d+\.\d+(?:\.\d+)?)", text)
    return version_or_none(match.group(1)) if match else None


def parse_l4t_release(text: str) -> str | None:
    """Jetson's /etc/nv_tegra_release (``# R36 (release), REVISION: 4.3, …``) as ``R36.4.3``."""
    match = re.search(r"R(\d+)\s*\(release\),\s*REVISION:\s*([\d.]+)", text)
    return f"R{match.group(1)}.{match.group(2).rstrip('.')}" if match else None


def parse_drm_uevent(text: str) -> str | None:
    """An Intel display device from a DRM card's PCI ``uevent`` (``PCI_CLASS=30000``, ``PCI_ID=8086:56A0``,
    ``PCI_SLOT_NAME=0000:03:00.0``) as ``0000:03:00.0 8086:56A0``; None for another vendor or class.

    The keys are the ones the kernel's PCI uevent writes (drivers/pci/pci-driver.c, pci_uevent); 0x8086 is
    Intel's PCI vendor id and base class 0x03 a display controller, the test uv's automatic backend makes too
    (crates/uv-torch/src/accelerator.rs).
    """
    keys = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    pci_id, slot, pci_class = keys.get("PCI_ID", ""), keys.get("PCI_SLOT_NAME", ""), keys.get("PCI_CLASS", "")
    try:
        display = int(pci_class, 16) >> 16 == 0x03
    except ValueError:
        return None
    return f"{slot} {pci_id.upper()}" if display and slot and pci_id.upper().startswith("8086:") else None


def _intel_gpus(ctx: ProbeContext) -> tuple[str, ...]:
    """The Intel display devices the kernel's DRM cards sit on (/sys/class/drm/cardN/device/uevent)."""
    if not ctx.live:
        return ()
    found = []
    for card in ctx.fs.glob("/sys/class/drm", "card*"):
        text = _read_small(ctx, f"{card}/device/uevent")
        entry = parse_drm_uevent(text) if text else None
        if entry and entry not in found:
            found.append(entry)
    return tuple(found)


def _read_small(ctx: ProbeContext, path: str, limit: int = 4096) -> str | None:
    try:
        return ctx.fs.read_text(path, limit=limit)
    except (OSError, UnicodeDecodeError):
        return None


class _Accelerators(NamedTuple):
    rocm_version: Version | None
    amdgpu_driver: bool
    jetson_l4t: str | None
    intel_gpu_driver: str | None
    intel_gpus: tuple[str, ...]


def _other_accelerators(ctx: ProbeContext) -> _Accelerators:
    """Signs of a non-NVIDIA (or Jetson) machine: ROCm, amdgpu, L4T, an Intel GPU driver.

    ROCm installs its version in /opt/rocm/.info/version
    (https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/post-install.html); Jetson's
    L4T writes /etc/nv_tegra_release (https://docs.nvidia.com/jetson/archives/r36.4/DeveloperGuide/);
    a loaded kernel module appears under /sys/module. Kernel modules are only read on the live machine.
    """
    rocm = _read_small(ctx, "/opt/rocm/.info/version")
    tegra = _read_small(ctx, "/etc/nv_tegra_release")
    live = ctx.live
    intel = next((m for m in ("xe", "i915") if live and ctx.fs.is_dir(f"/sys/module/{m}")), None)
    return _Accelerators(
        rocm_version=parse_rocm_version(rocm) if rocm else None,
        amdgpu_driver=live and ctx.fs.is_dir("/sys/module/amdgpu"),
        jetson_l4t=parse_l4t_release(tegra) if tegra else None,
        intel_gpu_driver=intel,
        intel_gpus=_intel_gpus(ctx),
    )


def _wsl(ctx: ProbeContext) -> bool:
    """WSL2: its kernel says "microsoft" / "WSL"; its GPU paravirtualisation adds /dev/dxg and the
    driver store /usr/lib/wsl/lib. Only for the live machine: an image root is not running anywhere."""
    if not ctx.live:
        return False
    try:
        version = ctx.fs.read_text("/proc/version", limit=4096)
    except OSError:
        version = ""
    if "microsoft" in version.lower() or "WSL" in version:
        return True
    return ctx.fs.exists("/dev/dxg") or ctx.fs.is_dir("/usr/lib/wsl/lib")


def probe_host(ctx: ProbeContext) -> HostInfo:
    """The OS, CPU, distribution, C library, container, WSL and environment of the examined machine.

    :param ctx: the probe context.
    :return: the host facts; parts that cannot be read are None / empty.
    """
    arch = ctx.machine if ctx.live else (image_arch(ctx) or ctx.machine)
    # Each part on its own: a crafted dpkg status must not take the environment (NVIDIA_REQUIRE_*) with it.
    part = ctx.attempt
    return HostInfo(
        os=ctx.system,
        arch=arch,
        distro=part("host", "the distribution", lambda: _distro(ctx), None),
        kernel=kernel_release() if ctx.live else None,
        glibc=part("host", "the C library", lambda: _live_glibc() if ctx.live else _image_glibc(ctx, arch), None),
        container=part("host", "the container markers", lambda: _container(ctx), ContainerInfo(False, None, ())),
        wsl=part("host", "the WSL markers", lambda: _wsl(ctx), False),
        apple_silicon=ctx.system == "Darwin" and ctx.machine in ("arm64", "aarch64"),
        **_other_accelerators(ctx)._asdict(),
        env=collect_env(ctx.env),
        loader_paths=part("host", "the loader's search path", lambda: loader.search_dirs(ctx), ()),
    )
