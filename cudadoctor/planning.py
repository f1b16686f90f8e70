"""``suggest`` as an application: the constraints from this machine and the flags, then the planner.

The planners themselves (:mod:`cudadoctor.suggest`) are pure; this module gathers what they plan for —
the probed machine unless ``--no-probe``, each flag overriding the probed fact — and picks the planner.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier
from packaging.version import InvalidVersion, Version

from cudadoctor.data import CompatMatrix
from cudadoctor.errors import InvalidValue, UsageError
from cudadoctor.facts.model import DriverVersion, Facts
from cudadoctor.suggest import (
    PLATFORMS,
    Constraints,
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

__all__ = ["PLANNERS", "HostFlags", "constraints", "plan", "platform_of"]

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


@dataclass(frozen=True)
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
    if facts is None:
        return "linux-x86_64"
    if facts.host.os == "Windows":
        return "windows"
    return "linux-aarch64" if facts.host.arch in ("aarch64", "arm64") else "linux-x86_64"


def _version(flag: str, text: str, example: str) -> Version:
    try:
        return Version(text)
    except (InvalidVersion, ValueError):  # ValueError: a number too long for int()
        raise UsageError(f"{flag} {text[:40]!r}: expected a version such as {example}") from None


def _driver(matrix: CompatMatrix, flags: HostFlags, facts: Facts | None) -> tuple[DriverVersion | None, Version | None]:
    from cudadoctor.assume import parse_driver_version
    from cudadoctor.checks.driver import effective_cuda

    if flags.driver is not None:
        try:
            version = parse_driver_version(flags.driver)
        except InvalidValue as exc:
            raise exc.at("--driver") from None
        return version, matrix.cuda_for_driver(version)
    if facts is not None and facts.driver is not None and facts.driver.version is not None:
        return facts.driver.version, effective_cuda(facts.driver, matrix)[0]
    return None, None


def _gpus(flags: HostFlags, facts: Facts | None) -> tuple[Gpu, ...]:
    from cudadoctor import gpu_models
    from cudadoctor.checks.driver import forward_compat, gpu_segments

    if flags.gpus:
        table = gpu_models.load_models()
        found = []
        for spec in flags.gpus:
            try:
                model = gpu_models.parse_gpu_spec(spec, table)
            except ValueError as exc:
                raise UsageError(f"--gpu {spec!r}: {exc}") from None
            found.append(Gpu(model.name, model.compute_capability, "--gpu", model.segment))
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


def constraints(matrix: CompatMatrix, flags: HostFlags) -> Constraints:
    """What a plan must fit: this machine's facts (unless ``flags.probe`` is off), overridden by the flags."""
    from cudadoctor.checks.driver import forward_compat

    facts = None
    if flags.probe:
        from cudadoctor.probes.collect import collect_facts, live_context

        facts = collect_facts(live_context())
    driver, driver_cuda = _driver(matrix, flags, facts)
    gpus = _gpus(flags, facts)
    py = _version("--python", flags.python, "3.12") if flags.python is not None else None
    if py is None and facts is not None and facts.python is not None:
        py = facts.python.version
    platform = flags.platform or platform_of(facts)
    if platform not in PLATFORMS:
        raise UsageError(f"--platform {platform!r}: expected one of {', '.join(PLATFORMS)}")
    origins = _origins(flags, facts, driver, gpus)
    torch = facts.packages.get("torch") if facts is not None else None
    built = torch.torch_build.version if torch and torch.torch_build and torch.torch_build.version else None
    probed_driver = facts.driver if facts is not None and origins.get("driver") == "probed" else None
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
    )


def target_name(target: str) -> str:
    """The project a ``--target`` names (``torch`` of ``torch>=2.6``)."""
    return re.split(r"[<>=!~ \[]", target.strip(), maxsplit=1)[0].lower()


def plan(target: str, flags: HostFlags) -> tuple[Suggestion, Constraints]:
    """The plans for a target on the machine the flags describe."""
    name = target_name(target)
    if name not in PLANNERS:
        raise UsageError(f"--target {target[:60]!r}: suggest plans {', '.join(PLANNERS)}")
    matrix = CompatMatrix()
    c = constraints(matrix, flags)
    try:
        return PLANNERS[name](matrix, c, target.strip()), c
    except InvalidSpecifier:
        raise UsageError(f"--target {target[:60]!r}: not a requirement such as 'torch>=2.6'") from None
