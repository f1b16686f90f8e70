"""Where the examined root sits: a machine's own system (a host) or a container image, and the managed
platform (Colab, Kaggle, SageMaker …) that runs it.

Both decide what a fix may do. A driver library that differs from the kernel module is the new driver waiting
for a reboot on a host, and a stray copy to delete in an image; on a managed platform the driver is the
platform's and a fix can only choose the builds that fit it. Every marker below is read through ``ctx`` and
kept with its :class:`~cudadoctor.facts.model.Source`; a root whose markers are missing or contradict each
other is ``unknown``, which the checks treat as a host (their safe side: nothing is deleted).
"""

from __future__ import annotations

import posixpath
import re

from cudadoctor.facts.model import ManagedPlatform, RootKind, RootMarker, Source, SourceKind
from cudadoctor.probes.context import ProbeContext
from cudadoctor.probes.host import container_files, parse_cgroup

__all__ = ["decide_root_kind", "parse_mount_points", "probe_platform", "probe_root_kind"]

#: Variables of an image rather than of a machine: the nvidia/cuda images set NVIDIA_VISIBLE_DEVICES,
#: NVIDIA_REQUIRE_CUDA and NV_CUDA_LIB_VERSION with ``ENV`` in their Dockerfiles
#: (https://gitlab.com/nvidia/container-images/cuda/-/tree/master/dist), systemd's container interface names
#: ``container`` (https://systemd.io/CONTAINER_INTERFACE/), and CUDADOCTOR_BUILD_STAGE is cudadoctor's own
#: "this runs in an image build stage" (README).
_IMAGE_VARS = ("container", "NVIDIA_REQUIRE_CUDA", "NV_CUDA_LIB_VERSION", "NVIDIA_VISIBLE_DEVICES",
               "CUDADOCTOR_BUILD_STAGE")  # fmt: skip

#: Kernel images: Debian and Ubuntu install /boot/vmlinuz-<release>; Fedora and RHEL keep the image in
#: /lib/modules/<release>/vmlinuz too (kernel-install(8), https://www.freedesktop.org/software/systemd/man/latest/kernel-install.html).
#: A container image has no kernel of its own: it runs on the host's.
_KERNEL_GLOBS = (("/boot", "vmlinuz-*"), ("/boot", "vmlinuz"))

#: A driver library among a container's mount points: the NVIDIA Container Toolkit mounts the host's files one
#: by one (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/).
_DRIVER_LIB = re.compile(r"^lib(?:cuda|nvidia-[\w-]+)\.so\.\d")


def _marker(kind: str, where: str, source_kind: SourceKind = SourceKind.FILE) -> RootMarker:
    return RootMarker(kind, Source(source_kind, where))


def parse_mount_points(text: str) -> tuple[str, ...]:
    """The mount points (the fifth field) of ``/proc/self/mountinfo`` lines, octal escapes (``\\040``) decoded
    (proc(5): ``36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue``)."""
    points = []
    for line in text.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return tuple(points)


def _read(ctx: ProbeContext, path: str, limit: int = 64 << 10) -> str | None:
    try:
        return ctx.fs.read_text(path, limit=limit)
    except OSError:
        return None


#: System containers (systemd's CONTAINER_INTERFACE names them ``lxc``, ``lxc-libvirt``, ``systemd-nspawn``): a whole
#: distribution whose user-space driver is installed in it on purpose, to match the host's module (no NVIDIA runtime
#: mounts one). Removing it is no fix there, so they are no image marker.
_SYSTEM_CONTAINERS = ("lxc", "lxc-libvirt", "systemd-nspawn")


def _image_markers(ctx: ProbeContext) -> list[RootMarker]:
    present, systemd, cgroup = container_files(ctx)  # the files container runtimes write, PID 1's view
    found = [_marker("image", path) for path in present]
    found += [
        _marker("image", name, SourceKind.ENV)
        for name in _IMAGE_VARS
        if ctx.env.get(name) and not (name == "container" and ctx.env[name] in _SYSTEM_CONTAINERS)
    ]
    if not ctx.live:
        return found
    # Kubernetes gives every container KUBERNETES_SERVICE_HOST
    # (https://kubernetes.io/docs/concepts/services-networking/service/#environment-variables).
    if ctx.env.get("KUBERNETES_SERVICE_HOST"):
        found.append(_marker("image", "KUBERNETES_SERVICE_HOST", SourceKind.ENV))
    if systemd not in ("", *_SYSTEM_CONTAINERS):
        found.append(_marker("image", "/run/systemd/container"))
    if any(runtime != "lxc" for _path, runtime in parse_cgroup(cgroup)):
        found.append(_marker("image", "/proc/1/cgroup"))
    return found


