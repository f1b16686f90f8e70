"""CD136: the NVIDIA kernel module is loaded for the NVIDIA GPUs on the PCI bus."""

# CD1xx: driver and GPUs
#   CD136  the NVIDIA kernel module is loaded where the PCI bus shows an NVIDIA GPU (nvidia-smi's "couldn't
#          communicate with the NVIDIA driver"), with the likeliest cause read from files
#   CD137  the loaded module took every NVIDIA GPU on the PCI bus (a GPU it refused is invisible to NVML and CUDA)

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation
from cudadoctor.checks.hostfix import distro_family, is_image
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.health import HealthInfo
from cudadoctor.facts.model import (
    DriverInfo,
    DriverVersion,
    GpuInfo,
    HostInfo,
    KernelLogNote,
    NvidiaModuleState,
    PciGpu,
    RootKind,
)

__all__ = ["CD136", "CD137", "gpu_names", "passed_through"]

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
        row = matrix.device_for(gpu.device, gpu.subsystem or None) if gpu.device else None
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
    files show, most decisive first: no nvidia module for the running kernel (/lib/modules/$(uname -r)/modules.dep,
    which modprobe reads; the other installed kernels that have one tell a kernel update from a user-space driver
    installed without its module), nouveau loaded (/sys/module/nouveau) or bound to the GPU, what the kernel log's
    last boot says (/var/log/kern.log, messages, dmesg or syslog: the open module refusing a GPU without GSP, a GPU
    of a legacy branch, a GPU the release does not support, an unsigned module refused), an installed branch
    compat data shows cannot drive the GPU (CD114's rule on the PCI device's compute capability), UEFI Secure Boot
    on (efivars SecureBoot, shim's MokSBStateRT) with a module the user signs, or the module there but not loaded
    (and which of the firmware and the log could not be read). Only on a host's own system (a container shares the
    host's kernel: there it says the host lacks the module); never where NVML answered, and not for GPUs bound to
    vfio-pci (passed through to a virtual machine).

    Why it matters: without the kernel module nvidia-smi says "NVIDIA-SMI has failed because it couldn't
    communicate with the NVIDIA driver", NVML and CUDA find no GPU (cuInit error 100 or 999), torch reports
    "Found no NVIDIA driver on your system", and every framework falls back to the CPU, while the GPU is there.

    How to fix: after a kernel update, build the module for the new kernel (install that kernel's headers, then
    `sudo dkms autoinstall`, or install the distribution's module package for it; the older kernel works
    meanwhile); when nouveau holds the GPU, blacklist it, rebuild the initramfs and reboot; a GPU before Turing
    needs the proprietary module, not the open one; a legacy GPU its legacy branch (R470 Kepler, R580 Maxwell to
    Volta); a GPU too new for the branch a newer branch (`cudadoctor suggest driver`); under Secure Boot, enroll
    the key DKMS signs with (`sudo mokutil --import`, then MOK Manager at the reboot) or turn Secure Boot off;
    otherwise `sudo modprobe nvidia` loads it or says why not.
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
        return _cause(names, evidence, nvidia_module, driver, host.distro, matrix)


class CD137(Check):
    """The loaded NVIDIA kernel module drives every NVIDIA GPU on the PCI bus.

    What it checks: where the nvidia module is loaded, whether each NVIDIA display or 3D controller in
    /sys/bus/pci/devices is bound to it; one with no driver (or nouveau) is a GPU the module refused, with the cause
    the kernel log and compat data show (the open module and a GPU before Turing, a GPU of a legacy branch or one
    the release does not support). SR-IOV virtual functions and GPUs bound to vfio-pci/pci-stub (a virtual
    machine's) are left out. On a host's own system only (in a container /sys shows the host's devices, meant for
    it or not). Ok where NVML answered for every GPU on the bus; could not judge where no GPU shows the nvidia
    driver bound although the module is loaded (it stays loaded only with a device it initialised, so the links
    went unread).

    Why it matters: NVML, nvidia-smi and CUDA see only the GPUs the module took: the refused one is missing from
    `nvidia-smi` and `torch.cuda.device_count()` with no error at all, while the others work.

    How to fix: the cause's own fix (the proprietary module for a GPU before Turing, the GPU's legacy branch, a
    newer branch); where the GPUs need different modules (a Blackwell the open one, a GPU before Turing the
    proprietary one), no one driver drives both: move one GPU to another machine.
    """

    name = "module-drives-every-gpu"
    category = "gpus"

    def check(
        self,
        host: HostInfo,
        matrix: CompatMatrix,
        nvidia_module: NvidiaModuleState | None = None,
        driver: DriverInfo | None = None,
        root_kind: RootKind | None = None,
        mode: str = "live",
        gpus: tuple[GpuInfo, ...] = (),
    ) -> Problem | None:
        if nvidia_module is None or nvidia_module.nvidia_loaded is not True:
            raise NotApplicable("the nvidia module is not loaded (CD136) or no NVIDIA GPU is on the PCI bus")
        if (mode == "live" and host.container is not None and host.container.in_container) or is_image(root_kind):
            raise NotApplicable("a container or image: /sys shows the host's GPUs, which the host assigns")
        if not nvidia_module.unclaimed:
            return None
        refused = tuple(g for g in nvidia_module.pci_gpus if g.address in nvidia_module.unclaimed)
        taken = [g for g in nvidia_module.pci_gpus if g.driver == "nvidia"]
        if not taken:
            # the module stays loaded only where it initialised a device (kernel-open/nvidia/nv.c: "None of the
            # NVIDIA devices were initialized" fails the load), so no GPU bound to it means the links went unread
            raise CannotJudge("no GPU shows the nvidia driver bound (/sys/bus/pci/devices/*/driver) although the "
                              "module is loaded: the driver links could not be read")  # fmt: skip
        if len(gpus) >= len(taken) + len(refused):
            return None  # NVML answered for as many GPUs as the bus shows: the module took them all
        names = gpu_names(refused, matrix)
        subject = names[0] + (f" and {len(names) - 1} more" if len(names) > 1 else "")
        evidence = {
            "not taken by the nvidia module": "; ".join(names) + " (/sys/bus/pci/devices/*/driver)",
            "driven by it": "; ".join(gpu_names(tuple(taken), matrix)) or "none",
        }
        for note in nvidia_module.kernel_notes:
            evidence[f"kernel log ({nvidia_module.kernel_log})"] = note.line
        if nvidia_module.module_flavor is not None:
            evidence["module flavour"] = f"{nvidia_module.module_flavor} (/proc/driver/nvidia/version)"
        libcuda = [f for f in (driver.libcuda_files if driver else ()) if f.kind == "driver"]
        user = next((str(f.version) for f in libcuda if f.version), None)
        if driver is not None and driver.kernel_module is not None and driver.kernel_module.version is not None:
            user = str(driver.kernel_module.version)
        state = replace(nvidia_module, pci_gpus=refused)
        problem = _refused(subject, evidence, state, user, host.distro, matrix)
        conflict = _needs_both(taken, refused, matrix)
        if problem is not None and conflict is None:
            return problem
        return Problem(
            f"the loaded NVIDIA kernel module did not take {subject}: NVML, nvidia-smi and CUDA see only the other "
            "GPUs",
            evidence,
            Remediation(
                conflict
                or "`sudo dmesg | grep NVRM` shows why the module refused it (a GPU before Turing under the open "
                "module, a legacy GPU, one the release does not support).",
                (),
            ),
        )


def _needs_both(taken: list[PciGpu], refused: tuple[PciGpu, ...], matrix: CompatMatrix) -> str | None:
    """Words for GPUs that need different kernel modules (a driven one only the open modules drive, a refused one
    only the proprietary one), None when one module can drive them all or the data cannot tell."""
    from cudadoctor.suggest.driver import module_flavor

    def ccs(gpus: Sequence[PciGpu]) -> list[str]:
        rows = [matrix.device_for(g.device, g.subsystem or None) for g in gpus if g.device]
        return [r.compute_capability for r in rows if r is not None and r.compute_capability]

    if module_flavor(ccs(taken)) != "open":
        return None
    if not all(g.device and not matrix.device_listed(g.device) for g in refused):
        return None  # every refused GPU must be one the open modules do not list
    return (
        "The GPUs here need different kernel modules: the driven one only the open modules drive (Blackwell), the "
        "refused one only the proprietary module (a GPU before Turing is in no open-modules list); no one NVIDIA "
        "driver drives both. Move one of them to another machine."
    )


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
    names: list[str],
    evidence: dict[str, str],
    state: NvidiaModuleState,
    driver: DriverInfo | None,
    distro: str | None,
    matrix: CompatMatrix,
) -> Problem:
    """The likeliest cause the files show, most decisive first: no module for this kernel, nouveau, what the kernel
    log says the module refused (or compat data shows the branch cannot drive), Secure Boot, a module that did not
    load for a reason not read."""
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
        _no_module_evidence(evidence, state, release)
        return _no_module(subject, evidence, state, user, distro)
    if state.nvidia_module_files:
        evidence["module file"] = f"{state.nvidia_module_files[0]} (/lib/modules/{release}/modules.dep)"
    if nouveau:
        return _nouveau(subject, evidence, distro)
    for note in state.kernel_notes:
        evidence[f"kernel log ({state.kernel_log})"] = note.line
    refused = _refused(subject, evidence, state, user, distro, matrix)
    if refused is not None:
        return refused
    if _secure_boot_refuses(state):
        return _secure_boot(subject, evidence, state)
    return _not_loaded(subject, evidence, state)


