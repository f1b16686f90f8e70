"""torch's companions (torchvision, torchaudio) and FlashInfer against the torch they load into.

A torchvision or torchaudio wheel is built against one torch release: its C++ extension links torch's symbols and
registers operators into torch's dispatcher, so inside another torch minor it fails at import ("operator
torchvision::nms does not exist", "libtorchaudio.so: undefined symbol …"). Its wheel says which torch: an exact
Requires-Dist pin (``torch==2.5.1``, every release from torchvision 0.4 / torchaudio 0.3 to torchvision 0.29.0 /
torchaudio 2.10.0: compat/companions.toml). The newer releases require a range (``torch>=2.14.0``: built on torch's
stable ABI, which holds for later torch releases) or nothing at all (torchaudio 2.11.0, whose ``.abi3.so`` needs
symbols of the torch it was released with: https://github.com/deepbeepmeep/Wan2GP/issues/1701).

The CUDA build is the other half: PyTorch's index of each variant (``/whl/cu124``) carries ``torchvision 0.20.1+cu124``
pinning the public ``torch==2.5.1``, which a ``torch 2.5.1+cu121`` satisfies; only the local tags tell the builds
apart, and torchvision compares the CUDA majors at import (compat/companions.toml ``[[cuda_check]]``).

:func:`companion_for_torch` is the one answer to "which torchvision / torchaudio goes with this torch release",
asked by ``suggest``'s torch plans and by the fixes of the checks alike.
"""

from __future__ import annotations

import re

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import TorchRelease
from cudadoctor.facts.requires import read_requirement
from cudadoctor.rules.verdict import Verdict, cannot_judge, fails, fits

__all__ = [
    "COMPANIONS",
    "FLASHINFER_PARTS",
    "aot_flashinfer_build",
    "companion_cuda_fits",
    "companion_fits_torch",
    "companion_for_torch",
    "companion_torch_requirement",
    "flashinfer_aot_fits",
    "flashinfer_part_fits",
]

#: published with each torch release, on the same indexes
COMPANIONS = ("torchvision", "torchaudio")

#: FlashInfer's optional packages whose version must equal flashinfer-python's (compat/companions.toml)
FLASHINFER_PARTS = ("flashinfer-cubin", "flashinfer-jit-cache")


def _minor(version: Version) -> tuple[int, int]:
    return version.major, version.minor


def _short(version: Version) -> str:
    return f"{version.major}.{version.minor}"


def companion_for_torch(release: TorchRelease, name: str) -> Version | None:
    """The ``name`` (torchvision / torchaudio) release that goes with torch ``release``: the one compat/torch.toml
    pairs with it (an exact Requires-Dist pin, or the release published with it whose torch range admits it);
    None when the data has none."""
    if name == "torchvision":
        return release.torchvision
    return release.torchaudio if name == "torchaudio" else None


def companion_torch_requirement(
    matrix: CompatMatrix, name: str, version: Version, requires: tuple[str, ...]
) -> tuple[SpecifierSet | None, str] | None:
    """(the torch requirement of an installed companion, where it was read): its own METADATA's Requires-Dist,
    else compat/companions.toml's record of the release; (None, where) when the release requires no torch; None
    when neither says (a release the data lacks, installed without METADATA pins)."""
    for line in requires:
        read = read_requirement(line)
        if read is not None and read[0] == "torch":
            return read[1], f"Requires-Dist {line.split(';')[0].strip()}"
    row = matrix.companion_release(name, version)
    if row is None:
        return None
    return row.torch, f"compat/companions.toml ({row.wheel or name + ' ' + str(row.version)})"


def _exact(spec: SpecifierSet) -> Version | None:
    """The version of an exact ``==X`` pin (``==1.3.0.*`` too), None for a range."""
    pins = [s for s in spec if s.operator == "=="]
    if len(pins) != 1 or len(list(spec)) != 1:
        return None
    try:
        return Version(pins[0].version.removesuffix(".*"))
    except InvalidVersion:
        return None