def _host_markers(ctx: ProbeContext, image: bool) -> list[RootMarker]:
    found = [_marker("host", path) for directory, pattern in _KERNEL_GLOBS for path in ctx.fs.glob(directory, pattern)]
    found += [
        _marker("host", f"{p}/vmlinuz") for p in ctx.fs.glob("/lib/modules", "*") if ctx.fs.exists(f"{p}/vmlinuz")
    ]
    if ctx.live:
        # On a host systemd (PID 1) sits in init.scope (https://systemd.io/CGROUP_DELEGATION/): "0::/init.scope"
        # (cgroup v2), "1:name=systemd:/init.scope" (v1); in a container with its own cgroup namespace PID 1 sees
        # only "0::/", and without one a path under the runtime's (docker/…).
        cgroup = container_files(ctx)[2]
        if re.search(r"^\d+:[^:\n]*:/init\.scope$", cgroup, re.MULTILINE):
            found.append(_marker("host", "/proc/1/cgroup"))
        # procfs and sysfs are the kernel's: a container sees the loaded module too, so it speaks for a host
        # only where nothing says container.
        if not image and not found:
            module = next((p for p in ("/proc/driver/nvidia/version", "/sys/module/nvidia") if ctx.fs.exists(p)), None)
            if module:
                found.append(_marker("host", module))
    return found[:4]


def _kernel_package(ctx: ProbeContext) -> tuple[RootMarker, ...]:
    """A kernel package dpkg installed (``linux-image-<release>``): asked only when no other marker was seen, as
    dpkg's database can be megabytes. A kernel can live on another partition (/boot) of a mounted host disk."""
    text = _read(ctx, "/var/lib/dpkg/status", 32 << 20) or ""
    for stanza in text.split("\n\n"):
        if re.search(r"^Package:\s*linux-image-\S+", stanza, re.MULTILINE) and re.search(
            r"^Status:\s*install ok installed$", stanza, re.MULTILINE
        ):
            return (_marker("host", "/var/lib/dpkg/status"),)
    return ()


def decide_root_kind(markers: tuple[RootMarker, ...]) -> tuple[str, Source | None]:
    """``image`` or ``host`` when the markers agree, with the first that decided; ``unknown`` when none is seen or
    they contradict each other (an image with a kernel installed, a host that sets an image's variables)."""
    kinds = {m.kind for m in markers}
    if len(kinds) != 1:
        return "unknown", None
    return markers[0].kind, markers[0].source


def probe_root_kind(ctx: ProbeContext) -> RootKind:
    """Whether the examined root is a host's own system or a container image, from the markers each leaves.

    :param ctx: the probe context (the live machine or an image root).
    :return: the kind, the marker that decided it and every marker seen; in a running container, the driver
        libraries its runtime mounted from the host.
    """
    image = _image_markers(ctx)
    markers = (*image, *_host_markers(ctx, bool(image)))
    if not markers:
        markers = _kernel_package(ctx)
    kind, source = decide_root_kind(markers)
    mounted: tuple[str, ...] = ()
    if ctx.live and image:
        points = parse_mount_points(_read(ctx, "/proc/self/mountinfo", 1 << 20) or "")
        mounted = tuple(p for p in points if _DRIVER_LIB.match(posixpath.basename(p)))
    return RootKind(kind=kind, source=source, markers=markers, mounted_driver_files=mounted)


#: Managed platforms whose NVIDIA driver comes with the machine and cannot be changed by the user, and the
#: markers each sets, with where that is stated publicly.
_PLATFORM_VARS = (
    # Colab's runtime sets COLAB_RELEASE_TAG and COLAB_GPU (tested for Colab by public code, e.g.
    # https://github.com/ugniusalekna/mini-dl-workflow/blob/main/src/mdlw/__init__.py).
    ("COLAB_RELEASE_TAG", "Google Colab"),
    ("COLAB_GPU", "Google Colab"),
    # Kaggle sets KAGGLE_KERNEL_RUN_TYPE in notebooks and scripts alike
    # (https://github.com/harupy/dsb2019/blob/master/src/utils/kernel.py).
    ("KAGGLE_KERNEL_RUN_TYPE", "Kaggle"),
    # SageMaker training containers get SM_TRAINING_ENV from the SageMaker Training Toolkit
    # (https://github.com/aws/sagemaker-training-toolkit/blob/master/ENVIRONMENT_VARIABLES.md).
    ("SM_TRAINING_ENV", "Amazon SageMaker"),
    # Vertex AI custom training jobs pass AIP_MODEL_DIR to the container
    # (https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec, baseOutputDirectory).
    ("AIP_MODEL_DIR", "Vertex AI training"),
    # Databricks Runtime sets DATABRICKS_RUNTIME_VERSION (tested by https://rdrr.io/cran/brickster/src/R/databricks-helpers.R).
    ("DATABRICKS_RUNTIME_VERSION", "Databricks"),
)
_PLATFORM_FILES = (
    # SageMaker writes a training job's resource configuration
    # (https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-running-container.html) and
    # a notebook instance's or Studio app's metadata (https://docs.aws.amazon.com/sagemaker/latest/dg/nbi-metadata.html).
    ("/opt/ml/input/config/resourceconfig.json", "Amazon SageMaker"),
    ("/opt/ml/metadata/resource-metadata.json", "Amazon SageMaker"),
)


def probe_platform(ctx: ProbeContext) -> ManagedPlatform | None:
    """The managed notebook or training platform this runs on (its driver is the platform's), None elsewhere.

    :param ctx: the probe context; under ``--root`` the variables are the ``--env-file``'s.
    """
    for name, platform in _PLATFORM_VARS:
        if ctx.env.get(name):
            return ManagedPlatform(platform, Source(SourceKind.ENV, name))
    for path, platform in _PLATFORM_FILES:
        if ctx.fs.is_file(path):
            return ManagedPlatform(platform, Source(SourceKind.FILE, path))
    return None
