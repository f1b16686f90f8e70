"""Does this driver run CUDA X, and does it know this GPU at all.

A driver runs any application built for CUDA X.y when it is at least the oldest driver of CUDA X's
minor-version compatibility (https://docs.nvidia.com/deploy/cuda-compatibility/, "Minor Version
Compatibility"; the floors are in compat/cuda.toml ``minor_compat``). Above that, a cuda-compat package
whose libcuda the loader picks gives an older kernel driver a newer CUDA ("Forward Compatibility"), but only
on GPUs that support it: data center GPUs, select NGC Server Ready RTX SKUs and Jetson; elsewhere cuInit
fails with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804).

Which CUDA version a driver gives applications (:func:`effective_cuda`, with the forward compatibility in effect,
:func:`forward_compat`) is computed here once: the checks are given it as the derived fact ``driver_cuda`` and
``suggest`` plans with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import GpuArch
from cudadoctor.facts.derive import loaded_libcuda
from cudadoctor.facts.model import DriverInfo, DriverVersion
from cudadoctor.record import record
from cudadoctor.rules.archs import parse_cc
from cudadoctor.rules.verdict import Verdict, cannot_judge, fails, fits

__all__ = [
    "FORWARD_COMPAT_SEGMENTS",
    "ForwardCompat",
    "driver_runs_cuda",
    "driver_supports_gpu",
    "effective_cuda",
    "forward_compat",
    "forward_compat_on_gpu",
    "forward_compat_on_gpus",
    "minimum_driver",
]

#: GPU segments (compat/gpus.toml) on which NVIDIA supports forward compatibility; GeForce is not one.
#: Workstation parts are supported only as select NGC Server Ready SKUs, which the data does not tell
#: apart, so a workstation GPU cannot be judged.
FORWARD_COMPAT_SEGMENTS = frozenset({"datacenter", "embedded"})

#: Minor-version compatibility starts with CUDA 11 (https://docs.nvidia.com/deploy/cuda-compatibility/);
#: older majors need the driver of their own release (the release notes' Table 3).
_FIRST_MINOR_COMPAT_MAJOR = 11


@record
class ForwardCompat:
    """A cuda-compat libcuda newer than the kernel module, picked by the loader: the CUDA it provides."""

    cuda: Version
    library: str  #: where that libcuda is


def forward_compat(driver: DriverInfo) -> ForwardCompat | None:
    """The forward compatibility in effect: a cuda-compat libcuda newer than the kernel module, picked by
    the loader, and the CUDA version it reports (cuDriverGetVersion through it); None when there is none.

    NVIDIA CUDA Compatibility guide, "Forward Compatibility":
    https://docs.nvidia.com/deploy/cuda-compatibility/
    """
    loaded = loaded_libcuda(driver)
    kernel = driver.kernel_module.version if driver.kernel_module else driver.version
    if loaded is None or loaded.kind != "compat" or not loaded.version or not kernel or loaded.version <= kernel:
        return None
    cuda = next((r.cuda_api for r in driver.readings if r.source.where == "cuDriverGetVersion" and r.cuda_api), None)
    return ForwardCompat(cuda, loaded.path) if cuda is not None else None


def effective_cuda(driver: DriverInfo, matrix: CompatMatrix) -> tuple[Version | None, str]:
    """The CUDA version CUDA applications get from this driver, and why.

    Under forward compatibility (:func:`forward_compat`) applications get the compat library's CUDA
    version. Otherwise it is the driver's own (NVML, cuDriverGetVersion), or for an assumed driver the one
    the release notes' driver table gives.
    """
    forward = forward_compat(driver)
    if forward is not None:
        return forward.cuda, f"forward compatibility through {forward.library}"
    if driver.cuda_api is not None:
        return driver.cuda_api, "reported by the driver"
    if driver.version is not None:
        derived = matrix.cuda_for_driver(driver.version)
        if derived is not None:
            return derived, "the CUDA release notes' driver table"
    return None, "unknown"


def forward_compat_on_gpu(name: str, segment: str | None) -> Verdict[None]:
    """Does NVIDIA support forward compatibility on this GPU (by its segment in compat/gpus.toml)?"""
    if segment == "geforce":
        return fails("forward-compat-gpu", f"{name} (GeForce)", "a data center GPU, an NGC Server Ready RTX or Jetson")
    if segment in FORWARD_COMPAT_SEGMENTS:
        return fits("forward-compat-gpu", f"{name} is a {segment} GPU")
    if segment is None:
        return cannot_judge("forward-compat-gpu", f"the model of {name} in compat/gpus.toml", name)
    return cannot_judge("forward-compat-gpu", f"whether {name} is an NGC Server Ready SKU", name)


def forward_compat_on_gpus(gpus: Sequence[tuple[str, str | None]]) -> Verdict[None]:
    """Forward compatibility on every GPU of ``(name, segment)``: the first problem, else the first unknown."""
    verdicts = [forward_compat_on_gpu(name, segment) for name, segment in gpus]
    if not verdicts:
        return cannot_judge("forward-compat-gpu", "the GPUs")
    return next((v for v in verdicts if v.is_problem), next((v for v in verdicts if v.is_unknown), verdicts[0]))


def minimum_driver(matrix: CompatMatrix, cuda_major: int, *, windows: bool = False) -> DriverVersion | None:
    """The oldest driver that runs any CUDA ``cuda_major``.x application (minor-version compatibility)."""
    floor = matrix.minor_compat(cuda_major)
    if floor is None:
        return None
    return floor.min_driver_windows if windows else floor.min_driver_linux


def release_floor(
    matrix: CompatMatrix, cuda_major: int, cuda_minor: int | None, *, windows: bool = False
) -> DriverVersion | None:
    """The oldest driver of the release notes' table (Table 3) for CUDA ``cuda_major``.``cuda_minor``.

    Before CUDA 11 there is no minor-version compatibility: each release needs its own driver. With the
    minor unknown this is the lowest floor of the major (a bound: any build of the major needs at least it).
    """
    floors = [
        r.min_driver_windows if windows else r.min_driver_linux
        for r in matrix.cuda_releases
        if r.version.major == cuda_major and (cuda_minor is None or r.version.minor == cuda_minor)
    ]
    known = [f for f in floors if f is not None]
    return min(known) if known else None


def _before_minor_compat(
    matrix: CompatMatrix, cuda_major: int, cuda_minor: int | None, driver: DriverVersion, windows: bool
) -> Verdict[DriverVersion]:
    """A CUDA major without minor-version compatibility in the data: the release's own floor decides."""
    rule = "driver-floor"
    observed = f"driver {driver}"
    floor = release_floor(matrix, cuda_major, cuda_minor, windows=windows)
    name = f"CUDA {cuda_major}.{cuda_minor}" if cuda_minor is not None else f"CUDA {cuda_major}.x"
    if floor is None:
        return cannot_judge(rule, f"the {name} driver floor in compat/cuda.toml", observed)
    if driver < floor:
        return fails(rule, observed, f"driver >= {floor} ({name}, the release notes' driver table)", floor)
    if cuda_minor is None:
        return cannot_judge(rule, f"the CUDA {cuda_major} minor the build was made with", observed, floor)
    return fits(rule, f"{name} needs driver >= {floor} (the release notes' driver table)", floor)


