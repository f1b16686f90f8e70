"""CD1xx: the driver, the libcuda the loader picks, and the GPUs a process can see."""

# CD1xx: driver and GPUs
#   CD101  the user-space driver matches the kernel module
#   CD102  no cuda-compat libcuda older than the kernel module on the search path
#   CD103  the loader does not pick the toolkit's stub libcuda
#   CD104  CUDA_VISIBLE_DEVICES leaves at least one GPU visible
#   CD105  forward compatibility only on GPUs that support it
#   CD111  the driver can run the CUDA major the frameworks were built for
#   CD112  every GPU is still supported by that CUDA major
#   CD113  the installed torch build has GPU code for every GPU (its published arch list)
#   CD114  the driver is new enough for every GPU's architecture

from __future__ import annotations

import dataclasses
import posixpath
import re

from packaging.version import Version

from cudadoctor.bounded import version_or_none
from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.derived import with_data_builds
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.checks.hostfix import SUGGEST_TARGETS, driver_fixed_by, is_image, mismatch_remediation
from cudadoctor.checks.presence import gpus_to_judge
from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import GpuArch
from cudadoctor.facts.derive import (
    GpuEvidence,
    frameworks_by_cuda_major,
    host_driver_version,
    ld_library_path,
    loaded_libcuda,
    picked_libcuda,
)
from cudadoctor.facts.model import (
    DriverInfo,
    DriverVersion,
    Facts,
    GpuInfo,
    HostInfo,
    InstalledPackage,
    LibcudaFile,
    ManagedPlatform,
    RootKind,
    VisibleDevices,
)
from cudadoctor.fixes import Install, Pin
from cudadoctor.fixes.build import pip
from cudadoctor.gpu_models import gpu_segments
from cudadoctor.rules.archs import build_covers_gpu
from cudadoctor.rules.driver import (
    ForwardCompat,
    driver_runs_cuda,
    driver_supports_gpu,
    effective_cuda,
    forward_compat,
    forward_compat_on_gpu,
    forward_compat_on_gpus,
)
from cudadoctor.rules.gpus import cuda_knows_arch, cuda_major_supports_arch
from cudadoctor.rules.scheduler import Scheduler, scheduler_fix
from cudadoctor.rules.verdict import Verdict, cannot_judge

__all__ = [
    "CD101",
    "CD102",
    "CD103",
    "CD104",
    "CD111",
    "CD112",
    "CD113",
    "CD114",
    "effective_cuda",
    "forward_compat",
    "gpu_segments",
    "parse_visible_devices",
]


def _ld_library_path(host: HostInfo) -> tuple[str, ...]:
    return ld_library_path(host) or ()


def _without_dirs(host: HostInfo, drop: set[str]) -> str | None:
    """LD_LIBRARY_PATH with the given directories removed, or None when it is not set."""
    if not any(v.name == "LD_LIBRARY_PATH" for v in host.env):
        return None
    return ":".join(p for p in _ld_library_path(host) if posixpath.normpath(p) not in drop)


def _unset_or_export(host: HostInfo, drop: set[str]) -> tuple[str, ...]:
    new = _without_dirs(host, drop)
    if new is None:
        return ()
    return (f"export LD_LIBRARY_PATH={new}",) if new else ("unset LD_LIBRARY_PATH",)


#: Where the NVIDIA runtime of GKE-style hosts mounts the host's driver: copies there are the host's own.
_HOST_MOUNTED_DIRS = ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib")


def _host_driver(driver: DriverInfo) -> tuple[DriverVersion | None, str]:
    """The driver version the kernel runs: the module's (/proc/driver/nvidia/version), else --assume-driver."""
    if driver.kernel_module is not None and driver.kernel_module.version is not None:
        return driver.kernel_module.version, "kernel module (/proc/driver/nvidia/version)"
    assumed = next((r.version for r in driver.readings if r.source.kind.value == "assumed"), None)
    return assumed, "host driver (--assume-driver)"


def _driver_files(driver: DriverInfo) -> list[LibcudaFile]:
    """Versioned driver libcuda files (libcuda.so.<version>) on the loader's path, not the host's mount."""
    return [
        f
        for f in driver.libcuda_files
        if f.kind == "driver"
        and f.on_search_path
        and f.version is not None
        and posixpath.dirname(f.path) not in _HOST_MOUNTED_DIRS
    ]


def _files_against_host(driver: DriverInfo, root_kind: RootKind | None, distro: str | None = None) -> Problem | None:
    """libcuda.so.<X> files on the loader path against the host's driver Y (an image, or no NVML).

    The NVIDIA Container Toolkit mounts the host's libcuda.so.<Y> into a container and runs ldconfig
    (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/); a driver copy baked into the
    image stays beside it, and ldconfig links libcuda.so.1 to the newer name, so a baked copy newer than the
    host's wins: "Failed to initialize NVML: Driver/library version mismatch"
    (https://github.com/NVIDIA/nvidia-docker/issues/1488, https://github.com/k4yt3x/video2x/issues/1226).
    On a host the same files are its own driver, newer than the module until a reboot.
    """
    files = _driver_files(driver)
    if not files:
        raise NotApplicable("no versioned driver library (libcuda.so.<version>) on the loader's path")
    host, where = _host_driver(driver)
    if host is None:
        raise CannotJudge(f"libcuda.so.{files[0].version} is on the loader's path but the host's driver is unknown "
                          "(pass --assume-driver)")  # fmt: skip
    differing = [f for f in files if f.version != host]
    if not differing:
        return None
    newer = [f for f in differing if f.version is not None and f.version > host]
    shown = newer or differing
    evidence = {where: str(host)} | {f.path: str(f.version) for f in differing} | _root_evidence(root_kind)
    if is_image(root_kind):
        how = (
            "ldconfig links libcuda.so.1 to the newer copy, so CUDA and NVML fail with "
            "'Driver/library version mismatch'"
            if newer
            else "the host's newer copy should win, but mixed driver files break nvidia-smi and NVML"
        )
    else:
        how = "CUDA and NVML fail with 'Driver/library version mismatch' until they match"
    mounted = set(root_kind.mounted_driver_files) if root_kind else set()
    return Problem(
        f"driver library {shown[0].version} ({shown[0].path}) differs from the {where.split(' (')[0]} {host}: {how}",
        evidence,
        mismatch_remediation(
            root_kind, host, [f.version for f in differing if f.version is not None],
            [f.path for f in differing if f.path not in mounted], distro,
        ),
        status=Status.FAIL if newer else Status.WARN,
    )  # fmt: skip


