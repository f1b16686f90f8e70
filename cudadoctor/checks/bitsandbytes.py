"""CD435-CD437: bitsandbytes' native library for this machine, from files (bitsandbytes and torch are never imported).

bitsandbytes ships one ``libbitsandbytes_cuda<XY>.so`` per CUDA version and loads the one named by torch's CUDA
build or by ``BNB_CUDA_VERSION`` (compat/bitsandbytes.toml, applied by cudadoctor/rules/bitsandbytes.py).
"""

# CD4xx: Python packages
#   CD435  the installed bitsandbytes ships a library for the CUDA it picks (torch's CUDA build)
#   CD436  BNB_CUDA_VERSION names a library the installed bitsandbytes ships
#   CD437  the CUDA libraries the library it loads needs are found, or already loaded by torch

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.derive import GpuEvidence
from cudadoctor.facts.model import GpuInfo, HostInfo, InstalledPackage, LoaderView, NeededLibrary, PythonEnv
from cudadoctor.record import record
from cudadoctor.rules.bitsandbytes import (
    JETSON_SOURCE,
    BnbLoad,
    bnb_library,
    library_cuda,
    pypi_wheel_on_jetson,
    release_for_cuda,
)
from cudadoctor.rules.verdict import Verdict

if TYPE_CHECKING:
    from cudadoctor.data.rows import BitsandbytesSelection, BitsandbytesWheel

__all__ = ["CD435", "CD436", "CD437"]

_VAR = "BNB_CUDA_VERSION"


@record
class _Setting:
    """What decides which library the installed bitsandbytes loads here."""

    bnb: InstalledPackage
    torch: InstalledPackage
    torch_cuda: Version
    wheel: BitsandbytesWheel
    selection: BitsandbytesSelection
    arch: str
    highest_cc: str | None
    override: str | None  #: BNB_CUDA_VERSION as set (None: unset, or the release does not read it)
    jetson: str | None = None  #: the L4T release on a Jetson (``R36.4.3``)


def _highest_cc(gpus: tuple[GpuInfo, ...]) -> str | None:
    """The highest compute capability among the GPUs (bitsandbytes takes the highest); None when one is unknown."""
    ccs = [g.compute_capability for g in gpus]
    if not ccs or any(c is None for c in ccs):
        return None
    return max((c for c in ccs if c is not None), key=Version)


def _setting(
    packages: dict[str, InstalledPackage],
    matrix: CompatMatrix,
    host: HostInfo,
    gpus: tuple[GpuInfo, ...],
    gpu_evidence: GpuEvidence | None,
    env: dict[str, str],
) -> _Setting | Problem:
    """The facts the three checks judge, or CD435's problem when no wheel for this machine's CPU exists."""
    bnb = packages.get("bitsandbytes")
    if bnb is None:
        raise NotApplicable("bitsandbytes is not installed")
    torch = packages.get("torch")
    if torch is None:
        raise NotApplicable("torch is not installed (bitsandbytes picks its library by torch's CUDA build)")
    if gpu_evidence is None:
        raise NotApplicable("no NVIDIA GPU: bitsandbytes loads its CPU library")
    if torch.cuda_variant is None:
        raise CannotJudge(f"torch {torch.version}'s CUDA build (neither its version nor torch/version.py says)")
    if not torch.cuda_variant.startswith("cu") or torch.cuda_build is None:
        raise NotApplicable(f"torch {torch.version} is not a CUDA build: bitsandbytes loads no CUDA library (CD402)")
    try:
        torch_cuda = Version(torch.cuda_build)
    except InvalidVersion:
        raise CannotJudge(f"torch's CUDA build {torch.cuda_build!r} does not parse") from None
    if bnb.installer is None or bnb.installer.lower() == "conda":
        # conda-forge's bitsandbytes is its own build, and an egg or setup.py install carries no INSTALLER: the
        # libraries the PyPI wheel of that version ships say nothing about what this one has
        how = "conda" if bnb.installer else "no INSTALLER file (an egg or a setup.py install)"
        raise CannotJudge(f"the libraries bitsandbytes {bnb.version} has ({how}: not a PyPI wheel)")
    selection = matrix.bitsandbytes_selection(bnb.version)
    wheel = matrix.bitsandbytes_wheel(bnb.version, host.arch)
    if wheel is None or selection is None:
        other = next((w for w in matrix.bitsandbytes_wheels if w.version == Version(bnb.version.public)), None)
        if other is not None and selection is not None:
            return _foreign_wheel(other, host, torch, torch_cuda, matrix, gpus, bnb)
        raise CannotJudge(
            f"the libraries bitsandbytes {bnb.version} ships for {host.arch} (not in compat/bitsandbytes.toml: "
            "a source build, or a release newer than the data)"
        )
    override = env.get(_VAR) if selection.override == _VAR else None
    return _Setting(bnb, torch, torch_cuda, wheel, selection, host.arch, _highest_cc(gpus), override, host.jetson_l4t)


