"""CD111, CD112: the driver and the GPUs against the CUDA the installed frameworks were built for."""

# CD1xx: driver and GPUs
#   CD111  the driver can run the CUDA major the frameworks were built for
#   CD112  every GPU is still supported by that CUDA major

from __future__ import annotations

from packaging.version import Version

from cudadoctor.bounded import version_or_none
from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.derived import with_data_builds
from cudadoctor.checks.findings import Problem, Remediation
from cudadoctor.checks.hostfix import SUGGEST_TARGETS, driver_fixed_by
from cudadoctor.checks.presence import gpus_to_judge
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.derive import (
    GpuEvidence,
    frameworks_by_cuda_major,
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
from cudadoctor.gpu_models import gpu_segments
from cudadoctor.rules.driver import (
    ForwardCompat,
    driver_runs_cuda,
    forward_compat_on_gpus,
)
from cudadoctor.rules.gpus import cuda_major_supports_arch

__all__ = ["CD111", "CD112", "framework_label", "torch_fix_for"]


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


def framework_label(pkg: InstalledPackage) -> str:
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
            names = ", ".join(framework_label(p) for p in pkgs)
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
            _too_old_fix(max(needed), cuda, failing_names, platform, torch_fix_for(matrix, facts, next(iter(at_fault),
                         None)) + _other_builds(matrix, packages, failing_names, cuda, driver, host, forward)),
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
                names = ", ".join(framework_label(p) for p in pkgs)
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
                torch_fix_for(matrix, facts, at_fault[0] if at_fault else None),
            ),
        )


def torch_fix_for(matrix: CompatMatrix, facts: Facts | None, torch: InstalledPackage | None) -> tuple[str, ...]:
    """The command replacing a torch build that does not fit (suggest's rules, keeping the installed release
    when a build of it fits); nothing when torch is not the package at fault."""
    if torch is None:
        return ()
    from cudadoctor.checks.torchfix import torch_fix_commands

    return torch_fix_commands(matrix, facts, torch)