def _no_module_evidence(evidence: dict[str, str], state: NvidiaModuleState, release: str) -> None:
    """What shows that no module was built for the running kernel, and what was built instead."""
    evidence["running kernel"] = f"{release} (/proc/sys/kernel/osrelease)"
    evidence[f"/lib/modules/{release}/modules.dep"] = "lists no nvidia.ko"
    if state.dkms_registered:
        evidence["DKMS"] = "the nvidia source is registered (/var/lib/dkms/nvidia)"
    if state.dkms_sources:
        evidence["module source"] = ", ".join(f"/usr/src/nvidia-{v}" for v in state.dkms_sources)
    if state.other_kernels:
        evidence["other kernels with an nvidia module"] = ", ".join(state.other_kernels) + " (/lib/modules)"
    elif state.other_kernels == ():
        evidence["other kernels with an nvidia module"] = "none (/lib/modules/*/modules.dep)"


def _nouveau(subject: str, evidence: dict[str, str], distro: str | None) -> Problem:
    """nouveau holds the GPU: blacklist it, rebuild the initramfs, reboot."""
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


def _not_loaded(subject: str, evidence: dict[str, str], state: NvidiaModuleState) -> Problem:
    """No cause shows in what could be read: load the module, whose refusal says why (and say what was unread)."""
    if state.kernel_log is None:
        evidence["kernel log"] = "not readable (" + ", ".join(_LOGS) + "): the driver's own reason is unknown"
    if state.secure_boot is None:
        evidence["Secure Boot"] = "unknown (/sys/firmware/efi/efivars not readable)"
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