def _root_evidence(root_kind: RootKind | None) -> dict[str, str]:
    """The root's kind and what decided it, for a finding whose fix depends on it."""
    if root_kind is None:
        return {"root": "kind not recorded: taken for a host"}
    decided = str(root_kind.source) if root_kind.source else "no agreeing marker: taken for a host"
    return {"root": f"{root_kind.kind} ({decided})"}


class CD101(Check):
    """The user-space driver libraries match the loaded kernel module.

    What it checks: the kernel module's version (/proc/driver/nvidia/version, /sys/module/nvidia/version)
    against the user-space driver: NVML's driver version and the version in the file name of the
    libcuda the loader picks (when that is a normal driver install, not a cuda-compat copy). Under
    ``--root`` (or with no NVML answer), the versioned libcuda.so.<version> files on the loader's path
    against the kernel module, else the host's ``--assume-driver``: driver libraries baked into an image.

    Why it matters: after a driver upgrade without a reboot, or with two driver installs mixed, the
    user-space library no longer matches the kernel module: nvidia-smi says "Failed to initialize
    NVML: Driver/library version mismatch" and CUDA fails to initialise. An image that ships
    libcuda.so.<X> run on a host with driver Y fails the same way when the baked copy is the newer.

    How to fix: it depends on what the root is (the fact root_kind: its markers, or --root-kind). On a host
    (a machine's own system), after a driver upgrade: reboot, or with nothing using the GPU reload the modules
    (sudo modprobe -r nvidia_uvm nvidia_drm nvidia_modeset nvidia; sudo modprobe nvidia); when the module is
    the newer one, install the user-space driver of the module's version. In a container image, remove the
    baked driver libraries (rm -f … && ldconfig): the NVIDIA runtime mounts the host's, and driver packages
    (libnvidia-*, nvidia-driver-*) do not belong in an image. A driver library is only ever removed where the
    root is known to be an image: with no agreeing markers the host's fix is given, and the finding says so.
    """

    name = "driver-library-matches-kernel-module"
    category = "driver"

    def check(self, driver: DriverInfo, facts, root_kind: RootKind | None = None) -> Problem | None:  # type: ignore[no-untyped-def]
        native = any(r.source.kind.value == "api" for r in driver.readings)
        if facts.mode != "live" or not native:
            problem = _live_mismatch(driver, facts, root_kind) if facts.mode == "live" else None
            return problem or _files_against_host(driver, root_kind, facts.host.distro)
        return _live_mismatch(driver, facts, root_kind)


def _live_mismatch(driver: DriverInfo, facts, root_kind: RootKind | None) -> Problem | None:  # type: ignore[no-untyped-def]
    """The live machine: NVML's answer and the loaded libcuda's name against the kernel module."""
    mismatch_errors = [e.message for e in facts.errors if "version mismatch" in e.message.lower()]
    kernel = driver.kernel_module.version if driver.kernel_module else None
    user: dict[str, str] = {}
    for reading in driver.readings:
        if reading.version is None or reading.source.kind.value not in ("api", "filename"):
            continue
        if reading.source.kind.value == "filename":
            loaded = loaded_libcuda(driver)
            if loaded is None or loaded.kind != "driver" or loaded.path != reading.source.where:
                continue
        user[str(reading.source)] = str(reading.version)
    differing = {k: v for k, v in user.items() if kernel is not None and v != str(kernel)}
    if not differing and not mismatch_errors:
        return None
    evidence = {"kernel module": f"{kernel} (/proc/driver/nvidia/version)" if kernel else "unknown"}
    evidence.update({f"user space, {where}": v for where, v in differing.items()})
    if mismatch_errors:
        evidence["reported"] = mismatch_errors[0]
    evidence |= _root_evidence(root_kind)
    versions = ", ".join(sorted(set(differing.values()))) or "a different version"
    why = (
        "driver libraries in the container differ from the host's module"
        if is_image(root_kind)
        else "the driver was upgraded without a reboot, or two driver installs are mixed"
    )
    mounted = set(root_kind.mounted_driver_files) if root_kind else set()
    # only with the module's version known: a file is "baked" when it differs from it
    baked = [f.path for f in _driver_files(driver) if kernel and f.version != kernel and f.path not in mounted]
    user_versions = [DriverVersion(v) for v in dict.fromkeys(differing.values()) if version_or_none(v) is not None]
    return Problem(
        f"the kernel module is {kernel or 'unknown'} but the user-space driver is {versions}: {why}",
        evidence,
        mismatch_remediation(root_kind, kernel, user_versions, baked, facts.host.distro),
    )


_CONF = ("ld.so.cache", "ld.so.conf")


def _drop_commands(host: HostInfo, drop: set[str], via: str) -> tuple[str, ...]:
    """Commands that take ``drop`` off the loader's path: LD_LIBRARY_PATH, or ld.so.conf and its cache."""
    if via in _CONF:
        # ldconfig rebuilds /etc/ld.so.cache from ld.so.conf (ldconfig(8)).
        edits = " ".join(f"-e '\\#^{d}/*$#d'" for d in sorted(drop))
        return (f"sed -i {edits} /etc/ld.so.conf /etc/ld.so.conf.d/*.conf && ldconfig",)
    return _unset_or_export(host, drop)


