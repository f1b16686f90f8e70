"""CD402: CPU-only builds of GPU frameworks on a machine with an NVIDIA driver or GPU.

A CPU build is told from files alone: torch's local tag (``+cpu``) or, for a wheel or conda package
without one, ``torch/version.py`` saying ``cuda = None`` with no ``hip`` (the conda ``cpuonly`` builds, the
Windows wheels on PyPI); jaxlib without a CUDA local tag (``+cuda12.cudnn89``) and without a
``jax-cudaNN-plugin`` / ``-pjrt`` beside it (since jax 0.4.16 CUDA comes only from the plugin,
https://docs.jax.dev/en/latest/installation.html). llama-cpp-python is not judged: it is built from its
sdist on the user's machine, and its dist-info does not say whether CUDA (cuBLAS) was enabled.
"""

# CD4xx: Python packages
#   CD402  the GPU frameworks are CUDA builds where an NVIDIA driver or GPU is present

from __future__ import annotations

import re

from cudadoctor.checks._base import Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.derive import GpuEvidence
from cudadoctor.facts.model import DriverInfo, Facts, InstalledPackage, ToolkitInstall

__all__ = ["CD402", "cpu_jaxlib", "cpu_torch", "nvidia_evidence", "nvidia_present", "reinstall_commands"]

#: Extensions whose CUDA build beside a CPU torch shows the environment was meant for the GPU.
_CUDA_EXTENSIONS = ("xformers", "flash-attn", "vllm", "bitsandbytes", "deepspeed")


def cpu_torch(packages: dict[str, InstalledPackage]) -> InstalledPackage | None:
    """The installed torch when it is not a CUDA build (CPU, ROCm, XPU); None otherwise or when unknown."""
    torch = packages.get("torch")
    if torch is None or not torch.cuda_variant or torch.cuda_variant.startswith("cu"):
        return None
    return torch


def cpu_jaxlib(packages: dict[str, InstalledPackage]) -> InstalledPackage | None:
    """jaxlib without CUDA: no CUDA local tag and no jax-cudaNN plugin (nor a ROCm one) installed."""
    jaxlib = packages.get("jaxlib")
    if jaxlib is None or (jaxlib.cuda_variant or "").startswith(("cu", "rocm")):
        return None
    if any(re.fullmatch(r"jax-(?:cuda|rocm)\d+-(?:plugin|pjrt)", name) for name in packages):
        return None
    return jaxlib


def nvidia_evidence(gpu_evidence: GpuEvidence | None, driver: DriverInfo | None) -> dict[str, str]:
    """The strongest evidence of a GPU (the probed GPUs, else the device nodes, else the PCI bus) and the driver."""
    evidence: dict[str, str] = {}
    if gpu_evidence is not None:
        what, shown = gpu_evidence.shown_by[0]
        evidence[what] = shown
    if driver is not None and driver.version is not None:
        where = driver.kernel_module.source.where if driver.kernel_module else "driver probe"
        evidence["NVIDIA driver"] = f"{driver.version} ({where})"
    return evidence


def nvidia_present(gpu_evidence: GpuEvidence | None, driver: DriverInfo | None) -> dict[str, str]:
    """:func:`nvidia_evidence`, or NotApplicable where nothing shows an NVIDIA GPU or driver, or only the PCI bus
    does (without a driver no CUDA build would run either)."""
    nvidia = nvidia_evidence(gpu_evidence, driver)
    if not nvidia:
        raise NotApplicable("no NVIDIA GPU or driver on this machine")
    if gpu_evidence is not None and not gpu_evidence.count and len(nvidia) == 1:
        raise NotApplicable(f"no NVIDIA driver for the GPU ({gpu_evidence.strongest()})")
    return nvidia


def _cuda_beside(packages: dict[str, InstalledPackage], toolkits: tuple[ToolkitInstall, ...]) -> dict[str, str]:
    """Other signs the environment was meant for CUDA: extensions built for it, a CUDA toolkit."""
    found = {
        f"{p.name} {p.version}": f"built for CUDA {p.cuda_build}"
        for name in _CUDA_EXTENSIONS
        if (p := packages.get(name)) is not None and p.cuda_build
    }
    if toolkits:
        found["CUDA toolkit"] = ", ".join(f"{t.version or '?'} at {t.root}" for t in toolkits)
    return found