def driver_runs_cuda(
    matrix: CompatMatrix,
    cuda_major: int,
    driver: DriverVersion | None,
    *,
    windows: bool = False,
    forward: ForwardCompat | None = None,
    gpus: Sequence[tuple[str, str | None]] = (),
    cuda_minor: int | None = None,
) -> Verdict[DriverVersion]:
    """Does this driver run applications built for CUDA ``cuda_major``.x?

    ``forward`` is the cuda-compat libcuda the loader picks on this host (None: there is none, and the
    answer must not count on one); ``gpus`` are ``(name, segment)`` of the GPUs it has to run on. The
    driver's own minor-version compatibility is asked first; forward compatibility then counts for a CUDA
    major up to the compat library's, unless a GPU is known not to support it. A problem carries the
    driver needed (``detail``). A CUDA major older than minor-version compatibility (before 11) is judged
    by its release's own floor (``cuda_minor``, when known).
    """
    rule = "driver-floor"
    usable = forward is not None and forward.cuda.major >= cuda_major and not forward_compat_on_gpus(gpus).is_problem
    through: Verdict[DriverVersion] | None = (
        fits(rule, f"forward compatibility through {forward.library}") if forward and usable else None
    )
    if driver is None:
        return through or cannot_judge(rule, "the driver version")
    observed = f"driver {driver}"
    minimum = minimum_driver(matrix, cuda_major, windows=windows)
    if minimum is None and matrix.minor_compat(cuda_major) is None and cuda_major < _FIRST_MINOR_COMPAT_MAJOR:
        return through or _before_minor_compat(matrix, cuda_major, cuda_minor, driver, windows)
    if minimum is None:
        where = "the Windows " if windows and matrix.minor_compat(cuda_major) else "the "
        return through or cannot_judge(rule, f"{where}CUDA {cuda_major}.x driver floor in compat/cuda.toml", observed)
    if driver >= minimum:
        return fits(rule, "minor-version compatibility", minimum)
    return through or fails(rule, observed, f"driver >= {minimum} (any CUDA {cuda_major}.x build)", minimum)


