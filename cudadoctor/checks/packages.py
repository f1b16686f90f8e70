"""CD4xx: the Python packages: pins between them, and builds that cannot use the GPU."""

# CD4xx: Python packages
#   CD401  every pinned dependency between the examined packages is installed at the pinned version
#   CD402  torch is a CUDA build where an NVIDIA GPU is present

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement

from cudadoctor.checks._base import Check
from cudadoctor.findings import Problem, Remediation, Status
from cudadoctor.model import GpuInfo, InstalledPackage

__all__ = ["CD401", "CD402", "unmet_requirements"]


def unmet_requirements(
    packages: dict[str, InstalledPackage],
) -> list[tuple[InstalledPackage, Requirement, InstalledPackage]]:
    """(dependent, requirement, installed) for every requirement between examined packages that fails.

    Only requirements whose target cudadoctor examined are judged (it does not scan every
    distribution); their markers were already evaluated for the target interpreter by the probe.
    """
    unmet = []
    for dependent in packages.values():
        for line in dependent.requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            target = packages.get(_canonical(req.name))
            if target is None or not req.specifier:
                continue
            if not req.specifier.contains(target.version, prereleases=True):
                unmet.append((dependent, req, target))
    return unmet


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


class CD401(Check):
    """Every pinned dependency between the installed GPU packages is installed at the pinned version.

    What it checks: the Requires-Dist pins of torch, torchvision, torchaudio, vLLM, xformers,
    flash-attn, JAX and the nvidia-* wheels against the versions actually installed (like
    `pip check`, limited to the packages cudadoctor examines, and without running pip).

    Why it matters: these packages ship compiled code built against one exact version of another:
    vLLM or torchvision built for torch 2.5 fails on torch 2.6 with "undefined symbol" errors; a torch
    wheel pinned to one cuDNN or NCCL wheel may crash or misbehave with another.

    How to fix: install the versions the pin names (the command is given), or upgrade the dependent
    package to the release built for what you have.
    """

    name = "pinned-dependencies-met"
    category = "python"

    def check(self, packages: dict[str, InstalledPackage]) -> Problem | None:
        unmet = unmet_requirements(packages)
        if not unmet:
            return None
        lines = [f"{d.name} {d.version} requires {r}, but {t.name} {t.version} is installed" for d, r, t in unmet]
        pins = sorted({f"{r.name}{r.specifier}" for _d, r, _t in unmet})
        return Problem(
            "; ".join(lines),
            {f"{d.name} {d.version}": f"requires {r} (Requires-Dist, {d.source.where})" for d, r, _t in unmet},
            Remediation(
                "Install the pinned versions, or upgrade the dependent package to the release built for the "
                "installed one.",
                ("python -m pip install " + " ".join(f"'{p}'" for p in pins),),
            ),
        )


class CD402(Check):
    """torch is a CUDA build when an NVIDIA GPU is present.

    What it checks: the build variant of the installed torch (from its version tag or torch/version.py)
    when an NVIDIA GPU is present: a CPU build (+cpu) or a ROCm build (+rocmX.Y) cannot use it.

    Why it matters: torch.cuda.is_available() returns False with a CPU build, and a ROCm build looks
    for AMD's HIP runtime, so work silently runs on the CPU or fails.

    How to fix: install a CUDA build of torch from PyTorch's index for a CUDA version your driver
    supports (https://download.pytorch.org/whl/cuXYZ).
    """

    name = "torch-is-cuda-build"
    category = "python"

    def check(self, torch: InstalledPackage, gpus: tuple[GpuInfo, ...]) -> Problem | None:
        variant = torch.cuda_variant or ""
        if variant.startswith("cu") or not variant:
            return None
        kind = "a CPU build" if variant == "cpu" else f"a {variant} build" if variant.startswith("rocm") else variant
        shown = torch.torch_build.version if torch.torch_build and torch.torch_build.version else torch.version
        return Problem(
            f"torch {shown} is {kind}, but this machine has {len(gpus)} NVIDIA GPU(s) ({gpus[0].name}): "
            "torch will not use them",
            {"torch": f"{shown} ({torch.cuda_variant_source or 'version tag'})", "GPU": gpus[0].name},
            Remediation(
                "Install a CUDA build of torch from PyTorch's index for a CUDA version this driver supports.",
                (),
            ),
            status=Status.WARN if variant == "cpu" else Status.FAIL,
        )
