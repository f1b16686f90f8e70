"""Plans for vLLM: its wheel pulls the torch it pins from PyPI, so both must fit the machine."""

from __future__ import annotations

import functools

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import TorchRelease, VllmRelease
from cudadoctor.fixes import Install, Pin
from cudadoctor.fixes.build import both_tools, pins_of
from cudadoctor.record import record
from cudadoctor.rules.gpus import vllm_supports_gpu
from cudadoctor.rules.wheels import torch_has_wheels, vllm_has_wheels
from cudadoctor.suggest.advice import advice
from cudadoctor.suggest.constraints import Constraints, Exclusion, Plan, Suggestion, short
from cudadoctor.suggest.images import with_images
from cudadoctor.suggest.judge import (
    DRIVER_RULES,
    Reason,
    Run,
    driver_reasons,
    gpu_reason,
    index_releases_below,
    needed_driver,
    start,
)
from cudadoctor.suggest.torch import suggest_torch

__all__ = ["suggest_vllm", "vllm_build", "vllm_columns"]


def suggest_vllm(matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3) -> Suggestion:
    """Plans for vLLM, best first, and every exclusion."""
    run = start("vllm", matrix, c, requirement)
    for release in matrix.vllm_releases:
        if run.spec.contains(release.version, prereleases=True):
            _judge(matrix, c, run, release)
    ranked = sorted(run.plans, key=lambda item: item[0], reverse=True)
    chosen = tuple(with_images(matrix, c, plan) for _key, plan in ranked[:limit])
    run.notes += index_releases_below("vllm", (plan for _key, plan in ranked[limit:]), lambda v: _derived(matrix, v))
    found = () if chosen else tuple(_vllm_advice(matrix, c, run))
    return Suggestion("vllm", requirement or "vllm", chosen, tuple(run.excluded), found, tuple(run.notes))


def _vllm_advice(matrix: CompatMatrix, c: Constraints, run: Run) -> list[str]:
    found = advice(c, run, "vLLM")
    if any(e.rule == "vllm-min-compute-capability" for e in run.excluded) and not run.driver_only:
        best = suggest_torch(matrix, c, limit=1)
        gpus = ", ".join(f"{g.compute_capability}" for g in c.gpus)
        tail = (
            f"; the newest torch that does is {best.plans[0].packages[0][1]} ({best.plans[0].variant})"
            if best.plans
            else ""
        )
        found = [f"no vLLM release in compat data supports compute capability {gpus}{tail}"]
    return found


def _admissible(matrix: CompatMatrix, c: Constraints, run: Run, release: VllmRelease) -> TorchRelease | None:
    """The torch a release pins when the release can be judged on this platform and Python; else excluded."""
    who = f"vllm {release.version}"
    if c.platform != "linux-x86_64" or release.linux_x86_64_tag is None:
        run.excluded.append(Exclusion(who, "platform", c.platform, "linux-x86_64 (the only vLLM wheels in data)"))
        return None
    if c.python is not None and (verdict := vllm_has_wheels(release, c.python)).is_problem:
        shown = str(release.requires_python) if release.requires_python else verdict.required
        run.excluded.append(Exclusion(who, "python", verdict.observed, shown))
        return None
    torch = _pinned_torch(matrix, release)
    if torch is None or torch.pypi_default_cuda is None:
        run.excluded.append(
            Exclusion(who, "data", f"torch pin {release.torch}", "that torch release in compat/torch.toml")
        )
        return None
    pinned = torch_has_wheels(torch, c.python, c.platform) if c.python is not None else None
    if pinned is not None and pinned.is_problem:  # pip would find no wheel of the torch it pins
        required = f"one of {pinned.required} (the torch {torch.version} it pins)"
        run.excluded.append(Exclusion(who, "python", pinned.observed, required))
        return None
    if c.gpus and release.min_compute_capability is None:
        # vLLM states a minimum compute capability in every release's docs; where compat data does not
        # have it for this release, support for the GPU cannot be verified, so the release is not planned.
        run.excluded.append(
            Exclusion(who, "data", "minimum compute capability not in compat/vllm.toml", "a sourced minimum")
        )
        return None
    return torch


@record
class _Build:
    """One build of a release: the PyPI wheel, or a wheel vLLM publishes outside PyPI (``wheel``)."""

    column: str  #: ``cu129``: the build as ``suggest --matrix`` and ``vllm==X+cu129`` name it
    cudas: tuple[Version, ...]  #: the CUDA versions the driver must run (vLLM's kernels, its torch)
    torch_cuda: Version  #: the CUDA of the torch build it pairs with
    wheel: str | None = None  #: the wheel's URL; None: PyPI's
    torch_index: str | None = None  #: the index of the torch it pairs with; None: PyPI


