"""Planning installs: which wheels (and images) fit a machine, and why every other candidate does not.

A plan is judged against :class:`Constraints` (the driver, the GPUs, the Python version, the
platform, an optional CUDA ceiling) using only ``compat/`` data: the driver's floor for each CUDA
major (minor-version compatibility), each GPU against the candidate build's architecture list (or,
where the data has no list, against the CUDA majors that dropped it and the CUDA version that first
knew it), the Python versions a release has wheels for, and vLLM's torch pin. Everything here is
pure: the CLI gathers the constraints and prints the result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.rules.archs import covers
from cudadoctor.matrix import CompatMatrix, TorchRelease
from cudadoctor.model import DriverVersion

__all__ = [
    "Constraints",
    "Exclusion",
    "Gpu",
    "Plan",
    "Suggestion",
    "suggest_cupy",
    "suggest_jax",
    "suggest_onnxruntime_gpu",
    "suggest_tensorflow",
    "suggest_tensorrt",
    "suggest_torch",
    "suggest_vllm",
]

PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows")


@dataclass(frozen=True)
class Gpu:
    name: str
    compute_capability: str
    source: str  #: ``probed`` or ``--gpu``


@dataclass(frozen=True)
class Constraints:
    """What a plan must fit. ``None`` means unknown: the rule that needs it is not applied (and said so)."""

    driver: DriverVersion | None = None
    driver_cuda: Version | None = None  #: the CUDA version the driver supports (for images and ranking)
    gpus: tuple[Gpu, ...] = ()
    python: Version | None = None
    platform: str = "linux-x86_64"
    cuda_ceiling: Version | None = None  #: --cuda: no build for a newer CUDA than this
    installed_torch: Version | None = None
    installed_torch_variant: str | None = None
    #: where each constraint came from, for the report (``driver``: ``probed`` / ``--driver`` …)
    origins: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Exclusion:
    """Why one candidate does not fit: the rule, what was observed, what it requires."""

    candidate: str
    rule: str
    observed: str
    required: str


@dataclass(frozen=True)
class Plan:
    target: str
    packages: tuple[tuple[str, str], ...]  #: (name, version) pairs to install
    variant: str  #: ``cu126``, or ``pypi`` for the default PyPI wheel
    cuda: Version | None
    index_url: str | None
    commands: tuple[str, ...]
    why: tuple[str, ...]
    caveats: tuple[str, ...] = ()
    keeps_installed: bool = False
    #: container images that fit the plan and the host, each with why
    images: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Suggestion:
    target: str
    requirement: str
    plans: tuple[Plan, ...]
    excluded: tuple[Exclusion, ...]
    #: what would have to change when nothing fits (or to unlock a better plan)
    advice: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _short(version: Version) -> str:
    return f"{version.major}.{version.minor}"


def _python_ok(release_python: tuple[str, ...], python: Version | None) -> bool:
    return python is None or _short(python) in release_python


def _gpu_rule(
    matrix: CompatMatrix, archs: tuple[str, ...] | None, cuda: Version, gpu: Gpu
) -> tuple[str, str, str] | None:
    """(rule, observed, required) when a build cannot run on ``gpu``; None when it can (or cannot be told)."""
    cc = gpu.compute_capability
    arch = matrix.gpu_archs.get(cc.rstrip("af"))
    if archs is not None:
        families = {a.compute_capability: a.family_runs_on for a in matrix.gpu_archs.values()}
        if covers(archs, cc, families) is None:
            return ("gpu-arch-list", f"{gpu.name}: compute capability {cc}", "one of " + " ".join(archs))
        return None
    if arch is not None and arch.last_cuda_major is not None and cuda.major > arch.last_cuda_major:
        return (
            "cuda-dropped-arch",
            f"{gpu.name}: compute capability {cc} ({arch.name})",
            f"a build for CUDA {arch.last_cuda_major}.x or older",
        )
    if (
        arch is not None
        and arch.first_cuda is not None
        and (cuda.major, cuda.minor)
        < (
            arch.first_cuda.major,
            arch.first_cuda.minor,
        )
    ):
        return (
            "cuda-predates-arch",
            f"{gpu.name}: compute capability {cc} ({arch.name})",
            f"a build for CUDA {_short(arch.first_cuda)} or newer",
        )
    return None


def _driver_rule(matrix: CompatMatrix, c: Constraints, cuda: Version) -> tuple[str, str, str] | None:
    if c.driver is None:
        return None
    floor = matrix.minor_compat(cuda.major)
    if floor is None:
        return ("driver-floor", f"driver {c.driver}", f"CUDA {cuda.major}.x floor not in compat data")
    minimum = floor.min_driver_windows if c.platform == "windows" else floor.min_driver_linux
    if minimum is not None and c.driver < minimum:
        return ("driver-floor", f"driver {c.driver}", f"driver >= {minimum} (any CUDA {cuda.major}.x build)")
    return None


def _driver_arch_rule(matrix: CompatMatrix, c: Constraints) -> list[tuple[str, str, str]]:
    """GPUs this driver cannot run at all, whatever the build (from gpu_archs.toml min_driver_branch)."""
    problems = []
    if c.driver is None:
        return problems
    for gpu in c.gpus:
        arch = matrix.gpu_archs.get(gpu.compute_capability.rstrip("af"))
        if arch is not None and arch.min_driver_branch is not None and c.driver.major < arch.min_driver_branch:
            problems.append(
                ("driver-too-old-for-gpu", f"driver {c.driver}; {gpu.name} ({arch.name})",
                 f"driver branch R{arch.min_driver_branch} or newer")
            )  # fmt: skip
    return problems


def _install_line(tool: str, pins: Iterable[tuple[str, str]], index_url: str | None) -> str:
    head = "python -m pip install" if tool == "pip" else "uv pip install"
    line = head + " " + " ".join(f"{name}=={version}" for name, version in pins)
    return line + (f" --index-url {index_url}" if index_url else "")


def _torch_pins(release: TorchRelease) -> tuple[tuple[str, str], ...]:
    pins = [("torch", str(release.version))]
    if release.torchvision:
        pins.append(("torchvision", str(release.torchvision)))
    if release.torchaudio:
        pins.append(("torchaudio", str(release.torchaudio)))
    return tuple(pins)


#: (release, candidate, the driver it needs) of candidates that fail only for the driver
_DriverOnly = list[tuple[Version, str, tuple[DriverVersion, str]]]


def _start(target: str, matrix: CompatMatrix, c: Constraints, requirement: str):  # type: ignore[no-untyped-def]
    """What every planner starts with: the version filter, empty results, the notes about unknowns,
    and the rules that exclude every candidate whatever the build (a driver older than a GPU)."""
    spec = SpecifierSet(requirement.removeprefix(target).strip()) if requirement else SpecifierSet()
    notes: list[str] = []
    if c.driver is None:
        notes.append("driver unknown: plans are not checked against a driver (give --driver)")
    if not c.gpus:
        notes.append("no GPU known: plans are not checked against a GPU (give --gpu)")
    plans: list[tuple[tuple, Plan]] = []
    excluded: list[Exclusion] = []
    driver_only: _DriverOnly = []
    return spec, plans, excluded, notes, _driver_arch_rule(matrix, c), driver_only


def suggest_torch(matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3) -> Suggestion:
    """Plans for torch (with matching torchvision/torchaudio), best first, and every exclusion."""
    spec, plans, excluded, notes, hard, driver_only = _start("torch", matrix, c, requirement)
    for release in matrix.torch_releases:
        name = f"torch {release.version}"
        if not spec.contains(release.version, prereleases=True):
            continue
        python_list = release.python_aarch64 if c.platform == "linux-aarch64" else release.python
        if not _python_ok(python_list, c.python):
            excluded.append(Exclusion(name, "python", f"Python {_short(c.python)}", "one of " + ", ".join(python_list)))  # type: ignore[arg-type]
            continue
        for candidate_variant, cuda, index_url, label in _torch_candidates(matrix, release, c.platform, excluded):
            who = f"{name} {label}"
            problems = list(hard)
            if c.cuda_ceiling is not None and cuda > c.cuda_ceiling:
                problems.append(("cuda-ceiling", f"CUDA {_short(cuda)}", f"CUDA <= {c.cuda_ceiling} (--cuda)"))
            if rule := _driver_rule(matrix, c, cuda):
                problems.append(rule)
            archs = matrix.torch_arch_list(release.version, candidate_variant)
            for gpu in c.gpus:
                if rule := _gpu_rule(matrix, archs, cuda, gpu):
                    problems.append(rule)
            if problems:
                excluded.extend(Exclusion(who, r, o, q) for r, o, q in problems)
                if {r for r, _o, _q in problems} <= _DRIVER_RULES:
                    needs = _needed_driver(matrix, c, cuda)
                    if needs is not None:
                        driver_only.append((release.version, who, needs))
                continue
            plans.append(_torch_plan(matrix, c, release, candidate_variant, cuda, index_url, label, archs))
    ranked = sorted(plans, key=lambda item: item[0], reverse=True)
    chosen = tuple(_with_images(matrix, c, plan) for _key, plan in ranked[:limit])
    advice = () if chosen else tuple(_advice(c, excluded, "torch", driver_only))
    return Suggestion("torch", requirement or "torch", chosen, tuple(excluded), advice, tuple(notes))


def _torch_candidates(
    matrix: CompatMatrix, release: TorchRelease, platform: str, excluded: list[Exclusion]
) -> list[tuple[str, Version, str | None, str]]:
    """(variant tag, CUDA, index URL or None for PyPI, label) of every CUDA build of a release."""
    name = f"torch {release.version}"
    out: list[tuple[str, Version, str | None, str]] = []
    if platform == "linux-aarch64":
        # Only the default PyPI wheel is sourced for aarch64 (compat/torch.toml pypi_aarch64_cuda).
        if release.pypi_aarch64_cuda is None:
            excluded.append(Exclusion(name, "platform", "linux-aarch64", "a CUDA wheel for aarch64 (none in data)"))
        else:
            tag = f"cu{release.pypi_aarch64_cuda.major}{release.pypi_aarch64_cuda.minor}"
            out.append((tag, release.pypi_aarch64_cuda, None, "from PyPI (aarch64)"))
        return out
    if not release.variants and release.pypi_default_cuda is None:
        excluded.append(Exclusion(name, "data", "no CUDA variants in compat/torch.toml", "a sourced variant list"))
    seen_default = False
    for tag in release.variants:
        variant = matrix.torch_variants.get(tag)
        if variant is None or variant.cuda is None:
            continue  # cpu / rocm builds are not CUDA plans
        is_default = platform == "linux-x86_64" and release.pypi_default_cuda == variant.cuda
        if variant.index_url is None and not is_default:
            excluded.append(
                Exclusion(f"{name} {tag}", "data", "index URL not in compat/torch.toml", "a sourced index URL")
            )
            continue
        if is_default:
            seen_default = True
            out.append((tag, variant.cuda, None, f"from PyPI (CUDA {_short(variant.cuda)})"))
        else:
            out.append((tag, variant.cuda, variant.index_url, f"{tag} from PyTorch's index"))
    if platform == "linux-x86_64" and not seen_default and release.pypi_default_cuda is not None:
        cuda = release.pypi_default_cuda
        out.append((f"cu{cuda.major}{cuda.minor}", cuda, None, f"from PyPI (CUDA {_short(cuda)})"))
    return out


def _torch_plan(
    matrix: CompatMatrix,
    c: Constraints,
    release: TorchRelease,
    variant: str,
    cuda: Version,
    index_url: str | None,
    label: str,
    archs: tuple[str, ...] | None,
) -> tuple[tuple, Plan]:
    pins = _torch_pins(release)
    why = [f"torch {release.version} {label}"]
    caveats = []
    native = c.driver_cuda is not None and (cuda.major, cuda.minor) <= (c.driver_cuda.major, c.driver_cuda.minor)
    if c.driver is not None:
        if native:
            why.append(f"driver {c.driver} supports CUDA {c.driver_cuda}, at least the build's {_short(cuda)}")
        else:
            floor = matrix.minor_compat(cuda.major)
            why.append(
                f"driver {c.driver} runs CUDA {cuda.major}.x builds through minor-version compatibility"
                + (f" (>= {floor.min_driver_linux})" if floor else "")
            )
            caveats.append("minor-version compatibility: code that JIT-compiles newer PTX may need a newer driver")
    if c.gpus and archs is not None:
        why.append("the build's GPU targets (" + " ".join(archs) + ") cover " + ", ".join(g.name for g in c.gpus))
    elif c.gpus:
        caveats.append(f"the {variant} build's GPU architecture list for {release.version} is not in compat data")
    if len(pins) < 3:
        caveats.append("matching torchvision/torchaudio versions are not all in compat data; pin them yourself")
    if release.derived:
        caveats.append(f"torch {release.version} is known from the package index ({release.derived}), not curated data")
    keeps = (
        c.installed_torch is not None
        and Version(c.installed_torch.public) == release.version
        and (c.installed_torch_variant in (None, variant))
    )
    if keeps:
        why.insert(0, "keeps the installed torch")
    commands = (_install_line("pip", pins, index_url), _install_line("uv", pins, index_url))
    plan = Plan(
        "torch", pins, variant if index_url else "pypi", cuda, index_url, commands, tuple(why), tuple(caveats), keeps
    )
    # A plan whose GPU coverage is verified from data ranks above one that is not (correct beats new).
    verified = archs is not None or not c.gpus
    key = (keeps, verified, release.version, native, cuda)
    return key, plan


_DRIVER_RULES = {"driver-floor", "driver-too-old-for-gpu"}


def _needed_driver(matrix: CompatMatrix, c: Constraints, cuda: Version) -> tuple[DriverVersion, str] | None:
    """The oldest driver a candidate failing only driver rules would need: (comparable bound, words)."""
    needs: list[tuple[DriverVersion, str]] = []
    floor = matrix.minor_compat(cuda.major)
    if floor is not None:
        minimum = floor.min_driver_windows if c.platform == "windows" else floor.min_driver_linux
        if minimum is not None and (c.driver is None or c.driver < minimum):
            needs.append((minimum, f"{minimum} or newer"))
    for gpu in c.gpus:
        arch = matrix.gpu_archs.get(gpu.compute_capability.rstrip("af"))
        if (
            arch is not None
            and arch.min_driver_branch
            and c.driver is not None
            and c.driver.major < arch.min_driver_branch
        ):
            needs.append(
                (
                    DriverVersion(f"{arch.min_driver_branch}.0"),
                    f"branch R{arch.min_driver_branch} or newer (for {gpu.name})",
                )
            )
    return max(needs, key=lambda n: n[0]) if needs else None


def _advice(
    c: Constraints,
    excluded: list[Exclusion],
    target: str,
    driver_only: list[tuple[Version, str, tuple[DriverVersion, str]]],
) -> list[str]:
    """What would have to change, from the rules that excluded candidates."""
    rules = {e.rule for e in excluded}
    out = []
    if driver_only:
        # The smallest upgrade that makes something fit, and with it the newest release it allows.
        smallest = min(needs[0] for _r, _c, needs in driver_only)
        _release, candidate, needs = max((d for d in driver_only if d[2][0] == smallest), key=lambda d: d[0])
        out.append(f"upgrade the NVIDIA driver to {needs[1]}: then {candidate} fits")
    elif rules & {"gpu-arch-list", "cuda-dropped-arch", "cuda-predates-arch"}:
        gpus = ", ".join(f"{g.name} ({g.compute_capability})" for g in c.gpus)
        out.append(f"no {target} build in compat data has GPU code for {gpus} that this driver can run")
    if "python" in rules and not out:
        out.append(f"no {target} release in compat data has wheels for Python {_short(c.python) if c.python else '?'}")
    if "cuda-ceiling" in rules and not out:
        out.append("raise --cuda: every build that fits otherwise needs a newer CUDA")
    if not out:
        out.append(f"no {target} candidate fits; see the exclusions for each rule")
    return out


def _cc_tuple(cc: str) -> tuple[int, int]:
    major, _, minor = cc.rstrip("af").partition(".")
    return int(major), int(minor or 0)


def suggest_vllm(matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3) -> Suggestion:
    """Plans for vLLM: its wheel pulls the torch it pins from PyPI, so both must fit the machine."""
    spec, plans, excluded, notes, hard, driver_only = _start("vllm", matrix, c, requirement)
    for release in matrix.vllm_releases:
        who = f"vllm {release.version}"
        if not spec.contains(release.version, prereleases=True):
            continue
        if c.platform != "linux-x86_64" or release.linux_x86_64_tag is None:
            excluded.append(Exclusion(who, "platform", c.platform, "linux-x86_64 (the only vLLM wheels in data)"))
            continue
        if c.python is not None and not _vllm_python_ok(release, c.python):
            shown = str(release.requires_python) if release.requires_python else ", ".join(release.python)
            excluded.append(Exclusion(who, "python", f"Python {_short(c.python)}", shown or "unknown"))
            continue
        torch = _pinned_torch(matrix, release)
        if torch is None or torch.pypi_default_cuda is None:
            excluded.append(
                Exclusion(who, "data", f"torch pin {release.torch}", "that torch release in compat/torch.toml")
            )
            continue
        cudas = sorted({v for v in (release.cuda, torch.pypi_default_cuda) if v is not None})
        problems = list(hard)
        for cuda in cudas:
            if c.cuda_ceiling is not None and cuda > c.cuda_ceiling:
                problems.append(("cuda-ceiling", f"CUDA {_short(cuda)}", f"CUDA <= {c.cuda_ceiling} (--cuda)"))
            if rule := _driver_rule(matrix, c, cuda):
                problems.append(rule)
        torch_variant = f"cu{torch.pypi_default_cuda.major}{torch.pypi_default_cuda.minor}"
        archs = matrix.torch_arch_list(torch.version, torch_variant)
        floor = release.min_compute_capability
        if c.gpus and floor is None:
            # vLLM states a minimum compute capability in every release's docs; where compat data does not
            # have it for this release, support for the GPU cannot be verified, so the release is not planned.
            excluded.append(
                Exclusion(who, "data", "minimum compute capability not in compat/vllm.toml", "a sourced minimum")
            )
            continue
        for gpu in c.gpus:
            if floor is not None and _cc_tuple(gpu.compute_capability) < _cc_tuple(floor):
                problems.append(("vllm-min-compute-capability", f"{gpu.name}: {gpu.compute_capability}", f">= {floor}"))
            elif rule := _gpu_rule(matrix, archs, torch.pypi_default_cuda, gpu):
                problems.append((rule[0], rule[1], f"{rule[2]} (the torch {torch.version} it pins)"))
        if problems:
            excluded.extend(Exclusion(who, r, o, q) for r, o, q in problems)
            if {r for r, _o, _q in problems} <= _DRIVER_RULES:
                needs = [n for n in (_needed_driver(matrix, c, cuda) for cuda in cudas) if n]
                if needs:
                    driver_only.append((release.version, who, max(needs, key=lambda n: n[0])))
            continue
        plans.append(
            _vllm_plan(c, release, torch, cudas, archs, floor_known=release.min_compute_capability is not None)
        )
    ranked = sorted(plans, key=lambda item: item[0], reverse=True)
    chosen = tuple(_with_images(matrix, c, plan) for _key, plan in ranked[:limit])
    advice: tuple[str, ...] = ()
    if not chosen:
        found = _advice(c, excluded, "vLLM", driver_only)
        if any(e.rule == "vllm-min-compute-capability" for e in excluded) and not driver_only:
            best = suggest_torch(matrix, c, limit=1)
            gpus = ", ".join(f"{g.compute_capability}" for g in c.gpus)
            tail = (
                f"; the newest torch that does is {best.plans[0].packages[0][1]} ({best.plans[0].variant})"
                if best.plans
                else ""
            )
            found = [f"no vLLM release in compat data supports compute capability {gpus}{tail}"]
        advice = tuple(found)
    return Suggestion("vllm", requirement or "vllm", chosen, tuple(excluded), advice, tuple(notes))


def _vllm_python_ok(release, python: Version) -> bool:  # type: ignore[no-untyped-def]
    if release.requires_python is not None and not release.requires_python.contains(python, prereleases=True):
        return False
    if release.abi3 and release.python:
        return (python.major, python.minor) >= tuple(int(p) for p in release.python[0].split("."))
    return not release.python or _short(python) in release.python


def _pinned_torch(matrix: CompatMatrix, release) -> TorchRelease | None:  # type: ignore[no-untyped-def]
    if release.torch is None:
        return None
    fitting = [t for t in matrix.torch_releases if release.torch.contains(t.version, prereleases=True)]
    return max(fitting, key=lambda t: t.version) if fitting else None


def _vllm_plan(c, release, torch, cudas, archs, *, floor_known: bool) -> tuple[tuple, Plan]:  # type: ignore[no-untyped-def]
    pins = (("vllm", str(release.version)),)
    cuda = cudas[-1]
    why = [
        f"vllm {release.version} pins torch {torch.version}, whose PyPI wheel is built for CUDA "
        f"{_short(torch.pypi_default_cuda)}"
        + (f"; vLLM's own kernels for CUDA {_short(release.cuda)}" if release.cuda else "")
    ]
    caveats = []
    native = c.driver_cuda is not None and (cuda.major, cuda.minor) <= (c.driver_cuda.major, c.driver_cuda.minor)
    if c.driver is not None:
        why.append(
            f"driver {c.driver} supports CUDA {c.driver_cuda}" if native else
            f"driver {c.driver} runs CUDA {cuda.major}.x through minor-version compatibility"
        )  # fmt: skip
    if c.gpus:
        if floor_known:
            why.append(f"every GPU meets vLLM's minimum compute capability {release.min_compute_capability}")
        else:
            caveats.append(f"vLLM {release.version}'s minimum compute capability is not in compat data")
        if archs is None:
            caveats.append(f"the GPU architecture list of torch {torch.version}'s PyPI wheel is not in compat data")
    if release.derived:
        caveats.append(f"vLLM {release.version} is known from the package index ({release.derived}), not curated data")
    if c.installed_torch is not None and Version(c.installed_torch.public) != torch.version:
        caveats.append(f"replaces the installed torch {c.installed_torch} with {torch.version} (vLLM pins it)")
    commands = (_install_line("pip", pins, None), _install_line("uv", pins, None))
    plan = Plan("vllm", pins, "pypi", cuda, None, commands, tuple(why), tuple(caveats))
    verified = (floor_known and archs is not None) or not c.gpus
    return (verified, release.version, native), plan


_OS_PREFERENCE = ("ubuntu24.04", "ubuntu22.04", "ubuntu20.04")


def _with_images(matrix: CompatMatrix, c: Constraints, plan: Plan) -> Plan:
    """The plan with the container images (from compat/images.toml) that fit it and the host's driver.

    An nvidia/cuda image sets NVIDIA_REQUIRE_CUDA=cuda>=X.Y (doctor-anchors §8, seen in the 13.0.2
    image): the driver's own CUDA must be at least the image's, unless cuda-compat applies. pip wheels
    bring their own CUDA runtime, so the image only has to run on the host.
    """
    images: list[tuple[str, str]] = []
    data = matrix.table("images")
    if plan.cuda is not None:
        fitting = []
        for tag in data.get("nvidia_cuda_tag", []):
            cuda = Version(tag["cuda"])
            if tag.get("flavour") != "runtime" or tag.get("variant") or tag.get("os") not in _OS_PREFERENCE:
                continue
            if cuda.major != plan.cuda.major or (cuda.major, cuda.minor) > (plan.cuda.major, plan.cuda.minor):
                continue
            if c.driver_cuda is not None and (cuda.major, cuda.minor) > (c.driver_cuda.major, c.driver_cuda.minor):
                continue
            fitting.append((cuda, -_OS_PREFERENCE.index(tag["os"]), tag["tag"]))
        if fitting:
            cuda, _os, tag = max(fitting)
            why = f"CUDA {cuda} runtime base (requires a driver with CUDA >= {_short(cuda)}"
            why += f"; this one has {c.driver_cuda})" if c.driver_cuda else ")"
            images.append((f"nvidia/cuda:{tag}", why))
    for name, version in plan.packages:
        if name == "torch":
            for record in data.get("pytorch_image", []):
                if record.get("torch") == version and record.get("flavour") == "runtime":
                    images.append(
                        (f"pytorch/pytorch:{record['tag']}", f"torch {version} with CUDA {record.get('cuda')}")
                    )
        if name == "vllm":
            known = [r for r in data.get("vllm_image", []) if r.get("vllm") == version]
            if known:
                images.append((f"vllm/vllm-openai:{known[0]['tag']}", f"the vLLM {version} image"))
            elif data.get("vllm_image_scheme"):
                images.append(
                    (
                        f"vllm/vllm-openai:v{version}",
                        "from vLLM's documented tag scheme (v<version>); its CUDA is not in data",
                    )
                )
    return replace(plan, images=tuple(images))


# --- JAX and TensorRT: one wheel per CUDA major -------------------------------------------------------------


def _per_major_plans(
    target: str,
    matrix: CompatMatrix,
    c: Constraints,
    requirement: str,
    candidates: list[tuple[Version, str | None, tuple[str, ...], list[tuple[int, str]]]],
    limit: int,
) -> Suggestion:
    """Plans for packages published once per CUDA major (``jax[cuda12]``, ``tensorrt-cu12``).

    ``candidates``: (version, requires-python, python versions, [(CUDA major, package to install)]). The
    exact CUDA minor of these wheels is not in compat data, so only rules that need the major apply: the
    driver's floor for that major, the CUDA major that dropped a GPU's architecture, the driver branch a GPU
    needs, and the Python version. The GPU floor of each package is not in data and is said so.
    """
    spec, plans, excluded, notes, hard, driver_only = _start(target, matrix, c, requirement)
    if target == "onnxruntime-gpu":  # the requirement names the package, which has a dash
        spec = SpecifierSet(requirement.removeprefix("onnxruntime-gpu").strip()) if requirement else SpecifierSet()
    if c.platform != "linux-x86_64":
        notes.append(f"{target}: only Linux x86_64 CUDA wheels are in compat data")
    for version, requires_python, pythons, majors in candidates:
        who = f"{target} {version}"
        if not spec.contains(version, prereleases=True):
            continue
        if c.platform != "linux-x86_64":
            excluded.append(Exclusion(who, "platform", c.platform, "linux-x86_64"))
            continue
        if c.python is not None and (
            (requires_python and not SpecifierSet(requires_python).contains(c.python, prereleases=True))
            or (pythons and _short(c.python) not in pythons)
        ):
            excluded.append(
                Exclusion(who, "python", f"Python {_short(c.python)}", requires_python or ", ".join(pythons))
            )
            continue
        for major, install in sorted(majors, reverse=True):
            cuda = Version(f"{major}.0")
            name = f"{who} (CUDA {major})"
            problems = list(hard)
            if c.cuda_ceiling is not None and major > c.cuda_ceiling.major:
                problems.append(("cuda-ceiling", f"CUDA {major}.x", f"CUDA <= {c.cuda_ceiling} (--cuda)"))
            if rule := _driver_rule(matrix, c, cuda):
                problems.append(rule)
            for gpu in c.gpus:
                rule = _gpu_rule(matrix, None, cuda, gpu)
                if rule and rule[0] == "cuda-dropped-arch":
                    problems.append(rule)
            if problems:
                excluded.extend(Exclusion(name, r, o, q) for r, o, q in problems)
                if {r for r, _o, _q in problems} <= _DRIVER_RULES and (needs := _needed_driver(matrix, c, cuda)):
                    driver_only.append((version, name, needs))
                continue
            why = [f"{target} {version} for CUDA {major}.x"]
            if c.driver is not None:
                why.append(f"driver {c.driver} runs CUDA {major}.x builds (minor-version compatibility floor met)")
            caveats = [f"{target}'s minimum GPU compute capability is not in compat data"] if c.gpus else []
            commands = (f"python -m pip install '{install}=={version}'", f"uv pip install '{install}=={version}'")
            plan = Plan(
                target,
                ((install, str(version)),),
                f"cuda{major}",
                Version(f"{major}.0"),
                None,
                commands,
                tuple(why),
                tuple(caveats),
            )
            plans.append(((version, major), plan))
    ranked = sorted(plans, key=lambda item: item[0], reverse=True)
    chosen = tuple(plan for _key, plan in ranked[:limit])
    advice = () if chosen else tuple(_advice(c, excluded, target, driver_only))
    return Suggestion(target, requirement or target, chosen, tuple(excluded), advice, tuple(notes))


def suggest_jax(matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3) -> Suggestion:
    """``jax[cudaNN]`` plans from compat/ecosystem.toml (the CUDA plugins published per release)."""
    candidates = []
    for r in matrix.table("ecosystem").get("jax", []):
        if r.get("yanked"):
            continue
        majors = []
        for plugin in r.get("cuda_plugins", []):
            match = re.fullmatch(r"jax-cuda(\d+)-plugin", plugin)
            if match:
                majors.append((int(match.group(1)), f"jax[cuda{match.group(1)}]"))
        if majors:
            candidates.append((Version(r["version"]), r.get("requires_python"), (), majors))
    return _per_major_plans("jax", matrix, c, requirement, candidates, limit)


def suggest_tensorrt(matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3) -> Suggestion:
    """``tensorrt-cuNN`` plans from compat/tensorrt.toml (the per-CUDA packages published per release)."""
    candidates = []
    for r in matrix.table("tensorrt").get("release", []):
        if r.get("early_access"):
            continue
        majors = []
        for package in r.get("packages", []):
            match = re.fullmatch(r"tensorrt-cu(\d+)", package)
            if match:
                majors.append((int(match.group(1)), package))
        if majors:
            candidates.append((Version(r["version"]), r.get("requires_python"), tuple(r.get("python", ())), majors))
    return _per_major_plans("tensorrt", matrix, c, requirement, candidates, limit)


def suggest_cupy(matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3) -> Suggestion:
    """``cupy-cudaNNx`` plans (compat/ecosystem.toml: one package per CUDA major, its newest release)."""
    candidates = [
        (Version(r["last_version"]), r.get("latest_requires_python"), (), [(int(r["cuda_major"]), r["package"])])
        for r in matrix.table("ecosystem").get("cupy", [])
        if r.get("last_version")
    ]
    return _per_major_plans("cupy", matrix, c, requirement, candidates, limit)


def suggest_onnxruntime_gpu(
    matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3
) -> Suggestion:
    """``onnxruntime-gpu`` plans (compat/ecosystem.toml: the CUDA major of each release's PyPI wheel)."""
    candidates = [
        (Version(r["version"]), r.get("requires_python"), (), [(int(r["cuda_major"]), "onnxruntime-gpu")])
        for r in matrix.table("ecosystem").get("onnxruntime_gpu", [])
        if r.get("cuda_major")
    ]
    return _per_major_plans("onnxruntime-gpu", matrix, c, requirement, candidates, limit)


def suggest_tensorflow(matrix: CompatMatrix, c: Constraints, requirement: str = "", *, limit: int = 3) -> Suggestion:
    """``tensorflow[and-cuda]`` plans (compat/ecosystem.toml: the CUDA each release was tested with)."""
    candidates = [
        (Version(r["version"]), r.get("requires_python"), (), [(Version(r["cuda"]).major, "tensorflow[and-cuda]")])
        for r in matrix.table("ecosystem").get("tensorflow", [])
        if r.get("cuda")
    ]
    return _per_major_plans("tensorflow", matrix, c, requirement, candidates, limit)
