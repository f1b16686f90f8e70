"""CD4xx: the Python packages: pins between them, and builds that cannot use the GPU."""

# CD4xx: Python packages
#   CD401  every pinned dependency between the examined packages is installed at the pinned version
#   CD402  (cpu_builds.py) the GPU frameworks are CUDA builds where an NVIDIA driver or GPU is present
#   CD403  JAX's CUDA plugin matches jaxlib; the cuDNN wheel meets the plugin's minimum
#   CD404  the installed or requested torch, TensorFlow and vLLM releases publish wheels for this Python
# CD5xx: vLLM
#   CD501  every GPU meets the installed vLLM's minimum compute capability

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.bounded import requirement_or_none
from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.checks.presence import gpus_to_judge
from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import TorchRelease
from cudadoctor.facts.derive import GpuEvidence
from cudadoctor.facts.model import DriverInfo, GpuInfo, HostInfo, InstalledPackage, LibraryCopy, PythonEnv
from cudadoctor.facts.names import canonical_name, is_interesting
from cudadoctor.facts.requires import read_requirement
from cudadoctor.fixes import Install, Pin
from cudadoctor.fixes.build import pip
from cudadoctor.fixes.parse import parse_pin
from cudadoctor.rules.driver import driver_runs_cuda
from cudadoctor.rules.gpus import vllm_supports_gpu
from cudadoctor.rules.jax import cudnn_meets_jaxlib_build, jaxlib_cudnn_build
from cudadoctor.rules.verdict import Verdict
from cudadoctor.rules.wheels import (
    PlatformWheels,
    free_threaded,
    freethreaded_has_wheels,
    release_has_wheels,
    vllm_has_wheels,
    wheel_platform,
)

if TYPE_CHECKING:
    from packaging.requirements import Requirement

__all__ = ["CD401", "CD403", "CD404", "CD501", "unmet_requirements"]


def unmet_requirements(
    packages: dict[str, InstalledPackage],
) -> list[tuple[InstalledPackage, Requirement, InstalledPackage | None]]:
    """(dependent, requirement, installed) for every requirement between examined packages that fails.

    ``installed`` is None when the required package is not installed at all.

    Only requirements whose target cudadoctor examined are judged (it does not scan every
    distribution); their markers were already evaluated for the target interpreter by the probe. Lines are read
    by :func:`~cudadoctor.facts.requires.read_requirement` (``Requirement`` only for an uncommon form); one that fails
    is parsed by ``Requirement`` for its message.
    """
    unmet: list[tuple[InstalledPackage, Requirement, InstalledPackage | None]] = []
    for dependent in packages.values():
        for line in dependent.requires:
            read = read_requirement(line)
            if read is None:
                continue
            name, specifier = read
            target = packages.get(name)
            if target is None:
                # Missing altogether: judged only for names the package probe looks for, so a
                # dependency it never scans is not reported as missing.
                failed = is_interesting(name) and bool(specifier)
            else:
                failed = bool(specifier) and not specifier.contains(target.version, prereleases=True)
            if failed and (req := requirement_or_none(line)) is not None:
                unmet.append((dependent, req, target))
    return unmet


class CD401(Check):
    """Every pinned dependency between the installed GPU packages is installed at the pinned version.

    What it checks: the Requires-Dist pins of torch, torchvision, torchaudio, vLLM, xformers,
    flash-attn, JAX and the nvidia-* wheels against the versions actually installed (like
    `pip check`, limited to the packages cudadoctor examines, and without running pip).

    Why it matters: these packages ship compiled code built against one exact version of another:
    vLLM or torchvision built for torch 2.5 fails on torch 2.6 with "undefined symbol" errors; a torch
    wheel pinned to one cuDNN or NCCL wheel may crash or misbehave with another.

    How to fix: install the versions the pin names (the command is given), or upgrade the dependent
    package to the release built for what you have.
    """

    name = "pinned-dependencies-met"
    category = "python"

    def check(self, packages: dict[str, InstalledPackage]) -> Problem | None:
        # a companion's torch pin is CD422's (with the companion made for the installed torch as its fix); with no
        # torch read, CD422 has nothing to judge and the pin is simply unmet
        unmet = [(d, r, t) for d, r, t in unmet_requirements(packages) if t is None or not _companion_pin(d, r)]
        if not unmet:
            return None
        lines = [
            f"{d.name} {d.version} requires {r}, but "
            + (f"{t.name} {t.version} is installed" if t is not None else "it is not installed")
            for d, r, t in unmet
        ]
        pins = sorted({f"{r.name}{r.specifier}" for _d, r, _t in unmet})
        return Problem(
            "; ".join(lines),
            {f"{d.name} {d.version}": f"requires {r} (Requires-Dist, {d.source.where})" for d, r, _t in unmet},
            Remediation(
                "Install the pinned versions, or upgrade the dependent package to the release built for the "
                "installed one.",
                (pip(Install(tuple(parse_pin(p) for p in pins))),),
            ),
        )