def _builds(matrix: CompatMatrix, release: VllmRelease, default: Version) -> list[_Build]:
    """The PyPI build of a release (``default``: the CUDA of its torch's PyPI wheel), then the CUDA builds it
    publishes outside PyPI (compat/vllm.toml other_cuda)."""
    cudas = tuple(sorted({v for v in (release.cuda, default) if v is not None}))
    builds = [_Build(_column(cudas[-1]), cudas, default)]
    for cuda, wheel, index in matrix.vllm_other_cuda_wheels(release):
        builds.append(_Build(_column(cuda), (cuda,), cuda, wheel, index))
    return builds


def _column(cuda: Version) -> str:
    return f"cu{cuda.major}{cuda.minor}"


def _judge(matrix: CompatMatrix, c: Constraints, run: Run, release: VllmRelease) -> None:
    """Plan each build of one release, or record every rule that excludes it."""
    torch = _admissible(matrix, c, run, release)
    if torch is None or torch.pypi_default_cuda is None:
        return
    for build in _builds(matrix, release, torch.pypi_default_cuda):
        who = _who(release, build)
        if c.wanted_variant is not None and build.column != c.wanted_variant:
            run.excluded.append(Exclusion(who, "variant", build.column, f"{c.wanted_variant} (the target)"))
            continue
        _judge_build(matrix, c, run, release, torch, build)


def _judge_build(
    matrix: CompatMatrix, c: Constraints, run: Run, release: VllmRelease, torch: TorchRelease, build: _Build
) -> None:
    """Plan one build of a release, or record every rule that excludes it."""
    who = _who(release, build)
    problems: list[Reason] = list(run.hard)
    for cuda in build.cudas:
        if c.cuda_ceiling is not None and cuda > c.cuda_ceiling:
            problems.append(("cuda-ceiling", f"CUDA {short(cuda)}", f"CUDA <= {c.cuda_ceiling} (--cuda)"))
        problems += driver_reasons(matrix, c, cuda)
    archs, archs_inherited = matrix.torch_arch_list_or_inherited(torch.version, _column(build.torch_cuda))
    floor_label = f" (inferred: {release.inherited})" if release.inherited else ""
    archs_label = f"; inferred: {archs_inherited}" if archs_inherited else ""
    for gpu in c.gpus:
        floor = vllm_supports_gpu(release.min_compute_capability, gpu.compute_capability, gpu.name)
        if floor.is_problem:
            problems.append((floor.rule, floor.observed, floor.required + floor_label))
        elif reason := gpu_reason(matrix, archs, build.torch_cuda, gpu):
            problems.append((reason[0], reason[1], f"{reason[2]} (the torch {torch.version} it pins{archs_label})"))
    if not problems:
        run.plans.append(_plan(c, release, torch, build, (archs, archs_inherited)))
        return
    run.exclude(who, problems)
    if {r for r, _o, _q in problems} <= DRIVER_RULES:
        needs = [n for n in (needed_driver(matrix, c, cuda) for cuda in build.cudas) if n]
        if needs:
            run.driver_only.append((release.version, who, max(needs, key=lambda n: n[0])))


def vllm_build(matrix: CompatMatrix, release: VllmRelease) -> Version | None:
    """The CUDA a release's PyPI wheel is planned with: the newer of its own kernels' and its torch's (None:
    neither is in data)."""
    torch = _pinned_torch(matrix, release)
    cudas = [v for v in (release.cuda, torch.pypi_default_cuda if torch else None) if v is not None]
    return max(cudas) if cudas else None


def vllm_columns(matrix: CompatMatrix, release: VllmRelease) -> list[str]:
    """The builds of a release as ``suggest --matrix`` lays them out: its PyPI wheel's CUDA, then those vLLM
    publishes outside PyPI."""
    default = vllm_build(matrix, release)
    others = [_column(cuda) for cuda, _wheel, _index in matrix.vllm_other_cuda_wheels(release)]
    return list(dict.fromkeys([*([_column(default)] if default else []), *others]))


@functools.lru_cache(maxsize=4096)
def _pinned_torch(matrix: CompatMatrix, release: VllmRelease) -> TorchRelease | None:
    # Cached: the upgrade hints plan vLLM again under each driver and Python they try (7 runs, ~80 releases
    # each, every torch release tested against each pin: 23,000 specifier checks for one `suggest vllm`).
    if release.torch is None:
        return None
    pin = release.torch
    fitting = [t for t in matrix.torch_releases if pin.contains(t.version, prereleases=True)]
    return max(fitting, key=lambda t: t.version) if fitting else None


def _who(release: VllmRelease, build: _Build) -> str:
    return f"vllm {release.version}" + (f"+{build.column}" if build.wheel else "")


