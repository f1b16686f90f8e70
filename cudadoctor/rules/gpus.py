"""Is a GPU's architecture supported by a CUDA version, and does a GPU meet vLLM's floor.

A CUDA major drops old architectures (CUDA 12 dropped Kepler, CUDA 13 Maxwell, Pascal and Volta), and a
CUDA release older than an architecture cannot hold code for it (compat/gpu_archs.toml ``last_cuda_major``
and ``first_cuda``, from the CUDA release notes:
https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/). Where a build's own GPU target list is known,
that list decides (:func:`cudadoctor.rules.archs.build_covers_gpu`).
"""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import GpuArch
from cudadoctor.rules.archs import build_covers_gpu, parse_cc
from cudadoctor.rules.verdict import Verdict, cannot_judge, fails, fits

__all__ = [
    "build_runs_on_gpu",
    "cuda_knows_arch",
    "cuda_major_supports_arch",
    "first_cuda_of_major",
    "gpu_brands",
    "vllm_supports_gpu",
]


def _arch(matrix: CompatMatrix, cc: str | None) -> GpuArch | None:
    return matrix.gpu_archs.get((cc or "").rstrip("af"))


def cuda_major_supports_arch(matrix: CompatMatrix, cuda_major: int, cc: str | None, gpu: str) -> Verdict[GpuArch]:
    """Does CUDA ``cuda_major`` still support the architecture of compute capability ``cc``?"""
    rule = "cuda-dropped-arch"
    arch = _arch(matrix, cc)
    if arch is None:
        return cannot_judge(rule, f"the architecture of compute capability {cc} in compat/gpu_archs.toml", gpu)
    if arch.last_cuda_major is None:
        return fits(rule, f"no CUDA major has dropped {arch.name}", arch)
    if cuda_major > arch.last_cuda_major:
        observed = f"{gpu}: compute capability {cc} ({arch.name})"
        return fails(rule, observed, f"a build for CUDA {arch.last_cuda_major}.x or older", arch)
    return fits(rule, f"CUDA {arch.last_cuda_major}.x is the last to support {arch.name}", arch)


def first_cuda_of_major(matrix: CompatMatrix, cc: str | None) -> tuple[GpuArch, Version] | None:
    """The oldest architecture record of ``cc``'s major at or below ``cc``, and its first CUDA.

    A build holds SASS for ``sm_XY`` only if its CUDA knows X.Y, and SASS for ``sm_XY`` runs on X.Z with
    Z >= Y (CUDA C++ Programming Guide, "Binary Compatibility"). So the first CUDA that can hold any code
    that runs natively on ``cc`` is the first CUDA of the lowest compute capability of the same major.
    None when the data has no record of that major at or below ``cc`` (or its first CUDA is not known).
    """
    have = parse_cc(cc or "")
    if have is None:
        return None
    same = sorted(
        (p, a) for a in matrix.gpu_archs.values() if (p := parse_cc(a.compute_capability)) and p[0] == have[0]
    )
    below = [a for p, a in same if p <= have and a.renumbered_to is None]
    if not below or below[0].first_cuda is None:
        return None
    return below[0], below[0].first_cuda