def _companion_pin(dependent: InstalledPackage, requirement: Requirement) -> bool:
    """torchvision's / torchaudio's requirement on torch, which CD422 judges."""
    from cudadoctor.rules.companions import COMPANIONS

    return dependent.name in COMPANIONS and canonical_name(requirement.name) == "torch"


def _jax_upgrade(major: object) -> str:
    """``pip install -U 'jax[cudaNN]'``: the extra brings the CUDA plugin and jaxlib of the newest jax
    (https://docs.jax.dev/en/latest/installation.html)."""
    return pip(Install((Pin("jax", extras=(f"cuda{major}",)),), upgrade=True))


class CD403(Check):
    """JAX's CUDA plugin matches jaxlib, and the cuDNN meets what the plugin or the CUDA jaxlib needs.

    What it checks: the jax-cudaNN-plugin / -pjrt version against jaxlib's (they are released together and
    must be equal), and the installed nvidia-cudnn-cuNN wheel against the minimum the plugin release asks for
    (compat/ecosystem.toml, from the plugin's Requires-Dist). A jaxlib that bundles CUDA (before the plugins,
    ``0.4.14+cuda11.cudnn86``) names the cuDNN it was built with in its local tag; some cuDNN copy of that major
    must be at least as new (cudadoctor/rules/jax.py).

    Why it matters: a plugin from another jaxlib release fails to load, and JAX silently falls back to the CPU
    ("An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed"); a cuDNN below
    the minimum fails at the first convolution ("Loaded runtime CuDNN library: 8.5.0 but source was compiled
    with: 8.6.0"). JAX's own cuDNN version check has compared the wrong units since
    2024 (https://github.com/jax-ml/jax/commit/0be07e6aec), so it does not catch this.

    How to fix: install matching versions: pip install -U "jax[cuda13]" (or cuda12).
    """

    name = "jax-plugin-matches-jaxlib"
    category = "python"

    def check(
        self,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        cudnn: tuple[LibraryCopy, ...] = (),
        driver: DriverInfo | None = None,
    ) -> Problem | None:
        jaxlib = packages.get("jaxlib")
        plugins = [p for n, p in packages.items() if re.fullmatch(r"jax-cuda\d+-(plugin|pjrt)", n)]
        if jaxlib is not None and not plugins and jaxlib.version.local:
            # jax[cuda12] only where the driver runs CUDA 12 (unknown driver: as before, the plugin's command)
            runs12 = driver is None or driver_runs_cuda(matrix, 12, driver.version).is_ok
            return _bundled_jaxlib_cudnn(jaxlib, cudnn, upgrade=runs12)
        if jaxlib is None or not plugins:
            raise NotApplicable("JAX's CUDA plugin is not installed")
        problems = [
            f"{p.name} {p.version} does not match jaxlib {jaxlib.version}"
            for p in plugins
            if p.version != jaxlib.version
        ]
        record = matrix.jax_release(jaxlib.version)
        unjudged = []
        for plugin in plugins:
            major = re.search(r"cuda(\d+)", plugin.name).group(1)  # type: ignore[union-attr]
            minimum = record.min_cudnn.get(f"cuda{major}") if record is not None else None
            wheel = packages.get(f"nvidia-cudnn-cu{major}")
            if not plugin.name.endswith("plugin") or wheel is None:
                continue
            if minimum is None:
                unjudged.append(f"the cuDNN minimum of {plugin.name} {plugin.version} (not in compat/ecosystem.toml)")
            elif wheel.version < minimum:
                problems.append(
                    f"nvidia-cudnn-cu{major} {wheel.version} is below {minimum}, the minimum of {plugin.name}"
                )
        if not problems:
            if unjudged:
                raise CannotJudge("; ".join(unjudged))
            return None
        major = re.search(r"cuda(\d+)", plugins[0].name).group(1)  # type: ignore[union-attr]
        return Problem(
            "; ".join(problems),
            {"jaxlib": str(jaxlib.version), **{p.name: str(p.version) for p in plugins}},
            Remediation("Install matching JAX packages.", (_jax_upgrade(major),)),
        )


