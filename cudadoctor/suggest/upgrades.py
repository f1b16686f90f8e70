"""Upgrade paths: what a newer driver branch, or another Python, would let ``suggest`` plan.

Each hint is the planner's own answer under that assumption (the same constraints with the newer driver, or
the other Python), so a hint never promises what ``suggest --driver X`` would not plan. Only supported
branches are proposed: NVIDIA's forward-compatibility table lists them and calls every other branch end of
life (https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html; cudadoctor.rules.branches).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from packaging.version import InvalidVersion, Version

from cudadoctor.data import CompatMatrix
from cudadoctor.rules.branches import branch_status, lifecycle_covers, supported_upgrades
from cudadoctor.suggest.constraints import Constraints, Plan, Suggestion, Upgrade, short

__all__ = ["upgrades", "with_upgrades"]

Planner = Callable[..., Suggestion]


def _top_version(plan: Plan) -> Version | None:
    try:
        return Version(plan.packages[0][1]) if plan.packages and plan.packages[0][1] else None
    except InvalidVersion:
        return None


def _label(plan: Plan) -> str:
    name, version = plan.packages[0]
    tagged = version.endswith(f"+{plan.variant}")  # a torch 1.x pin names its build already
    return f"{name} {version}" + (f" ({plan.variant})" if plan.variant not in ("pypi", "") and not tagged else "")


def _better(plan: Plan, than: Version | None) -> bool:
    version = _top_version(plan)
    return version is not None and (than is None or version > than)


def _plannable_now(matrix: CompatMatrix, c: Constraints, planner: Planner, target: str, plan: Plan) -> bool:
    """Whether ``plan``'s release is planned on this machine as it is (ranked lower): then nothing is unlocked."""
    version = _top_version(plan)
    return version is not None and bool(planner(matrix, c, f"{target}=={version}", limit=1).plans)


def _unlocks(matrix: CompatMatrix, c: Constraints, planner: Planner, found: Suggestion, floor: Version | None) -> bool:
    return (
        bool(found.plans)
        and _better(found.plans[0], floor)
        and not _plannable_now(matrix, c, planner, found.target, found.plans[0])
    )


def _driver_upgrades(
    matrix: CompatMatrix, c: Constraints, planner: Planner, requirement: str, floor: Version | None
) -> Iterable[Upgrade]:
    for branch, driver in supported_upgrades(matrix, c.driver):
        assumed = replace(c, driver=driver, driver_cuda=matrix.cuda_for_driver(driver), forward_compat=None)
        found = planner(matrix, assumed, requirement, limit=1)
        if _unlocks(matrix, c, planner, found, floor):
            plan = found.plans[0]
            floor = _top_version(plan)
            text = f"driver >= {driver} (branch R{branch}, supported) -> {_label(plan)}"
            yield Upgrade("driver", str(driver), plan, text)


def _python_upgrades(
    c: Constraints, planner: Planner, matrix: CompatMatrix, requirement: str, floor: Version | None
) -> Iterable[Upgrade]:
    if c.python is None:
        return
    newer = range(c.python.minor + 1, c.python.minor + 4)
    # Nothing fits on this Python (an old release pinned: torch 1.10.1 has no cp311 wheels): the nearest older
    # Python that plans something is named too, down to 3.6 (the oldest of torch's plannable releases, 1.2 on).
    older = range(c.python.minor - 1, 5, -1) if floor is None else range(0)
    for minor in (*newer, *older):
        python = Version(f"{c.python.major}.{minor}")
        found = planner(matrix, replace(c, python=python), requirement, limit=1)
        if _unlocks(matrix, c, planner, found, floor):
            plan = found.plans[0]
            yield Upgrade("python", short(python), plan, f"Python {short(python)} -> {_label(plan)}")
            return


def upgrades(
    matrix: CompatMatrix, c: Constraints, planner: Planner, requirement: str, now: Suggestion
) -> list[Upgrade]:
    """The driver branches and the Python version that would unlock a newer release than ``now`` plans."""
    floor = _top_version(now.plans[0]) if now.plans else None
    found: list[Upgrade] = []
    if c.driver is not None and c.accelerator in (None, "cuda"):
        found += _driver_upgrades(matrix, c, planner, requirement, floor)
    found += _python_upgrades(c, planner, matrix, requirement, floor)
    return found


def with_upgrades(matrix: CompatMatrix, c: Constraints, planner: Planner, requirement: str = "") -> Suggestion:
    """``planner``'s answer with its upgrade paths, and a word when this driver's branch is end of life (for a data
    center GPU: NVIDIA publishes the branch lifecycle for those only, as CD115 judges it)."""
    now = planner(matrix, c, requirement)
    paths = upgrades(matrix, c, planner, requirement, now)
    notes = list(now.notes)
    if c.driver is not None and c.accelerator in (None, "cuda"):
        status = branch_status(matrix, c.driver.major)
        covered = lifecycle_covers(matrix, [(gpu.name, gpu.segment) for gpu in c.gpus])
        if status.is_problem and covered.is_ok:
            notes.append(f"driver {c.driver}: branch R{c.driver.major} is end of life; {status.required}")
    advice = list(now.advice)
    if paths and not now.plans:  # the planner's own driver advice is replaced by the checked paths
        advice = [a for a in advice if not a.startswith("upgrade the NVIDIA driver")]
        advice = [f"to unlock a plan: {p.text}" for p in paths] + advice
    return replace(now, advice=tuple(advice), notes=tuple(notes), upgrades=tuple(paths))