class CD102(Check):
    """No cuda-compat libcuda older than the kernel module is on the loader's search path.

    What it checks: libcuda copies from a cuda-compat package (…/cuda-X.Y/compat/) that the loader
    would find through LD_LIBRARY_PATH or ld.so.conf, against the kernel module's version (under
    --root: the host's, from --assume-driver). Which libcuda.so.1 loads is the live answer where there
    is one, else the loader model's resolution (probes/linkage.py).

    Why it matters: forward compatibility only works when the compat libcuda is newer than the
    kernel module. An older one (e.g. the image's 580.95.05 on a host with 580.159.04) makes cuInit
    fail with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803), while nvidia-smi and NVML look healthy
    (seen on a real H200; the NVIDIA Container Toolkit applies the same newer-than rule).

    How to fix: take the compat directory out of LD_LIBRARY_PATH (or the ld.so.conf.d entry that adds it);
    the host driver already supports this CUDA version.
    """

    name = "compat-libcuda-not-older-than-driver"
    category = "driver"

    def check(self, driver: DriverInfo, host: HostInfo) -> Problem | None:
        on_path = [f for f in driver.libcuda_files if f.kind == "compat" and f.on_search_path]
        kernel = host_driver_version(driver)
        if kernel is None:
            if on_path:
                raise CannotJudge(f"a cuda-compat libcuda ({on_path[0].path}) is on the loader's path but the "
                                  "host's kernel module version is unknown (pass --assume-driver)")  # fmt: skip
            return None
        stale = [f for f in on_path if f.version and f.version <= kernel]
        if not stale:
            return None
        picked = picked_libcuda(driver)
        first = next((f for f in stale if picked and f.path == picked[0].path), stale[0])
        loads = picked is not None and picked[0].path == first.path
        # LD_LIBRARY_PATH may name the directory through a link (/usr/local/cuda/compat for the
        # file's real /usr/local/cuda-13.0/compat), so every */compat entry goes.
        drop = {posixpath.dirname(f.path) for f in stale} | {
            posixpath.normpath(d)
            for d in _ld_library_path(host)
            if posixpath.basename(posixpath.normpath(d)) == "compat"
        }
        via = _resolved_via(driver, first.path)
        evidence = {
            "kernel module": str(kernel),
            "compat libcuda": f"{first.version} at {first.path}",
            "loader picks": f"{picked[0].path} ({picked[1]})" if picked else "unknown",
        }
        how = (
            "the loader picks it first, so cuInit will fail with error 803"
            if loads
            else ("it is on the search path; if it comes first, cuInit fails with error 803")
        )
        return Problem(
            f"cuda-compat libcuda {first.version} is older than the kernel module {kernel}: {how}",
            evidence,
            Remediation(
                "Remove the compat directory from the loader's search path; the installed driver already "
                "provides this CUDA version.",
                _drop_commands(host, drop if via not in _CONF else {posixpath.dirname(first.path)}, via),
            ),
            status=Status.FAIL if loads else Status.WARN,
        )


def _resolved_via(driver: DriverInfo, real: str) -> str:
    """How the loader model reaches ``real`` (``LD_LIBRARY_PATH``, ``ld.so.cache`` …); empty when it does not."""
    return next((h.via for h in driver.resolved_libcuda if h.real == real), "")


class CD103(Check):
    """The loader picks the real libcuda, not the toolkit's link-time stub.

    What it checks: whether the libcuda the loader picks for ``libcuda.so.1`` answers
    CUDA_ERROR_STUB_LIBRARY (34) or lives in a ``stubs`` directory (the live answer first, else the
    loader model), whether ``libcuda.so`` — the name numba, warp and other loaders ``dlopen`` — resolves
    to a stub, and whether a ``stubs`` directory is on LD_LIBRARY_PATH.

    Why it matters: the toolkit's lib64/stubs/libcuda.so only satisfies the linker. Loaded at run
    time it makes every CUDA call fail with "CUDA driver is a stub library" (error 34).

    How to fix: remove the stubs directory from LD_LIBRARY_PATH (or ld.so.conf). Stubs belong in
    LIBRARY_PATH (link time), which is where the nvidia/cuda images put them.
    """

    name = "no-stub-libcuda"
    category = "driver"

    def check(
        self, driver: DriverInfo, host: HostInfo, ld_library_path: tuple[str, ...] | None = None
    ) -> Problem | None:
        ld_path = ld_library_path or ()
        stub_reading = any("STUB_LIBRARY" in (r.detail or "") for r in driver.readings)
        picks = {name: picked_libcuda(driver, name) for name in ("libcuda.so.1", "libcuda.so")}
        stubs = {name: hit for name, hit in picks.items() if hit is not None and hit[0].kind == "stub"}
        stub_dirs = {posixpath.normpath(p) for p in ld_path if re.search(r"/stubs/?$", p)}
        stub_dirs |= {posixpath.dirname(hit[0].path) for hit in stubs.values()}
        if stub_reading and driver.loaded_libcuda:
            stub_dirs.add(posixpath.dirname(driver.loaded_libcuda))
        if not stub_reading and not stub_dirs:
            return None
        evidence = {name: f"{hit[0].path} ({hit[1]})" if hit else "not found" for name, hit in picks.items()}
        evidence["LD_LIBRARY_PATH"] = ":".join(ld_path) or "(unset)"
        if stub_reading or "libcuda.so.1" in stubs:
            message = "the loader picks a stub libcuda for libcuda.so.1: every CUDA call will fail with error 34"
        elif stubs:
            message = ("libcuda.so resolves to the toolkit's stub: programs that dlopen that name (numba, warp, …) "
                       "get CUDA error 34 (CUDA driver is a stub library)")  # fmt: skip
        else:
            dirs = ", ".join(sorted(stub_dirs))
            message = f"a stubs directory is on LD_LIBRARY_PATH ({dirs}); stubs are for linking only"
        via = next((_resolved_via(driver, hit[0].path) for hit in stubs.values()), "LD_LIBRARY_PATH")
        return Problem(
            message,
            evidence,
            Remediation(
                "Remove the stubs directory from the loader's path (keep it in LIBRARY_PATH for linking).",
                _drop_commands(host, stub_dirs, via),
            ),
            status=Status.FAIL if stub_reading or stubs else Status.WARN,
        )


def parse_visible_devices(value: str, count: int) -> list[str] | None:
    """The devices ``CUDA_VISIBLE_DEVICES`` leaves visible, or None when it cannot be told.

    CUDA reads a comma-separated list of indices or UUIDs and stops at the first invalid entry
    (CUDA C++ Programming Guide, "CUDA Environment Variables"). UUIDs (GPU-…, MIG-…) cannot be
    verified here (cudadoctor never keeps them), so a list with one gives None.
    """
    visible: list[str] = []
    indices: set[int] = set()  # a set: duplicates found in linear time (60,000 GPUs took 392 s)
    for raw in value.split(","):
        entry = raw.strip()
        if entry.upper().startswith(("GPU-", "MIG-")):
            return None
        # ASCII digits only (str.isdigit accepts "²", which int refuses); "00" is the same GPU as "0".
        if not re.fullmatch(r"[0-9]{1,9}", entry) or int(entry) >= count or int(entry) in indices:
            break
        visible.append(entry)
        indices.add(int(entry))
    return visible


#: The first torch release whose CUDA_VISIBLE_DEVICES parser accepts GPU UUIDs: torch 1.13 read only
#: ordinals and counted no GPU for ``GPU-<uuid>`` (https://github.com/pytorch/pytorch/issues/90543).
TORCH_PARSES_GPU_UUIDS = Version("2.0")