def _loadable(setting: _Setting | Problem) -> _Setting:
    """The setting, for CD436 and CD437; not applicable where no library of the wheel loads on this CPU (CD435)."""
    if isinstance(setting, Problem):
        raise NotApplicable("no bitsandbytes library for this CPU (CD435)")
    return setting


def _python(python: PythonEnv | None) -> Version | None:
    return python.version if python is not None else None


def _release_fix(
    matrix: CompatMatrix, setting_arch: str, torch: InstalledPackage, torch_cuda: Version,
    installed: InstalledPackage, highest_cc: str | None, python: Version | None,
    packages: dict[str, InstalledPackage], jetson: str | None = None,
) -> tuple[str, tuple[str, ...]]:  # fmt: skip
    """The words and the pip command of the bitsandbytes release that loads a library for torch's CUDA (on a Jetson
    none from PyPI: its aarch64 wheels are server-ARM builds)."""
    if jetson is not None:
        return _JETSON_FIX, ()
    from cudadoctor.fixes import Install, Pin
    from cudadoctor.fixes.build import pip, taking_effect
    from cudadoctor.fixes.machine import installed_versions

    wheels = [w for w in matrix.bitsandbytes_wheels if w.arch == setting_arch]
    selections = {w.version: s for w in wheels if (s := matrix.bitsandbytes_selection(w.version)) is not None}
    found = release_for_cuda(wheels, selections, torch_cuda, torch.version, python, highest_cc, installed.version)
    if found is None:
        return (
            f"No bitsandbytes release on PyPI ships a {setting_arch} library for CUDA {torch_cuda} that installs "
            f"beside torch {torch.version}: install a torch build for a CUDA version bitsandbytes ships.",
            (),
        )
    command = taking_effect(Install((Pin.exact("bitsandbytes", str(found.version)),)), installed_versions(packages))
    load = bnb_library(selections[found.version], found, torch_cuda, None, highest_cc).detail
    what = (
        f"loads its library for CUDA {library_cuda(load.loads)} with torch's CUDA {torch_cuda} (the nearest of that "
        "major)"
        if load is not None and load.loads and load.nearest
        else f"ships the library for CUDA {torch_cuda}"
    )
    return f"Install bitsandbytes {found.version}, which {what}.", (pip(command),)


def _foreign_wheel(
    other: BitsandbytesWheel, host: HostInfo, torch: InstalledPackage, torch_cuda: Version, matrix: CompatMatrix,
    gpus: tuple[GpuInfo, ...], bnb: InstalledPackage,
) -> Problem:  # fmt: skip
    """bitsandbytes' only Linux wheel of that release (py3-none-any up to 0.42.0) holds libraries for another CPU."""
    arch = host.arch
    text, commands = _release_fix(
        matrix, arch, torch, torch_cuda, bnb, _highest_cc(gpus), None, {"bitsandbytes": bnb}, host.jetson_l4t
    )
    return Problem(
        f"bitsandbytes {bnb.version}'s wheel ({other.wheel}) ships libraries built for {other.arch}, not {arch}: "
        "none of them loads here",
        {"bitsandbytes": f"{bnb.version} ({bnb.source.where})", "machine": arch},
        Remediation(text, commands),
    )