def _bundled_jaxlib_cudnn(
    jaxlib: InstalledPackage, cudnn: tuple[LibraryCopy, ...], *, upgrade: bool = True
) -> Problem | None:
    """A jaxlib that bundles CUDA (``+cuda11.cudnn86``) against the cuDNN copies of its major (rules/jax.py).

    A problem only when every copy of that major is older than the build's: which copy the loader takes
    first is not modelled here, so one copy that serves is enough. No copy at all is CD304's.
    """
    built = jaxlib_cudnn_build(jaxlib.version)
    if built is None:
        raise CannotJudge(f"the cuDNN jaxlib {jaxlib.version} was built against (its local tag does not say)")
    copies = [c for c in cudnn if c.version is not None and c.version.major == built.major]
    if not copies:
        raise NotApplicable(f"no cuDNN {built.major} copy was found (CD304 judges a missing cuDNN)")
    verdicts = [(c, cudnn_meets_jaxlib_build(built, c.version)) for c in copies if c.version is not None]
    if any(v.is_ok for _c, v in verdicts):
        return None
    return Problem(
        f"jaxlib {jaxlib.version} was built against cuDNN {built} and needs a cuDNN {built.major}.x at least that "
        "new; "
        + ", ".join(f"{c.origin} cuDNN {c.version} ({c.path})" for c, _v in verdicts)
        + f" is older: XLA stops with 'Loaded runtime CuDNN library: {verdicts[0][0].version} but source was "
        f"compiled with: {built}'",
        {"jaxlib": f"{jaxlib.version} (local tag: cuDNN {built})", **{c.path: str(c.version) for c, _v in verdicts}},
        Remediation(
            f"Install a cuDNN {built.major}.x at least {built} where the loader finds it first, or reinstall JAX with "
            "its pip-packaged CUDA libraries in a fresh virtual environment"
            + ("." if upgrade else " (jax[cuda12] needs a driver that runs CUDA 12: upgrade the driver first)."),
            (_jax_upgrade(12),) if upgrade else (),
        ),
    )


class CD501(Check):
    """Every GPU meets the installed vLLM release's minimum compute capability.

    What it checks: each GPU's compute capability against the minimum vLLM states for the installed release
    (compat/vllm.toml). A release known only from `cudadoctor update` keeps the minimum of the newest curated
    release before it, and a finding says *inferred*. Could not judge where no minimum is known.

    Why it matters: below the floor vLLM's kernels are not built for the GPU: it fails at start-up or at the
    first attention kernel, whatever torch says.

    How to fix: run vLLM on a GPU that meets the floor; `cudadoctor suggest --target vllm` says what fits.
    """

    name = "vllm-compute-capability-floor"
    category = "python"

    def check(
        self,
        vllm: InstalledPackage,
        matrix: CompatMatrix,
        gpus: tuple[GpuInfo, ...] = (),
        gpu_evidence: GpuEvidence | None = None,
    ) -> Problem | None:
        gpus = gpus_to_judge(gpus, gpu_evidence)
        release = matrix.vllm_release(vllm.version)
        if release is None or release.min_compute_capability is None:
            raise CannotJudge(f"no minimum compute capability for vLLM {vllm.version} in compat/vllm.toml")
        below = [
            g
            for g in gpus
            if vllm_supports_gpu(release.min_compute_capability, g.compute_capability, g.name).is_problem
        ]
        if not below:
            return None
        # a release known only from the package index keeps its predecessor's floor: say so
        inferred = f" (inferred: {release.inherited})" if release.inherited else ""
        source = f"inferred: {release.inherited}" if release.inherited else "compat/vllm.toml"
        return Problem(
            f"vLLM {vllm.version} needs compute capability {release.min_compute_capability} or higher{inferred}; "
            + ", ".join(f"GPU {g.index} {g.name} is {g.compute_capability}" for g in below),
            {"vLLM": f"{vllm.version} (minimum {release.min_compute_capability}, {source})"},
            Remediation("Use a GPU that meets the floor (cudadoctor suggest --target vllm).", ()),
        )