def _uuid_misread_by_torch(value: str, torch: InstalledPackage | None) -> Problem | None:
    """A warning when torch older than 2.0 reads a CUDA_VISIBLE_DEVICES that lists GPUs by UUID."""
    if torch is None or torch.version.release >= TORCH_PARSES_GPU_UUIDS.release:
        return None
    if not any(entry.strip().upper().startswith("GPU-") for entry in value.split(",")):
        return None
    return Problem(
        f"CUDA_VISIBLE_DEVICES lists GPUs by UUID, which CUDA accepts, but torch {torch.version} counts no GPU "
        "for UUID entries (torch.cuda.device_count() == 0; pytorch#90543, fixed in torch 2.0)",
        {"CUDA_VISIBLE_DEVICES": "GPU-<uuid> entries", "torch": str(torch.version)},
        Remediation(
            "Upgrade torch to 2.0 or newer, or have the scheduler export GPU indices instead of UUIDs.",
            (pip(Install((Pin("torch", ">=2.0"),), upgrade=True)),),
        ),
        status=Status.WARN,
    )


class CD104(Check):
    """CUDA_VISIBLE_DEVICES leaves the GPUs visible that it lists.

    What it checks: the value of CUDA_VISIBLE_DEVICES against the number of GPUs present (from NVML,
    /proc/driver/nvidia/gpus or the /dev/nvidiaN nodes). CUDA reads a comma-separated list of indices,
    GPU-<uuid> or MIG-<uuid> entries and stops at the first invalid one (CUDA C++ Programming Guide,
    "CUDA Environment Variables",
    https://docs.nvidia.com/cuda/cuda-c-programming-guide/#cuda-environment-variables). UUID forms are
    valid; torch older than 2.0 misread GPU UUIDs (pytorch#90543), which is a warning.

    Why it matters: an empty value, -1, or an index beyond the GPUs present hides every GPU: cuInit
    returns CUDA_ERROR_NO_DEVICE (100) and frameworks report "CUDA available: False" while
    nvidia-smi lists the GPUs. An invalid entry after valid ones hides the GPUs listed after it.
    Under Ray, Slurm or Kubernetes the value is the scheduler's answer to what the job requested.

    How to fix: under a scheduler, request the GPUs from it (Ray ``num_gpus=1``, Slurm
    ``--gres=gpu:N``, the pod's ``nvidia.com/gpu`` limit); otherwise unset CUDA_VISIBLE_DEVICES or set it
    to the indices of the GPUs to use.
    """

    name = "visible-devices-not-empty"
    category = "gpus"

    def check(
        self,
        visible: VisibleDevices,
        # gpus first: a GPU probe that crashed makes this "could not judge", not "no GPU" (engine order)
        gpus: tuple[GpuInfo, ...] = (),
        gpu_evidence: GpuEvidence | None = None,
        scheduler: Scheduler | None = None,
        torch: InstalledPackage | None = None,
    ) -> Problem | None:
        value = visible.cuda_visible_devices
        gpu_count = gpu_evidence.count if gpu_evidence is not None else 0
        if gpu_evidence is None or not gpu_count:
            raise NotApplicable(
                "no GPU this process could reach (NVML, nvidia-smi, /proc/driver/nvidia/gpus, /dev/nvidia0..N)"
                + (f"; only {gpu_evidence.strongest()}" if gpu_evidence is not None else "")
            )
        if value is None:
            return None
        shown = parse_visible_devices(value, gpu_count)
        if shown is None:
            return _uuid_misread_by_torch(value, torch)
        listed = [e for e in value.split(",") if e.strip()]
        if shown and len(shown) == len(listed):
            return None
        text, commands = scheduler_fix(scheduler, gpu_count)
        evidence = {
            "CUDA_VISIBLE_DEVICES": repr(value),
            "GPUs present": str(gpu_count),
            "GPUs shown by": gpu_evidence.strongest(),
        }
        if scheduler is not None:
            evidence["scheduler"] = f"{scheduler.name} ({scheduler.evidence})"
        if shown:
            return Problem(
                f"CUDA_VISIBLE_DEVICES={value!r} stops at an entry that is not one of the {gpu_count} GPU(s): "
                f"CUDA sees only {','.join(shown)} and ignores the entries after it",
                evidence,
                Remediation(text, commands),
                status=Status.WARN,
            )
        return Problem(
            f"CUDA_VISIBLE_DEVICES={value!r} hides all {gpu_count} GPU(s): CUDA will report no device (error 100)",
            evidence,
            Remediation(text, commands),
        )


# --- CD11x: the driver and GPUs against what the installed packages were built for -----------------


def _built_for_cuda_release(
    packages: dict[str, InstalledPackage],
) -> dict[tuple[int, int | None], list[InstalledPackage]]:
    """Frameworks by the CUDA they were built for: (major, None) from CUDA 11 on, where minor-version
    compatibility makes the major decide; (major, minor) before, where each release has its own floor."""
    by_release: dict[tuple[int, int | None], list[InstalledPackage]] = {}
    for major, pkgs in frameworks_by_cuda_major(packages).items():
        for pkg in pkgs:
            parts = (pkg.cuda_build or "").split(".")
            minor = int(parts[1]) if major < 11 and len(parts) > 1 and parts[1].isdigit() else None
            by_release.setdefault((major, minor), []).append(pkg)
    return by_release


def _by_release(packages: dict[str, InstalledPackage]) -> list[tuple[tuple[int, int | None], list[InstalledPackage]]]:
    return sorted(
        _built_for_cuda_release(packages).items(), key=lambda i: (i[0][0], -1 if i[0][1] is None else i[0][1])
    )


def _label(pkg: InstalledPackage) -> str:
    version = pkg.torch_build.version if pkg.torch_build and pkg.torch_build.version else pkg.version
    return f"{pkg.name} {version}"