def _no_module_text(state: NvidiaModuleState, source: str | None, user: str | None) -> str:
    """What to do where no module was built for the running kernel: build the registered or left source, or install
    the module of the user-space driver's branch (a kernel update, or a user-space driver installed alone)."""
    release = state.kernel_release
    # a kernel that has the module runs the GPU meanwhile (a DKMS build can fail on a kernel the driver predates)
    meanwhile = (
        f" Kernel {', '.join(state.other_kernels)} has the module: booting it (the boot menu's advanced options) runs "
        "the GPU meanwhile."
        if state.other_kernels
        else ""
    )
    if state.dkms_registered:
        return (
            "The driver's source is registered with DKMS but was not built for this kernel (often a kernel update "
            "without its headers): install the running kernel's headers, build it with `sudo dkms autoinstall`, "
            "then load it." + meanwhile
        )
    if source is not None:
        return (
            f"The driver's module source is in /usr/src/nvidia-{source} but was not built for this kernel: build and "
            "install it with DKMS for the running kernel (with that kernel's headers), then load it." + meanwhile
        )
    if not user:
        return (
            "Install the NVIDIA driver for this kernel (the NVIDIA Driver Installation Guide's steps for this "
            "distribution, https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/), then reboot."
        )
    package = (
        f"install the kernel module of driver {user} for kernel {release}: the same driver branch as the user-space "
        "libraries (Ubuntu: the linux-modules-nvidia-<branch>-<flavour> package of this kernel or "
        "nvidia-dkms-<branch>; RHEL: the driver's kmod or DKMS package), then reboot or `sudo modprobe nvidia`."
    )
    if state.other_kernels:
        return (
            f"The module was built for kernel {', '.join(state.other_kernels)} only, not for the running {release} (a "
            "kernel update with nothing to rebuild it): boot that kernel, or " + package
        )
    if state.other_kernels == ():
        return (
            f"The user-space driver {user} was installed without its kernel module (no installed kernel has an "
            "nvidia module): " + package
        )
    return package[0].upper() + package[1:]


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
    text = _no_module_text(state, source, user)
    return Problem(
        f"no NVIDIA kernel module for the running kernel {release}: {what}nothing can drive {subject}, so "
        "nvidia-smi cannot communicate with the NVIDIA driver and CUDA sees no GPU",
        evidence,
        Remediation(text, commands),
    )