class CD404(Check):
    """The installed or requested torch, TensorFlow and vLLM releases publish wheels for this Python version.

    What it checks: the examined interpreter's Python version against the CPython versions the installed torch,
    TensorFlow and vLLM releases have wheels for on the package index, on this platform (compat/torch.toml,
    compat/ecosystem.toml, compat/vllm.toml: the cpXY tags of the wheel file names on PyPI). Where the install
    itself failed, the release that was asked for counts: a `--require 'torch==2.1.0'` (or `tensorflow==…`)
    assertion for a package that is not installed is judged the same way (every release in the data it admits).
    A platform whose wheels are not in the data (PyPI had none, the project's own index may) is not judged.
    A free-threaded interpreter (site-packages in ``lib/python3.Xt``) is judged against torch's free-threaded
    (``cp313t``) wheels, the only ones it installs.

    Why it matters: without a wheel, pip builds from source (hours, and usually without the CUDA kernels),
    resolves to an older release, or stops with "Could not find a version that satisfies the requirement";
    an environment that has the release anyway was built by hand and will not reinstall the same way.

    How to fix: use a Python version the release has wheels for, or a release that has wheels for this Python
    (cudadoctor suggest --target torch).
    """

    name = "python-has-wheels"
    category = "python"
    severity = Status.WARN

    def check(
        self,
        python: PythonEnv,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        host: HostInfo | None = None,
        requirements: tuple[str, ...] = (),
    ) -> Problem | None:
        if python.version is None:
            raise CannotJudge("the Python version is unknown")
        short = f"{python.version.major}.{python.version.minor}"
        platform = wheel_platform(host.os, host.arch) if host is not None else "linux-x86_64"
        requested = {n: s for n in _REQUESTABLE if (s := _requested(requirements, packages, n))}
        if not any(n in packages for n in (*_REQUESTABLE, "vllm")) and not requested:
            raise NotApplicable("neither torch, TensorFlow nor vLLM is installed or required")
        free = free_threaded(python.site_paths)
        missing, unknown = _installed_wheels(packages, matrix, python.version, platform, free)
        for name, specs in requested.items():
            for spec in specs:
                problems, unjudged = _requested_release(matrix, name, spec, python.version, platform, free)
                missing += problems
                unknown += unjudged
        if not missing and unknown:
            raise CannotJudge("; ".join(unknown))
        if not missing:
            return None
        evidence = {"python": f"{python.version} ({python.executable})", "platform": platform}
        if requested:
            evidence["requested"] = ", ".join(f"{n}{s}" for n, specs in requested.items() for s in specs)
        return Problem(
            f"Python {short}: " + "; ".join(missing),
            evidence,
            Remediation("Use a Python version with wheels for these releases, or a release with wheels for "
                        f"Python {short}.", _wheel_fix(matrix, requested, python.version, platform, free)),
        )  # fmt: skip


#: Packages whose requested release CD404 judges when the install failed (their wheels' Pythons are in data).
_REQUESTABLE = ("torch", "tensorflow")
#: Where each one's releases are.
_TABLE = {"torch": "compat/torch.toml", "tensorflow": "compat/ecosystem.toml"}


def _releases(matrix: CompatMatrix, name: str) -> Sequence[PlatformWheels]:
    """The releases of a requestable package in the data."""
    return matrix.torch_releases if name == "torch" else matrix.tensorflow_releases


def _wheels(release: PlatformWheels, python: Version, platform: str, free: bool | None) -> Verdict[str]:
    """A release's wheels for this interpreter: a free-threaded one installs only torch's ``cpXYt`` wheels."""
    if free and isinstance(release, TorchRelease):
        return freethreaded_has_wheels(release, python)
    return release_has_wheels(release, python, platform)


