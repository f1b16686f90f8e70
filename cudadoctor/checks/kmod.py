"""CD136: the NVIDIA kernel module is loaded for the NVIDIA GPUs on the PCI bus."""

# CD1xx: driver and GPUs
#   CD136  the NVIDIA kernel module is loaded where the PCI bus shows an NVIDIA GPU (nvidia-smi's "couldn't
#          communicate with the NVIDIA driver"), with the likeliest cause read from files

from __future__ import annotations

import re

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation
from cudadoctor.checks.hostfix import distro_family, is_image
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.health import HealthInfo
from cudadoctor.facts.model import DriverInfo, GpuInfo, HostInfo, NvidiaModuleState, PciGpu, RootKind

__all__ = ["CD136", "gpu_names", "passed_through"]

#: Drivers that hand a GPU to a virtual machine: the host is not meant to load nvidia for it.
_PASSTHROUGH = ("vfio-pci", "pci-stub")

#: NVIDIA's guide to disabling nouveau: a modprobe.d file with these two lines, then the initramfs rebuilt and a
#: reboot (CUDA Installation Guide for Linux, "Disabling Nouveau",
#: https://docs.nvidia.com/cuda/archive/12.4.0/cuda-installation-guide-linux/index.html#disabling-nouveau).
_BLACKLIST = (
    "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf"
)
#: the initramfs rebuild of each distribution family, as the same section gives it
_INITRAMFS = {"deb": "sudo update-initramfs -u", "rpm": "sudo dracut --force"}
#: the kernel headers of the running kernel, which DKMS builds the module against (NVIDIA Driver Installation
#: Guide, "Pre-installation Actions" and the per-distribution pages,
#: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/pre-installation-actions.html)
_HEADERS = {
    "deb": "sudo apt-get install linux-headers-$(uname -r)",
    "rpm": "sudo dnf install kernel-devel-matched kernel-headers",
}
#: kernel-devel-matched, which the rpm line installs, is the guide's package on Fedora and EL 9 and later (its
#: per-distribution pages, https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/); EL 8 has no such
#: package and EL 7 no dnf, so on an older or unnumbered EL the line would not run and is not printed (the text
#: says what to install).
_HEADERS_FROM_EL = 9


def _headers(distro: str | None, family: str) -> str | None:
    """The command installing the running kernel's headers, None where the guide's line would not run."""
    name = (distro or "").lower()
    if family == "rpm" and "fedora" not in name:
        release = re.search(r"\b(\d+)", name)
        if release is None or int(release.group(1)) < _HEADERS_FROM_EL:
            return None
    return _HEADERS[family]


def gpu_names(pci: tuple[PciGpu, ...], matrix: CompatMatrix) -> list[str]:
    """Each GPU by name from its PCI device ID (compat/gpu_devices.toml), ``NVIDIA GPU 10de:XXXX`` when not listed."""
    names = []
    for gpu in pci:
        row = matrix.device_for(gpu.device) if gpu.device else None
        name = row.name if row else "NVIDIA GPU 10de:" + (gpu.device.lower() or "????")
        names.append(f"{name} ({gpu.address})")
    return names


def passed_through(pci: tuple[PciGpu, ...]) -> bool:
    """Every GPU is bound to a pass-through driver (vfio-pci, pci-stub): it belongs to a virtual machine."""
    return all(g.driver in _PASSTHROUGH for g in pci)


