"""``suggest`` as an application: the constraints from this machine and the flags, then the planner.

The planners themselves (:mod:`cudadoctor.suggest`) are pure; this module gathers what they plan for —
the probed machine unless ``--no-probe``, each flag overriding the probed fact — and picks the planner.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier
from packaging.version import InvalidVersion, Version

from cudadoctor.data import CompatMatrix
from cudadoctor.errors import InvalidValue, UsageError
from cudadoctor.facts.model import DriverVersion, Facts
from cudadoctor.record import record
from cudadoctor.suggest import (
    PLATFORMS,
    Constraints,
    Exclusion,
    Gpu,
    Suggestion,
    suggest_cupy,
    suggest_jax,
    suggest_onnxruntime_gpu,
    suggest_tensorflow,
    suggest_tensorrt,
    suggest_torch,
    suggest_vllm,
)

if TYPE_CHECKING:
    from cudadoctor.suggest.driver import DriverPlan
    from cudadoctor.suggest.matrix import FitMatrix

__all__ = [
    "PLANNERS",
    "HostFlags",
    "accelerator_of",
    "constraints",
    "constraints_for",
    "constraints_from_facts",
    "driver_plan",
    "matrix_plan",
    "other_accelerator",
    "parse_target",
    "plan",
    "platform_of",
    "user_index",
    "without_cuda",
]

Planner = Callable[..., Suggestion]

#: The targets ``suggest`` plans, by the name a user types.
PLANNERS: dict[str, Planner] = {
    "torch": suggest_torch,
    "vllm": suggest_vllm,
    "jax": suggest_jax,
    "tensorrt": suggest_tensorrt,
    "cupy": suggest_cupy,
    "onnxruntime-gpu": suggest_onnxruntime_gpu,
    "tensorflow": suggest_tensorflow,
}


@record
class HostFlags:
    """The machine ``suggest`` plans for, as described on the command line (None: probe it)."""

    driver: str | None = None
    gpus: tuple[str, ...] = ()
    python: str | None = None
    platform: str | None = None
    cuda: str | None = None
    probe: bool = True


def platform_of(facts: Facts | None) -> str:
    """The wheel platform of the examined machine (``linux-x86_64`` when nothing was examined)."""
    from cudadoctor.rules.wheels import wheel_platform

    return wheel_platform(facts.host.os, facts.host.arch) if facts is not None else "linux-x86_64"


def _version(flag: str, text: str, example: str) -> Version:
    try:
        return Version(text)
    except (InvalidVersion, ValueError):  # ValueError: a number too long for int()
        raise UsageError(f"{flag} {text[:40]!r}: expected a version such as {example}") from None


def _driver(
    matrix: CompatMatrix, flags: HostFlags, facts: Facts | None
) -> tuple[DriverVersion | None, Version | None, str | None]:
    """(driver, the CUDA it supports, the assumption made for a branch given as --driver)."""
    from cudadoctor.assume import resolve_driver
    from cudadoctor.rules.driver import effective_cuda

    if flags.driver is not None:
        try:
            version, assumption = resolve_driver(flags.driver, matrix)
        except InvalidValue as exc:
            raise exc.at("--driver") from None
        return version, matrix.cuda_for_driver(version), assumption
    if facts is not None and facts.driver is not None and facts.driver.version is not None:
        return facts.driver.version, effective_cuda(facts.driver, matrix)[0], None
    return None, None, None


#: --gpu names of GPUs that CUDA wheels do not run on, by the accelerator their torch is built for
_OTHER_GPUS = (
    (re.compile(r"(amd\s+)?(instinct\s+)?mi\d{2,3}\w*|(amd\s+)?radeon\b.*", re.IGNORECASE), "rocm"),
    (re.compile(r"(intel\s+)?(arc\b.*|data\s+center\s+gpu\s+max.*|core\s+ultra.*)", re.IGNORECASE), "xpu"),
    (re.compile(r"(apple\s+)?m[1-9](\s+(pro|max|ultra))?", re.IGNORECASE), "mps"),
    (re.compile(r"none|cpu", re.IGNORECASE), "cpu"),  # --gpu none: a machine without a GPU
)


def other_accelerator(spec: str) -> str | None:
    """The accelerator of a --gpu that is not an NVIDIA GPU (``MI300X`` -> ``rocm``); None for NVIDIA's."""
    return next((kind for pattern, kind in _OTHER_GPUS if pattern.fullmatch(spec.strip())), None)


