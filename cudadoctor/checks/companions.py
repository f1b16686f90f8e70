"""CD422-CD425: torch's companions, FlashInfer and CuPy against the torch (and each other) they load beside."""

# CD422  torchvision / torchaudio were built for the installed torch release
# CD423  torchvision / torchaudio are the same CUDA build as torch
# CD424  FlashInfer's packages fit the installed torch and each other
# CD425  one CuPy binary package is installed

from __future__ import annotations

import re
from collections.abc import Mapping

from packaging.version import Version

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import InstalledPackage
from cudadoctor.facts.requires import read_requirement
from cudadoctor.fixes import Install, Pin
from cudadoctor.fixes.build import install_from, pip, taking_effect, uninstall_then_install
from cudadoctor.fixes.machine import installed_versions
from cudadoctor.fixes.model import Uninstall
from cudadoctor.rules.companions import (
    COMPANIONS,
    FLASHINFER_PARTS,
    companion_cuda_fits,
    companion_fits_torch,
    companion_for_torch,
    flashinfer_aot_fits,
    flashinfer_part_fits,
)

__all__ = ["CD422", "CD423", "CD424", "CD425", "companion_install"]


def _torch_and_companions(packages: Mapping[str, InstalledPackage]) -> tuple[InstalledPackage, list[InstalledPackage]]:
    torch = packages.get("torch")
    found = [packages[n] for n in COMPANIONS if n in packages]
    if torch is None or not found:
        raise NotApplicable("torch and torchvision/torchaudio are not installed together")
    return torch, found


def companion_install(
    matrix: CompatMatrix, torch: InstalledPackage, names: list[str], packages: Mapping[str, InstalledPackage]
) -> str | None:
    """``pip install`` of the torchvision / torchaudio releases that go with the installed torch
    (:func:`~cudadoctor.rules.companions.companion_for_torch`), of torch's own CUDA build, from where that build of
    torch is published (its variant's index with ``+cuXYZ`` pins, or PyPI for the release's default build); None
    when the data has no such release or build (a nightly torch, a custom build)."""
    from cudadoctor.fixes.releases import torch_build_source

    release = matrix.torch_release(Version(torch.version.public)) if not torch.version.is_prerelease else None
    if release is None:
        return None
    variant = torch.cuda_variant or ""
    source = torch_build_source(matrix, release, variant) if variant else None
    if variant and source is None:
        return None  # a build the data does not list: no command that can be verified
    pins = []
    for name in names:
        version = companion_for_torch(release, name)
        if version is None or _pins_on(packages, name, version):
            return None  # no release for this torch, or one another installed package's pin excludes
        local = f"+{variant}" if source is not None and name in source.local_tag and source.option != "pypi" else ""
        pins.append(Pin.exact(name, f"{version}{local}"))
    url, option = (source.url, source.option) if source is not None else (None, "pypi")
    command = install_from(tuple(pins), url, option)
    return pip(taking_effect(command, installed_versions(packages)))


def _held_by_pins(
    matrix: CompatMatrix, torch: InstalledPackage, names: list[str], packages: Mapping[str, InstalledPackage]
) -> str:
    """The installed pins that exclude the companion made for this torch: then torch itself was moved against
    them (reinstall the torch they were made for instead)."""
    release = matrix.torch_release(Version(torch.version.public)) if not torch.version.is_prerelease else None
    wanted = [(n, v) for n in names if release is not None and (v := companion_for_torch(release, n)) is not None]
    held = [line for n, v in wanted for line in _pins_on(packages, n, v)]
    if not held:
        return ""
    return (
        " "
        + "; ".join(held)
        + f": that excludes the release made for torch {torch.version}, so install the torch those pins were "
        "built for instead."
    )


def _fine_unless_unknown(unknown: list[str]) -> None:
    """No problem found: None (the condition holds), or could not judge when some part was not judged."""
    if unknown:
        raise CannotJudge("; ".join(unknown))


def _nightly_text(torch: InstalledPackage) -> str:
    if not torch.version.is_prerelease:
        return ""
    return (
        f" torch {torch.version} is a pre-release (a nightly): install the companions from the same nightly channel "
        "(pip install --pre with PyTorch's nightly index of torch's CUDA build), or a released torch with its "
        "companions."
    )


