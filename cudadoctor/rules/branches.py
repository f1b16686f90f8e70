"""NVIDIA driver branches: the oldest release of a branch compat data knows, and whether a branch is supported.

A driver branch is the major number of its version (R580 for 580.95.05). NVIDIA's data center driver
lifecycle gives each branch a type (Long Term Support, Production, New Feature) and an end-of-life month,
and states that every previous branch not in its table is end of life
(https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html;
compat/cuda.toml ``driver_branch``). The branch to move to is a supported long-term branch, else a supported
production branch; a new feature branch is never advised (short-lived, and no target of forward
compatibility: https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html). The oldest
release of a branch is the oldest driver any CUDA release in the release notes' driver table names in it
(compat/cuda.toml ``release``).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import DriverBranch
from cudadoctor.facts.model import DriverVersion
from cudadoctor.record import record
from cudadoctor.rules.verdict import Verdict, cannot_judge, fails, fits, not_applicable

__all__ = [
    "BranchFit",
    "branch_ended",
    "branch_label",
    "branch_status",
    "branches_for_gpus",
    "known_branches",
    "lifecycle_covers",
    "oldest_of_branch",
    "recommended_branch",
    "supported_branches",
    "supported_upgrades",
]

_TYPES = {
    "long-term": "long-term support branch",
    "production": "production branch",
    "new-feature": "new feature branch",
    "evaluation": "evaluation/developer branch",
}
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")  # fmt: skip


def known_branches(matrix: CompatMatrix) -> dict[int, DriverVersion]:
    """Every branch a CUDA release names a Linux driver in, with its oldest such driver."""
    oldest: dict[int, DriverVersion] = {}
    for release in matrix.cuda_releases:
        driver = release.min_driver_linux
        if driver is not None and (driver.major not in oldest or driver < oldest[driver.major]):
            oldest[driver.major] = driver
    for major in (11, 12, 13):
        row = matrix.minor_compat(major)
        if row is not None and (
            row.min_driver_linux.major not in oldest or row.min_driver_linux < oldest[row.min_driver_linux.major]
        ):
            oldest[row.min_driver_linux.major] = row.min_driver_linux
    return oldest


def oldest_of_branch(matrix: CompatMatrix, branch: int) -> DriverVersion | None:
    """The oldest driver of ``branch`` in compat data (550 -> 550.54.14); None when no release names one."""
    return known_branches(matrix).get(branch)


def _month(value: str) -> str:
    """``"2028-06"`` -> ``"June 2028"``, as NVIDIA writes it."""
    year, month = value.split("-")
    return f"{_MONTHS[int(month) - 1]} {year}"


def branch_ended(row: DriverBranch, today: datetime.date) -> bool:
    """Is the branch end of life on ``today``: listed so, or its end-of-life month is over."""
    if row.listed_end_of_life:
        return True
    if row.end_of_life is None:
        return False
    year, month = (int(part) for part in row.end_of_life.split("-"))
    return (today.year, today.month) > (year, month)


def branch_label(row: DriverBranch) -> str:
    """``R580 (long-term support branch, end of life June 2028)``."""
    parts = [_TYPES[row.designation]] if row.designation else []
    if row.end_of_life:
        parts.append(f"end of life {_month(row.end_of_life)}")
    elif row.listed_end_of_life:
        parts.append("end of life")
    return f"R{row.branch}" + (f" ({', '.join(parts)})" if parts else "")


def supported_branches(matrix: CompatMatrix, today: datetime.date | None = None) -> list[DriverBranch]:
    """The long-term and production branches still supported on ``today``: long-term first, each oldest first."""
    day = today or datetime.date.today()
    live = [
        r
        for r in matrix.driver_branches
        if r.designation in ("long-term", "production") and r.end_of_life is not None and not branch_ended(r, day)
    ]
    return sorted(live, key=lambda r: (r.designation != "long-term", r.branch))


def recommended_branch(
    matrix: CompatMatrix, newer_than: int, today: datetime.date | None = None, *, last: int | None = None
) -> DriverBranch | None:
    """The supported branch to move to from ``newer_than``: the oldest supported long-term branch newer than
    it, else a production one; ``last`` is the newest branch the GPUs allow (a legacy GPU's last branch)."""
    return next(
        (r for r in supported_branches(matrix, today) if r.branch > newer_than and (last is None or r.branch <= last)),
        None,
    )


def _unlisted_ended(matrix: CompatMatrix, branch: int) -> DriverBranch | None:
    """The table whose note makes ``branch`` end of life: an older branch it does not list."""
    if matrix.driver_branch(branch) is not None:
        return None
    return next((r for r in matrix.driver_branches if r.older_unlisted_end_of_life and branch < r.branch), None)


def branch_status(
    matrix: CompatMatrix, branch: int, today: datetime.date | None = None, *, last: int | None = None
) -> Verdict[DriverBranch]:
    """Is ``branch`` supported on ``today`` (NVIDIA's data center driver lifecycle), or end of life?

    A problem's ``required`` names the branch to move to (:func:`recommended_branch`); ``detail`` is the
    branch's row, or the row whose "older branches not listed are end of life" note covers it.
    """
    day = today or datetime.date.today()
    row = matrix.driver_branch(branch)
    covering = _unlisted_ended(matrix, branch)
    newest = max((r.branch for r in matrix.driver_branches), default=None)
    if row is None and newest is not None and branch > newest:
        return not_applicable(
            "driver-branch-eol",
            f"inferred: R{branch} is newer than every branch of NVIDIA's lifecycle tables in compat data (the newest "
            f"is R{newest}), so no table read can list it as end of life",
        )
    if row is None and covering is None:
        return cannot_judge(
            "driver-branch-eol", f"R{branch}'s lifecycle (compat/cuda.toml driver_branch)", f"R{branch}"
        )
    if row is not None and not branch_ended(row, day):
        if row.end_of_life is None:
            return cannot_judge("driver-branch-eol", f"R{branch}'s end of life", branch_label(row))
        return fits("driver-branch-eol", f"{branch_label(row)} is supported", row)
    target = recommended_branch(matrix, branch, day, last=last)
    required = f"a supported branch: {branch_label(target)}" if target else "a supported branch (none in the data)"
    if row is not None:
        return fails("driver-branch-eol", branch_label(row), required, row)
    older = f"R{branch} (older than R{covering.branch}, and absent from NVIDIA's table)" if covering else ""
    return fails("driver-branch-eol", older, required, covering)


def lifecycle_covers(matrix: CompatMatrix, gpus: Sequence[tuple[str, str | None]]) -> Verdict[tuple[str, ...]]:
    """Does NVIDIA's branch lifecycle (compat/cuda.toml ``driver_lifecycle``) cover these GPUs of ``(name, segment)``?

    NVIDIA publishes branch types and end-of-life months for data center GPU drivers only
    (https://docs.nvidia.com/datacenter/tesla/drivers/driver-lifecycle.html); the Linux driver of GeForce and
    RTX/Quadro GPUs names its latest production and new feature branch without any end of life
    (https://www.nvidia.com/en-us/drivers/unix.html). Ok (``detail``: the covered GPUs) when one GPU is of a
    covered line; not applicable when every GPU is of a line without a published lifecycle or a Jetson; could
    not judge when a GPU's line, or every GPU, is unknown.
    """
    rule = "driver-branch-lifecycle"
    lifecycle = matrix.driver_lifecycle
    if lifecycle is None:
        return cannot_judge(rule, "which GPUs NVIDIA's driver lifecycle covers (compat/cuda.toml driver_lifecycle)")
    covered = tuple(name for name, segment in gpus if segment in lifecycle.segments)
    if covered:
        return fits(rule, f"{', '.join(covered)}: NVIDIA's data center driver lifecycle covers it", covered)
    unknown = [name for name, segment in gpus if segment is None]
    if not gpus or unknown:
        what = f"the product line of {', '.join(unknown)} (compat/gpus.toml)" if unknown else "the GPUs"
        return cannot_judge(rule, what + ", which decides whether NVIDIA's data center driver lifecycle applies")
    jetson = [name for name, segment in gpus if segment == "embedded"]
    if len(jetson) == len(gpus):
        return not_applicable(rule, f"{', '.join(jetson)}: a Jetson's driver comes with L4T/JetPack, not a branch")
    lines = sorted({segment for _n, segment in gpus if segment in lifecycle.unpublished_segments})
    return not_applicable(
        rule,
        f"{', '.join(name for name, _s in gpus)} ({', '.join(lines) or 'no data center GPU'}): NVIDIA publishes driver "
        "branch end of life for data center GPUs only; its driver archive for GeForce and RTX GPUs gives no end of "
        "life for any branch",
    )


def supported_upgrades(
    matrix: CompatMatrix, driver: DriverVersion | None, today: datetime.date | None = None
) -> list[tuple[int, DriverVersion]]:
    """The supported branches newer than ``driver``'s, each with its oldest known release: long-term branches
    first, then production ones, each oldest first (a new feature or end-of-life branch is never proposed)."""
    known = known_branches(matrix)
    return [
        (row.branch, known[row.branch])
        for row in supported_branches(matrix, today)
        if row.branch in known and (driver is None or known[row.branch] > driver)
    ]


@record
class BranchFit:
    """A supported driver branch judged for a set of GPUs (:func:`branches_for_gpus`)."""

    branch: DriverBranch  #: the branch's lifecycle row
    release: DriverVersion  #: its oldest release in compat data (``580.65.06``), or ``<branch>`` when none is known
    #: each GPU's verdict (rules/driver.py ``driver_supports_gpu``, CD114's rule) on that release
    verdicts: tuple[Verdict[object], ...]

    @property
    def fits(self) -> bool:
        """Every GPU runs on the branch."""
        return all(v.is_ok for v in self.verdicts)


def branches_for_gpus(
    matrix: CompatMatrix, gpus: Sequence[tuple[str, str | None]], today: datetime.date | None = None
) -> list[BranchFit]:
    """The supported long-term and production branches (:func:`supported_branches`' order), each judged for every
    GPU of ``(name, compute capability)`` by CD114's rule (an architecture's oldest and last branch, NVIDIA's device
    list) on the branch's oldest known release: a GPU too new for a branch, or dropped by it, makes it not fit, and
    a GPU the data cannot place leaves the branch unjudged (no ``fits``, no failure)."""
    from cudadoctor.rules.driver import driver_supports_gpu  # the rule of CD114, asked per branch

    known = known_branches(matrix)
    found = []
    for row in supported_branches(matrix, today):
        release = known.get(row.branch) or DriverVersion(str(row.branch))
        verdicts = tuple(driver_supports_gpu(matrix, release, cc, name) for name, cc in gpus)
        found.append(BranchFit(row, release, verdicts))
    return found