def _plan(
    c: Constraints,
    release: VllmRelease,
    torch: TorchRelease,
    build: _Build,
    arch_list: tuple[tuple[str, ...] | None, str],
) -> tuple[tuple[object, ...], Plan]:
    """The plan for a build that fits, and its ranking key (``arch_list``: torch's targets, why inherited)."""
    archs, archs_inherited = arch_list
    pins = (("vllm", str(release.version)),)
    cuda = build.cudas[-1]
    why = [_why_build(release, torch, build)]
    caveats = []
    native = c.driver_cuda is not None and (cuda.major, cuda.minor) <= (c.driver_cuda.major, c.driver_cuda.minor)
    if c.driver is not None:
        why.append(
            f"driver {c.driver} supports CUDA {c.driver_cuda}" if native else
            f"driver {c.driver} runs CUDA {cuda.major}.x through minor-version compatibility"
        )  # fmt: skip
    floor_known = release.min_compute_capability is not None
    if c.gpus:
        if floor_known and release.inherited:
            caveats.append(
                f"inferred: every GPU meets the minimum compute capability {release.min_compute_capability}; "
                f"it is the {release.inherited}"
            )
        elif floor_known:
            why.append(f"every GPU meets vLLM's minimum compute capability {release.min_compute_capability}")
        else:
            caveats.append(f"vLLM {release.version}'s minimum compute capability is not in compat data")
        caveats += _arch_caveats(release, torch, build, archs, archs_inherited)
    if release.derived:
        caveats.append(f"vLLM {release.version} is known from the package index ({release.derived}), not curated data")
    if c.installed_torch is not None and Version(c.installed_torch.public) != torch.version:
        caveats.append(f"replaces the installed torch {c.installed_torch} with {torch.version} (vLLM pins it)")
    plan = Plan(
        "vllm", pins, build.column if build.wheel else "pypi", cuda, build.torch_index,
        _commands(pins, build), tuple(why), tuple(caveats),
    )  # fmt: skip
    # a build vLLM publishes outside PyPI pairs with a torch build vLLM's own pipeline builds and ships it with
    # (docker/Dockerfile installs torch from that index): vLLM's stated floor vouches for it as for the PyPI pair
    archs_known = (archs is not None and not archs_inherited) or build.wheel is not None
    verified = (floor_known and not release.inherited and archs_known) or not c.gpus
    return (verified, release.version, native, build.wheel is None), plan


def _why_build(release: VllmRelease, torch: TorchRelease, build: _Build) -> str:
    if build.wheel is None:
        default = torch.pypi_default_cuda
        return (
            f"vllm {release.version} pins torch {torch.version}, whose PyPI wheel is built for CUDA "
            f"{short(default) if default else '?'}"
            + (f"; vLLM's own kernels for CUDA {short(release.cuda)}" if release.cuda else "")
        )
    where = f"torch {torch.version} for CUDA {short(build.torch_cuda)}" + (
        f" from {build.torch_index}" if build.torch_index else ""
    )
    return (
        f"vllm {release.version}+{build.column} is vLLM's CUDA {short(build.cudas[-1])} build, published with the "
        f"release on GitHub, not on PyPI (compat/vllm.toml other_cuda); it pins {where}"
    )


def _arch_caveats(
    release: VllmRelease, torch: TorchRelease, build: _Build, archs: tuple[str, ...] | None, inherited: str
) -> list[str]:
    """What is not known about the GPU targets of the torch build a plan installs."""
    if archs is None and build.wheel is not None:
        return [
            f"torch {torch.version}'s {build.column} build: its GPU architecture list is not in compat data; "
            f"vLLM's minimum compute capability {release.min_compute_capability} is taken for it (vLLM builds and "
            f"ships vllm {release.version}+{build.column} with it)"
        ]
    if archs is None:
        return [f"the GPU architecture list of torch {torch.version}'s PyPI wheel is not in compat data"]
    if inherited:
        return [f"inferred: torch {torch.version}'s GPU targets ({' '.join(archs)}) are {inherited}"]
    return []


def _commands(pins: tuple[tuple[str, str], ...], build: _Build) -> tuple[str, ...]:
    """pip and uv commands: PyPI's wheel by its pin; another build by its URL with the torch index vLLM's own
    install docs pair it with (``--extra-index-url https://download.pytorch.org/whl/cu${CUDA_VERSION}``)."""
    if build.wheel is None:
        return both_tools(Install(pins_of(pins)))
    extra = (build.torch_index,) if build.torch_index else ()
    return both_tools(Install((Pin("vllm", url=build.wheel),), extra_index_urls=extra))


def _derived(matrix: CompatMatrix, version: Version) -> bool:
    """Whether a release is known only from the `cudadoctor update` cache."""
    release = matrix.vllm_release(version)
    return release is not None and release.derived is not None