class CD422(Check):
    """torchvision and torchaudio were built for the installed torch release.

    What it checks: the torch each installed torchvision / torchaudio was built for — the exact
    ``Requires-Dist: torch==X`` of its wheel (its METADATA, else compat/companions.toml), the range of the newer
    stable-ABI releases (``torch>=2.14.0``), or, for a release that requires no torch (torchaudio 2.11.0), the torch
    it was released with (*inferred*, compat/torch.toml) — against the installed torch. pip keeps an installed
    companion when another install (vLLM, a nightly torch, ``pip install -U torch``) moves torch.

    Why it matters: the companion's C++ extension registers operators into torch's dispatcher and links torch's
    symbols: inside another torch it fails at import with "RuntimeError: operator torchvision::nms does not exist"
    or "libtorchaudio.so: undefined symbol: …", and anything importing it (transformers, vLLM) fails with it.

    How to fix: install the torchvision / torchaudio release made for the installed torch, from the index torch's
    CUDA build came from (the finding gives the command), or the torch the companion was built for.
    """

    name = "companions-built-for-torch"
    category = "python"
    severity = Status.FAIL

    def check(self, packages: dict[str, InstalledPackage], matrix: CompatMatrix) -> Problem | None:
        torch, found = _torch_and_companions(packages)
        wrong, unknown, evidence = [], [], {"torch": f"{torch.version} ({torch.source.where})"}
        for pkg in found:
            verdict = companion_fits_torch(matrix, pkg.name, pkg.version, pkg.requires, torch.version)
            if verdict.is_problem:
                label = f" (inferred: {verdict.inferred})" if verdict.inferred else ""
                wrong.append(pkg)
                evidence[pkg.name] = f"{pkg.version}: built for {verdict.required}{label}"
            elif verdict.is_unknown:
                unknown.append(verdict.missing)
        if not wrong:
            _fine_unless_unknown(unknown)
            return None
        command = companion_install(matrix, torch, [p.name for p in wrong], packages)
        held = _held_by_pins(matrix, torch, [p.name for p in wrong], packages)
        symptom = (
            "'operator torchvision::nms does not exist'"
            if any(p.name == "torchvision" for p in wrong)
            else "'libtorchaudio.so: undefined symbol'"
        )
        return Problem(
            ", ".join(f"{p.name} {p.version}" for p in wrong)
            + f" {'was' if len(wrong) == 1 else 'were'} built for another torch than the installed {torch.version}: "
            f"importing {'it' if len(wrong) == 1 else 'them'} fails ({symptom})",
            evidence,
            Remediation(
                "Install the releases made for the installed torch, from the index of torch's CUDA build."
                + _nightly_text(torch)
                + held,
                (command,) if command else (),
            ),
        )


class CD423(Check):
    """torchvision and torchaudio are the same CUDA build as torch.

    What it checks: the CUDA build of each installed torchvision / torchaudio (its ``+cuXYZ`` local version, or
    its ``version.py``) against torch's, as the companion itself compares them at import (compat/companions.toml
    ``[[cuda_check]]``: torchvision 0.16 and later the CUDA major, earlier releases and torchaudio the major and
    minor). PyTorch's ``+cu118`` and ``+cu121`` wheels of one release pin the same public torch version, so a
    companion of another build satisfies the pin: pip installs it from whatever index it was given.

    Why it matters: the companion raises at import: "RuntimeError: Detected that PyTorch and torchvision were
    compiled with different CUDA major versions" (torchaudio: "… compiled with different CUDA versions").

    How to fix: reinstall the companion from the index of torch's own CUDA build (the command is given).
    """

    name = "companions-cuda-build-matches-torch"
    category = "python"
    severity = Status.FAIL

    def check(self, packages: dict[str, InstalledPackage], matrix: CompatMatrix) -> Problem | None:
        torch, found = _torch_and_companions(packages)
        if not (torch.cuda_variant or "").startswith("cu"):
            raise NotApplicable(f"torch is not a CUDA build ({torch.cuda_variant or 'unknown'})")
        wrong, unknown = [], []
        evidence = {"torch": f"{torch.version} ({torch.cuda_variant}, {torch.cuda_variant_source})"}
        for pkg in found:
            if pkg.cuda_variant is not None and not pkg.cuda_variant.startswith("cu"):
                continue  # a CPU companion beside a CUDA torch loads; its ops run on the CPU only
            verdict = companion_cuda_fits(matrix, pkg.name, pkg.version, pkg.cuda_variant, torch.cuda_variant)
            if verdict.is_problem:
                wrong.append((pkg, str(verdict.detail or "")))
                evidence[pkg.name] = f"{pkg.version} ({pkg.cuda_variant}, {pkg.cuda_variant_source})"
            elif verdict.is_unknown:
                unknown.append(verdict.missing)
        if not wrong:
            _fine_unless_unknown(unknown)
            return None
        command = companion_install(matrix, torch, [p.name for p, _e in wrong], packages)
        return Problem(
            ", ".join(f"{p.name} {p.version}" for p, _e in wrong)
            + f" {'is' if len(wrong) == 1 else 'are'} another CUDA build than torch {torch.version}: "
            + "; ".join(f"{p.name} raises '{error}'" for p, error in wrong),
            evidence,
            Remediation(
                "Reinstall the companions from the index of torch's CUDA build.", (command,) if command else ()
            ),
        )


