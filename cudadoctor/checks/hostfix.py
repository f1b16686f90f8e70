"""Fixes that depend on where the examined root sits: a host's own system, a container image, or a managed
platform whose driver the user cannot change (facts ``root_kind`` and ``platform``, probes/origin.py).

A driver library that differs from the kernel module is the new driver waiting for a reboot on a host and a stray
copy to delete in an image; deleting it on a host removes the working driver. So a driver library is only ever
removed when the root is known to be an image: an unknown root gets a host's fixes, and its finding says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from cudadoctor.checks.findings import Remediation
from cudadoctor.facts.model import DriverInfo, DriverReading, DriverVersion, ManagedPlatform, RootKind, SourceKind

__all__ = [
    "RELOAD_MODULES",
    "SUGGEST_TARGETS",
    "assumed_driver",
    "assumed_host",
    "distro_family",
    "driver_fixed_by",
    "is_image",
    "mismatch_remediation",
]

#: Unloading the NVIDIA modules and loading the installed driver's. The driver's kernel modules are nvidia,
#: nvidia-modeset, nvidia-uvm, nvidia-drm and nvidia-peermem (NVIDIA's README, "Open Linux Kernel Modules",
#: https://download.nvidia.com/XFree86/Linux-x86_64/545.29.02/README/kernel_open.html); users go first (nvidia_uvm,
#: and nvidia_drm, which uses nvidia_modeset), then nvidia, which the others use (lsmod's "Used by" column).
#: modprobe(8) -r removes the named modules in order, but exits non-zero when one of them is not loaded (kmod's
#: rmmod_do: "Module … not found" / "is not in kernel"; a headless server often has no nvidia_drm, an idle one no
#: nvidia_uvm), so the load is not chained with ``&&``: it runs either way, and is a no-op when a module in use kept
#: nvidia loaded (modprobe then said which). nvidia_peermem (GPUDirect RDMA, driver 470 and later) is named in the
#: words only: on older drivers modprobe would not find it. CUDA loads nvidia_uvm again on demand (nvidia-modprobe).
RELOAD_MODULES = "sudo modprobe -r nvidia_uvm nvidia_drm nvidia_modeset nvidia; sudo modprobe nvidia"


#: The packages ``cudadoctor suggest --target`` plans (cudadoctor/planning.py PLANNERS; not imported here, as the
#: planners are a heavy import for a check).
SUGGEST_TARGETS = ("torch", "vllm", "jax", "tensorrt", "cupy", "onnxruntime-gpu", "tensorflow")


def is_image(root_kind: RootKind | None) -> bool:
    """True only when the root is known to be a container image (its markers, or ``--root-kind image``)."""
    return root_kind is not None and root_kind.kind == "image"


def assumed_driver(driver: DriverInfo) -> DriverReading | None:
    """The driver version given with ``--assume-driver`` rather than read, None when none was given: it describes
    another machine (the host a build stage's image will run on, or a root's host)."""
    return next((r for r in driver.readings if r.source.kind is SourceKind.ASSUMED and r.version), None)


def assumed_host(root_kind: RootKind | None) -> str:
    """Why a host's fix was given to a root whose kind is not known, in words ("" when it is known)."""
    if root_kind is not None and root_kind.kind != "unknown":
        return ""
    if root_kind is None:
        why = "the root's kind was not recorded (a snapshot of an older cudadoctor, or a probe that failed)"
    elif root_kind.markers:
        seen = ", ".join(f"{m.kind}: {m.source.where}" for m in root_kind.markers)
        why = f"its markers disagree ({seen})"
    else:
        why = "no marker of a container or of a host was found"
    return (
        f" Taken for a host, where nothing is deleted, as {why}; if this is a container image, run again with "
        "--root-kind image."
    )


def _reboot(newer: str) -> Remediation:
    return Remediation(
        f"Reboot so that the kernel loads the module of the installed driver{newer}. Without a reboot, once nothing "
        "uses the GPU (stop nvidia-persistenced and the display manager; `sudo lsof /dev/nvidia*` lists the rest; "
        f"unload nvidia_peermem first where GPUDirect RDMA loaded it), reload the modules: `{RELOAD_MODULES}`.",
        ("sudo reboot",),
    )


