"""torch plans for machines without an NVIDIA GPU that CUDA wheels can use: CPU-only, AMD (ROCm), Apple Silicon
(MPS), Intel GPUs, and NVIDIA Jetson (JetPack).

What uv's automatic backend does on such machines is documented at
https://docs.astral.sh/uv/guides/integration/pytorch/#automatic-backend-selection: with no NVIDIA driver
found it takes PyTorch's CPU index, and with an AMD GPU a ROCm index. The plans here follow the same
choice, on compat/torch.toml's sourced variant lists only.
"""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import TorchRelease
from cudadoctor.rules.wheels import torch_has_wheels
from cudadoctor.suggest.constraints import Constraints, Exclusion, Plan, Suggestion
from cudadoctor.suggest.install import torch_install
from cudadoctor.suggest.judge import Run, start

__all__ = ["NON_CUDA", "suggest_torch_without_cuda"]

#: accelerators whose torch is not a CUDA wheel
NON_CUDA = ("cpu", "rocm", "mps", "xpu", "jetson")

#: NVIDIA's page for PyTorch on Jetson: wheels built per JetPack release
JETSON_PYTORCH = "https://docs.nvidia.com/deeplearning/frameworks/install-pytorch-jetson-platform/index.html"
#: PyTorch's Intel GPU (XPU) getting-started notes: the xpu index, the validated GPUs and OSes
XPU_NOTES = "https://docs.pytorch.org/docs/stable/notes/get_start_xpu.html"
#: Intel's prerequisites for PyTorch on Intel GPUs: the GPU driver the XPU wheels need (linked from XPU_NOTES)
XPU_DRIVER = "https://www.intel.com/content/www/us/en/developer/articles/tool/pytorch-prerequisites-for-intel-gpu.html"
#: PyTorch's MPS backend notes: the macOS arm64 wheels on PyPI run on Metal
MPS_NOTES = "https://docs.pytorch.org/docs/stable/notes/mps.html"


def suggest_torch_without_cuda(
    matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3
) -> Suggestion:
    """Plans for torch on a machine whose accelerator (``c.accelerator``) is not a CUDA GPU."""
    run = start("torch", matrix, c, requirement)
    run.notes[:] = [n for n in run.notes if not n.startswith(("driver unknown", "no GPU known"))]
    if c.accelerator == "jetson":
        return _jetson(matrix, c, run, requirement)
    if c.accelerator == "cpu" and c.intel_gpus:
        run.notes.append(_integrated_intel_note(c.intel_gpus))
    for release in matrix.torch_releases:
        if run.spec.contains(release.version, prereleases=True) and _python_fits(c, run, release):
            _judge(matrix, c, run, release)
    ranked = sorted(run.plans, key=lambda item: item[0], reverse=True)
    chosen = tuple(plan for _key, plan in ranked[:limit])
    advice = () if chosen else (f"no torch build in compat data fits this {_machine(c)}; see the exclusions",)
    return Suggestion("torch", requirement or "torch", chosen, tuple(run.excluded), advice, tuple(run.notes))


def _machine(c: Constraints) -> str:
    machines = {"rocm": "AMD GPU (ROCm)", "mps": "Apple Silicon Mac", "jetson": "Jetson", "xpu": "Intel GPU (XPU)"}
    return machines.get(c.accelerator or "", "CPU")


def _integrated_intel_note(intel_gpus: tuple[str, ...]) -> str:
    return (
        f"an integrated Intel GPU only ({', '.join(intel_gpus)}): PyTorch validates its XPU builds on Arc, "
        f"Data Center GPU Max and Core Ultra processors with Arc graphics ({XPU_NOTES}), so the plans are CPU "
        "builds; on one of those, --gpu 'Intel Arc' (or 'Core Ultra') plans the XPU builds"
    )


def _python_fits(c: Constraints, run: Run, release: TorchRelease) -> bool:
    if c.python is None:
        return True
    verdict = torch_has_wheels(release, c.python, c.platform)
    if not verdict.is_ok:
        run.excluded.append(
            Exclusion(f"torch {release.version}", "python", verdict.observed, "one of " + verdict.required)
        )
    return verdict.is_ok


def _judge(matrix: CompatMatrix, c: Constraints, run: Run, release: TorchRelease) -> None:
    who = f"torch {release.version}"
    if c.platform == "macos-arm64":
        mps = f"torch {release.version} from PyPI: its macOS arm64 wheel runs on the GPU through MPS ({MPS_NOTES})"
        _add(c, run, release, "pypi", None, [mps], (True, release.version))
        return
    if c.accelerator == "rocm":
        _judge_rocm(matrix, c, run, release)
        return
    if c.accelerator == "xpu":
        _judge_xpu(matrix, c, run, release)
        return
    if c.platform == "linux-aarch64" and release.pypi_aarch64_cuda is None:
        # Requires-Dist of its aarch64 wheel pins no CUDA runtime: PyPI's aarch64 torch is a CPU build
        cpu_wheel = f"torch {release.version} from PyPI: its Linux aarch64 wheel is a CPU build (pins no CUDA runtime)"
        _add(c, run, release, "pypi", None, [cpu_wheel], (True, release.version))
        return
    cpu = matrix.torch_variants.get("cpu")
    if c.platform != "linux-x86_64" or "cpu" not in release.variants or cpu is None or cpu.index_url is None:
        observed = "CPU build not listed for it" + (" (variant list partial)" if release.variants_partial else "")
        run.excluded.append(Exclusion(who, "data", observed, f"a sourced CPU build for {c.platform}"))
        return
    why = [
        f"torch {release.version} CPU build from PyTorch's CPU index: no CUDA GPU here, so none of the "
        "gigabytes of CUDA libraries a CUDA wheel brings (uv's automatic backend picks this index too)"
    ]
    _add(c, run, release, "cpu", cpu.index_url, why, (True, release.version))