def _pins_on(packages: Mapping[str, InstalledPackage], name: str, version: Version) -> list[str]:
    """Installed packages whose Requires-Dist on ``name`` excludes ``version``."""
    out = []
    for pkg in packages.values():
        for line in pkg.requires:
            read = read_requirement(line)
            if read is not None and read[0] == name and not read[1].contains(version, prereleases=True):
                out.append(f"{pkg.name} {pkg.version} requires {name}{read[1]}")
    return out


def _part_fix(
    matrix: CompatMatrix, part: InstalledPackage, python: InstalledPackage | None, packages: dict[str, InstalledPackage]
) -> str | None:
    """flashinfer-python moved to the part's version where PyPI has it and no installed package pins it elsewhere
    (what the threads did); else the part removed (FlashInfer then compiles or downloads its kernels: its README)."""
    installed = installed_versions(packages)
    row = matrix.flashinfer_package("flashinfer-python")
    target = Version(part.version.public)
    if (
        python is not None
        and row is not None
        and target in row.pypi_versions
        and not _pins_on(packages, python.name, target)
    ):
        return pip(taking_effect(Install((Pin.exact("flashinfer-python", str(target)),)), installed))
    if python is not None and part.name in installed:
        return pip(Uninstall((part.name,)))
    return None


class CD424(Check):
    """FlashInfer's packages fit the installed torch and each other.

    What it checks: an ahead-of-time ``flashinfer`` wheel (``0.1.6+cu121torch2.3``, from flashinfer.ai/whl) against
    the installed torch's minor (or one FlashInfer's maintainers name ABI compatible, compat/companions.toml) and
    CUDA major; ``flashinfer-cubin`` and ``flashinfer-jit-cache`` against ``flashinfer-python``'s version, and a
    jit-cache's ``+cuXYZ`` against torch's CUDA major.

    Why it matters: an AOT wheel for another torch fails to import (undefined symbols), and vLLM then stops or
    falls back; FlashInfer refuses a cubin or jit-cache package of another version at import ("RuntimeError:
    flashinfer-cubin version (0.6.8.post1) does not match flashinfer version (0.6.10)").

    How to fix: remove the AOT wheel (recent vLLM installs ``flashinfer-python``, which compiles its kernels for the
    installed torch), or install matching FlashInfer packages (the command is given).
    """

    name = "flashinfer-matches-torch"
    category = "python"
    severity = Status.FAIL

    def check(self, packages: dict[str, InstalledPackage], matrix: CompatMatrix) -> Problem | None:
        aot, python = packages.get("flashinfer"), packages.get("flashinfer-python")
        parts = [packages[n] for n in FLASHINFER_PARTS if n in packages]
        torch = packages.get("torch")
        if aot is None and not parts:
            raise NotApplicable("no AOT flashinfer wheel, flashinfer-cubin or flashinfer-jit-cache is installed")
        wrong: list[str] = []
        commands: list[str] = []
        unknown: list[str] = []
        evidence = {"torch": f"{torch.version} ({torch.cuda_variant})" if torch else "not installed"}
        if aot is not None and torch is not None:
            verdict = flashinfer_aot_fits(matrix, aot.version.local, torch.version, torch.cuda_variant)
            evidence["flashinfer"] = f"{aot.version} ({aot.source.where})"
            if verdict.is_problem:
                wrong.append(
                    f"flashinfer {aot.version} is {verdict.required}, the installed torch is {verdict.observed}"
                )
                commands.append(pip(Uninstall(("flashinfer",))))
            elif verdict.is_unknown:
                unknown.append(verdict.missing)
        for part in parts:
            variant = torch.cuda_variant if torch is not None else None
            verdict = flashinfer_part_fits(matrix, part.name, part.version, python.version if python else None, variant)
            evidence[part.name] = str(part.version)
            if verdict.is_problem:
                wrong.append(verdict.observed)
                fix = _part_fix(matrix, part, python, packages)
                commands += [fix] if fix else []
            elif verdict.is_unknown:
                unknown.append(verdict.missing)
        if python is not None:
            evidence["flashinfer-python"] = str(python.version)
        if not wrong:
            _fine_unless_unknown(unknown)
            return None
        return Problem(
            "; ".join(wrong) + ": FlashInfer fails at import",
            evidence,
            Remediation(
                "Remove the FlashInfer build made for another torch, or install FlashInfer packages of one version.",
                tuple(dict.fromkeys(commands)),
            ),
        )