def is_jetson(gpu: Gpu) -> bool:
    """A Jetson module: compat/gpus.toml's ``embedded`` segment, or a name NVIDIA gives its modules."""
    return gpu.segment == "embedded" or gpu.name.startswith("Jetson")


def sbsa_jetson(matrix: CompatMatrix, compute_capability: str) -> bool:
    """Whether a Jetson GPU runs the SBSA software stack (JetPack 7: Thor) rather than L4T's own CUDA: a Thor runs
    PyTorch's Linux aarch64 (SBSA) CUDA 13 wheels, whose GPU lists carry sm_110 (compat/gpus.toml ``[jetson_sbsa]``,
    compat/torch.toml arch_list)."""
    sbsa = matrix.jetson_sbsa
    try:
        return sbsa is not None and Version(compute_capability) >= Version(sbsa.min_compute_capability)
    except InvalidVersion:
        return False


def accelerator_of(matrix: CompatMatrix, facts: Facts | None, gpus: Sequence[Gpu], flags: HostFlags) -> str | None:
    """What the machine computes with: ``cuda``, ``jetson``, ``rocm``, ``mps``, ``xpu``, ``cpu``; None: unknown.

    A described machine (--gpu, --driver) is what the flags say; a probed one is CPU-only only when no NVIDIA
    driver or GPU (:func:`cudadoctor.facts.derive.gpu_evidence`), no ROCm, no Apple GPU, no Jetson and no discrete
    Intel GPU was found. An integrated Intel GPU alone stays ``cpu``: most of them are older than the ones
    PyTorch's XPU builds are validated on.
    """
    from cudadoctor.facts.derive import gpu_evidence, intel_gpu_discrete

    others = {other_accelerator(g) for g in flags.gpus} - {None}
    if others:
        return sorted(o for o in others if o)[0]
    if gpus:
        return "jetson" if any(is_jetson(g) and not sbsa_jetson(matrix, g.compute_capability) for g in gpus) else "cuda"
    if flags.driver is not None or facts is None:
        return "cuda" if flags.driver is not None else None
    host = facts.host
    if host.jetson_l4t:
        sbsa = matrix.jetson_sbsa
        return "cuda" if sbsa is not None and host.jetson_l4t.startswith(sbsa.jetson_linux) else "jetson"
    if facts.driver is not None or gpu_evidence(facts.gpus, facts.visible, facts.health) is not None:
        return "cuda"  # an NVIDIA GPU shows (NVML, /proc, the /dev/nvidiaN nodes, the PCI bus) or a driver
    if host.rocm_version is not None or host.amdgpu_driver:
        return "rocm"
    if host.apple_silicon:
        return "mps"
    return "xpu" if any(intel_gpu_discrete(g) for g in host.intel_gpus) else "cpu"


def _gpus(flags: HostFlags, facts: Facts | None) -> tuple[Gpu, ...]:
    from cudadoctor import gpu_models
    from cudadoctor.gpu_models import gpu_segments
    from cudadoctor.rules.driver import forward_compat

    if flags.gpus:
        table = gpu_models.load_models()
        found = []
        for spec in flags.gpus:
            if other_accelerator(spec) is not None:
                continue  # not an NVIDIA GPU: it sets the accelerator instead
            try:
                model = gpu_models.parse_gpu_spec(spec, table)
            except ValueError as exc:
                raise UsageError(f"--gpu {spec!r}: {exc}") from None
            # An inferred compute capability (compat/gpu_devices.toml) says its rule where the GPU came from.
            source = f"--gpu (compute capability inferred: {model.inferred})" if model.inferred else "--gpu"
            found.append(Gpu(model.name, model.compute_capability, source, model.segment))
        return tuple(found)
    if facts is None:
        return ()
    known = tuple(g for g in facts.gpus if g.compute_capability)
    # segments decide only forward compatibility; the GPU table is not read otherwise
    use_table = facts.driver is not None and forward_compat(facts.driver) is not None
    segments = gpu_segments(known) if use_table else tuple((g.name, None) for g in known)
    return tuple(
        Gpu(g.name, g.compute_capability or "", "probed", s) for g, (_, s) in zip(known, segments, strict=True)
    )