def linux_branches(matrix: CompatMatrix) -> frozenset[int]:
    """Linux driver branches the data knows: the majors of the release notes' Linux drivers and the branches
    of the forward-compatibility table. A Linux driver's major is its branch; a Windows driver's is not
    (581.xx belongs to R580), and neither is a major the data has never seen."""
    majors = {r.min_driver_linux.major for r in matrix.cuda_releases if r.min_driver_linux is not None}
    general = matrix.forward_compat
    return frozenset(majors | set(general.supported_driver_branches if general else ()))


def _newer_arch_floor(matrix: CompatMatrix, arch: GpuArch) -> GpuArch | None:
    """The architecture newer than ``arch`` (higher compute capability) with the oldest known driver floor."""
    have = parse_cc(arch.compute_capability)
    newer = [
        a
        for a in matrix.gpu_archs.values()
        if a.min_driver_branch is not None and (p := parse_cc(a.compute_capability)) and have and p > have
    ]
    return min(newer, key=lambda a: a.min_driver_branch or 0, default=None)


def driver_supports_gpu(
    matrix: CompatMatrix, driver: DriverVersion | None, cc: str | None, gpu: str, *, windows: bool = False
) -> Verdict[GpuArch]:
    """Does the driver's branch support the GPU's architecture at all?

    Too old: below gpu_archs.toml ``min_driver_branch``. Too new: past ``last_driver_branch`` (a legacy
    architecture the newer branches dropped; judged on Linux only, where a driver's major is its branch —
    Windows numbers a branch's drivers past it, 581.xx is R580). Without a floor for the architecture, a
    driver at least as new as the floor of a newer architecture supports it (*inferred*: a branch keeps
    the older architectures it has not dropped).
    """
    rule = "driver-too-old-for-gpu"
    arch = matrix.gpu_archs.get((cc or "").rstrip("af"))
    if arch is None:
        return cannot_judge(rule, f"the architecture of compute capability {cc} in compat/gpu_archs.toml", gpu)
    if driver is None:
        return cannot_judge(rule, "the driver version", gpu, arch)
    observed = f"driver {driver}; {gpu} ({arch.name})"
    last = arch.last_driver_branch
    if last is not None and driver.major > last:
        if windows or driver.major not in linux_branches(matrix):
            return cannot_judge(
                rule, f"whether driver {driver} is of a branch after R{last}, the last for {arch.name}", gpu, arch
            )
        return fails("driver-dropped-gpu", observed, f"driver branch R{last} or older (the last for {arch.name})", arch)
    if arch.min_driver_branch is not None:
        if driver.major < arch.min_driver_branch:
            return fails(rule, observed, f"driver branch R{arch.min_driver_branch} or newer", arch)
        return fits(rule, f"R{driver.major} is at least R{arch.min_driver_branch}", arch)
    newer = _newer_arch_floor(matrix, arch)
    if newer is not None and newer.min_driver_branch is not None and driver.major >= newer.min_driver_branch:
        why = (
            f"R{driver.major} supports {newer.name} (compute capability {newer.compute_capability}, R"
            f"{newer.min_driver_branch}+), which is newer than {arch.name}"
        )
        return fits(rule, why, arch, inferred=why)
    return cannot_judge(rule, f"the oldest driver branch for {arch.name} in compat/gpu_archs.toml", gpu, arch)