#: CuPy's binary packages (``cupy-cuda12x``, ``cupy-cuda117``, ``cupy-rocm-5-0``) and the source package ``cupy``:
#: they all install the same ``cupy`` module (https://docs.cupy.dev/en/stable/install.html)
_CUPY = re.compile(r"^cupy(-cuda\d+x?|-rocm-[\d-]+)?$")


def _cuda_major(pkg: InstalledPackage) -> int | None:
    build = pkg.cuda_build or ""
    head = build.split(".")[0]
    if not head.isdigit() or len(head) > 4:  # a torch/version.py may say anything (tests/faults: 5000 digits)
        return None
    return int(head)


class CD425(Check):
    """One CuPy package is installed.

    What it checks: the installed CuPy distributions (``cupy-cuda11x``, ``cupy-cuda12x``, ``cupy-cuda13x``, the
    per-minor ``cupy-cuda117`` …, ``cupy-rocm-*``, the source package ``cupy``).

    Why it matters: they all install the one ``cupy`` module into the same folder: the files of whichever was
    installed last win, mixed with the other's, and uninstalling one deletes files the other needs. CuPy warns
    "CuPy may not function correctly because multiple CuPy packages are installed"; a CUDA 12 and a CUDA 13
    package side by side load the wrong CUDA libraries (typically pulled in by two dependencies, such as Ray and
    LMCache).

    How to fix: uninstall every CuPy package, then install the one for your CUDA major (the command keeps the one
    matching torch's CUDA build, where torch is installed).
    """

    name = "one-cupy-package"
    category = "python"
    severity = Status.FAIL

    def check(self, packages: dict[str, InstalledPackage], matrix: CompatMatrix) -> Problem | None:
        cupys = sorted((p for n, p in packages.items() if _CUPY.fullmatch(n)), key=lambda p: p.name)
        if len(cupys) < 2:
            raise NotApplicable("fewer than two CuPy packages are installed")
        torch = packages.get("torch")
        major = _cuda_major(torch) if torch is not None else None
        keep = next((p for p in cupys if major is not None and _cuda_major(p) == major), None)
        names = tuple(p.name for p in cupys)
        commands: tuple[str, ...] = ()
        row = matrix.cupy_package(keep.name) if keep is not None else None
        if keep is not None and row is not None and row.last_version is not None:
            known = {row.first_version, row.last_version}
            version = keep.version if keep.version in known else row.last_version
            commands = (pip(uninstall_then_install(names, Install((Pin.exact(keep.name, str(version)),)))),)
        elif keep is None:
            commands = (pip(Uninstall(names)),)
        kept = f"; {keep.name} matches torch's CUDA {major}" if keep is not None else ""
        return Problem(
            f"{len(cupys)} CuPy packages share the cupy module: "
            + ", ".join(f"{p.name} {p.version}" for p in cupys)
            + kept,
            {p.name: f"{p.version} ({p.source.where})" for p in cupys},
            Remediation(
                "Uninstall every CuPy package, then install the one for your CUDA major"
                + (f" ({keep.name})." if keep is not None else "."),
                commands,
            ),
        )