def _origins(flags: HostFlags, facts: Facts | None, driver: object, gpus: Sequence[Gpu]) -> dict[str, str]:
    origins: dict[str, str] = {}
    if driver is not None:
        origins["driver"] = "--driver" if flags.driver is not None else "probed"
    if gpus:
        origins["gpus"] = "--gpu" if flags.gpus else "probed"
    if flags.python is not None:
        origins["python"] = "--python"
    elif facts is not None and facts.python is not None:
        origins["python"] = "probed"
    return origins


def _ecosystem(facts: Facts | None) -> tuple[tuple[str, str], ...]:
    from cudadoctor.suggest.install import ECOSYSTEM

    if facts is None:
        return ()
    found = sorted(facts.packages.items())
    return tuple((name, str(p.version)) for name, p in found if name in ECOSYSTEM and p.version)


def user_index(env: Mapping[str, str]) -> tuple[str, str] | None:
    """The index pip (or uv) is configured with when it is not PyPI: (URL, credentials masked; where it is set)."""
    from cudadoctor.pipconfig import configured_index, redacted

    found = configured_index(env)
    if found.source != "default":
        return found.display, found.source
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):  # https://docs.astral.sh/uv/reference/environment/
        if env.get(name, "").strip():
            return redacted(env[name].strip()), name
    return None


#: Reads this machine's facts for a plan: the application hands the collector in (planning sits below the probes).
Gather = Callable[[], Facts]


def constraints(
    matrix: CompatMatrix, flags: HostFlags, gather: Gather | None = None, *, variant: str | None = None
) -> Constraints:
    """What a plan must fit: this machine's facts (``gather``, unless ``flags.probe`` is off), overridden by the
    flags."""
    facts = gather() if flags.probe and gather is not None else None
    index = user_index(os.environ) if facts is not None else None
    return constraints_for(matrix, flags, facts, variant=variant, index=index)


def constraints_from_facts(matrix: CompatMatrix, facts: Facts | None, flags: HostFlags | None = None) -> Constraints:
    """What a plan must fit on the machine ``facts`` describe, overridden by ``flags``: the one place `suggest`
    and the checks that name an install command (CD402) get their constraints from."""
    return constraints_for(matrix, flags or HostFlags(), facts)


