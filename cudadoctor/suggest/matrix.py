"""``suggest --matrix``: every release by build of a target on one machine, each cell the planner's own answer.

A cell is what ``cudadoctor suggest 'torch==2.13.0+cu126'`` answers on the same machine: the planner is asked
for that release (a ``==`` requirement) and that build (:attr:`Constraints.wanted_variant`), and the cell shows
its plan or its exclusions. The matrix judges nothing itself, so it cannot disagree with ``suggest``; it only
lays out which builds each release publishes (compat data), the rows and columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.bounded import parse_specifier
from cudadoctor.data import CompatMatrix
from cudadoctor.record import record
from cudadoctor.suggest.accelerators import NON_CUDA
from cudadoctor.suggest.constraints import Constraints, Exclusion, Plan, Suggestion
from cudadoctor.suggest.per_major import RELEASES
from cudadoctor.suggest.vllm import vllm_columns

__all__ = ["Cell", "FitMatrix", "MatrixRow", "build_of", "fit_matrix"]

Planner = Callable[..., Suggestion]

#: as many plans as a planner can return for one release
_ALL = 1000


@record
class Cell:
    """One release by build: the plan ``suggest`` makes for it, or the exclusions that stop it."""

    build: str  #: ``cu126``, ``cuda12``, ``cpu``, ``rocm6.4``, ``pypi`` (the default wheel of a non-CUDA machine)
    plan: Plan | None
    reasons: tuple[Exclusion, ...] = ()
    rank: int | None = None  #: its place among the plans ``suggest`` shows (1: the plan it puts first)

    @property
    def fits(self) -> bool:
        return self.plan is not None


@record
class MatrixRow:
    """One release of the fit matrix: a cell per build, and why nothing of it can be planned."""

    version: str
    cells: tuple[Cell, ...]
    #: why nothing of this release can be planned where it has no build to lay out (its builds are not in data)
    reasons: tuple[Exclusion, ...] = ()


@record
class FitMatrix:
    """The fit matrix of a target: its releases (rows) by CUDA build (columns)."""

    target: str
    requirement: str
    builds: tuple[str, ...]  #: the columns, oldest CUDA first
    rows: tuple[MatrixRow, ...]  #: newest release first
    notes: tuple[str, ...] = ()


def build_of(plan: Plan) -> str:
    """The column of a plan: its build tag; a PyPI wheel of a CUDA build is named by its CUDA (``cu128``)."""
    if plan.variant == "pypi" and plan.cuda is not None:
        return f"cu{plan.cuda.major}{plan.cuda.minor}"
    return plan.variant


def _torch_builds(matrix: CompatMatrix, c: Constraints) -> list[tuple[Version, list[str]]]:
    """torch releases with their CUDA builds on this platform; a machine without CUDA lays out its plans only."""
    if c.accelerator in NON_CUDA:
        return [(r.version, []) for r in matrix.torch_releases]
    rows = []
    for release in matrix.torch_releases:
        if c.platform == "linux-aarch64":
            cuda = release.pypi_aarch64_cuda
            rows.append((release.version, [f"cu{cuda.major}{cuda.minor}"] if cuda else []))
            continue
        builds = [t for t in release.variants if (v := matrix.torch_variants.get(t)) and v.cuda is not None]
        default = release.pypi_default_cuda
        if c.platform == "linux-x86_64" and default is not None:
            builds.append(f"cu{default.major}{default.minor}")
        rows.append((release.version, list(dict.fromkeys(builds))))
    return rows


def _layout(matrix: CompatMatrix, c: Constraints, target: str) -> list[tuple[Version, list[str]]]:
    """(release, its builds) for every release of ``target`` in compat data, newest first."""
    if target == "torch":
        rows = _torch_builds(matrix, c)
    elif target == "vllm":
        rows = [(r.version, vllm_columns(matrix, r)) for r in matrix.vllm_releases]
    else:
        rows = [(r.version, [f"cuda{m}" for m, _i in r.majors]) for r in RELEASES[target](matrix)]
    return sorted(rows, key=lambda row: row[0], reverse=True)


def _build_key(build: str) -> tuple[int, Version]:
    """Columns in order: CPU and the default wheel, CUDA by version, then ROCm by version."""
    if match := re.fullmatch(r"cu(\d+)(\d)", build):  # one-digit minor: cu92 is 9.2, cu118 11.8
        return 1, Version(f"{match.group(1)}.{match.group(2)}")
    if match := re.fullmatch(r"cuda(\d+)", build):
        return 1, Version(match.group(1))
    if match := re.fullmatch(r"rocm([\d.]+)", build):
        return 2, Version(match.group(1))
    return 0, Version("0")


def _cell(matrix: CompatMatrix, c: Constraints, planner: Planner, pin: str, build: str) -> Cell:
    """The cell of a build the release's answer did not plan: the planner asked for this build alone."""
    one = planner(matrix, replace(c, wanted_variant=build), pin, limit=1)
    if one.plans:
        return Cell(build, one.plans[0])
    return Cell(build, None, tuple(e for e in one.excluded if e.rule != "variant"))


def _row(
    matrix: CompatMatrix, c: Constraints, planner: Planner, target: str, version: Version, builds: list[str]
) -> MatrixRow:
    pin = f"{target}=={version}"
    full = planner(matrix, c, pin, limit=_ALL)
    planned = {build_of(plan): plan for plan in full.plans}
    cells = []
    for build in dict.fromkeys([*builds, *planned]):
        if build in planned:
            cells.append(Cell(build, planned[build]))
        elif len(builds) == 1:  # the only build: the release's exclusions are its own
            cells.append(Cell(build, None, full.excluded))
        else:
            cells.append(_cell(matrix, c, planner, pin, build))
    return MatrixRow(str(version), tuple(cells), () if cells else full.excluded)


def _ranked(rows: Iterable[MatrixRow], top: Suggestion) -> tuple[MatrixRow, ...]:
    """The rows with each cell that ``suggest`` plans marked by its place among the plans it shows."""
    ranks = {(p.packages[0][1], build_of(p)): n for n, p in enumerate(top.plans, start=1) if p.packages}
    return tuple(
        replace(row, cells=tuple(replace(cell, rank=ranks.get((row.version, cell.build))) for cell in row.cells))
        for row in rows
    )


def fit_matrix(matrix: CompatMatrix, c: Constraints, target: str, planner: Planner, requirement: str = "") -> FitMatrix:
    """Every release of ``target`` matching ``requirement`` by its builds, judged by ``planner`` (the one
    ``suggest`` uses for ``target``) on the machine ``c`` describes."""
    spec = parse_specifier(requirement.removeprefix(target).strip()) if requirement else SpecifierSet()
    rows = [
        _row(matrix, c, planner, target, version, builds)
        for version, builds in _layout(matrix, c, target)
        if spec.contains(version, prereleases=True)
    ]
    top = planner(matrix, c, requirement)
    builds = sorted({cell.build for row in rows for cell in row.cells}, key=_build_key)
    return FitMatrix(target, requirement or target, tuple(builds), _ranked(rows, top), top.notes)
