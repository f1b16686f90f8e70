"""Plans for torch (with matching torchvision and torchaudio): every CUDA build of every release, judged."""

from __future__ import annotations

from typing import NamedTuple

from packaging.version import InvalidVersion, Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import TorchRelease
from cudadoctor.fixes.releases import TorchSource, torch_build_source
from cudadoctor.rules.gpus import cuda_knows_arch
from cudadoctor.rules.wheels import torch_has_wheels
from cudadoctor.suggest.accelerators import NON_CUDA, suggest_torch_without_cuda
from cudadoctor.suggest.advice import advice
from cudadoctor.suggest.constraints import Constraints, Exclusion, Plan, Suggestion, short
from cudadoctor.suggest.images import with_images
from cudadoctor.suggest.install import configured_index_text, torch_install
from cudadoctor.suggest.judge import (
    DRIVER_RULES,
    Reason,
    Run,
    driver_fit,
    driver_reasons,
    gpu_reason,
    index_releases_below,
    needed_driver,
    start,
)

__all__ = [
    "nearest_fitting",
    "pinned_release",
    "plan_for_installed",
    "suggest_torch",
    "toolkit_match",
    "torch_candidates",
]


class Candidate(NamedTuple):
    """One CUDA build of a release: its variant tag, CUDA, index URL (None: PyPI) and label; ``form``: how a
    torch 1.x build installs (compat/torch.toml ``[[install_form]]``: ``index_url`` is then its find-links page or
    extra index)."""

    variant: str
    cuda: Version
    index_url: str | None
    label: str
    form: TorchSource | None = None


def suggest_torch(matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3) -> Suggestion:
    """Plans for torch (with matching torchvision/torchaudio), best first, and every exclusion."""
    if c.accelerator in NON_CUDA:
        return suggest_torch_without_cuda(matrix, c, requirement, limit=limit)
    run, ranked = _ranked(matrix, c, requirement)
    chosen = tuple(with_images(matrix, c, plan) for plan in ranked[:limit])
    run.notes += index_releases_below("torch", ranked[limit:], lambda v: _derived(matrix, v))
    pinned = pinned_release(requirement)  # "no torch 1.6.0 build … has GPU code for …"
    shown = str(pinned) if pinned else None
    found = () if chosen else (*advice(c, run, "torch", pinned=shown), *_nearest_advice(matrix, c, run))
    return Suggestion("torch", requirement or "torch", chosen, tuple(run.excluded), found, tuple(run.notes))


def _ranked(matrix: CompatMatrix, c: Constraints, requirement: str) -> tuple[Run, list[Plan]]:
    """Every CUDA build of the releases ``requirement`` admits, judged: the run and its plans, best first."""
    run = start("torch", matrix, c, requirement)
    for release in matrix.torch_releases:
        if not run.spec.contains(release.version, prereleases=True):
            continue
        if c.python is not None:
            verdict = torch_has_wheels(release, c.python, c.platform)
            if not verdict.is_ok:  # no wheel, or no Python list in data: nothing to plan on
                run.excluded.append(
                    Exclusion(f"torch {release.version}", "python", verdict.observed, "one of " + verdict.required)
                )
                continue
        for candidate in torch_candidates(matrix, release, c.platform, run.excluded, wanted=c.wanted_variant):
            _judge(matrix, c, run, release, candidate)
    return run, [plan for _key, plan in sorted(run.plans, key=lambda item: item[0], reverse=True)]


def pinned_release(requirement: str) -> Version | None:
    """The release a requirement pins exactly (``torch==1.10.1``), None for anything else."""
    spec = requirement.removeprefix("torch").strip()
    if not spec.startswith("==") or any(ch in spec for ch in ",*<>!~"):
        return None
    try:
        return Version(spec[2:].strip())
    except InvalidVersion:
        return None


