"""NVIDIA driver branches: the oldest release of a branch compat data knows, and whether a branch is supported.

A driver branch is the major number of its version (R580 for 580.95.05). NVIDIA's forward-compatibility
table lists the branches it supports and states that "branches not in the table are end of life"
(https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html; compat/cuda.toml
``forward_compat.supported_driver_branches``). The oldest release of a branch is the oldest driver any
CUDA release in the release notes' driver table names in it (compat/cuda.toml ``release``).
"""

from __future__ import annotations

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverVersion
from cudadoctor.rules.verdict import Verdict, cannot_judge, fails, fits

__all__ = ["branch_status", "known_branches", "oldest_of_branch", "supported_upgrades"]


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


def branch_status(matrix: CompatMatrix, branch: int) -> Verdict[None]:
    """Is ``branch`` a supported branch (in NVIDIA's forward-compatibility table), or end of life?"""
    general = matrix.forward_compat
    if general is None or not general.supported_driver_branches:
        return cannot_judge("driver-branch-eol", "the supported driver branches", f"R{branch}")
    supported = set(general.supported_driver_branches)
    if branch in supported:
        return fits("driver-branch-eol", f"R{branch} is a supported branch")
    newest = max(supported)
    if branch > newest:
        return cannot_judge("driver-branch-eol", f"R{branch} in the supported-branch table", f"R{branch}")
    listed = ", ".join(f"R{b}" for b in sorted(supported))
    return fails("driver-branch-eol", f"R{branch}", f"a supported branch ({listed}); others are end of life")


def supported_upgrades(matrix: CompatMatrix, driver: DriverVersion | None) -> list[tuple[int, DriverVersion]]:
    """The supported branches newer than ``driver``'s, each with its oldest known release, oldest first."""
    general = matrix.forward_compat
    supported = set(general.supported_driver_branches) if general is not None else set()
    known = known_branches(matrix)
    return [
        (branch, known[branch])
        for branch in sorted(supported)
        if branch in known and (driver is None or known[branch] > driver)
    ]
