"""Does this driver run CUDA X, and does it know this GPU at all.

A driver runs any application built for CUDA X.y when it is at least the oldest driver of CUDA X's
minor-version compatibility (https://docs.nvidia.com/deploy/cuda-compatibility/, "Minor Version
Compatibility"; the floors are in compat/cuda.toml ``minor_compat``). Above that, a cuda-compat package
whose libcuda the loader picks gives an older kernel driver a newer CUDA ("Forward Compatibility"), but only
on GPUs that support it: data center GPUs, select NGC Server Ready RTX SKUs and Jetson; elsewhere cuInit
fails with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import GpuArch
from cudadoctor.facts.model import DriverVersion
from cudadoctor.rules.verdict import Verdict, cannot_judge, fails, fits

__all__ = [
    "FORWARD_COMPAT_SEGMENTS",
    "ForwardCompat",
    "driver_runs_cuda",
    "driver_supports_gpu",
    "forward_compat_on_gpu",
    "forward_compat_on_gpus",
    "minimum_driver",
]

#: GPU segments (compat/gpus.toml) on which NVIDIA supports forward compatibility; GeForce is not one.
#: Workstation parts are supported only as select NGC Server Ready SKUs, which the data does not tell
#: apart, so a workstation GPU cannot be judged.
FORWARD_COMPAT_SEGMENTS = frozenset({"datacenter", "embedded"})


@dataclass(frozen=True)
class ForwardCompat:
    """A cuda-compat libcuda newer than the kernel module, picked by the loader: the CUDA it provides."""

    cuda: Version
    library: str  #: where that libcuda is


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


def driver_runs_cuda(
    matrix: CompatMatrix,
    cuda_major: int,
    driver: DriverVersion | None,
    *,
    windows: bool = False,
    forward: ForwardCompat | None = None,
    gpus: Sequence[tuple[str, str | None]] = (),
) -> Verdict[DriverVersion]:
    """Does this driver run applications built for CUDA ``cuda_major``.x?

    ``forward`` is the cuda-compat libcuda the loader picks on this host (None: there is none, and the
    answer must not count on one); ``gpus`` are ``(name, segment)`` of the GPUs it has to run on. The
    driver's own minor-version compatibility is asked first; forward compatibility then counts for a CUDA
    major up to the compat library's, unless a GPU is known not to support it. A problem carries the
    driver needed (``detail``).
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
    if minimum is None:
        where = "the Windows " if windows and matrix.minor_compat(cuda_major) else "the "
        return through or cannot_judge(rule, f"{where}CUDA {cuda_major}.x driver floor in compat/cuda.toml", observed)
    if driver >= minimum:
        return fits(rule, "minor-version compatibility", minimum)
    return through or fails(rule, observed, f"driver >= {minimum} (any CUDA {cuda_major}.x build)", minimum)


def driver_supports_gpu(
    matrix: CompatMatrix, driver: DriverVersion | None, cc: str | None, gpu: str
) -> Verdict[GpuArch]:
    """Is the driver's branch new enough for the GPU's architecture at all (gpu_archs.toml min_driver_branch)?"""
    rule = "driver-too-old-for-gpu"
    arch = matrix.gpu_archs.get((cc or "").rstrip("af"))
    if arch is None:
        return cannot_judge(rule, f"the architecture of compute capability {cc} in compat/gpu_archs.toml", gpu)
    if arch.min_driver_branch is None:
        return cannot_judge(rule, f"the oldest driver branch for {arch.name} in compat/gpu_archs.toml", gpu, arch)
    if driver is None:
        return cannot_judge(rule, "the driver version", gpu, arch)
    if driver.major < arch.min_driver_branch:
        observed = f"driver {driver}; {gpu} ({arch.name})"
        return fails(rule, observed, f"driver branch R{arch.min_driver_branch} or newer", arch)
    return fits(rule, f"R{driver.major} is at least R{arch.min_driver_branch}", arch)