def nearest_fitting(matrix: CompatMatrix, c: Constraints, pinned: Version) -> Plan | None:
    """The best plan of the release nearest to ``pinned`` that has one (one of its own series first, then the
    nearest in release order, the newer of two equally near):
    what a project pinned to a release no build of which fits this machine can move to with the fewest changes."""
    _run, ranked = _ranked(matrix, c, "")
    versions = sorted({r.version for r in matrix.torch_releases} | {pinned})
    where = {v: i for i, v in enumerate(versions)}
    best: dict[Version, Plan] = {}
    for plan in ranked:  # best first: the first plan of each release is its best
        best.setdefault(Version(Version(plan.packages[0][1]).public), plan)
    if not best:
        return None
    series = (pinned.major, pinned.minor)  # a patch release of the same series first: 1.10.2 -> 1.10.1, not 1.11.0
    nearest = min(best, key=lambda v: ((v.major, v.minor) != series, abs(where[v] - where[pinned]), -where[v]))
    return best[nearest]


def plan_for_installed(matrix: CompatMatrix, c: Constraints, installed: Version) -> Plan | None:
    """The build a check's fix installs for a torch that does not fit this machine: the best build of the installed
    release when one fits (a project pinned to torch 1.10.1 stays on 1.10.1: ``+cu111``), else the best build of the
    nearest release that fits; None when no release fits."""
    pinned = Version(installed.public)
    _run, ranked = _ranked(matrix, c, f"torch=={pinned}")
    return ranked[0] if ranked else nearest_fitting(matrix, c, pinned)


def _nearest_advice(matrix: CompatMatrix, c: Constraints, run: Run) -> list[str]:
    """For a pinned release no build of which fits: the nearest release that does, with its command."""
    pinned = pinned_release(str(run.spec)) if run.spec else None
    if pinned is None:
        return []
    plan = nearest_fitting(matrix, c, pinned)
    if plan is None:
        return [f"no torch release in compat data fits this machine ({pinned} included)"]
    return [f"the nearest release that fits: {plan.why[0]}: {plan.commands[0]}"]


def _judge(matrix: CompatMatrix, c: Constraints, run: Run, release: TorchRelease, candidate: Candidate) -> None:
    """Plan one candidate, or record every rule that excludes it."""
    who = f"torch {release.version} {candidate.label}"
    cuda = candidate.cuda
    problems: list[Reason] = list(run.hard)
    if c.cuda_ceiling is not None and cuda > c.cuda_ceiling:
        problems.append(("cuda-ceiling", f"CUDA {short(cuda)}", f"CUDA <= {c.cuda_ceiling} (--cuda)"))
    problems += driver_reasons(matrix, c, cuda)
    aarch64 = c.platform == "linux-aarch64"
    archs, inherited = matrix.torch_arch_list_or_inherited(release.version, candidate.variant, aarch64=aarch64)
    problems += [reason for gpu in c.gpus if (reason := gpu_reason(matrix, archs, cuda, gpu))]
    if inherited:  # an exclusion that rests on an inherited list says so
        problems = [(rule, seen, f"{needed} (inferred: {inherited})") for rule, seen, needed in problems]
    if not problems:
        run.plans.append(_plan(matrix, c, release, candidate, (archs, inherited)))
        return
    run.exclude(who, problems)
    if {r for r, _o, _q in problems} <= DRIVER_RULES and (needs := needed_driver(matrix, c, cuda)) is not None:
        run.driver_only.append((release.version, who, needs))


def torch_candidates(
    matrix: CompatMatrix, release: TorchRelease, platform: str, excluded: list[Exclusion], *, wanted: str | None = None
) -> list[Candidate]:
    """Every CUDA build of a release on ``platform``; builds the data cannot place are excluded, said why.

    ``wanted``: the build the target names (``cu126``); every other build is excluded by the rule ``variant``.
    """
    mine: list[Exclusion] = []
    found = _all_candidates(matrix, release, platform, mine)
    if wanted is None:
        excluded += mine
        return found
    name = f"torch {release.version}"
    excluded += [e for e in mine if e.candidate in (name, f"{name} {wanted}")]
    others = [Exclusion(f"{name} {c.label}", "variant", c.variant, f"{wanted} (the target)") for c in found]
    excluded += [e for e, c in zip(others, found, strict=True) if c.variant != wanted]
    return [c for c in found if c.variant == wanted]