def _same_driver(files: Sequence[str]) -> list[str]:
    """Each baked libcuda.so.<version> as the pattern of every library of that driver beside it
    (``/usr/lib/x86_64-linux-gnu/lib*.so.455.32.00``): a driver install puts libnvidia-ml, libnvidia-ptxjitcompiler
    and the rest there with the same version suffix, and a libnvidia-ml left behind keeps nvidia-smi failing."""
    patterns: list[str] = []
    for path in files:
        directory, _, name = path.rpartition("/")
        version = name.partition(".so.")[2]
        pattern = f"{directory}/lib*.so.{version}" if version else path
        if pattern not in patterns:
            patterns.append(pattern)
    return patterns


def mismatch_remediation(
    root_kind: RootKind | None,
    kernel: DriverVersion | None,
    user: Sequence[DriverVersion],
    baked: Sequence[str],
    distro: str | None = None,
) -> Remediation:
    """The fix for user-space driver libraries (``user``; the files ``baked``) that differ from the kernel module.

    :param root_kind: the root's kind: only an image gets ``baked`` removed.
    :param kernel: the kernel module's version (or the host's, ``--assume-driver``); None when unknown.
    :param user: the user-space versions that differ from it.
    :param baked: the versioned driver files that differ and are no mount of the host's (candidates for removal).
    :param distro: the distribution (os-release's PRETTY_NAME), for the packages that hold the user-space driver.
    """
    note = assumed_host(root_kind)
    if is_image(root_kind):
        if baked:
            return Remediation(
                "Remove the driver libraries from the image (do not install libnvidia-*/nvidia-driver-* packages or "
                "the .run driver in it); the NVIDIA runtime mounts the host's matching ones.",
                (f"rm -f {' '.join(_same_driver(baked))} && ldconfig",),
            )
        return Remediation(
            "The differing driver libraries are the host's, mounted by the NVIDIA runtime: the host's driver was "
            "upgraded without a reboot. Reboot the host (not the container), or reload its nvidia modules there: "
            f"`{RELOAD_MODULES}`.",
        )
    older = [v for v in user if kernel is not None and v < kernel]
    if older and len(older) == len(user) and kernel is not None:
        # Ubuntu's driver packages put libcuda in libnvidia-compute-<branch> and nvidia-smi in nvidia-utils-<branch>
        # (https://ubuntu.com/server/docs/nvidia-drivers-installation); other distributions name them otherwise.
        ubuntu = "ubuntu" in (distro or "").lower()
        packages = (
            f"Ubuntu's libnvidia-compute-{kernel.major} and nvidia-utils-{kernel.major} packages at {kernel}"
            if ubuntu
            else "the distribution's driver packages at that version"
        )
        return Remediation(
            f"The kernel module {kernel} is newer than the user-space driver {', '.join(map(str, older))}: a reboot "
            f"keeps the older libraries. Install the user-space driver of version {kernel} from where the module came "
            f"({packages}; for NVIDIA's .run installer, the {kernel} installer again), or reinstall one driver whole "
            "and reboot." + note
        )
    newer = f" ({', '.join(sorted({str(v) for v in user}))})" if user else ""
    reboot = _reboot(newer)
    return Remediation(reboot.text + note, reboot.commands)


def driver_fixed_by(platform: ManagedPlatform | None) -> str:
    """Words for a finding whose usual fix changes the driver, on a platform where that cannot be done ("" off
    such a platform)."""
    if platform is None:
        return ""
    return (
        f"The NVIDIA driver here is {platform.name}'s ({platform.source}): it cannot be changed from the notebook or "
        "job."
    )


def distro_family(distro: str | None) -> str | None:
    """``deb`` (Ubuntu, Debian), ``rpm`` (RHEL and its rebuilds, Fedora) or None from os-release's PRETTY_NAME."""
    name = (distro or "").lower()
    if any(w in name for w in ("ubuntu", "debian")):
        return "deb"
    if any(w in name for w in ("red hat", "rhel", "rocky", "almalinux", "centos", "fedora", "oracle linux")):
        return "rpm"
    return None