def reinstall_commands(matrix: CompatMatrix, facts: Facts, torch: InstalledPackage) -> tuple[str, ...]:
    """A command that really replaces a CPU torch with a CUDA build fitting this machine.

    The plan comes from `suggest` (the same rules: driver floor, GPU arch lists, Python wheels), for the
    installed release when the data has one that fits, else the nearest release that fits
    (cudadoctor.checks.torchfix). ``--force-reinstall`` because ``torch==2.1.2`` is already satisfied by
    ``2.1.2+cpu`` (PEP 440: a local label is ignored when the specifier has none), so pip would otherwise keep
    the CPU build.
    """
    from cudadoctor.checks.torchfix import torch_fix_commands

    return torch_fix_commands(matrix, facts, torch, reinstall=True)


def _jax_commands(matrix: CompatMatrix, facts: Facts) -> tuple[str, ...]:
    from cudadoctor.planning import constraints_from_facts
    from cudadoctor.suggest.per_major import suggest_jax

    suggestion = suggest_jax(matrix, constraints_from_facts(matrix, facts), limit=1)
    return suggestion.plans[0].commands[:1] if suggestion.plans else ("cudadoctor suggest --target jax",)


class CD402(Check):
    """The GPU frameworks are CUDA builds where an NVIDIA driver or GPU is present.

    What it checks: on a machine with an NVIDIA GPU (NVML, nvidia-smi, /proc/driver/nvidia/gpus, the device
    nodes /dev/nvidia0..N: also in a container or root where NVML does not answer) or driver, the build of
    torch (its local tag ``+cpu``, or torch/version.py's ``cuda = None``: the conda ``cpuonly`` builds and
    the Windows wheels on PyPI) and of jaxlib (no CUDA tag and no jax-cudaNN plugin). xformers or flash-attn
    built for CUDA beside a CPU torch, or a CUDA toolkit, are shown as further evidence.

    Why it matters: a CPU build never uses the GPU: torch.cuda.is_available() returns False, JAX warns
    "a CUDA-enabled jaxlib is not installed. Falling back to cpu", and work silently runs on the CPU. A
    ROCm or XPU build looks for another vendor's runtime.

    How to fix: reinstall a CUDA build for this machine. For torch the command pins a build from the same
    rules `cudadoctor suggest --target torch` uses, with --force-reinstall (pip otherwise keeps 2.1.2+cpu as
    satisfying torch==2.1.2); for JAX, install its CUDA plugin (pip install -U "jax[cuda12]").
    """

    name = "frameworks-are-cuda-builds"
    category = "python"

    def check(  # type: ignore[no-untyped-def]
        self,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        facts,
        gpu_evidence: GpuEvidence | None = None,
        driver: DriverInfo | None = None,
        toolkits: tuple[ToolkitInstall, ...] = (),
    ) -> Problem | None:
        nvidia = nvidia_present(gpu_evidence, driver)
        torch, jaxlib = cpu_torch(packages), cpu_jaxlib(packages)
        if torch is None and jaxlib is None:
            if "torch" in packages and packages["torch"].cuda_variant is None and "jaxlib" not in packages:
                raise NotApplicable("torch's build is not recorded (no local tag, no cuda field in version.py)")
            return None
        messages: list[str] = []
        commands: list[str] = []
        evidence = dict(nvidia)
        if torch is not None:
            shown = torch.torch_build.version if torch.torch_build and torch.torch_build.version else torch.version
            variant = torch.cuda_variant or "cpu"
            kind = "a CPU-only build" if variant == "cpu" else f"a {variant} build"
            messages.append(f"torch {shown} is {kind}: torch.cuda.is_available() is False")
            evidence["torch"] = f"{shown} ({torch.cuda_variant_source or 'version tag'}: {variant})"
            evidence.update(_cuda_beside(packages, toolkits))
            commands += reinstall_commands(matrix, facts, torch)
        if jaxlib is not None:
            messages.append(
                f"jaxlib {jaxlib.version} has no CUDA plugin (jax-cudaNN-plugin): JAX falls back to the CPU"
            )
            evidence["jaxlib"] = f"{jaxlib.version} ({jaxlib.source.where}), no jax-cuda*-plugin installed"
            commands += _jax_commands(matrix, facts)
        return Problem(
            "; ".join(messages) + " on a machine with an NVIDIA " + ("GPU" if gpu_evidence else "driver"),
            evidence,
            Remediation(
                "Reinstall a CUDA build that fits this machine's driver and GPUs (the command replaces the CPU "
                "build in place).",
                tuple(commands),
            ),
            status=Status.FAIL,
        )