def _all_candidates(
    matrix: CompatMatrix, release: TorchRelease, platform: str, excluded: list[Exclusion]
) -> list[Candidate]:
    name = f"torch {release.version}"
    if platform == "linux-aarch64":
        return _aarch64_candidates(matrix, release, excluded)
    if not release.variants and release.pypi_default_cuda is None:
        excluded.append(Exclusion(name, "data", "no CUDA variants in compat/torch.toml", "a sourced variant list"))
    out: list[Candidate] = []
    for tag in release.variants:
        variant = matrix.torch_variants.get(tag)
        if variant is None or variant.cuda is None:
            continue  # cpu / rocm builds are not CUDA plans
        if platform == "linux-x86_64" and release.pypi_default_cuda == variant.cuda:
            out.append(Candidate(tag, variant.cuda, None, f"from PyPI (CUDA {short(variant.cuda)})"))
        elif variant.index_url is not None:
            out.append(Candidate(tag, variant.cuda, variant.index_url, f"{tag} from PyTorch's index"))
        elif platform == "linux-x86_64" and (form := torch_build_source(matrix, release, tag)) and form.url:
            where = "page" if form.option == "find-links" else "index"
            out.append(Candidate(tag, variant.cuda, form.url, f"+{tag} from PyTorch's {where}", form))
        else:
            excluded.append(
                Exclusion(f"{name} {tag}", "data", "index URL not in compat/torch.toml", "a sourced index URL")
            )
    default = release.pypi_default_cuda
    if platform == "linux-x86_64" and default is not None and not any(c.index_url is None for c in out):
        out.append(Candidate(f"cu{default.major}{default.minor}", default, None, f"from PyPI (CUDA {short(default)})"))
    return out


def _aarch64_candidates(matrix: CompatMatrix, release: TorchRelease, excluded: list[Exclusion]) -> list[Candidate]:
    """The CUDA builds of a release for Linux aarch64 (SBSA): the default PyPI wheel when it is one
    (``pypi_aarch64_cuda``), and the variants whose index has aarch64 wheels (``variants_aarch64``)."""
    name = f"torch {release.version}"
    out: list[Candidate] = []
    cuda = release.pypi_aarch64_cuda
    if cuda is not None:
        out.append(Candidate(f"cu{cuda.major}{cuda.minor}", cuda, None, "from PyPI (aarch64)"))
    for tag in release.variants_aarch64:
        variant = matrix.torch_variants.get(tag)
        if variant is None or variant.cuda is None or variant.cuda == cuda:
            continue  # PyPI's wheel is that build already
        if variant.index_url is None:
            excluded.append(
                Exclusion(f"{name} {tag}", "data", "index URL not in compat/torch.toml", "a sourced index URL")
            )
        else:
            out.append(Candidate(tag, variant.cuda, variant.index_url, f"{tag} from PyTorch's index (aarch64)"))
    if not out:
        seen = "PyPI's aarch64 wheel is a CPU build" if release.pypi_aarch64_cpu else "linux-aarch64"
        excluded.append(Exclusion(name, "platform", seen, "a CUDA wheel for aarch64 (none in data)"))
    return out


def inferred_gpu_fit(matrix: CompatMatrix, cuda: Version, c: Constraints) -> list[str]:
    """Why a build without an arch list may still run on each GPU: its CUDA knows the architecture."""
    verdicts = [cuda_knows_arch(matrix, cuda, g.compute_capability, g.name) for g in c.gpus]
    return [v.basis for v in verdicts if v.is_ok]