_JETSON_FIX = (
    "On a Jetson, build bitsandbytes on the device (for its L4T CUDA) or install it from Jetson AI Lab's index: "
    f"PyPI's aarch64 wheels are built for server ARM (SBSA) CUDA, not L4T ({JETSON_SOURCE})."
)


def _on_jetson(setting: _Setting) -> Problem:
    """A PyPI aarch64 wheel on a Jetson: built for SBSA CUDA, it fails at the first kernel there."""
    verdict = pypi_wheel_on_jetson(setting.jetson or "", setting.torch_cuda)
    if verdict.is_unknown:
        raise CannotJudge(verdict.missing)
    return Problem(
        f"bitsandbytes {setting.bnb.version} is {setting.wheel.wheel}, built for server ARM (SBSA) CUDA; on this "
        f'Jetson (L4T {setting.jetson}) it fails at its first kernel ("Error named symbol not found", '
        "bitsandbytes#1930)",
        {**_evidence(setting), "Jetson": f"L4T {setting.jetson} (/etc/nv_tegra_release)"},
        Remediation(_JETSON_FIX),
    )


def _verdict(setting: _Setting, override: str | None) -> Verdict[BnbLoad]:
    return bnb_library(setting.selection, setting.wheel, setting.torch_cuda, override, setting.highest_cc)


def _consequence(load: BnbLoad | None) -> str:
    if load is not None and load.fallback:
        return (
            f'it loads {load.fallback} instead ("CUDA Setup failed despite GPU being available", '
            '"compiled without GPU support")'
        )
    return 'it loads no library ("Configured CUDA binary not found" on first use)'


def _evidence(setting: _Setting) -> dict[str, str]:
    return {
        "bitsandbytes": f"{setting.bnb.version} ({setting.bnb.source.where}); ships {setting.wheel.wheel}",
        "torch": f"{setting.torch.version}: CUDA {setting.torch_cuda} ({setting.torch.cuda_variant_source})",
        "selection": f"as {' and '.join(setting.selection.members)} of that release pick (compat/bitsandbytes.toml)",
    }


def _same_major_override(setting: _Setting) -> str:
    """The override that keeps the installed release working: its newest library of torch's CUDA major not newer
    than torch's CUDA (CUDA minor-version compatibility; the maintainers' workaround, bitsandbytes#1510, #1848)."""
    if setting.selection.override is None:
        return ""
    older = sorted(
        (cuda, name)
        for name in setting.wheel.libraries
        if (cuda := library_cuda(name)) is not None and "_no" not in name
        and cuda.major == setting.torch_cuda.major and cuda < setting.torch_cuda
    )  # fmt: skip
    if not older:
        return ""
    cuda = older[-1][0]
    tag = f"{cuda.major}{cuda.minor}"
    if not _verdict(setting, tag).is_ok:  # 0.40.1.post1-0.43.x build a wrong name for _nocublaslt (PR #1318)
        return ""
    return (
        f" Or keep bitsandbytes {setting.bnb.version} and set {setting.selection.override}={tag}: "
        f"its library for CUDA {cuda}, the same major as torch's CUDA {setting.torch_cuda}."
    )


def _overridden(setting: _Setting) -> bool:
    """Whether BNB_CUDA_VERSION decides the name: set and not empty (an empty one raises only where the release
    takes digits only)."""
    return setting.override is not None and (bool(setting.override) or setting.selection.override_digits_only)


