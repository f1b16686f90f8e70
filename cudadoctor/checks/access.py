"""CD12x: whether the GPUs reach the process: a container's device passthrough, MIG devices.

Telling a container started without its GPUs from a ``docker build`` stage: both see the host's
``/proc/driver/nvidia`` (procfs is the host kernel's) and neither has ``/dev/nvidia*`` nor an injected
libcuda, so no file tells them apart (the build stage has no GPU by design). What differs is the marker:
BuildKit, Docker's default builder since Engine 23.0, creates no ``/.dockerenv`` in RUN steps
(https://github.com/moby/buildkit/issues/4503, https://github.com/docker/buildx/issues/1447), so such a
stage is not recognised as a container and CD120 does not apply. For the classic builder, buildah or kaniko,
set ``CUDADOCTOR_BUILD_STAGE=1`` on the RUN line (``RUN CUDADOCTOR_BUILD_STAGE=1 cudadoctor check``; not as
an ``ENV``, which the image would keep at run time).

A root (``--root``) is judged only when it is a running container's: a container marker (``/.dockerenv``, …) and
a live ``/dev`` (``/dev/null`` a character device, as the runtime creates it in every container: the OCI runtime
spec's default devices, https://github.com/opencontainers/runtime-spec/blob/main/config-linux.md), such as
``/proc/<pid>/root`` of the container seen from the host; the host's driver is its kernel module in that root's
/proc or the one ``--assume-driver`` gives. An exported image or a copy has no device in ``/dev`` and describes no
running container: not judged.
"""

# CD1xx: driver and GPUs
#   CD120  a container that has a GPU framework was started with its GPUs (device nodes and libcuda)

from __future__ import annotations

import re

from cudadoctor.checks._base import Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation
from cudadoctor.checks.hostfix import assumed_driver
from cudadoctor.facts.model import (
    DriverInfo,
    HostInfo,
    InstalledPackage,
    NvidiaModuleState,
    ToolkitInstall,
    VisibleDevices,
)

__all__ = ["BUILD_STAGE_VAR", "CD120", "IMAGE_ROOT", "gpu_consumers"]

#: Set on a build step's command line to say "this is an image build, no GPU is expected".
BUILD_STAGE_VAR = "CUDADOCTOR_BUILD_STAGE"

#: Packages that exist to use an NVIDIA GPU even when their metadata names no CUDA build.
_GPU_PACKAGES = ("tensorflow-gpu", "onnxruntime-gpu", "ctranslate2", "paddlepaddle-gpu", "llama-cpp-python")


def gpu_consumers(packages: dict[str, InstalledPackage], toolkits: tuple[ToolkitInstall, ...]) -> list[str]:
    """What in this environment wants a GPU: CUDA builds of frameworks, GPU packages, a CUDA toolkit."""
    found = [
        f"{p.name} {p.version} ({p.cuda_variant})"
        for p in packages.values()
        if p.cuda_build and not p.name.startswith(("nvidia-", "cuda-"))
    ]
    found += [f"{name} {packages[name].version}" for name in _GPU_PACKAGES if name in packages]
    found += [f"CUDA toolkit {t.version or '?'} at {t.root}" for t in toolkits]
    return found


def _gpu_nodes(visible: VisibleDevices) -> list[str]:
    return [n for n in visible.device_nodes if re.fullmatch(r"/dev/nvidia\d+", n)]


#: The marker :mod:`cudadoctor.probes.host` gives every ``--root`` (its ``_container``): not itself a sign of a
#: container. tests/corpus/test_root_replay.py keeps the two spellings equal.
IMAGE_ROOT = "image root"


def _host_driver(driver: DriverInfo, *, live: bool) -> tuple[str, str] | None:
    """(evidence key, the host's driver in words): its kernel module in /proc, or (under --root only) the one
    --assume-driver gives.

    Live, an assumed driver is no sign of a host driver: ``--assume-driver`` in a build stage describes the host the
    image will run on, not a container that was started.
    """
    if driver.kernel_module is not None:
        return "kernel module", f"{driver.kernel_module.version} ({driver.kernel_module.source.where})"
    assumed = assumed_driver(driver)
    if assumed is None or live:
        return None
    return "host driver (assumed)", f"{assumed.version} ({assumed.source.where})"


def _launch_fix(host: HostInfo) -> tuple[str, tuple[str, ...]]:
    runtime = host.container.runtime if host.container else None
    if runtime == "kubernetes":
        return (
            "Request the GPUs in the pod spec (resources.limits nvidia.com/gpu: 1) so the NVIDIA device plugin "
            "injects them; a pod on a GPU node without the limit gets none.",
            ('kubectl patch deployment <name> --type=json -p \'[{"op":"add","path":"/spec/template/spec/'
             'containers/0/resources/limits/nvidia.com~1gpu","value":"1"}]\'',),
        )  # fmt: skip
    return (
        "Start the container with its GPUs: `docker run --gpus all` (Docker 19.03+ with the NVIDIA Container "
        "Toolkit), `--runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=all` where the NVIDIA runtime is configured "
        "(Unraid, older nvidia-docker2), or a `deploy.resources.reservations.devices` entry in compose.",
        ("docker run --gpus all <image> ...",),
    )