class CD111(Check):
    """The driver can run the CUDA version the installed frameworks were built for.

    What it checks: for every framework built for CUDA (torch, JAX's CUDA plugin, CuPy, TensorFlow,
    TensorRT …), the driver's version against the oldest driver that runs any application of that CUDA
    major (minor-version compatibility, from the CUDA release notes in compat/cuda.toml). A build for
    CUDA 12.8 on a driver that reports 12.4 is fine: within a major, minor-version compatibility applies.

    Why it matters: a driver older than that floor cannot run the build at all: torch reports
    "The NVIDIA driver on your system is too old" and torch.cuda.is_available() is False; other
    frameworks fail with CUDA_ERROR_INSUFFICIENT_DRIVER (35).

    How to fix: upgrade the driver to at least the version named, or install the framework's build for
    a CUDA major this driver supports. On a managed platform (Colab, Kaggle, SageMaker …: the fact platform)
    the driver is the platform's: only the build that fits it is given.
    """

    name = "driver-runs-framework-cuda"
    category = "driver"

    def check(
        self,
        driver: DriverInfo,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        host: HostInfo,
        gpus: tuple[GpuInfo, ...] = (),
        driver_cuda: tuple[Version | None, str] = (None, "unknown"),
        forward: ForwardCompat | None = None,
        facts: Facts | None = None,
        platform: ManagedPlatform | None = None,
    ) -> Problem | None:
        if driver.version is None:
            raise CannotJudge("the driver version is unknown")
        packages = _cuda_frameworks(packages, matrix, host)
        cuda, why = driver_cuda
        # The GPU table is read only where it decides something (the GPU probe reports it when broken).
        segments = gpu_segments(gpus) if forward is not None else ()
        failing: list[str] = []
        failing_names: list[str] = []
        at_fault: list[InstalledPackage] = []
        needed: list[DriverVersion] = []
        unknown: list[str] = []
        evidence = {"driver": f"{driver.version} (CUDA {cuda or 'unknown'}: {why})"}
        for (major, minor), pkgs in _by_release(packages):
            own = driver.cuda_api  # the driver's own CUDA (NVML), not a cuda-compat library's
            if own is not None and all((version_or_none(p.cuda_build or "") or Version("99")) <= own for p in pkgs):
                continue  # the driver's own CUDA covers the build (a CUDA 11.0 build on 450.51, below 11.x's floor)
            verdict = driver_runs_cuda(
                matrix, major, driver.version, windows=host.os == "Windows", forward=forward, gpus=segments,
                cuda_minor=minor,
            )  # fmt: skip
            names = ", ".join(_label(p) for p in pkgs)
            if verdict.is_unknown:
                unknown.append(f"{names} (CUDA {pkgs[0].cuda_build}): {verdict.missing}")
            if not verdict.is_problem or verdict.detail is None:
                continue
            failing.append(f"{names} (built for CUDA {pkgs[0].cuda_build})")
            failing_names += [p.name for p in pkgs]
            at_fault += [p for p in pkgs if p.name == "torch"]
            floor = "minor-version compatibility floor" if minor is None else "the release notes' driver table"
            release = f"CUDA {major}.x" if minor is None else f"CUDA {major}.{minor}"
            evidence[release] = f"needs driver >= {verdict.detail} ({floor})"
            needed.append(verdict.detail)
        if not failing and unknown:
            raise CannotJudge("no driver floor for " + "; ".join(unknown))
        if not failing:
            return None
        if forward is not None and (refused := forward_compat_on_gpus(segments)).is_problem:
            # The compat libcuda is there but the GPUs cannot use it: the driver's own CUDA is what counts.
            evidence["forward compatibility"] = f"{forward.library}: not supported on {refused.observed}"
            cuda = driver.cuda_api or matrix.cuda_for_driver(driver.version, windows=host.os == "Windows")
        return Problem(
            f"driver {driver.version} supports CUDA {cuda or 'unknown'} and is too old for "
            + "; ".join(failing)
            + f": these need driver {max(needed)} or newer",
            evidence,
            _too_old_fix(max(needed), cuda, failing_names, platform, _torch_fix(matrix, facts, at_fault[0] if at_fault
                         else None) + _other_builds(matrix, packages, failing_names, cuda, driver, host, forward)),
        )  # fmt: skip


def _other_builds(
    matrix: CompatMatrix,
    packages: dict[str, InstalledPackage],
    names: list[str],
    cuda: Version | None,
    driver: DriverInfo,
    host: HostInfo,
    forward: ForwardCompat | None,
) -> tuple[str, ...]:
    """The builds of ctranslate2 and CuPy this driver runs, for those among ``names``: ctranslate2's newest release
    built for a CUDA the driver runs (rules/ctranslate2.py), CuPy's package for the driver's CUDA
    (compat/ecosystem.toml), in place of the installed one."""
    from cudadoctor.fixes import Install, Pin
    from cudadoctor.fixes.build import pip, uninstall_then_install
    from cudadoctor.rules.ctranslate2 import ctranslate2_fitting, ctranslate2_pins

    def runs(major: int) -> bool:
        return driver_runs_cuda(matrix, major, driver.version, windows=host.os == "Windows", forward=forward).is_ok

    commands: list[str] = []
    ct2 = packages.get("ctranslate2")
    if ct2 is not None and "ctranslate2" in names:
        pins = ctranslate2_pins(p.requires for p in packages.values())
        fitting = ctranslate2_fitting(matrix, lambda c: runs(c.major), ct2.version, pins)
        if fitting is not None:
            commands.append(pip(Install((Pin.exact("ctranslate2", fitting),))))
    target = matrix.cupy_for_cuda(cuda) if cuda is not None else None
    for name in names:
        if name.startswith("cupy-") and target is not None and target.package != name and runs(target.cuda_major):
            commands.append(pip(uninstall_then_install((name,), Install((Pin(target.package),)))))
    return tuple(dict.fromkeys(commands))


def _cuda_frameworks(
    packages: dict[str, InstalledPackage], matrix: CompatMatrix, host: HostInfo
) -> dict[str, InstalledPackage]:
    """The packages with the CUDA builds compat data knows for them; CannotJudge when a build is no CUDA version,
    NotApplicable when no framework is built for CUDA."""
    packages = with_data_builds(packages, matrix, host.arch)
    garbled = [(p.name, p.cuda_build) for p in packages.values() if p.cuda_build and not version_or_none(p.cuda_build)]
    if garbled:  # a snapshot or version.py may say anything
        raise CannotJudge(f"{garbled[0][0]}'s CUDA build {(garbled[0][1] or '')[:20]!r} is not a CUDA version")
    if not frameworks_by_cuda_major(packages):
        raise NotApplicable("no installed framework is built for CUDA")
    return packages


def _too_old_fix(
    needed: DriverVersion,
    cuda: Version | None,
    names: list[str],
    platform: ManagedPlatform | None,
    torch_fix: tuple[str, ...],
) -> Remediation:
    """Upgrade the driver or take builds for its CUDA (``torch_fix``: the torch build that fits); on a managed
    platform only the builds: torch's, and for the other frameworks the command that plans theirs."""
    # From CUDA 11 on a build runs on any driver of its major (minor-version compatibility); before, only on one
    # at least as new as its own release.
    builds = (
        "the CUDA version your driver supports"
        if cuda is None
        else f"CUDA {cuda.major}.x"
        if cuda.major >= 11
        else f"CUDA {cuda.major}.{cuda.minor} or older"
    )
    if platform is None:
        return Remediation(f"Upgrade the NVIDIA driver to {needed} or newer, or install builds of these packages for "
                           f"{builds}.", torch_fix)  # fmt: skip
    # the suggest targets a printed command already installs a build of (torch's, a CuPy package swap)
    planned = {t for t in ("torch", "cupy") if any(f" {t}==" in c or f" {t}-" in c for c in torch_fix)}
    # A package's suggest target is its own name or the prefix of it (cupy-cuda12x -> cupy, jax-cuda12-plugin -> jax).
    targets = [next((t for t in SUGGEST_TARGETS if n == t or n.startswith(f"{t}-")), None) for n in names]
    plans = torch_fix + tuple(
        f"cudadoctor suggest --target {t}" for t in dict.fromkeys(targets) if t is not None and t not in planned
    )
    return Remediation(
        f"{driver_fixed_by(platform)} Install builds of these packages for {builds}, which this driver runs"
        + (" (the commands below name them)." if plans else "."),
        plans,
    )