def cuda_knows_arch(
    matrix: CompatMatrix, cuda: Version, cc: str | None, gpu: str, *, any_minor: bool = False
) -> Verdict[GpuArch]:
    """Can a build for CUDA ``cuda`` hold compiled code (SASS) that runs on compute capability ``cc``?

    Inferred from how CUDA works: a CUDA release older than every architecture of ``cc``'s major up to
    ``cc`` (compat/gpu_archs.toml ``first_cuda``) cannot compile for any of them, and code for another
    major does not run as SASS. A problem or an answer carries the reason in ``inferred``.
    ``any_minor``: only the build's CUDA major is known (``cupy-cuda11x``): it is judged as its newest minor.
    """
    rule = "cuda-predates-arch"
    arch = _arch(matrix, cc)
    if arch is None:
        return cannot_judge(rule, f"the architecture of compute capability {cc} in compat/gpu_archs.toml", gpu)
    found = first_cuda_of_major(matrix, cc)
    if found is None:
        return cannot_judge(rule, f"the first CUDA that supports {arch.name} in compat/gpu_archs.toml", gpu, arch)
    lowest, first = found
    family = f"compute capability {lowest.compute_capability.split('.')[0]}.x ({arch.name})"
    label = f"{cuda.major}.x" if any_minor else f"{cuda.major}.{cuda.minor}"
    if (cuda.major, cuda.minor) < (first.major, first.minor) and not (any_minor and cuda.major == first.major):
        why = f"CUDA {label} predates {family}, first supported by CUDA {first.major}.{first.minor}"
        observed = f"{gpu}: compute capability {cc} ({arch.name})"
        return fails(rule, observed, f"a build for CUDA {first.major}.{first.minor} or newer", arch, inferred=why)
    target = "sm_" + lowest.compute_capability.replace(".", "")
    why = f"CUDA {first.major}.{first.minor} first supports {family}; its {target} code runs on {cc}"
    return fits(rule, why, arch, inferred=why if lowest is not arch else "")


def build_runs_on_gpu(
    matrix: CompatMatrix, archs: tuple[str, ...] | None, cuda: Version, cc: str, gpu: str
) -> Verdict[object]:
    """Can a build for ``cuda`` with GPU targets ``archs`` (None: not known) run on the GPU?

    A known arch list decides. Without one, a CUDA that dropped the architecture is a problem (data), a
    CUDA that predates it is a problem *inferred* from the architecture's first CUDA, and anything else
    cannot be judged (the list is missing).
    """
    if archs is not None:
        return build_covers_gpu(archs, cc, matrix.gpu_archs, gpu)
    for verdict in (cuda_major_supports_arch(matrix, cuda.major, cc, gpu), cuda_knows_arch(matrix, cuda, cc, gpu)):
        if verdict.is_problem:
            return verdict
    return cannot_judge("gpu-arch-list", "the build's GPU architecture list (compat/torch.toml arch_list)", gpu)


def vllm_supports_gpu(floor: str | None, cc: str | None, gpu: str) -> Verdict[str]:
    """Does compute capability ``cc`` meet vLLM's minimum ``floor`` (compat/vllm.toml)?"""
    rule = "vllm-min-compute-capability"
    if floor is None:
        return cannot_judge(rule, "vLLM's minimum compute capability in compat/vllm.toml", gpu)
    have, need = parse_cc(cc or ""), parse_cc(floor)
    if have is None or need is None:
        return cannot_judge(rule, f"the compute capability of {gpu}", gpu, floor)
    if have < need:
        return fails(rule, f"{gpu}: {cc}", f">= {floor}", floor)
    return fits(rule, f"{cc} >= {floor}", floor)


#: The NVML brands (nvmlBrandType_t, as the NVIDIA Container Toolkit's requirement language spells them:
#: https://github.com/NVIDIA/libnvidia-container/blob/main/src/cli/dsl.c) a GPU of each compat/gpus.toml
#: segment may report. *Inferred*: the segments are the sections of https://developer.nvidia.com/cuda-gpus
#: ("GeForce and TITAN Products", "Data Center Products", workstation "NVIDIA RTX / Quadro"), and NVML names
#: the product line; which of a section's brands one model reports (the H200 reports "NVIDIA",
#: tests/fixtures/h200-deep/deep-s1.json; a T4 "Tesla") is not in the data, so a segment gives candidates.
SEGMENT_BRANDS: dict[str, tuple[str, ...]] = {
    "geforce": ("geforce", "titan"),
    "datacenter": ("tesla", "nvidia"),
    "workstation": ("quadro", "quadrortx", "nvidiartx", "nvidia"),
}


def gpu_brands(name: str, segment: str | None) -> tuple[str, ...] | None:
    """The requirement-language brands a GPU may have, from its name and its compat/gpus.toml segment.

    A name that says GeForce or TITAN decides (NVML reports the product line the name carries); else the
    segment's candidates; None when neither is known.
    """
    words = name.lower().split()
    if "geforce" in words:
        return ("geforce",)
    if "titan" in words:
        return ("titan",)
    return SEGMENT_BRANDS.get(segment or "")