def _paired_torch(matrix: CompatMatrix, name: str, version: Version) -> Version | None:
    """The oldest torch release compat/torch.toml pairs with this companion release (the one it was released with)."""
    public = Version(version.public)
    paired = [r.version for r in matrix.torch_releases if r.derived is None and getattr(r, name) == public]
    return min(paired) if paired else None


def companion_fits_torch(
    matrix: CompatMatrix, name: str, version: Version, requires: tuple[str, ...], torch: Version
) -> Verdict[Version]:
    """Was this torchvision / torchaudio built for the installed torch? ``detail``: the torch it was built for.

    - an exact pin (``torch==2.5.1``): the installed torch must be that release (a nightly ``2.12.0.dev…`` is not
      ``2.12.0``); the finding names the minor when it differs;
    - a range (``torch>=2.14.0``, stable ABI): the installed torch must be in it;
    - no torch requirement: built for the torch compat/torch.toml pairs it with (*inferred*); a torch of an older
      minor lacks symbols it needs; a newer one is fine as far as the data says (its stable-ABI library).
    """
    rule = "companion-torch"
    found = companion_torch_requirement(matrix, name, version, requires)
    observed = f"torch {torch}"
    if found is None:
        return cannot_judge(rule, f"the torch {name} {version} was built for (not in compat/companions.toml)")
    spec, where = found
    if spec is not None and (pin := _exact(spec)) is not None:
        if spec.contains(torch, prereleases=True) or (Version(torch.public) == pin):
            return fits(rule, f"{where}: torch {torch}", pin)
        return fails(rule, observed, f"torch {pin} ({where})", pin)
    if spec is not None and str(spec):
        if spec.contains(Version(torch.public), prereleases=True):
            return fits(rule, f"{where}: torch {torch}")
        return fails(rule, observed, f"torch{spec} ({where})")
    paired = _paired_torch(matrix, name, version)
    if paired is None:
        return cannot_judge(rule, f"the torch {name} {version} was built for: {where} names none")
    inferred = f"{name} {version} requires no torch ({where}); it was released with torch {paired} (compat/torch.toml)"
    if _minor(torch) < _minor(paired):
        return fails(rule, observed, f"torch {_short(paired)} or newer", paired, inferred=inferred)
    return fits(rule, f"torch {torch} is not older than {_short(paired)}", paired, inferred=inferred)


def _cuda(variant: str | None) -> Version | None:
    """``cu124`` -> 12.4, ``cu92`` -> 9.2; None for ``cpu``, ROCm and anything else."""
    match = re.fullmatch(r"cu(\d{1,3})(\d)", variant or "")  # bounded: a version.py may say anything (tests/faults)
    return Version(f"{match.group(1)}.{match.group(2)}") if match else None


def companion_cuda_fits(
    matrix: CompatMatrix, name: str, version: Version, variant: str | None, torch_variant: str | None
) -> Verdict[str]:
    """Is a companion the same CUDA build as torch, as far as the companion's own check at import compares them
    (compat/companions.toml ``[[cuda_check]]``: the major, or major and minor)? ``detail``: the error it raises."""
    rule = "companion-cuda"
    if variant is not None and variant == torch_variant and _cuda(variant) is not None:
        return fits(rule, f"{name} and torch are both {variant} builds")  # facts against facts: whatever the release
    inferred = ""
    if variant is None:  # a PyPI wheel (no local tag) whose version.py was not read
        variant = _pypi_variant(matrix, name, version)
        inferred = (
            f"{name} {version} without a local tag is PyPI's build: the CUDA of its torch's PyPI wheel ({variant})"
        )
    mine, theirs = _cuda(variant), _cuda(torch_variant)
    if mine is None or theirs is None:
        return cannot_judge(rule, f"the CUDA builds of {name} ({variant}) and torch ({torch_variant})")
    check = matrix.companion_cuda_check(name, version)
    if check is None:
        return cannot_judge(rule, f"how {name} {version} compares CUDA builds (not in compat/companions.toml)")
    same = mine.major == theirs.major and (check.compares == "major" or mine.minor == theirs.minor)
    observed = f"{name} CUDA {mine}, torch CUDA {theirs}"
    if same:
        return fits(rule, observed + f" ({name} compares the {check.compares})", check.error, inferred=inferred)
    return fails(rule, observed, f"the same CUDA {check.compares} as torch", check.error, inferred=inferred)