class CD112(Check):
    """Every GPU is still supported by the CUDA major the frameworks were built for.

    What it checks: each GPU's compute capability against the last CUDA major that supports its
    architecture (compat/gpu_archs.toml: CUDA 12 dropped Kepler; CUDA 13 dropped Maxwell, Pascal and
    Volta), for every framework built for CUDA.

    Why it matters: a build for a CUDA major that dropped the architecture has no kernels for it:
    "no kernel image is available for execution on the device", or the framework refuses the GPU.

    How to fix: install the framework's build for the last CUDA major that supports the GPU (for torch,
    a cu126 or older build for Maxwell, Pascal and Volta), or use a newer GPU.
    """

    name = "gpu-supported-by-framework-cuda"
    category = "gpus"

    def check(
        self,
        # packages first: a package probe that crashed makes this "could not judge", not "no framework"
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        gpus: tuple[GpuInfo, ...] = (),
        gpu_evidence: GpuEvidence | None = None,
        cuda_builds: dict[int, list[InstalledPackage]] | None = None,
        facts: Facts | None = None,
    ) -> Problem | None:
        builds = cuda_builds or {}
        if not builds:
            raise NotApplicable("no installed framework is built for CUDA")
        gpus = gpus_to_judge(gpus, gpu_evidence)
        problems: list[str] = []
        unknown: list[str] = []
        evidence: dict[str, str] = {}
        last_majors: list[int] = []
        at_fault: list[InstalledPackage] = []
        for gpu in gpus:
            for major, pkgs in sorted(builds.items()):
                verdict = cuda_major_supports_arch(matrix, major, gpu.compute_capability, gpu.name)
                arch = verdict.detail
                if verdict.is_unknown:
                    unknown.append(f"{gpu.name}: {verdict.missing}")
                if not verdict.is_problem or arch is None:
                    continue
                names = ", ".join(_label(p) for p in pkgs)
                at_fault += [p for p in pkgs if p.name == "torch"]
                problems.append(
                    f"{names} is built for CUDA {major}, which dropped compute capability "
                    f"{gpu.compute_capability} ({arch.name}) of GPU {gpu.index} {gpu.name}"
                )
                evidence[f"GPU {gpu.index}"] = f"{gpu.name}, compute capability {gpu.compute_capability}"
                evidence[arch.name] = f"last supported by CUDA {arch.last_cuda_major}.x (compat/gpu_archs.toml)"
                last_majors += [arch.last_cuda_major] if arch.last_cuda_major is not None else []
        if not problems and unknown:
            raise CannotJudge("; ".join(dict.fromkeys(unknown)))
        if not problems:
            return None
        return Problem(
            "; ".join(problems),
            evidence,
            Remediation(
                # the oldest last major: a build for it runs on every GPU named (Kepler's is 11, Maxwell's 12)
                f"Install builds for CUDA {min(last_majors)}.x or older (e.g. torch from a cu{min(last_majors)}x "
                "index).",
                _torch_fix(matrix, facts, at_fault[0] if at_fault else None),
            ),
        )


class CD113(Check):
    """The installed torch build has GPU code for every GPU, and no framework's CUDA predates a GPU.

    What it checks: for torch, the GPU architectures PyTorch compiled the installed release and variant
    for (its published arch list, compat/torch.toml) against each GPU's compute capability, with CUDA's
    binary compatibility rules (a cubin runs on the same major with an equal or newer minor; PTX is
    compiled just in time for newer GPUs); a torch release known only from `cudadoctor update` takes the
    list of the newest earlier release of the same variant (*inferred*). Where no arch list is known
    (older torch releases, CuPy, JAX plugins …), a rule *inferred* from how CUDA works: a build for CUDA X
    cannot hold compiled code for an architecture whose first CUDA (compat/gpu_archs.toml) is newer than
    X — the finding says "inferred". Anything else without an arch list is could not judge;
    `check --deep` asks torch itself (CD805).

    Why it matters: a GPU outside the list gets "no kernel image is available for execution on the
    device" at the first kernel, or torch warns that the GPU "is not compatible with the current PyTorch
    installation".

    How to fix: install a build whose targets cover the GPU (torch: older GPUs cu126; Blackwell cu128 or
    newer). For torch the finding prints the command, by the rules of `cudadoctor suggest --target torch`:
    the installed release's build that fits when there is one (torch 1.10.1 on an RTX 3090:
    torch==1.10.1+cu111 from PyTorch's find-links page), else the nearest release that fits.
    """

    name = "torch-build-covers-gpus"
    category = "gpus"

    def check(
        self,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        host: HostInfo,
        gpus: tuple[GpuInfo, ...] = (),
        gpu_evidence: GpuEvidence | None = None,
        facts: Facts | None = None,
    ) -> Problem | None:
        builds = [p for p in packages.values() if _judged_build(p)]
        if not builds:
            raise NotApplicable("no installed framework is a CUDA build")
        judged = [g for g in gpus_to_judge(gpus, gpu_evidence) if g.compute_capability]
        if not judged:
            raise CannotJudge("the GPUs' compute capabilities are unknown")
        missing: list[str] = []
        problems: list[tuple[InstalledPackage, Verdict[object], GpuInfo]] = []
        for pkg in builds:
            for gpu in judged:
                verdict = _build_verdict(pkg, gpu, matrix, aarch64=host.arch == "aarch64")
                if verdict.is_problem:
                    problems.append((pkg, verdict, gpu))
                elif verdict.is_unknown:
                    missing.append(f"{_label(pkg)} ({pkg.cuda_variant}) on {gpu.name}: {verdict.missing}")
        if not problems:
            if missing:
                raise CannotJudge("; ".join(dict.fromkeys(missing)))
            return None
        torch = next((pkg for pkg, _v, _g in problems if pkg.name == "torch"), None)
        return _no_kernel_problem(problems, _torch_fix(matrix, facts, torch) + _cupy_for_gpus(matrix, problems))