def constraints_for(
    matrix: CompatMatrix,
    flags: HostFlags,
    facts: Facts | None,
    *,
    variant: str | None = None,
    index: tuple[str, str] | None = None,
) -> Constraints:
    """The constraints for ``facts`` (None: nothing probed) overridden by the flags."""
    from cudadoctor.rules.driver import forward_compat

    driver, driver_cuda, assumption = _driver(matrix, flags, facts)
    gpus = _gpus(flags, facts)
    py = _version("--python", flags.python, "3.12") if flags.python is not None else None
    if py is None and facts is not None and facts.python is not None:
        py = facts.python.version
    accelerator = accelerator_of(matrix, facts, gpus, flags)
    platform = flags.platform or ("macos-arm64" if accelerator == "mps" else platform_of(facts))
    if flags.platform is None and flags.gpus and gpus and all(is_jetson(g) for g in gpus):
        platform = "linux-aarch64"  # a described Jetson is an Arm module whatever machine plans for it
    if platform not in PLATFORMS:
        raise UsageError(f"--platform {platform!r}: expected one of {', '.join(PLATFORMS)}")
    if accelerator is None and platform == "macos-arm64":  # macOS wheels have no CUDA: an Apple Silicon Mac
        accelerator = "mps"
    origins = _origins(flags, facts, driver, gpus)
    if assumption:
        origins["driver"] = f"--driver {flags.driver} ({assumption})"
    torch = facts.packages.get("torch") if facts is not None else None
    built = torch.torch_build.version if torch and torch.torch_build and torch.torch_build.version else None
    probed_driver = facts.driver if facts is not None and origins.get("driver") == "probed" else None
    host = facts.host if facts is not None else None
    return Constraints(
        driver=driver,
        driver_cuda=driver_cuda,
        gpus=gpus,
        python=py,
        platform=platform,
        cuda_ceiling=_version("--cuda", flags.cuda, "12.4") if flags.cuda is not None else None,
        installed_torch=built or (torch.version if torch else None),
        installed_torch_variant=torch.cuda_variant if torch else None,
        origins=origins,
        # only a probed host's own cuda-compat libcuda counts; a described one has none
        forward_compat=forward_compat(probed_driver) if probed_driver is not None else None,
        accelerator=accelerator,
        rocm=host.rocm_version if host is not None else None,
        jetson_l4t=host.jetson_l4t if host is not None else None,
        intel_gpus=host.intel_gpus if host is not None else (),
        installed_ecosystem=_ecosystem(facts),
        user_index=index,
        wanted_variant=variant,
    )


def parse_target(target: str) -> tuple[str, str, str | None]:
    """(project, requirement, build) of a target: ``torch==2.13.0+cu126`` -> (torch, torch==2.13.0, cu126).

    The build is the local version pytorch.org writes; the requirement keeps the version without it.
    :raises UsageError: for a project ``suggest`` does not plan, with the closest names.
    """
    text = target.strip()
    name = re.split(r"[<>=!~ \[]", text, maxsplit=1)[0]
    rest = text[len(name) :].strip()
    variant = None
    if match := re.search(r"\+([a-z0-9.]+)\s*$", rest, re.IGNORECASE):
        variant, rest = match.group(1).lower(), rest[: match.start()]
    project = name.lower()
    if project not in PLANNERS:
        close = difflib.get_close_matches(project, [*PLANNERS, *_ALIASES], n=2, cutoff=0.6)
        guesses = sorted({_ALIASES.get(g) or g for g in close})
        hint = f"; did you mean {' or '.join(repr(g) for g in guesses)}?" if guesses else ""
        raise UsageError(f"target {target!r}: suggest plans {', '.join(PLANNERS)}{hint}")
    return project, project + rest, variant


#: names users type for a target ``suggest`` knows by another
_ALIASES = {"pytorch": "torch", "onnxruntime": "onnxruntime-gpu", "tensorrt-cu12": "tensorrt", "jaxlib": "jax"}


def plan(target: str, flags: HostFlags, gather: Gather | None = None) -> tuple[Suggestion, Constraints]:
    """The plans for a target on the machine the flags describe (and ``gather`` reads, unless ``flags.probe`` is
    off), with the upgrades that would unlock more."""
    from cudadoctor.suggest.accelerators import NON_CUDA
    from cudadoctor.suggest.upgrades import with_upgrades

    name, requirement, variant = parse_target(target)
    matrix = CompatMatrix()
    c = constraints(matrix, flags, gather, variant=variant)
    if variant == "cpu" or (variant or "").startswith("rocm"):  # the target names a build without CUDA
        c = replace(c, accelerator="cpu" if variant == "cpu" else "rocm")
    try:
        if c.accelerator in NON_CUDA and name != "torch":
            return without_cuda(name, c, requirement), c
        return with_upgrades(matrix, c, PLANNERS[name], requirement), c
    except InvalidSpecifier:
        raise UsageError(f"target {target!r}: not a requirement such as 'torch>=2.6'") from None


