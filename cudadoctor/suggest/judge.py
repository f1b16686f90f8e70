"""A candidate build against the constraints: the rules that `check` also asks, as exclusions.

The verdicts come from :mod:`cudadoctor.rules`; this module only decides what the planner does with
each: a problem excludes the candidate, and *could not judge* excludes it where a plan would otherwise
rest on nothing (no driver floor for its CUDA major) and is kept, with a caveat, elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.bounded import parse_specifier
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverVersion
from cudadoctor.rules.driver import driver_runs_cuda, driver_supports_gpu, minimum_driver
from cudadoctor.rules.gpus import build_runs_on_gpu
from cudadoctor.rules.verdict import Verdict
from cudadoctor.suggest.constraints import Constraints, Exclusion, Gpu, Plan

__all__ = [
    "DRIVER_RULES",
    "Reason",
    "Run",
    "driver_fit",
    "driver_reasons",
    "gpu_reason",
    "index_releases_below",
    "needed_driver",
    "start",
]

#: (rule, observed, required): why a candidate does not fit
Reason = tuple[str, str, str]

#: the rules a driver upgrade alone can satisfy
DRIVER_RULES = {"driver-floor", "driver-too-old-for-gpu"}


@dataclass
class Run:
    """One planner's working state: the version filter, results so far, and the candidate-free problems."""

    spec: SpecifierSet
    notes: list[str]
    hard: list[Reason]  #: problems every candidate has whatever the build (a driver older than a GPU)
    plans: list[tuple[tuple[object, ...], Plan]] = field(default_factory=list)
    excluded: list[Exclusion] = field(default_factory=list)
    #: (release, candidate, the driver it needs) of candidates that fail only for the driver
    driver_only: list[tuple[Version, str, tuple[DriverVersion, str]]] = field(default_factory=list)

    def exclude(self, who: str, reasons: list[Reason]) -> None:
        self.excluded.extend(Exclusion(who, r, o, q) for r, o, q in reasons)


def _reason(verdict: Verdict[object]) -> Reason:
    return verdict.rule, verdict.observed, verdict.required


def start(target: str, matrix: CompatMatrix, c: Constraints, requirement: str) -> Run:
    """What every planner starts with: the version filter, the notes about unknowns, and the rules that
    exclude every candidate whatever the build (a driver older than a GPU)."""
    spec = parse_specifier(requirement.removeprefix(target).strip()) if requirement else SpecifierSet()
    notes: list[str] = []
    if c.driver is None:
        notes.append("driver unknown: plans are not checked against a driver (give --driver)")
    if not c.gpus:
        notes.append("no GPU known: plans are not checked against a GPU (give --gpu)")
    windows = c.platform == "windows"
    hard = [driver_supports_gpu(matrix, c.driver, g.compute_capability, g.name, windows=windows) for g in c.gpus]
    return Run(spec, notes, [_reason(v) for v in hard if v.is_problem])


def driver_fit(
    matrix: CompatMatrix, c: Constraints, cuda_major: int, cuda_minor: int | None = None
) -> Verdict[DriverVersion]:
    """The rule CD111 asks, with this host's inputs: its driver, its forward compatibility, its GPUs."""
    return driver_runs_cuda(
        matrix,
        cuda_major,
        c.driver,
        windows=c.platform == "windows",
        forward=c.forward_compat,
        gpus=tuple((g.name, g.segment) for g in c.gpus),
        cuda_minor=cuda_minor,
    )


def driver_reasons(matrix: CompatMatrix, c: Constraints, cuda: Version) -> list[Reason]:
    """Why the driver cannot run a CUDA ``cuda`` build; a known driver with no floor in data excludes too."""
    verdict = driver_fit(matrix, c, cuda.major, cuda.minor)
    if verdict.is_problem:
        return [_reason(verdict)]
    if verdict.is_unknown and c.driver is not None:
        return [("driver-floor", f"driver {c.driver}", f"CUDA {cuda.major}.x floor not in compat data")]
    return []


def gpu_reason(
    matrix: CompatMatrix, archs: tuple[str, ...] | None, cuda: Version, gpu: Gpu, *, dropped_only: bool = False
) -> Reason | None:
    """Why a build for ``cuda`` with GPU targets ``archs`` cannot run on ``gpu`` (None: it can, or cannot be told).

    ``dropped_only``: the build's CUDA minor is not known, so only the CUDA major's dropped architectures apply.
    """
    verdict = build_runs_on_gpu(matrix, archs, cuda, gpu.compute_capability, gpu.name)
    if not verdict.is_problem or (dropped_only and verdict.rule != "cuda-dropped-arch"):
        return None
    return _reason(verdict)


def needed_driver(matrix: CompatMatrix, c: Constraints, cuda: Version) -> tuple[DriverVersion, str] | None:
    """The oldest driver a candidate failing only driver rules would need: (comparable bound, words)."""
    needs: list[tuple[DriverVersion, str]] = []
    minimum = minimum_driver(matrix, cuda.major, windows=c.platform == "windows")
    if minimum is not None and (c.driver is None or c.driver < minimum):
        needs.append((minimum, f"{minimum} or newer"))
    for gpu in c.gpus:
        verdict = driver_supports_gpu(
            matrix, c.driver, gpu.compute_capability, gpu.name, windows=c.platform == "windows"
        )
        if verdict.is_problem and verdict.detail is not None and verdict.detail.min_driver_branch:
            branch = verdict.detail.min_driver_branch
            needs.append((DriverVersion(f"{branch}.0"), f"branch R{branch} or newer (for {gpu.name})"))
    return max(needs, key=lambda n: n[0]) if needs else None


def index_releases_below(target: str, plans: Iterable[Plan], derived: Callable[[Version], bool]) -> list[str]:
    """Notes for releases known only from `cudadoctor update` that fit but ranked below the plans shown.

    Their GPU fit rests on what they inherit (*inferred*), so verified plans come first; a note keeps a
    release the user just learned of from disappearing without a word.
    """
    versions = dict.fromkeys(v for plan in plans for name, v in plan.packages if name == target)
    return [
        f"{target} {v} (read from the package index by `cudadoctor update`) also fits, ranked below verified "
        f"plans because what it inherits is inferred; `cudadoctor suggest '{target}=={v}'` shows its plan"
        for v in versions
        if derived(Version(v))
    ]
