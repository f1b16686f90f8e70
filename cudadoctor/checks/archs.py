"""CD113, CD114: GPU code for every GPU in the installed builds; a driver new enough for each GPU's architecture."""

# CD1xx: driver and GPUs
#   CD113  the installed torch build has GPU code for every GPU (its published arch list)
#   CD114  the driver is new enough for every GPU's architecture

from __future__ import annotations

import dataclasses

from cudadoctor.bounded import version_or_none
from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.driver import framework_label, torch_fix_for
from cudadoctor.checks.findings import Problem, Remediation
from cudadoctor.checks.hostfix import driver_fixed_by
from cudadoctor.checks.presence import gpus_to_judge
from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import GpuArch
from cudadoctor.facts.derive import (
    GpuEvidence,
)
from cudadoctor.facts.model import (
    DriverInfo,
    DriverVersion,
    Facts,
    GpuInfo,
    HostInfo,
    InstalledPackage,
    ManagedPlatform,
)
from cudadoctor.rules.archs import build_covers_gpu
from cudadoctor.rules.driver import (
    driver_supports_gpu,
)
from cudadoctor.rules.gpus import cuda_knows_arch
from cudadoctor.rules.verdict import Verdict, cannot_judge

__all__ = ["CD113", "CD114"]


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
                    missing.append(f"{framework_label(pkg)} ({pkg.cuda_variant}) on {gpu.name}: {verdict.missing}")
        if not problems:
            if missing:
                raise CannotJudge("; ".join(dict.fromkeys(missing)))
            return None
        torch = next((pkg for pkg, _v, _g in problems if pkg.name == "torch"), None)
        return _no_kernel_problem(problems, torch_fix_for(matrix, facts, torch) + _cupy_for_gpus(matrix, problems))


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
    return cannot_judge(
        "gpu-arch-list", f"no arch list for {framework_label(pkg)} {pkg.cuda_variant} in compat data", gpu.name
    )


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
        who = f"{framework_label(pkg)} ({pkg.cuda_variant})"
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