#: Built by PyTorch's release scripts with torch's own TORCH_CUDA_ARCH_LIST: torch's verdict stands for them.
_BUILT_WITH_TORCH = ("torchvision", "torchaudio")


def _judged_build(pkg: InstalledPackage) -> bool:
    """A framework's own CUDA build (torch, CuPy, a JAX plugin …), not one of NVIDIA's library wheels."""
    own = not pkg.name.startswith(("nvidia-", "cuda-")) and pkg.name not in _BUILT_WITH_TORCH
    return bool(pkg.cuda_build) and own


def _build_verdict(pkg: InstalledPackage, gpu: GpuInfo, matrix: CompatMatrix, *, aarch64: bool) -> Verdict[object]:
    """Does this build hold code for the GPU: torch's published arch list (the one of the machine's
    platform: PyTorch's aarch64 wheels have their own), else inferred from its CUDA."""
    cc = gpu.compute_capability or ""
    if pkg.name == "torch" and pkg.cuda_variant:
        version = pkg.torch_build.version if pkg.torch_build and pkg.torch_build.version else pkg.version
        archs, inherited = matrix.torch_arch_list_or_inherited(version, pkg.cuda_variant, aarch64=aarch64)
        if archs is not None and inherited:
            # a release known only from `cudadoctor update`: an earlier release's list, labelled inferred
            verdict = build_covers_gpu(archs, cc, matrix.gpu_archs, gpu.name)
            return dataclasses.replace(verdict, inferred=f"its targets {' '.join(archs)} are {inherited}")
        if archs is not None:
            return build_covers_gpu(archs, cc, matrix.gpu_archs, gpu.name)
    parts = (pkg.cuda_build or "").split(".")
    major_only = len(parts) < 2 or not parts[1].isdigit()
    cuda = version_or_none(f"{parts[0]}.0" if major_only else ".".join(parts[:2]))
    if cuda is None:  # a snapshot or version.py may say anything
        return cannot_judge("gpu-arch-list", f"{pkg.name}'s CUDA build {(pkg.cuda_build or '')[:20]!r}", gpu.name)
    inferred = cuda_knows_arch(matrix, cuda, cc, gpu.name, any_minor=major_only)
    if inferred.is_problem or pkg.name != "torch":
        # Other frameworks publish no arch list: what is claimed for them is that their CUDA is not
        # older than the GPU's architecture.
        return inferred
    return cannot_judge("gpu-arch-list", f"no arch list for {_label(pkg)} {pkg.cuda_variant} in compat data", gpu.name)


def _torch_fix(matrix: CompatMatrix, facts: Facts | None, torch: InstalledPackage | None) -> tuple[str, ...]:
    """The command replacing a torch build that does not fit (suggest's rules, keeping the installed release
    when a build of it fits); nothing when torch is not the package at fault."""
    if torch is None:
        return ()
    from cudadoctor.checks.torchfix import torch_fix_commands

    return torch_fix_commands(matrix, facts, torch)


def _cupy_for_gpus(
    matrix: CompatMatrix, problems: list[tuple[InstalledPackage, Verdict[object], GpuInfo]]
) -> tuple[str, ...]:
    """A per-major CuPy package (compat/ecosystem.toml) of the first CUDA major that supports every GPU named, in
    place of the one whose CUDA predates them: CuPy compiles its kernels at run time with the NVRTC of its CUDA
    (https://docs.cupy.dev/en/stable/install.html), so the package's CUDA major is what must know the GPU."""
    from cudadoctor.fixes import Install, Pin
    from cudadoctor.fixes.build import pip, uninstall_then_install

    commands: list[str] = []
    for pkg in dict.fromkeys(p for p, _v, _g in problems if p.name.startswith("cupy-")):
        firsts = [matrix.first_cuda(g.compute_capability or "") for p, _v, g in problems if p is pkg]
        if any(f is None for f in firsts):
            continue
        need = max(f.major for f in firsts if f is not None)
        targets = sorted((r for r in matrix.cupy_packages if not matrix.cupy_per_minor(r) and r.cuda_major >= need),
                         key=lambda r: r.cuda_major)  # fmt: skip
        if targets and targets[0].package != pkg.name:
            commands.append(pip(uninstall_then_install((pkg.name,), Install((Pin(targets[0].package),)))))
    return tuple(commands)


def _plan_torch(problems: list[tuple[InstalledPackage, Verdict[object], GpuInfo]]) -> tuple[str, ...]:
    """`suggest --target torch` where torch has no command of its own; nothing where the builds are CuPy's (their
    swap is printed instead)."""
    return () if any(p.name.startswith("cupy-") for p, _v, _g in problems) else ("cudadoctor suggest --target torch",)


def _no_kernel_problem(
    problems: list[tuple[InstalledPackage, Verdict[object], GpuInfo]], torch_fix: tuple[str, ...] = ()
) -> Problem:
    parts: list[str] = []
    evidence: dict[str, str] = {}
    for pkg, verdict, gpu in problems:
        who = f"{_label(pkg)} ({pkg.cuda_variant})"
        where = f"GPU {gpu.index} {gpu.name} (compute capability {gpu.compute_capability})"
        if verdict.inferred:
            parts.append(f"{who} has no GPU code for {where}: inferred: {verdict.inferred}")
            basis = "compat/gpu_archs.toml first_cuda" if verdict.rule == "cuda-predates-arch" else "compat/torch.toml"
            evidence[who] = f"inferred: {verdict.inferred} ({basis})"
        else:
            parts.append(
                f"{who} has no GPU code for {where}: its build targets are {verdict.required.removeprefix('one of ')}"
            )
            evidence[who] = f"arch list {verdict.required.removeprefix('one of ')} (compat/torch.toml)"
    return Problem(
        "; ".join(parts) + ': kernels fail with "no kernel image is available for execution on the device"',
        evidence,
        Remediation(
            "Install a build whose GPU targets cover the GPU (for torch, the command from "
            "`cudadoctor suggest --target torch`; older GPUs: cu126, Blackwell: cu128 or newer).",
            torch_fix or _plan_torch(problems),
        ),
    )