#: the kernel logs the probe reads (probes/kmod.py), named where none could be read
_LOGS = ("/var/log/kern.log", "/var/log/messages", "/var/log/dmesg", "/var/log/syslog")
#: Ubuntu's precompiled module packages (linux-modules-nvidia-<branch>-<kernel>) install the module under
#: kernel/nvidia-<branch>/, signed by Canonical, whose key shim trusts (https://ubuntu.com/server/docs/nvidia-drivers-installation):
#: Secure Boot loads those; a module DKMS or the .run installer built is signed only with a key the user enrolls
_SIGNED_BY_DISTRIBUTION = "kernel/nvidia-"
#: the first compute capability the open kernel modules support (Turing: NVIDIA Driver Installation Guide, "Kernel
#: Modules", https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html)
_OPEN_FROM = (7, 5)


def _ubuntu(distro: str | None) -> bool:
    return "ubuntu" in (distro or "").lower()


def _branch(state: NvidiaModuleState, user: str | None) -> int | None:
    """The installed driver's branch: the release the kernel log names, else the user-space driver's, else the
    only module source's."""
    unsupported = next((n.release for n in state.kernel_notes if n.kind == "unsupported"), "")
    version = unsupported or user or (state.dkms_sources[0] if len(state.dkms_sources) == 1 else "")
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def _cc(value: str | None) -> tuple[int, int] | None:
    from cudadoctor.rules.archs import parse_cc

    return parse_cc(value or "")


def _legacy_branches(matrix: CompatMatrix) -> str:
    """``R580 for Maxwell, Pascal and Volta, R470 for Kepler``: the last branch of each architecture the open
    modules do not support (compat/gpu_archs.toml ``last_driver_branch``)."""
    names: dict[int, list[str]] = {}
    for arch in sorted(matrix.gpu_archs.values(), key=lambda a: _cc(a.compute_capability) or (0, 0)):
        cc = _cc(arch.compute_capability)
        if arch.last_driver_branch is None or cc is None or cc >= _OPEN_FROM:
            continue
        if arch.name not in names.setdefault(arch.last_driver_branch, []):
            names[arch.last_driver_branch].append(arch.name)
    return ", ".join(
        f"R{b} for {' and '.join(n) if len(n) < 3 else ', '.join(n[:-1]) + ' and ' + n[-1]}"
        for b, n in sorted(names.items(), reverse=True)
    )


def _open_on_old_gpu(
    subject: str,
    evidence: dict[str, str],
    branch: int | None,
    distro: str | None,
    matrix: CompatMatrix,
    *,
    logged: bool,
) -> Problem:
    """The open module and a GPU it does not drive (before Turing): the proprietary module of a branch that does.
    ``logged``: the kernel log says so; else the module's flavour and NVIDIA's list of the open modules' GPUs do."""
    last = max((a.last_driver_branch or 0 for a in matrix.gpu_archs.values()), default=0)
    proprietary = branch if branch is not None and branch <= last else last
    why = "refused" if logged else "is installed, and NVIDIA's list of the GPUs it drives does not name"
    return Problem(
        f"the open NVIDIA kernel module {why} {subject}: the open modules drive only Turing and newer GPUs "
        "(they need the GPU's System Processor, GSP), so nvidia-smi cannot communicate with the NVIDIA driver",
        evidence,
        Remediation(
            "Replace the open kernel module with the proprietary one of a branch that still supports this GPU ("
            f"{_legacy_branches(matrix)}; compat/gpu_archs.toml): on Ubuntu the nvidia-driver-<branch> package "
            "rather than nvidia-driver-<branch>-open, on RHEL the DNF module stream <branch>-dkms rather than "
            "<branch>-open; then reboot. Should the kernel log then say the GPU is supported through a legacy "
            "driver, install that branch instead (NVIDIA Driver Installation Guide, 'Kernel Modules', "
            "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html)."
            + ("" if logged else " `sudo dmesg | grep NVRM` shows the module's own words."),
            _install(proprietary, distro, matrix),
        ),
    )