class CD435(Check):
    """The installed bitsandbytes ships a native library for torch's CUDA build.

    What it checks: the ``libbitsandbytes_cuda<XY>.so`` that the installed bitsandbytes release looks for beside
    the installed torch (from 0.40.1 it takes torch.version.cuda: torch 2.7.1+cu128 -> ``cuda128``; below compute
    capability 7.5 the ``_nocublaslt`` variant up to 0.44.1; from 0.50.0 the nearest version of the same CUDA
    major), against the libraries that release's wheel ships for this CPU (compat/bitsandbytes.toml, read from
    every Linux wheel on PyPI), on a machine with an NVIDIA GPU. Only when BNB_CUDA_VERSION does not choose
    the library (CD436). Releases before 0.40.1 pick by the first libcudart.so they find, and a conda or egg install
    is not the PyPI wheel: could not judge. On a
    Jetson (L4T before R38, CUDA 12), a PyPI wheel at all: the aarch64 ones are built for server-ARM CUDA.

    Why it matters: a release older than torch's CUDA has no library for it: up to 0.45.x bitsandbytes loads
    libbitsandbytes_cpu.so ("CUDA Setup failed despite GPU being available", "compiled without GPU support"), from
    0.46.0 it raises "Configured CUDA binary not found" on first use; 8-bit and 4-bit layers do not work.

    How to fix: install the bitsandbytes release the finding names (the first newer release that ships a library
    for torch's CUDA and accepts the installed torch), or a torch build for a CUDA version it ships.
    """

    name = "bitsandbytes-ships-torch-cuda"
    category = "python"
    severity = Status.FAIL

    def check(
        self,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        host: HostInfo,
        gpus: tuple[GpuInfo, ...] = (),
        gpu_evidence: GpuEvidence | None = None,
        env: dict[str, str] | None = None,
        python: PythonEnv | None = None,
    ) -> Problem | None:
        setting = _setting(packages, matrix, host, gpus, gpu_evidence, env or {})
        if isinstance(setting, Problem):
            return setting
        if setting.jetson is not None and setting.wheel.arch == "aarch64":
            return _on_jetson(setting)
        if _overridden(setting):
            raise NotApplicable(f"{_VAR}={setting.override} chooses bitsandbytes' library (CD436)")
        verdict = _verdict(setting, None)
        if verdict.is_unknown:
            raise CannotJudge(verdict.missing)
        if not verdict.is_problem:
            return None
        text, commands = _release_fix(
            matrix, setting.arch, setting.torch, setting.torch_cuda, setting.bnb, setting.highest_cc,
            _python(python), packages, setting.jetson,
        )  # fmt: skip
        text += _same_major_override(setting)
        return Problem(
            f"bitsandbytes {setting.bnb.version} has no library for torch's CUDA {setting.torch_cuda}: "
            f"{verdict.observed}; its wheel ships {verdict.required}; {_consequence(verdict.detail)}",
            _evidence(setting),
            Remediation(text, commands),
        )