def _no_wheels(verdict: Verdict[str]) -> str:
    """What a release has instead of wheels for this Python (the end of the finding's sentence)."""
    if verdict.detail != "free-threaded":
        return f"wheels for Python {verdict.required}"
    has = verdict.required[:1].isdigit()  # "3.14t", or "none (…)"
    return f"free-threaded wheels for Python {verdict.required}" if has else "no free-threaded wheels"


def _installed_wheels(
    packages: dict[str, InstalledPackage], matrix: CompatMatrix, python: Version, platform: str, free: bool | None
) -> tuple[list[str], list[str]]:
    """(installed releases with no wheels for this Python, what could not be judged) for torch, TF and vLLM."""
    missing: list[str] = []
    unknown: list[str] = []
    for name in _REQUESTABLE:
        installed = packages.get(name)
        if installed is None:
            continue
        public = Version(installed.version.public)
        release = next((r for r in _releases(matrix, name) if r.version == public), None)
        if release is None:
            unknown.append(f"{name} {public}: not in {_TABLE[name]}")
        elif (verdict := _wheels(release, python, platform, free)).is_problem:
            missing.append(f"{name} {release.version} has {_no_wheels(verdict)}")
        elif verdict.is_unknown:
            unknown.append(f"{name} {release.version}: {verdict.missing}")
    vllm = packages.get("vllm")
    if vllm is not None:
        found = matrix.vllm_release(vllm.version)
        wheels = vllm_has_wheels(found, python) if found is not None else None
        if found is not None and wheels is not None and wheels.is_problem:
            says = "requires" if wheels.detail == "requires-python" else "has wheels for"
            missing.append(f"vLLM {found.version} {says} Python {wheels.required}")
        elif wheels is None or wheels.is_unknown:
            unknown.append(f"vLLM {vllm.version}: " + (wheels.missing if wheels else "not in compat/vllm.toml"))
    return missing, unknown


def _requested(requirements: tuple[str, ...], packages: dict[str, InstalledPackage], name: str) -> list[SpecifierSet]:
    """The specifiers of ``--require`` assertions naming ``name`` when it is not installed (the install failed)."""
    if name in packages:
        return []
    found = []
    for text in requirements:
        req = requirement_or_none(text)  # None: CD901 reports an assertion it cannot read
        if req is not None and canonical_name(req.name) == name and str(req.specifier):
            found.append(req.specifier)
    return found


def _requested_release(
    matrix: CompatMatrix, name: str, spec: SpecifierSet, python: Version, platform: str, free: bool | None
) -> tuple[list[str], list[str]]:
    """(why no release of ``name`` the specifier admits installs on this Python, what could not be judged).

    Fine when one release has wheels; a problem when every release is known to have none; could not judge
    when no release is in the data or the data lacks the Python versions of those it holds.
    """
    releases = [r for r in _releases(matrix, name) if spec.contains(r.version, prereleases=True)]
    if not releases:
        return [], [f"the wheels of the requested {name}{spec} (not in {_TABLE[name]})"]
    verdicts = [(r, _wheels(r, python, platform, free)) for r in releases]
    if any(v.is_ok for _r, v in verdicts):
        return [], []
    if not all(v.is_problem for _r, v in verdicts):
        unknown = next(v for _r, v in verdicts if not v.is_problem)
        return [], [f"the requested {name}{spec}: {unknown.missing or 'its wheels are not in data'}"]
    newest, verdict = max(verdicts, key=lambda rv: rv[0].version)
    return [f"the requested {name}{spec} ({newest.version}) has {_no_wheels(verdict)} on {platform}"], []


def _wheel_fix(
    matrix: CompatMatrix, requested: dict[str, list[SpecifierSet]], python: Version, platform: str, free: bool | None
) -> tuple[str, ...]:
    """A pip command for the oldest release with wheels for this Python, for each package that was requested."""
    commands = []
    for name in requested:
        fitting = [r for r in _releases(matrix, name) if _wheels(r, python, platform, free).is_ok]
        if fitting:
            first = min(fitting, key=lambda r: r.version)
            commands.append(pip(Install((Pin(name, f">={first.version}"),))))
    return tuple(commands)