class CD114(Check):
    """The driver is new enough to run every GPU's architecture at all.

    What it checks: the driver's branch against the oldest branch that supports each GPU's architecture
    (compat/gpu_archs.toml; for example Blackwell GPUs such as the B200 and the RTX 50 series need R570 or
    newer, whatever the CUDA version), and against the last branch of a legacy architecture (R580 is the
    last for Maxwell, Pascal and Volta; judged on Linux, where the driver's major is its branch). Where the
    data has no minimum for an architecture, a Linux driver supports the GPU when a release of its branch at
    or before it lists the GPU in NVIDIA's open kernel modules README (compat/gpu_devices.toml), or
    (*inferred*) when it is at least as new as a newer architecture's minimum; otherwise the check could not
    judge (not being listed proves nothing: that README is not a complete support list).

    Why it matters: a driver older than the GPU does not know it: the GPU is missing from nvidia-smi or CUDA
    reports no usable device, and no choice of wheel helps.

    How to fix: upgrade the driver to the branch named or newer; for a legacy GPU, install its last
    branch. On a managed platform the driver is the platform's: choose another GPU type there.
    """

    name = "driver-supports-gpu-architecture"
    category = "driver"

    def check(
        self,
        driver: DriverInfo,
        matrix: CompatMatrix,
        host: HostInfo,
        gpus: tuple[GpuInfo, ...] = (),
        gpu_evidence: GpuEvidence | None = None,
        platform: ManagedPlatform | None = None,
    ) -> Problem | None:
        if driver.version is None:
            raise CannotJudge("the driver version is unknown")
        gpus = gpus_to_judge(gpus, gpu_evidence)
        wrong: list[tuple[GpuInfo, Verdict[GpuArch]]] = []
        unknown: list[str] = []
        for gpu in gpus:
            verdict = driver_supports_gpu(
                matrix, driver.version, gpu.compute_capability, gpu.name, windows=host.os == "Windows"
            )
            if verdict.is_problem and verdict.detail is not None:
                wrong.append((gpu, verdict))
            elif verdict.is_unknown:
                unknown.append(f"{gpu.name}: {verdict.missing}")
        if wrong:
            problem = _driver_gpu_problem(driver.version, wrong)
            if platform is None:
                return problem
            return dataclasses.replace(problem, remediation=Remediation(
                f"{driver_fixed_by(platform)} Choose a GPU type there that this driver runs.", ()))  # fmt: skip
        if unknown:
            raise CannotJudge("; ".join(unknown))
        return None


def _driver_gpu_problem(driver: DriverVersion, wrong: list[tuple[GpuInfo, Verdict[GpuArch]]]) -> Problem:
    """A driver too old for a GPU's architecture, or past the last branch that supports it."""
    dropped = [(g, v.detail) for g, v in wrong if v.rule == "driver-dropped-gpu" and v.detail is not None]
    too_old = [(g, v.detail) for g, v in wrong if v.rule != "driver-dropped-gpu" and v.detail is not None]
    if dropped:
        last = min(a.last_driver_branch or 0 for _g, a in dropped)
        return Problem(
            f"driver {driver} is newer than the R{last} branch, the last that supports "
            + ", ".join(
                f"GPU {g.index} {g.name} ({a.name}, compute capability {g.compute_capability})" for g, a in dropped
            )
            + ": this driver does not run it",
            {
                f"GPU {g.index}": f"{g.name}: {a.name} is last supported by driver branch R{a.last_driver_branch}"
                for g, a in dropped
            },
            Remediation(f"Install a driver of the R{last} branch (the legacy branch for these GPUs).", ()),
        )
    needed = max(a.min_driver_branch or 0 for _g, a in too_old)
    return Problem(
        f"driver {driver} is older than the R{needed} branch that "
        + ", ".join(f"GPU {g.index} {g.name} ({a.name}, compute capability {g.compute_capability})" for g, a in too_old)
        + " needs",
        {f"GPU {g.index}": f"{g.name}: {a.name} needs driver branch R{a.min_driver_branch}+" for g, a in too_old},
        Remediation(f"Upgrade the NVIDIA driver to the R{needed} branch or newer.", ()),
    )


class CD105(Check):
    """Forward compatibility (a newer cuda-compat libcuda) is only used on GPUs that support it.

    What it checks: whether the loader picks a cuda-compat libcuda newer than the kernel module (forward
    compatibility) while a GeForce GPU is present (compat/gpus.toml segment).

    Why it matters: NVIDIA supports forward compatibility on data-center GPUs (and select NGC-ready RTX and
    Jetson parts) only; elsewhere cuInit fails with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804).

    How to fix: take the cuda-compat directory off the loader's path and upgrade the driver itself to one
    that supports the CUDA version, or use an image built for the CUDA version the driver supports (on a
    managed platform, whose driver cannot be changed, only the latter).
    """

    name = "forward-compat-on-supported-gpu"
    category = "driver"

    def check(
        self,
        driver: DriverInfo,
        host: HostInfo,
        gpus: tuple[GpuInfo, ...] = (),
        platform: ManagedPlatform | None = None,
    ) -> Problem | None:
        picked = picked_libcuda(driver)
        loaded = picked[0] if picked else None
        kernel = host_driver_version(driver)
        if loaded is None or loaded.kind != "compat":
            return None
        if loaded.version is None or kernel is None:
            missing = (
                "its version is unknown"
                if loaded.version is None
                else "the host's kernel module version is unknown (pass --assume-driver)"
            )
            raise CannotJudge(f"the loader picks a cuda-compat libcuda ({loaded.path}) but {missing}")
        if loaded.version <= kernel:
            return None  # not forward compatibility (CD102 judges an older copy)
        if not gpus:
            raise CannotJudge("forward compatibility is in effect but the GPUs are unknown (pass --assume-gpu)")
        segments = gpu_segments(gpus)
        consumer = [
            g for g, (name, seg) in zip(gpus, segments, strict=True) if forward_compat_on_gpu(name, seg).is_problem
        ]
        if not consumer:
            unknown = forward_compat_on_gpus(segments)
            if unknown.is_unknown:  # a GPU not in compat/gpus.toml, or an RTX that may not be NGC Server Ready
                raise CannotJudge(f"forward compatibility is in effect; not known for {unknown.missing}")
            return None
        via = _resolved_via(driver, loaded.path)
        drop = {posixpath.dirname(loaded.path)} | {
            posixpath.normpath(d)
            for d in _ld_library_path(host)
            if posixpath.basename(posixpath.normpath(d)) == "compat"
        }
        return Problem(
            f"the loader picks cuda-compat libcuda {loaded.version} (forward compatibility over driver {kernel}), "
            f"which GeForce GPUs do not support ({', '.join(g.name for g in consumer)}): cuInit fails with 804",
            {"compat libcuda": loaded.path, "known from": picked[1] if picked else "", "GPU": consumer[0].name},
            Remediation(
                "Remove the compat directory from the loader's path and "
                + (
                    "upgrade the driver instead."
                    if platform is None
                    else f"install builds for the CUDA version the driver supports. {driver_fixed_by(platform)}"
                ),
                _drop_commands(host, drop, via),
            ),
        )