def _pypi_variant(matrix: CompatMatrix, name: str, version: Version) -> str | None:
    """The CUDA build of a companion's PyPI wheel: that of the PyPI wheel of the torch it was released with
    (*inferred*: PyTorch uploads both from the same build matrix; compat/torch.toml ``pypi_default_cuda``)."""
    if version.local:
        return None
    paired = _paired_torch(matrix, name, version)
    release = matrix.torch_release(paired) if paired is not None else None
    cuda = release.pypi_default_cuda if release is not None else None
    return f"cu{cuda.major}{cuda.minor}" if cuda is not None else None


#: The ahead-of-time ``flashinfer`` wheels' local version: ``0.1.6+cu121torch2.3`` (FlashInfer's release assets and
#: https://flashinfer.ai/whl/cu121/torch2.3 index, https://github.com/vllm-project/vllm/issues/6237).
_AOT = re.compile(r"^cu(\d+)torch(\d+\.\d+)$")


def aot_flashinfer_build(local: str | None) -> tuple[str, str] | None:
    """``cu121torch2.3`` -> ("cu121", "2.3"); None for any other local version."""
    match = _AOT.fullmatch(local or "")
    return (f"cu{match.group(1)}", match.group(2)) if match else None


def flashinfer_aot_fits(
    matrix: CompatMatrix, local: str | None, torch: Version, torch_variant: str | None
) -> Verdict[str]:
    """Does an AOT ``flashinfer`` wheel (``+cu121torch2.3``) load into this torch: a torch minor it loads into
    (its own, or one FlashInfer names ABI compatible) and torch's CUDA major?"""
    rule = "flashinfer-aot"
    build = aot_flashinfer_build(local)
    if build is None:
        return cannot_judge(rule, f"the torch and CUDA of flashinfer +{local} (not a +cuXXXtorchX.Y build)")
    variant, built = build
    wrong = []
    if _short(torch) not in matrix.flashinfer_aot_loads_into(built):
        wrong.append(f"built for torch {built}")
    mine, theirs = _cuda(variant), _cuda(torch_variant)
    if mine is not None and theirs is not None and mine.major != theirs.major:
        wrong.append(f"built for CUDA {mine}")
    if wrong:
        return fails(rule, f"torch {torch}" + (f" ({torch_variant})" if torch_variant else ""), ", ".join(wrong))
    return fits(rule, f"+{local} loads into torch {torch}")


def flashinfer_part_fits(
    matrix: CompatMatrix, part: str, version: Version, python: Version | None, torch_variant: str | None
) -> Verdict[str]:
    """Does a FlashInfer part (flashinfer-cubin, flashinfer-jit-cache) match flashinfer-python's version, and a
    jit-cache (``0.6.11+cu130``) torch's CUDA major? FlashInfer raises at import on a version difference
    (compat/companions.toml ``same_version_as``)."""
    rule = "flashinfer-part"
    row = matrix.flashinfer_package(part)
    wrong = []
    same_as = row.same_version_as if row is not None else None
    if same_as is not None and python is not None and Version(version.public) != Version(python.public):
        wrong.append(f"{part} {version} is not {same_as} {python}")
    mine, theirs = _cuda(version.local), _cuda(torch_variant)
    if mine is not None and theirs is not None and mine.major != theirs.major:
        wrong.append(f"{part} {version} is a CUDA {mine.major} build, torch a CUDA {theirs.major} one")
    if wrong:
        return fails(rule, "; ".join(wrong), f"{part} at flashinfer-python's version, for torch's CUDA")
    if python is None and mine is None:
        return cannot_judge(rule, f"flashinfer-python beside {part} (not installed)")
    return fits(rule, f"{part} {version} matches")