class CD136(Check):
    """The NVIDIA kernel module is loaded for the NVIDIA GPUs on the PCI bus.

    What it checks: where /sys/bus/pci/devices shows an NVIDIA display or 3D controller, whether the nvidia
    kernel module is loaded (/sys/module/nvidia, /proc/driver/nvidia/version); when it is not, which cause the
    files show: nouveau loaded (/sys/module/nouveau) or bound to the GPU, no nvidia module for the running kernel
    (/lib/modules/$(uname -r)/modules.dep, which modprobe reads), or the module there but not loaded. Only on a
    host's own system (a container shares the host's kernel: there it says the host lacks the module); never
    where NVML answered, and not for GPUs bound to vfio-pci (passed through to a virtual machine).

    Why it matters: without the kernel module nvidia-smi says "NVIDIA-SMI has failed because it couldn't
    communicate with the NVIDIA driver", NVML and CUDA find no GPU (cuInit error 100 or 999), torch reports
    "Found no NVIDIA driver on your system", and every framework falls back to the CPU, while the GPU is there.

    How to fix: after a kernel update, build the module for the new kernel (install that kernel's headers, then
    `sudo dkms autoinstall`, or install the distribution's module package for it); when nouveau holds the GPU,
    blacklist it, rebuild the initramfs and reboot; when the module is there, `sudo modprobe nvidia` loads it or
    says why not (a Secure Boot "Key was rejected by service" needs the module signed or its key enrolled).
    """

    name = "kernel-module-loaded"
    category = "gpus"

    def check(
        self,
        host: HostInfo,
        matrix: CompatMatrix,
        gpus: tuple[GpuInfo, ...] = (),
        health: HealthInfo | None = None,
        driver: DriverInfo | None = None,
        root_kind: RootKind | None = None,
        mode: str = "live",
        # optional: where a GPU answered the module is loaded, whether or not this fact was read (an older snapshot)
        nvidia_module: NvidiaModuleState | None = None,
    ) -> Problem | None:
        if gpus or (health is not None and health.nvml_error is None and health.nvml_count):
            return None  # a GPU answered (NVML, /proc/driver/nvidia/gpus): the module is loaded
        if driver is not None and driver.kernel_module is not None:
            return None
        if nvidia_module is None:
            raise NotApplicable("no NVIDIA GPU on the PCI bus (or an image root, whose kernel is the host's)")
        if nvidia_module.nvidia_loaded:
            return None
        if host.wsl:
            raise NotApplicable("WSL: the Windows driver serves the GPU (no Linux kernel module)")
        # a running container shares the host's kernel, so its /sys tells of the host; an image root has none
        in_container = mode == "live" and host.container is not None and host.container.in_container
        if not in_container and is_image(root_kind):
            raise NotApplicable("an image root: the kernel and its modules are the host's")
        if passed_through(nvidia_module.pci_gpus):
            raise NotApplicable("every NVIDIA GPU is bound to vfio-pci/pci-stub: passed through to a virtual machine")
        if nvidia_module.nvidia_loaded is None:
            raise CannotJudge("/sys/module could not be listed, so whether the nvidia module is loaded is unknown")
        names = gpu_names(nvidia_module.pci_gpus, matrix)
        evidence = {
            "NVIDIA GPUs on the PCI bus": "; ".join(names) + " (/sys/bus/pci/devices)",
            "nvidia kernel module": "not loaded (no /sys/module/nvidia, no /proc/driver/nvidia/version)",
        }
        bound = sorted({g.driver for g in nvidia_module.pci_gpus if g.driver})
        if bound:
            evidence["bound to"] = ", ".join(bound)
        if in_container:
            return _host_lacks_module(names, evidence, nvidia_module)
        return _cause(names, evidence, nvidia_module, driver, host.distro)


def _host_lacks_module(names: list[str], evidence: dict[str, str], state: NvidiaModuleState) -> Problem:
    """In a container: /sys/module is the host kernel's, so the host has not loaded the module (its /lib/modules,
    not the container's, holds the module files)."""
    if state.nouveau_loaded:
        evidence["nouveau"] = "loaded on the host (/sys/module/nouveau)"
    return Problem(
        f"the host's NVIDIA kernel module is not loaded for {names[0]}"
        + (f" and {len(names) - 1} more" if len(names) > 1 else "")
        + ": no container can use the GPU (`docker run --gpus all` fails) until the host loads it",
        evidence,
        Remediation(
            "Fix the driver on the host, not in the container: run `cudadoctor check` there, which names the cause "
            "(nouveau, no module for the running kernel, a module that fails to load). Once nvidia-smi works on the "
            "host, start the container with `--gpus all` (or `runtime: nvidia`).",
            (),
        ),
    )