def _install(branch: int, distro: str | None, matrix: CompatMatrix) -> tuple[str, ...]:
    """The proprietary module of ``branch`` installed on Ubuntu, then a reboot; nothing for a branch NVIDIA's lifecycle
    no longer supports, whose distribution packages become transitional ones to a newer branch (suggest/driver.py)."""
    from cudadoctor.rules.branches import supported_branches
    from cudadoctor.suggest.driver import install_commands

    if not _ubuntu(distro) or branch not in {r.branch for r in supported_branches(matrix)}:
        return ()
    return (*(c for _where, c in install_commands(branch, "proprietary", distro)), "sudo reboot")


def _refused(
    subject: str,
    evidence: dict[str, str],
    state: NvidiaModuleState,
    user: str | None,
    distro: str | None,
    matrix: CompatMatrix,
) -> Problem | None:
    """The module refused the GPU, as the kernel log says (the open module on a GPU without GSP, a legacy GPU, a GPU
    the release does not know) or as compat data shows (the installed branch is older than the GPU's architecture
    needs, or past its last branch)."""
    notes = {n.kind: n for n in state.kernel_notes}
    branch = _branch(state, user)
    unlisted = [g for g in state.pci_gpus if g.device and not matrix.device_listed(g.device)]
    if "gsp" in notes or (state.module_flavor == "open" and unlisted):
        if "gsp" not in notes:
            evidence["module flavour"] = "open (its .modinfo license is 'Dual MIT/GPL')"
            evidence["the open modules' GPU list"] = (
                ", ".join(f"10de:{g.device.lower()}" for g in unlisted)
                + " is in no release's list (compat/gpu_devices.toml, from NVIDIA's open-gpu-kernel-modules README)"
            )
        return _open_on_old_gpu(subject, evidence, branch, distro, matrix, logged="gsp" in notes)
    if "legacy" in notes:
        legacy = notes["legacy"].release
        return Problem(
            f"the installed NVIDIA driver{f' {user}' if user else ''} does not support {subject}: the kernel log says "
            f"the GPU is supported through the NVIDIA {legacy}.xx legacy drivers, so the module ignores it",
            evidence,
            Remediation(
                f"Install the R{legacy} legacy driver in place of this one (its newest release is on NVIDIA's Unix "
                "driver archive, https://www.nvidia.com/en-us/drivers/unix.html), then reboot. A distribution's "
                "package of a branch NVIDIA ended may be a transitional one to a newer branch that drops this GPU "
                "(Ubuntu's nvidia-driver-470 installs 535): check what it installs.",
                _install(int(legacy), distro, matrix),
            ),
        )
    return _too_new_or_dropped(subject, evidence, state, branch, notes.get("unsupported"), distro, matrix)