class CD436(Check):
    """BNB_CUDA_VERSION, when set, names a library the installed bitsandbytes ships.

    What it checks: with ``BNB_CUDA_VERSION`` set (read from 0.40.1.post1), the file name the release builds from
    it (``BNB_CUDA_VERSION=124`` -> ``libbitsandbytes_cuda124.so``, keeping ``_nocublaslt`` where it applies)
    against the libraries its wheel ships for this CPU (compat/bitsandbytes.toml); from 0.50.0 a value that is
    not digits, an empty one included, raises.

    Why it matters: the override replaces torch's CUDA in the name; a version the wheel does not ship (a value
    left from another setup, a source build's name) makes bitsandbytes fall back to its CPU library or fail, as
    "CUDA Setup failed despite GPU being available" or "Configured CUDA binary not found" (bitsandbytes#1559).

    How to fix: ``unset BNB_CUDA_VERSION`` when the library for torch's CUDA is shipped; otherwise set it to a
    version the wheel ships (and make that CUDA's libraries visible, CD437) or install a release that ships
    torch's.
    """

    name = "bnb-cuda-version-shipped"
    category = "python"
    severity = Status.FAIL

    def check(
        self,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        host: HostInfo,
        gpus: tuple[GpuInfo, ...] = (),
        gpu_evidence: GpuEvidence | None = None,
        env: dict[str, str] | None = None,
        python: PythonEnv | None = None,
    ) -> Problem | None:
        if _VAR not in (env or {}):
            raise NotApplicable(f"{_VAR} is not set")
        setting = _loadable(_setting(packages, matrix, host, gpus, gpu_evidence, env or {}))
        if setting.override is None:
            raise NotApplicable(f"bitsandbytes {setting.bnb.version} does not read {_VAR}")
        if not _overridden(setting):
            raise NotApplicable(f"{_VAR} is empty: bitsandbytes {setting.bnb.version} ignores it")
        verdict = _verdict(setting, setting.override)
        if verdict.is_unknown:
            raise CannotJudge(verdict.missing)
        if not verdict.is_problem:
            return None
        plain = _verdict(setting, None)
        if plain.is_ok and plain.detail is not None:
            text = (
                f"Unset {_VAR}: without it bitsandbytes loads {plain.detail.loads}, the library for torch's "
                f"CUDA {setting.torch_cuda}."
            )
            commands: tuple[str, ...] = (f"unset {_VAR}",)
        else:
            text, commands = _release_fix(
                matrix, setting.arch, setting.torch, setting.torch_cuda, setting.bnb, setting.highest_cc,
                _python(python), packages, setting.jetson,
            )  # fmt: skip
            text = f"Unset {_VAR}, and: {text}"
            commands = (f"unset {_VAR}", *commands)
        return Problem(
            f"{_VAR}={setting.override!r} does not name a library bitsandbytes {setting.bnb.version} ships: "
            f"{verdict.observed}; its wheel ships {verdict.required}; {_consequence(verdict.detail)}",
            {**_evidence(setting), _VAR: f"{setting.override!r} (environment)"},
            Remediation(text, commands),
        )


def _torch_loaded(loader: LoaderView) -> dict[str, str]:
    """soname -> path of the CUDA libraries torch's import loads (its needs and what those copies need): a
    library bitsandbytes later needs under the same soname is that copy, whatever its own search finds (ld.so
    reuses a loaded soname; bitsandbytes imports torch first)."""
    loaded = {n.soname: n.loaded.path for n in loader.needs if n.package == "torch" and n.loaded is not None}
    for _ in range(3):  # libcusparse.so.12 -> libnvJitLink.so.12: the chains are short
        paths = set(loaded.values())
        loaded.update(
            {n.soname: n.loaded.path for n in loader.needs if n.needer in paths and n.loaded is not None}
        )  # fmt: skip
    return loaded


