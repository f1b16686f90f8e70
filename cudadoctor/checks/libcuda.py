"""CD1xx: the libcuda the loader picks: the user-space driver, cuda-compat copies and the toolkit's stub."""

# CD1xx: driver and GPUs
#   CD101  the user-space driver matches the kernel module
#   CD102  no cuda-compat libcuda older than the kernel module on the search path
#   CD103  the loader does not pick the toolkit's stub libcuda
#   CD105  forward compatibility only on GPUs that support it

from __future__ import annotations

import posixpath
import re

from cudadoctor.bounded import version_or_none
from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.checks.hostfix import driver_fixed_by, is_image, mismatch_remediation
from cudadoctor.facts.derive import (
    host_driver_version,
    ld_library_path,
    loaded_libcuda,
    picked_libcuda,
)
from cudadoctor.facts.model import (
    DriverInfo,
    DriverVersion,
    GpuInfo,
    HostInfo,
    LibcudaFile,
    ManagedPlatform,
    RootKind,
)
from cudadoctor.gpu_models import gpu_segments
from cudadoctor.rules.driver import (
    forward_compat_on_gpu,
    forward_compat_on_gpus,
)

__all__ = ["CD101", "CD102", "CD103", "CD105"]


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