def _driver_why(matrix: CompatMatrix, c: Constraints, cuda: Version) -> tuple[list[str], list[str], bool]:
    """(why, caveats, native) about the driver for a build for ``cuda``."""
    native = c.driver_cuda is not None and (cuda.major, cuda.minor) <= (c.driver_cuda.major, c.driver_cuda.minor)
    if c.driver is None:
        return [], [], native
    verdict = driver_fit(matrix, c, cuda.major)
    if verdict.basis.startswith("forward compatibility"):
        caveat = "forward compatibility: keep that cuda-compat libcuda first on the loader's path"
        return [f"driver {c.driver} runs CUDA {cuda.major}.x builds: {verdict.basis}"], [caveat], native
    if native:
        return [f"driver {c.driver} supports CUDA {c.driver_cuda}, at least the build's {short(cuda)}"], [], native
    floor = matrix.minor_compat(cuda.major)
    why = f"driver {c.driver} runs CUDA {cuda.major}.x builds through minor-version compatibility" + (
        f" (>= {floor.min_driver_linux})" if floor else ""
    )
    caveat = "minor-version compatibility: code that JIT-compiles newer PTX may need a newer driver"
    return [why], [caveat], native


def toolkit_match(c: Constraints, cuda: Version) -> tuple[bool, list[str]]:
    """Whether a build's CUDA major is the toolkit's the user builds with (``--cuda``), and why it matters.

    torch.utils.cpp_extension refuses to build an extension whose nvcc differs from torch's CUDA in major
    (``_check_cuda_version``, https://github.com/pytorch/pytorch/blob/main/torch/utils/cpp_extension.py).
    """
    if c.cuda_ceiling is None or cuda.major != c.cuda_ceiling.major:
        return False, []
    why = (
        f"CUDA {short(cuda)} has the major of your CUDA {c.cuda_ceiling} toolkit (--cuda): extensions built "
        "with its nvcc need torch's CUDA major (torch.utils.cpp_extension checks it)"
    )
    return True, [why]


def _plan(
    matrix: CompatMatrix,
    c: Constraints,
    release: TorchRelease,
    candidate: Candidate,
    arch_list: tuple[tuple[str, ...] | None, str],
) -> tuple[tuple[object, ...], Plan]:
    """The plan for a candidate that fits, and its ranking key (``arch_list``: targets, why inherited)."""
    archs, inherited = arch_list
    driver_why, caveats, native = _driver_why(matrix, c, candidate.cuda)
    toolkit, toolkit_why = toolkit_match(c, candidate.cuda)
    why = [f"torch {release.version} {candidate.label}", *toolkit_why, *driver_why]
    if c.gpus and archs is not None and inherited:
        covered = ", ".join(g.name for g in c.gpus)
        caveats.append(f"inferred: GPU targets ({' '.join(archs)}) cover {covered}; they are {inherited}")
    elif c.gpus and archs is not None:
        why.append("the build's GPU targets (" + " ".join(archs) + ") cover " + ", ".join(g.name for g in c.gpus))
    elif c.gpus:
        caveats.append(
            f"the {candidate.variant} build's GPU architecture list for {release.version} is not in compat data"
        )
        caveats += [f"inferred: {reason}" for reason in inferred_gpu_fit(matrix, candidate.cuda, c)]
    if release.derived:
        caveats.append(f"torch {release.version} is known from the package index ({release.derived}), not curated data")
    url = candidate.index_url
    install = torch_install(c, release, candidate.variant, url, candidate.form)
    if install.keeps:
        why.insert(0, "keeps the installed torch")
    elif url is None and c.user_index is not None:
        why.append(f"installs from {configured_index_text(c.user_index)}: it must serve PyPI's torch")
    variant = candidate.variant if url else "pypi"
    plan = Plan(
        "torch", install.pins, variant, candidate.cuda, url, install.commands, tuple(why),
        (*caveats, *install.caveats), install.keeps,
        index_option=candidate.form.option if candidate.form else "index-url",
    )  # fmt: skip
    # A plan whose GPU coverage is verified from data ranks above one that is not (correct beats new);
    # those are labelled: an "inferred:" caveat says what the GPU fit rests on, or the list is missing.
    verified = (archs is not None and not inherited) or not c.gpus
    return (install.keeps, toolkit, verified, release.version, native, candidate.cuda), plan


def _derived(matrix: CompatMatrix, version: Version) -> bool:
    """Whether a release is known only from the `cudadoctor update` cache."""
    release = matrix.torch_release(version)
    return release is not None and release.derived is not None