def _running_container(host: HostInfo, visible: VisibleDevices, env: dict[str, str], mode: str) -> list[str]:
    """The markers of the running container CD120 judges; NotApplicable for anything else (no container, WSL, a
    build stage, an image root whose /dev holds no device)."""
    markers = [m for m in (host.container.markers if host.container else ()) if m != IMAGE_ROOT]
    if host.container is None or not host.container.in_container or not markers or host.wsl:
        raise NotApplicable("not in a container")
    if env.get(BUILD_STAGE_VAR):
        raise NotApplicable(f"an image build stage ({BUILD_STAGE_VAR} is set): no GPU is expected")
    if mode != "live" and not visible.live_dev:
        raise NotApplicable(
            "the root's /dev holds no device (/dev/null): an image or a copy, not a running container's root "
            "(/proc/<pid>/root), so it cannot show whether the container got its GPUs"
        )
    return markers


def _host_driver_shown(
    driver: DriverInfo | None, nvidia_module: NvidiaModuleState | None, *, live: bool
) -> tuple[str, str]:
    """(where, what) of the host's NVIDIA driver as the container sees it; NotApplicable when it shows nowhere."""
    host_driver = _host_driver(driver, live=live) if driver is not None else None
    if host_driver is None and live and nvidia_module is not None and nvidia_module.nvidia_loaded:
        # /sys/module is the host kernel's in any container, also where /proc/driver/nvidia is masked
        host_driver = ("kernel module", "nvidia loaded (/sys/module/nvidia)")
    if host_driver is None:
        raise NotApplicable(
            "the host's NVIDIA kernel module does not show in /proc/driver/nvidia or /sys/module (CD136 says "
            "when the PCI bus shows a GPU it is missing for)"
            + ("" if live else " (under --root, --assume-driver gives the host's driver)")
        )
    return host_driver


def _no_compute_capability(evidence: dict[str, str], env: dict[str, str]) -> Problem:
    """The devices are there but libcuda is not: the runtime was not asked for the compute capability."""
    evidence["NVIDIA_DRIVER_CAPABILITIES"] = env.get(
        "NVIDIA_DRIVER_CAPABILITIES", "(unset: the toolkit's default is utility only)"
    )
    return Problem(
        "the container has the GPU devices but no user-space driver (libcuda): NVIDIA_DRIVER_CAPABILITIES "
        "does not include compute, so CUDA finds no driver",
        evidence,
        Remediation(
            "Start the container with NVIDIA_DRIVER_CAPABILITIES=compute,utility (and NVIDIA_VISIBLE_DEVICES=all).",
            ("docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility <image> ...",),
        ),
    )


class CD120(Check):
    """A container with a GPU framework was started with its GPUs.

    What it checks: in a running container (not an image, not a build stage; under --root the root of a running
    container, with the host's driver from --assume-driver when its /proc does not show it) where a CUDA framework,
    GPU package or CUDA toolkit is installed and the host's NVIDIA kernel module shows in
    /proc/driver/nvidia (or, live, /sys/module/nvidia; when it shows nowhere, CD136 speaks): whether the GPU
    device nodes (/dev/nvidia0 …) are there, and whether the user-space driver (libcuda) was injected.

    Why it matters: `docker run` without `--gpus` (or the NVIDIA runtime, or a pod without an
    nvidia.com/gpu limit) gives the container no device nodes and no driver libraries: torch reports
    "Found no NVIDIA driver", TensorFlow "The NVIDIA Driver was not detected", CUDA "driver version is
    insufficient". With the devices but NVIDIA_DRIVER_CAPABILITIES lacking `compute`, libcuda is not
    injected and CUDA finds no driver either.

    How to fix: start the container with `--gpus all` (or `--runtime=nvidia`, or the pod's
    nvidia.com/gpu limit), and NVIDIA_DRIVER_CAPABILITIES=compute,utility. In a `docker build` stage
    no GPU is expected: BuildKit stages are not flagged; elsewhere run `CUDADOCTOR_BUILD_STAGE=1 cudadoctor check`.
    """

    name = "container-has-its-gpus"
    category = "gpus"

    def check(
        self,
        host: HostInfo,
        visible: VisibleDevices,
        env: dict[str, str],
        packages: dict[str, InstalledPackage],
        toolkits: tuple[ToolkitInstall, ...] = (),
        mode: str = "live",
        nvidia_module: NvidiaModuleState | None = None,
        # optional: a container started without --gpus has no trace of a driver but the host's module in /sys
        driver: DriverInfo | None = None,
    ) -> Problem | None:
        markers = _running_container(host, visible, env, mode)
        host_driver = _host_driver_shown(driver, nvidia_module, live=mode == "live")
        wanting = gpu_consumers(packages, toolkits)
        if not wanting:
            raise NotApplicable("nothing in this container uses an NVIDIA GPU")
        nodes = _gpu_nodes(visible)
        libcuda = [f.path for f in (driver.libcuda_files if driver else ()) if f.kind == "driver"]
        if nodes and (libcuda or (driver is not None and driver.loaded_libcuda)):
            return None
        evidence = {
            host_driver[0]: host_driver[1],
            "GPU device nodes": ", ".join(nodes) or "none (/dev/nvidia0 … missing)",
            "user-space driver": ", ".join(libcuda) or "no libcuda.so.<driver> injected",
            "uses the GPU": "; ".join(wanting[:3]),
            "container": ", ".join(markers),
        }
        if nodes:
            return _no_compute_capability(evidence, env)
        text, commands = _launch_fix(host)
        return Problem(
            "the container was started without its GPUs: the host's NVIDIA driver shows in /proc but there are no "
            "/dev/nvidia* device nodes and no injected libcuda, so CUDA sees no GPU",
            evidence,
            Remediation(text, commands),
        )
