"""Plans for packages published once per CUDA major: JAX, TensorRT, CuPy, onnxruntime-gpu, TensorFlow.

The exact CUDA minor of these wheels is not in compat data, so only rules that need the major apply: the
driver's floor for that major, the CUDA major that dropped a GPU's architecture, the driver branch a GPU
needs, and the Python version. The GPU floor of each package is not in data and is said so.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.fixes import Install
from cudadoctor.fixes.build import both_tools
from cudadoctor.fixes.parse import parse_pin
from cudadoctor.rules.wheels import python_has_wheels
from cudadoctor.suggest.advice import advice
from cudadoctor.suggest.constraints import Constraints, Exclusion, Plan, Suggestion
from cudadoctor.suggest.images import with_images
from cudadoctor.suggest.judge import (
    DRIVER_RULES,
    Reason,
    Run,
    driver_fit,
    driver_reasons,
    gpu_reason,
    needed_driver,
    start,
)

__all__ = [
    "RELEASES",
    "Release",
    "suggest_cupy",
    "suggest_jax",
    "suggest_onnxruntime_gpu",
    "suggest_tensorflow",
    "suggest_tensorrt",
]


class Release(NamedTuple):
    """One release: its version, Requires-Python, the Python versions of its wheels (may be empty), and
    (CUDA major, what to install) for each CUDA major it is published for."""

    version: Version
    requires_python: str | None
    pythons: tuple[str, ...]
    majors: list[tuple[int, str]]


def _plans(
    target: str, matrix: CompatMatrix, c: Constraints, requirement: str, releases: list[Release], limit: int
) -> Suggestion:
    """Plans for ``releases`` of ``target`` (``jax[cuda12]``, ``tensorrt-cu12`` …), best first."""
    run = start(target, matrix, c, requirement)
    if c.platform != "linux-x86_64":
        run.notes.append(f"{target}: only Linux x86_64 CUDA wheels are in compat data")
    for release in releases:
        if run.spec.contains(release.version, prereleases=True) and _admissible(target, c, run, release):
            for major, install in sorted(release.majors, reverse=True):
                if c.wanted_variant is not None and f"cuda{major}" != c.wanted_variant:
                    who = f"{target} {release.version} (CUDA {major})"
                    run.excluded.append(Exclusion(who, "variant", f"cuda{major}", f"{c.wanted_variant} (the target)"))
                    continue
                _judge(target, matrix, c, run, release.version, major, install)
    ranked = sorted(run.plans, key=lambda item: item[0], reverse=True)
    chosen = tuple(plan for _key, plan in ranked[:limit])
    found = () if chosen else tuple(advice(c, run, target))
    return Suggestion(target, requirement or target, chosen, tuple(run.excluded), found, tuple(run.notes))


def _admissible(target: str, c: Constraints, run: Run, release: Release) -> bool:
    """Whether a release has wheels for this platform and Python; when not, it is excluded, said why."""
    who = f"{target} {release.version}"
    if c.platform != "linux-x86_64":
        run.excluded.append(Exclusion(who, "platform", c.platform, "linux-x86_64"))
        return False
    if c.python is None:
        return True
    requires = SpecifierSet(release.requires_python) if release.requires_python else None
    verdict = python_has_wheels(c.python, pythons=release.pythons, requires_python=requires)
    if verdict.is_problem:
        shown = release.requires_python or verdict.required  # as the release states it
        run.excluded.append(Exclusion(who, "python", verdict.observed, shown))
    return not verdict.is_problem


def _judge(
    target: str, matrix: CompatMatrix, c: Constraints, run: Run, version: Version, major: int, install: str
) -> None:
    """Plan one CUDA major of a release, or record every rule that excludes it."""
    cuda = Version(f"{major}.0")
    name = f"{target} {version} (CUDA {major})"
    problems: list[Reason] = list(run.hard)
    if c.cuda_ceiling is not None and major > c.cuda_ceiling.major:
        problems.append(("cuda-ceiling", f"CUDA {major}.x", f"CUDA <= {c.cuda_ceiling} (--cuda)"))
    problems += driver_reasons(matrix, c, cuda)
    problems += [reason for gpu in c.gpus if (reason := gpu_reason(matrix, None, cuda, gpu, dropped_only=True))]
    if problems:
        run.exclude(name, problems)
        if {r for r, _o, _q in problems} <= DRIVER_RULES and (needs := needed_driver(matrix, c, cuda)):
            run.driver_only.append((version, name, needs))
        return
    why = [f"{target} {version} for CUDA {major}.x"]
    if c.driver is not None:
        basis = driver_fit(matrix, c, major).basis
        how = basis if basis.startswith("forward") else "minor-version compatibility floor met"
        why.append(f"driver {c.driver} runs CUDA {major}.x builds ({how})")
    caveats = [f"{target}'s minimum GPU compute capability is not in compat data"] if c.gpus else []
    commands = both_tools(Install((parse_pin(f"{install}=={version}"),)))
    pins = ((install, str(version)),)
    plan = Plan(target, pins, f"cuda{major}", cuda, None, commands, tuple(why), tuple(caveats))
    if target in _CUDA_FROM_PIP:
        plan = with_images(matrix, c, plan)
    run.plans.append(((version, major), plan))


#: targets whose install brings every CUDA library from pip, so a slim Python image is enough:
#: jax[cudaNN] (https://docs.jax.dev/en/latest/installation.html, "CUDA and cuDNN from pip wheels") and
#: tensorflow[and-cuda] (https://www.tensorflow.org/install/pip, which installs NVIDIA's libraries from pip)
_CUDA_FROM_PIP = ("jax", "tensorflow")


def _spec(specifier: SpecifierSet | None) -> str | None:
    """A Requires-Python as the plans print it (the data's spelling, normalised by packaging)."""
    return str(specifier) if specifier is not None else None


def jax_releases(matrix: CompatMatrix) -> list[Release]:
    """JAX releases with the CUDA plugins each publishes (compat/ecosystem.toml)."""
    releases = []
    for r in matrix.jax_releases:
        if r.yanked:
            continue
        majors = []
        for plugin in r.cuda_plugins:
            match = re.fullmatch(r"jax-cuda(\d+)-plugin", plugin)
            if match:
                majors.append((int(match.group(1)), f"jax[cuda{match.group(1)}]"))
        if majors:
            releases.append(Release(r.version, _spec(r.requires_python), (), majors))
    return releases


def suggest_jax(matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3) -> Suggestion:
    """``jax[cudaNN]`` plans from compat/ecosystem.toml (the CUDA plugins published per release)."""
    return _plans("jax", matrix, c, requirement, jax_releases(matrix), limit)


def tensorrt_releases(matrix: CompatMatrix) -> list[Release]:
    """TensorRT releases with their per-CUDA packages (compat/tensorrt.toml), early-access ones left out."""
    releases = []
    for r in matrix.tensorrt_releases:
        if r.early_access:
            continue
        majors = []
        for package in r.packages:
            match = re.fullmatch(r"tensorrt-cu(\d+)", package)
            if match:
                majors.append((int(match.group(1)), package))
        if majors:
            releases.append(Release(r.version, _spec(r.requires_python), tuple(r.python), majors))
    return releases


def suggest_tensorrt(matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3) -> Suggestion:
    """``tensorrt-cuNN`` plans from compat/tensorrt.toml (the per-CUDA packages published per release)."""
    return _plans("tensorrt", matrix, c, requirement, tensorrt_releases(matrix), limit)


def cupy_releases(matrix: CompatMatrix) -> list[Release]:
    """One per ``cupy-cudaNNx`` package: its newest release (compat/ecosystem.toml). The older per-minor
    packages (``cupy-cuda111``) are judged on installed machines, never planned."""
    return [
        Release(r.last_version, _spec(r.latest_requires_python), (), [(r.cuda_major, r.package)])
        for r in matrix.cupy_packages
        if r.last_version is not None and not matrix.cupy_per_minor(r)
    ]


def suggest_cupy(matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3) -> Suggestion:
    """``cupy-cudaNNx`` plans (compat/ecosystem.toml: one package per CUDA major, its newest release)."""
    return _plans("cupy", matrix, c, requirement, cupy_releases(matrix), limit)


def onnxruntime_releases(matrix: CompatMatrix) -> list[Release]:
    """onnxruntime-gpu releases with the CUDA major of each one's PyPI wheel and the CPython versions of its
    wheels (compat/ecosystem.toml: 1.24.1 declares >=3.10 but has no cp310 wheel)."""
    return [
        Release(r.version, _spec(r.requires_python), tuple(r.python), [(r.cuda_major, "onnxruntime-gpu")])
        for r in matrix.onnxruntime_releases
        if r.cuda_major
    ]


def suggest_onnxruntime_gpu(
    matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3
) -> Suggestion:
    """``onnxruntime-gpu`` plans (compat/ecosystem.toml: the CUDA major of each release's PyPI wheel)."""
    return _plans("onnxruntime-gpu", matrix, c, requirement, onnxruntime_releases(matrix), limit)


def tensorflow_releases(matrix: CompatMatrix) -> list[Release]:
    """TensorFlow releases with the CUDA major each was tested with (compat/ecosystem.toml), those whose wheel
    has the ``[and-cuda]`` extra only: without it (2.13 and older) the install brings no CUDA libraries. The
    Pythons are those of its Linux x86_64 wheels (2.19.0 has none for 3.13 though its Requires-Python admits it)."""
    return [
        Release(r.version, _spec(r.requires_python), tuple(r.python), [(r.cuda.major, "tensorflow[and-cuda]")])
        for r in matrix.tensorflow_releases
        if r.cuda is not None and r.and_cuda
    ]


def suggest_tensorflow(matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3) -> Suggestion:
    """``tensorflow[and-cuda]`` plans (compat/ecosystem.toml: the CUDA each release was tested with)."""
    return _plans("tensorflow", matrix, c, requirement, tensorflow_releases(matrix), limit)


#: each target's releases with the CUDA majors they are published for, as its planner reads them
RELEASES = {
    "jax": jax_releases,
    "tensorrt": tensorrt_releases,
    "cupy": cupy_releases,
    "onnxruntime-gpu": onnxruntime_releases,
    "tensorflow": tensorflow_releases,
}