def _judge_rocm(matrix: CompatMatrix, c: Constraints, run: Run, release: TorchRelease) -> None:
    who = f"torch {release.version}"
    tags = [t for t in release.variants if t.startswith("rocm")]
    if c.platform != "linux-x86_64" or not tags:
        observed = "ROCm build not listed for it" + (" (variant list partial)" if release.variants_partial else "")
        run.excluded.append(Exclusion(who, "data", observed, f"a sourced ROCm build for {c.platform}"))
        return
    for tag in tags:
        variant = matrix.torch_variants.get(tag)
        if variant is None or variant.index_url is None:
            run.excluded.append(Exclusion(f"{who} {tag}", "data", "index URL not in compat/torch.toml", "a URL"))
            continue
        rocm = Version(tag.removeprefix("rocm"))
        same = c.rocm is not None and rocm.major == c.rocm.major
        why = [f"torch {release.version} {tag} build from PyTorch's ROCm index"]
        caveats = []
        if same:
            why.append(f"its ROCm {rocm} has the major of the host's ROCm {c.rocm}")
        elif c.rocm is not None:
            caveats.append(f"its ROCm {rocm} differs in major from the host's ROCm {c.rocm}")
        caveats.append("AMD GPU architectures per ROCm build are not in compat data: check AMD's ROCm support list")
        _add(c, run, release, tag, variant.index_url, why, (same, release.version, rocm), caveats)


def _judge_xpu(matrix: CompatMatrix, c: Constraints, run: Run, release: TorchRelease) -> None:
    """The release's XPU build from PyTorch's xpu index (compat/torch.toml: 2.5 on, Linux x86_64 only)."""
    variant = matrix.torch_variants.get("xpu")
    if c.platform != "linux-x86_64" or "xpu" not in release.variants or variant is None or variant.index_url is None:
        observed = "XPU build not listed for it" + (" (variant list partial)" if release.variants_partial else "")
        run.excluded.append(
            Exclusion(f"torch {release.version}", "data", observed, f"a sourced XPU build for {c.platform}")
        )
        return
    why = [
        f"torch {release.version} XPU build from PyTorch's xpu index: it runs on Intel GPUs "
        "(uv's automatic backend picks this index too)"
    ]
    caveats = [
        f"needs Intel's GPU driver ({XPU_DRIVER}); PyTorch validates Data Center GPU Max on RHEL 9.2, SLES 15 SP5 "
        f"and Ubuntu 22.04, Arc A/B-Series and Core Ultra with Arc graphics on Ubuntu 24.04 or newer ({XPU_NOTES})"
    ]
    _add(c, run, release, "xpu", variant.index_url, why, (True, release.version), caveats)


def _add(
    c: Constraints,
    run: Run,
    release: TorchRelease,
    variant: str,
    index_url: str | None,
    why: list[str],
    key: tuple[object, ...],
    caveats: list[str] | None = None,
) -> None:
    if c.wanted_variant is not None and variant != c.wanted_variant:
        run.excluded.append(
            Exclusion(f"torch {release.version} {variant}", "variant", variant, f"{c.wanted_variant} (the target)")
        )
        return
    install = torch_install(c, release, variant, index_url)
    if install.keeps:
        why = ["keeps the installed torch", *why]
    plan = Plan(
        "torch", install.pins, variant, None, index_url, install.commands, tuple(why),
        (*(caveats or []), *install.caveats), install.keeps,
    )  # fmt: skip
    run.plans.append(((install.keeps, *key), plan))


def _jetson(matrix: CompatMatrix, c: Constraints, run: Run, requirement: str) -> Suggestion:
    """A sourced refusal: compat data has no Jetson build; NVIDIA publishes them per JetPack."""
    l4t = f"L4T {c.jetson_l4t}" if c.jetson_l4t else "JetPack unknown"
    for release in matrix.torch_releases:
        if run.spec.contains(release.version, prereleases=True):
            run.excluded.append(
                Exclusion(f"torch {release.version}", "platform", f"Jetson ({l4t})", "a JetPack build (none in data)")
            )
    advice = (
        "PyTorch's aarch64 CUDA wheels (PyPI and download.pytorch.org) are not built for Jetson; install the "
        f"torch wheel NVIDIA builds for your JetPack ({l4t}): {JETSON_PYTORCH}",
    )
    return Suggestion("torch", requirement or "torch", (), tuple(run.excluded), advice, tuple(run.notes))