def _cause(
    names: list[str], evidence: dict[str, str], state: NvidiaModuleState, driver: DriverInfo | None, distro: str | None
) -> Problem:
    """The likeliest cause the files show, most decisive first: no module for this kernel, nouveau, a module that
    did not load."""
    subject = names[0] + (f" and {len(names) - 1} more" if len(names) > 1 else "")
    libcuda = [f for f in (driver.libcuda_files if driver else ()) if f.kind == "driver"]
    user = next((str(f.version) for f in libcuda if f.version), None)
    if libcuda:
        evidence["user-space driver"] = f"{user or 'installed'} ({libcuda[0].path})"
    release = state.kernel_release
    nouveau = state.nouveau_loaded or any(g.driver == "nouveau" for g in state.pci_gpus)
    if nouveau:
        evidence["nouveau"] = "loaded (/sys/module/nouveau)" + (
            ", bound to the GPU" if any(g.driver == "nouveau" for g in state.pci_gpus) else ""
        )
    if release is not None and state.nvidia_module_files == ():
        evidence["running kernel"] = f"{release} (/proc/sys/kernel/osrelease)"
        evidence[f"/lib/modules/{release}/modules.dep"] = "lists no nvidia.ko"
        if state.dkms_registered:
            evidence["DKMS"] = "the nvidia source is registered (/var/lib/dkms/nvidia)"
        if state.dkms_sources:
            evidence["module source"] = ", ".join(f"/usr/src/nvidia-{v}" for v in state.dkms_sources)
        return _no_module(subject, evidence, state, user, distro)
    if state.nvidia_module_files:
        evidence["module file"] = f"{state.nvidia_module_files[0]} (/lib/modules/{release}/modules.dep)"
    if nouveau:
        commands: tuple[str, ...] = ()
        family = distro_family(distro)
        if family is not None:
            commands = (_BLACKLIST, _INITRAMFS[family], "sudo reboot")
        return Problem(
            f"the NVIDIA kernel module is not loaded for {subject}: the open-source nouveau driver holds the GPU, so "
            "nvidia-smi cannot communicate with the NVIDIA driver and CUDA sees no GPU",
            evidence,
            Remediation(
                "Blacklist nouveau (a modprobe.d file with `blacklist nouveau` and `options nouveau modeset=0`), "
                "rebuild the initramfs (update-initramfs -u on Ubuntu/Debian, dracut --force on RHEL/Fedora) and "
                "reboot.",
                commands,
            ),
        )
    return Problem(
        f"the NVIDIA kernel module is not loaded for {subject}"
        + (" although the module for the running kernel is installed" if state.nvidia_module_files else "")
        + ": nvidia-smi cannot communicate with the NVIDIA driver and CUDA sees no GPU",
        evidence,
        Remediation(
            'Load it; when it refuses, the message says why ("Key was rejected by service": Secure Boot rejects an '
            'unsigned module, so sign it or enroll its key with mokutil; "Unknown symbol" or "Invalid module '
            'format": it was built for another kernel, so rebuild it; `sudo dmesg | grep -i nvrm` shows the '
            "driver's own reason).",
            ("sudo modprobe nvidia",) if state.nvidia_module_files else (),
        ),
    )


def _dkms_source(sources: tuple[str, ...], user: str | None) -> str | None:
    """The /usr/src/nvidia-<version> to build: the user-space driver's version, else the only one there."""
    if user in sources:
        return user
    return sources[0] if len(sources) == 1 and user is None else None


def _no_module(
    subject: str, evidence: dict[str, str], state: NvidiaModuleState, user: str | None, distro: str | None
) -> Problem:
    """No nvidia module for the running kernel: typically a kernel update the module was not rebuilt for."""
    release = state.kernel_release
    what = f"the user-space driver {user} is installed but " if user else ""
    commands: tuple[str, ...] = ()
    source = _dkms_source(state.dkms_sources, user)
    family = distro_family(distro)
    headers = _headers(distro, family) if family is not None else None
    if state.dkms_registered and headers is not None:
        # dkms(8): autoinstall builds and installs every registered module for the running kernel
        commands = (headers, "sudo dkms autoinstall", "sudo modprobe nvidia")
    elif source is not None and family == "deb":
        # dkms(8): install builds the source in /usr/src/nvidia-<version> for the running kernel and installs it
        commands = (
            "sudo apt-get install dkms linux-headers-$(uname -r)",
            f"sudo dkms install -m nvidia -v {source}",
            "sudo modprobe nvidia",
        )
    if state.dkms_registered:
        text = (
            "The driver's source is registered with DKMS but was not built for this kernel (often a kernel update "
            "without its headers): install the running kernel's headers, build it with `sudo dkms autoinstall`, "
            "then load it."
        )
    elif source is not None:
        text = (
            f"The driver's module source is in /usr/src/nvidia-{source} but was not built for this kernel: build and "
            "install it with DKMS for the running kernel (with that kernel's headers), then load it."
        )
    elif user:
        text = (
            f"Install the kernel module of driver {user} for kernel {release}: the same driver branch as the "
            "user-space libraries (Ubuntu: the linux-modules-nvidia-<branch>-<flavour> package of this kernel or "
            "nvidia-dkms-<branch>; RHEL: the driver's kmod or DKMS package), then reboot or `sudo modprobe nvidia`."
        )
    else:
        text = (
            "Install the NVIDIA driver for this kernel (the NVIDIA Driver Installation Guide's steps for this "
            "distribution, https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/), then reboot."
        )
    return Problem(
        f"no NVIDIA kernel module for the running kernel {release}: {what}nothing can drive {subject}, so "
        "nvidia-smi cannot communicate with the NVIDIA driver and CUDA sees no GPU",
        evidence,
        Remediation(text, commands),
    )