def _too_new_or_dropped(
    subject: str,
    evidence: dict[str, str],
    state: NvidiaModuleState,
    branch: int | None,
    note: KernelLogNote | None,
    distro: str | None,
    matrix: CompatMatrix,
) -> Problem | None:
    """The installed branch does not support a GPU's architecture (CD114's rule on the PCI device's compute
    capability), with the supported branch that runs every GPU."""
    from cudadoctor.rules.branches import branches_for_gpus, supported_branches
    from cudadoctor.rules.driver import driver_supports_gpu
    from cudadoctor.suggest.driver import install_commands, module_flavor

    rows = [matrix.device_for(g.device, g.subsystem or None) for g in state.pci_gpus if g.device]
    gpus = [(r.name, r.compute_capability) for r in rows if r is not None and r.compute_capability]
    if branch is None or (not gpus and note is None):
        return None
    release = DriverVersion(note.release) if note is not None else DriverVersion(str(branch))
    verdicts = [driver_supports_gpu(matrix, release, cc, name) for name, cc in gpus]
    failed = next((v for v in verdicts if v.is_problem), None)
    if failed is None and note is None:
        return None
    if failed is not None:
        evidence["driver branch"] = f"R{branch}: {failed.observed}; needs {failed.required} (compat/gpu_archs.toml)"
    fit = next((f for f in branches_for_gpus(matrix, gpus) if f.fits), None) if gpus else None
    arch = failed.detail if failed is not None else None
    last = getattr(arch, "last_driver_branch", None)
    target = last if last is not None and branch > last else (fit.branch.branch if fit is not None else None)
    flavor = module_flavor([cc for _n, cc in gpus])
    # a branch NVIDIA ended has no package to name (distributions make it a transitional one: suggest/driver.py)
    packaged = target is not None and target in {r.branch for r in supported_branches(matrix)}
    commands = install_commands(target, flavor, distro) if target is not None and packaged and distro else ()
    package = f"nvidia-driver-{target}" + ("-open" if flavor == "open" else "") if packaged else ""
    where = f"R{target}" + (" (open kernel modules)" if flavor == "open" else "") if target else "a newer branch"
    return Problem(
        f"the installed NVIDIA driver (R{branch}) does not support {subject}"
        + (": the kernel log says this release does not support the GPU" if note is not None else "")
        + ", so the kernel module does not drive it and nvidia-smi cannot communicate with the NVIDIA driver",
        evidence,
        Remediation(
            f"Install a driver of {where}, which supports every GPU here (compat/gpu_archs.toml; NVIDIA's driver "
            "README, 'Appendix A. Supported NVIDIA GPU Products', lists each release's GPUs)"
            + (f": on Ubuntu the {package} package" if package else "")
            + ", then reboot.",
            tuple(c for _where, c in commands[:1]) + (("sudo reboot",) if commands else ()),
        ),
    )


def _secure_boot_refuses(state: NvidiaModuleState) -> bool:
    """The kernel log says an unsigned module was refused, or Secure Boot is on and the module is one the user
    must sign (built by DKMS or the .run installer, not a distribution's signed package)."""
    if any(n.kind == "unsigned" for n in state.kernel_notes):
        return state.secure_boot is not False
    files = state.nvidia_module_files or ()  # none known (modules.dep unread): nothing says what would be refused
    return state.secure_boot is True and bool(files) and not any(f.startswith(_SIGNED_BY_DISTRIBUTION) for f in files)


def _secure_boot(subject: str, evidence: dict[str, str], state: NvidiaModuleState) -> Problem:
    """Secure Boot refuses the module: enroll the key DKMS signs it with, or turn Secure Boot off."""
    if state.secure_boot:
        evidence["Secure Boot"] = "enabled (/sys/firmware/efi/efivars/SecureBoot-8be4df61-…: 1)"
    key = state.signing_key
    if key:
        evidence["DKMS signing key"] = key
    logged = any(n.kind == "unsigned" for n in state.kernel_notes)
    enroll = (
        f"Enroll the key DKMS signs the module with as a Machine Owner Key: `sudo mokutil --import {key}` asks for a "
        "one-time password; at the reboot choose 'Enroll MOK' in the blue MOK Manager screen and enter it. A module "
        "built before the key existed is unsigned: rebuild it then (`sudo dkms autoinstall`)."
        if key
        else "Sign the module with a key enrolled as a Machine Owner Key (DKMS signs what it builds once its key "
        "exists: /var/lib/shim-signed/mok/MOK.der on Ubuntu, /var/lib/dkms/mok.pub with dkms 3; enroll it with "
        "`sudo mokutil --import <key>` and a reboot)."
    )
    return Problem(
        f"Secure Boot keeps the NVIDIA kernel module from loading for {subject}: the kernel loads only modules signed "
        "with an enrolled key"
        + (", and its log says it refused an unsigned one" if logged else ", and this module is one the user signs"),
        evidence,
        Remediation(
            enroll + " Or turn Secure Boot off in the firmware settings (a cloud VM: its Secure Boot or trusted "
            "launch setting; https://wiki.debian.org/SecureBoot#DKMS_and_secure_boot).",
            (f"sudo mokutil --import {key}", "sudo reboot") if key else (),
        ),
    )