def matrix_plan(target: str, flags: HostFlags, gather: Gather | None = None) -> tuple[FitMatrix, Constraints]:
    """``suggest --matrix``: every release x build of a target on the machine the flags describe (and ``gather``
    reads), each cell judged by the planner ``suggest`` uses (a machine without CUDA: what ``suggest`` answers
    there)."""
    from cudadoctor.suggest.accelerators import NON_CUDA
    from cudadoctor.suggest.matrix import FitMatrix, fit_matrix

    name, requirement, variant = parse_target(target)
    if variant is not None:
        raise UsageError(f"--matrix {target!r}: the matrix shows every build; name a release without +{variant}")
    matrix = CompatMatrix()
    c = constraints(matrix, flags, gather)
    try:
        if c.accelerator in NON_CUDA and name != "torch":
            return FitMatrix(name, requirement, (), (), without_cuda(name, c, requirement).advice), c
        return fit_matrix(matrix, c, name, PLANNERS[name], requirement), c
    except InvalidSpecifier:
        raise UsageError(f"target {target!r}: not a requirement such as 'torch>=2.6'") from None


def without_cuda(name: str, c: Constraints, requirement: str) -> Suggestion:
    """Nothing to plan: ``name``'s wheels in compat data are CUDA builds, and this machine has no CUDA GPU."""
    machine = c.accelerator or "cpu"
    if machine == "jetson":  # CUDA, but JetPack's: PyPI's CUDA wheels are server (x86_64, SBSA) builds
        reason = Exclusion(name, "platform", "Jetson (CUDA from JetPack)", "a JetPack build (none in data)")
        advice = (f"{name}'s wheels in compat data are server CUDA builds, not JetPack builds; {JETSON_BUILDS}",)
        return Suggestion(name, requirement, (), (reason,), advice)
    reason = Exclusion(name, "accelerator", f"no CUDA GPU ({machine})", "an NVIDIA GPU (its wheels are CUDA builds)")
    advice = (f"{name}'s wheels in compat data are CUDA builds; this machine has {_MACHINES.get(machine, machine)}",)
    return Suggestion(name, requirement, (), (reason,), advice)


#: what a machine without a CUDA GPU computes with, in words
_MACHINES = {"cpu": "no GPU", "rocm": "an AMD GPU (ROCm)", "mps": "an Apple GPU (MPS)", "xpu": "an Intel GPU (XPU)"}
#: where Jetson builds come from: NVIDIA's Jetson software page lists the frameworks built per JetPack
JETSON_BUILDS = "NVIDIA builds frameworks per JetPack release: https://developer.nvidia.com/embedded/jetpack"


def _pci_gpus(facts: Facts) -> tuple[Gpu, ...]:
    """The NVIDIA GPUs on the PCI bus, by their device ID (compat/gpu_devices.toml): what a machine whose driver is
    not loaded shows."""
    from cudadoctor import gpu_models

    state = facts.nvidia_module
    if state is None:
        return ()
    matrix = CompatMatrix()
    table = gpu_models.load_models()
    found = []
    for pci in state.pci_gpus:
        row = matrix.device_for(pci.device, pci.subsystem or None) if pci.device else None
        if row is None or row.compute_capability is None:
            continue
        try:
            segment = gpu_models.parse_gpu_spec(row.name, table).segment
        except ValueError:
            segment = None
        found.append(Gpu(row.name, row.compute_capability, f"PCI device 10de:{pci.device.lower()}", segment))
    return tuple(found)


def driver_plan(flags: HostFlags, gather: Gather | None = None) -> tuple[DriverPlan, str]:
    """``suggest driver``: the driver branches for the GPUs the flags name, else this machine's (NVML's answer, or
    the PCI bus where the driver is not loaded), with the install commands of its distribution; and where the GPUs
    came from (``--gpu``, ``probed``, ``the PCI bus``)."""
    from cudadoctor.suggest.driver import suggest_driver

    matrix = CompatMatrix()
    facts = gather() if flags.probe and gather is not None else None
    gpus = _gpus(flags, facts)
    origin = "--gpu" if flags.gpus else "probed"
    if not gpus and not flags.gpus and facts is not None:
        gpus, origin = _pci_gpus(facts), "the PCI bus"
    distro = facts.host.distro if facts is not None else None
    return suggest_driver(matrix, gpus, distro), origin