class CD437(Check):
    """The CUDA libraries bitsandbytes' native library needs load.

    What it checks: the DT_NEEDED CUDA libraries (compat/bitsandbytes.toml, read from the wheel) of the
    ``libbitsandbytes_cuda<XY>.so`` the installed release loads (CD435, CD436): each is already loaded by torch
    under the same soname (torch is imported first; ld.so reuses it), or found on that library's own search path
    (LD_LIBRARY_PATH, its RUNPATH, the loader cache: the loader's view).

    Why it matters: a library for another CUDA major than torch's (through BNB_CUDA_VERSION) or a torch that
    bundles its CUDA libraries under other names leaves ``libcudart.so.11.0`` or ``libcusparse.so.12`` to be found
    on the system: when it is not, loading fails ("libcusparse.so.12: cannot open shared object file") and
    bitsandbytes falls back to its CPU library.

    How to fix: unset BNB_CUDA_VERSION where it chose that library; otherwise install the NVIDIA wheel that ships
    the soname and add its directory to LD_LIBRARY_PATH (the finding names both).
    """

    name = "bitsandbytes-libraries-load"
    category = "python"
    severity = Status.FAIL

    def check(
        self,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        host: HostInfo,
        gpus: tuple[GpuInfo, ...] = (),
        gpu_evidence: GpuEvidence | None = None,
        env: dict[str, str] | None = None,
        loader: LoaderView | None = None,
    ) -> Problem | None:
        setting = _loadable(_setting(packages, matrix, host, gpus, gpu_evidence, env or {}))
        if setting.jetson is not None and setting.wheel.arch == "aarch64":
            raise NotApplicable("a PyPI bitsandbytes wheel on a Jetson is judged by CD435")
        override = setting.override if _overridden(setting) else None
        verdict = _verdict(setting, override)
        if verdict.is_unknown:
            raise CannotJudge(verdict.missing)
        if verdict.detail is None or verdict.detail.loads is None:
            raise NotApplicable("bitsandbytes loads no CUDA library here (CD435, CD436)")
        library = verdict.detail.loads
        sonames = matrix.bitsandbytes_needed(library, setting.bnb.version, setting.arch)
        if sonames is None:
            raise CannotJudge(f"the CUDA libraries {library} needs (not in compat/bitsandbytes.toml)")
        if loader is None:
            raise CannotJudge(f"where {', '.join(sonames)} load from (the loader's view was not read)")
        by_torch = _torch_loaded(loader)
        missing = []
        unknown = []
        for soname in sonames:
            if soname in by_torch:
                continue
            own = next((n for n in loader.needs if n.package == "bitsandbytes" and n.soname == soname), None)
            if own is None:
                unknown.append(soname)
            elif own.loaded is None:
                missing.append(own)
        if not missing:
            if unknown:
                raise CannotJudge(f"where {', '.join(unknown)} load from (not in the loader's view of bitsandbytes)")
            return None
        return _missing_problem(setting, library, verdict.detail, missing)


def _missing_problem(setting: _Setting, library: str, load: BnbLoad, missing: list[NeededLibrary]) -> Problem:
    from cudadoctor.checks.loader import wheel_dir, wheel_for
    from cudadoctor.fixes import Install
    from cudadoctor.fixes.build import pip
    from cudadoctor.fixes.parse import parse_pin

    version = library_cuda(library)
    cuda = version.major if version is not None else None
    commands: list[str] = []
    wheels = []
    if _overridden(setting) and _verdict(setting, None).is_ok:
        commands.append(f"unset {_VAR}")
        text = f"Unset {_VAR}: it makes bitsandbytes load {library}, whose CUDA libraries are not installed."
    else:
        for need in missing:
            wheel = wheel_for(need.soname, cuda)
            if wheel is None or wheel in wheels:
                continue
            wheels.append(wheel)
            commands.append(pip(Install((parse_pin(wheel),))))
            directory = wheel_dir(need.needer, wheel)
            if directory:  # no RUNPATH of bitsandbytes' reaches a wheel's directory
                commands.append(f"export LD_LIBRARY_PATH={directory}:$LD_LIBRARY_PATH")
        text = (
            f"Install {', '.join(wheels) or 'the CUDA libraries'} and add their directories to LD_LIBRARY_PATH "
            "(bitsandbytes' library has no RUNPATH into the NVIDIA wheels)."
        )
    names = ", ".join(n.soname for n in missing)
    return Problem(
        f"bitsandbytes {setting.bnb.version} loads {library} ({load.by}), which needs {names}: not loaded by torch "
        "and found nowhere on its search path (LD_LIBRARY_PATH, the loader cache); loading it fails, and "
        "bitsandbytes falls back to its CPU library or fails",
        {**_evidence(setting), **{f"bitsandbytes: {n.soname}": f"needed by {n.needer}" for n in missing}},
        Remediation(text, tuple(commands)),
    )
