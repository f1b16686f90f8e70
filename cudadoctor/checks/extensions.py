"""CD42x: prebuilt extension wheels against the torch they load into."""

# CD420  a prebuilt flash-attn wheel matches the installed torch: its minor, its CUDA major, its C++ ABI,
#        and a released torch (not the pre-release the wheel was built against, nor NGC's 2.x.0a0+hash)
# CD421  an xformers wheel was built with the CUDA major of the installed torch

from __future__ import annotations

import re

from packaging.version import Version

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import InstalledPackage
from cudadoctor.fixes import Install, Pin
from cudadoctor.fixes.build import pip, taking_effect
from cudadoctor.fixes.machine import installed_versions

__all__ = ["CD420", "CD421", "parse_flash_attn_local"]

#: The local version of flash-attn's prebuilt wheels: ``cu118torch2.2cxx11abiTRUE`` (the rename step of
#: its .github/workflows/publish.yml, https://github.com/Dao-AILab/flash-attention).
_LOCAL = re.compile(r"^cu(\d+)torch(\d+\.\d+)cxx11abi(true|false)$", re.IGNORECASE)


def _source_build(version: str, installed: dict[str, Version]) -> str:
    """Building flash-attn from source against the installed torch (flash-attn's README:
    https://github.com/Dao-AILab/flash-attention#installation-and-features). The installed wheel of the same
    version satisfies the pin, so the command forces the rebuild (pip otherwise says "already satisfied")."""
    command = Install(
        (Pin.exact("flash-attn", version),),
        no_build_isolation=True,
        no_cache_dir=True,
        env=(("FLASH_ATTENTION_FORCE_BUILD", "TRUE"),),
    )
    return pip(taking_effect(command, installed))


def parse_flash_attn_local(local: str | None) -> tuple[int, str, bool] | None:
    """``cu118torch2.2cxx11abiTRUE`` -> ``(11, "2.2", True)``; ``cu12…`` -> 12."""
    match = _LOCAL.match(local or "")
    if not match:
        return None
    digits = match.group(1)
    major = int(digits[:2]) if len(digits) >= 3 else int(digits)
    return major, match.group(2), match.group(3).upper() == "TRUE"


def _torch_cuda_major(torch: InstalledPackage) -> int | None:
    build = torch.torch_build.cuda if torch.torch_build and torch.torch_build.cuda else torch.cuda_build
    return int(build.split(".")[0]) if build else None


def _minor(version: Version) -> str:
    return f"{version.major}.{version.minor}"


def _tagged(flash: InstalledPackage, torch: InstalledPackage, tag: tuple[int, str, bool]) -> list[str]:
    cuda, torch_minor, abi = tag
    wrong = []
    if torch_minor != _minor(torch.version):
        wrong.append(f"built for torch {torch_minor}, torch is {torch.version}")
    torch_cuda = _torch_cuda_major(torch)
    if torch_cuda is not None and torch_cuda != cuda:
        wrong.append(f"built for CUDA {cuda}, torch is a CUDA {torch_cuda} build")
    torch_abi = torch.torch_build.cxx11_abi if torch.torch_build else None
    if torch_abi is None and not wrong:
        raise CannotJudge("torch's C++ ABI is unknown (no torch/share/cmake/Torch/TorchConfig.cmake)")
    if torch_abi is not None and torch_abi != abi:
        wrong.append(
            f"built with cxx11abi{str(abi).upper()}, torch uses the {'C++11' if torch_abi else 'pre-C++11'} ABI"
        )
    return wrong


def _untagged(flash: InstalledPackage, torch: InstalledPackage, matrix: CompatMatrix) -> list[str]:
    """flash-attn installed from PyPI's sdist: its setup.py downloads the release's wheel for torch's minor."""
    row = next((r for r in matrix.flash_attn_releases if r.version == flash.version), None)
    if row is None or not row.wheels_torch:
        raise CannotJudge(f"flash-attn {flash.version}'s prebuilt wheels are not in compat/ecosystem.toml")
    built = [t for t in row.wheels_torch if t.startswith(_minor(torch.version) + ".") or t == _minor(torch.version)]
    torch_cuda = _torch_cuda_major(torch)
    if not built or (torch_cuda is not None and torch_cuda not in row.wheels_cuda_majors):
        raise NotApplicable("no prebuilt wheel of this release fits this torch: pip built it from source")
    against = Version(built[0])
    if torch.version.is_prerelease and torch.version.local:
        return [f"the prebuilt wheel was built against torch {against}, torch is the custom build {torch.version}"]
    if against.is_prerelease and not torch.version.is_prerelease:
        return [f"the prebuilt wheel for torch {_minor(torch.version)} was built against the pre-release {against}"]
    return []


def _with_torch(packages: dict[str, InstalledPackage], name: str) -> tuple[InstalledPackage, InstalledPackage]:
    """(the extension, torch), or NotApplicable when the two are not both installed."""
    extension, torch = packages.get(name), packages.get("torch")
    if extension is None or torch is None:
        raise NotApplicable(f"{name} and torch are not both installed")
    return extension, torch


class CD420(Check):
    """A prebuilt flash-attn wheel was built for the installed torch: its minor, CUDA major and C++ ABI.

    What it checks: flash-attn's prebuilt wheel (its local version, ``+cu118torch2.2cxx11abiTRUE``, or
    the wheel its setup.py downloads for the installed torch's minor, from compat/ecosystem.toml)
    against torch's version, CUDA build and C++ ABI (``_GLIBCXX_USE_CXX11_ABI`` in torch's
    TorchConfig.cmake); a wheel built against a torch pre-release, or loaded into a custom torch
    (NGC's ``2.x.0a0+hash``).

    Why it matters: the extension links against torch's C++ symbols; any difference ends in
    "flash_attn_2_cuda…so: undefined symbol: _ZN3c10…" at import.

    How to fix: install the wheel built for this torch, CUDA and ABI, or build flash-attn from source
    against this torch (the finding gives the command).
    """

    name = "prebuilt-extension-matches-torch"
    category = "python"
    severity = Status.FAIL

    def check(self, packages: dict[str, InstalledPackage], matrix: CompatMatrix) -> Problem | None:
        flash, torch = _with_torch(packages, "flash-attn")
        tag = parse_flash_attn_local(flash.version.local)
        wrong = _tagged(flash, torch, tag) if tag else _untagged(flash, torch, matrix)
        if not wrong:
            return None
        base = flash.version.public
        return Problem(
            f"flash-attn {flash.version} does not fit torch {torch.version}: " + "; ".join(wrong),
            {
                "flash-attn": f"{flash.version} ({flash.source.where})",
                "torch": f"{torch.version}"
                + (f", C++11 ABI {torch.torch_build.cxx11_abi}" if torch.torch_build else ""),
            },
            Remediation(
                "Build flash-attn from source against this torch (or install the wheel made for it).",
                (_source_build(base, installed_versions(packages)),),
            ),
        )


def _xformers_build(xformers: InstalledPackage, matrix: CompatMatrix) -> tuple[Version, str]:
    """(the CUDA the installed xformers was built with, where that was read): its ``+cuXYZ`` local version,
    else what compat/ecosystem.toml read from the release's PyPI wheel (``xformers/cpp_lib.json``)."""
    if xformers.cuda_build:
        return Version(xformers.cuda_build), f"its version's local tag ({xformers.cuda_variant_source or 'cuXYZ'})"
    if xformers.version.local:
        raise CannotJudge(f"xformers {xformers.version} is a local build: its CUDA is not known")
    row = matrix.xformers_release(xformers.version)
    if row is None:
        raise CannotJudge(f"xformers {xformers.version} is not in compat/ecosystem.toml")
    wheel_torch, wheel_cuda, wheel_read = matrix.xformers_wheel_build(row)
    if wheel_cuda is None:
        raise CannotJudge(f"the CUDA of xformers {xformers.version}'s PyPI wheel is not in compat/ecosystem.toml")
    return wheel_cuda, f"the PyPI wheel {wheel_read}, built against torch {wheel_torch}"


def _xformers_for(
    torch: InstalledPackage, major: int, matrix: CompatMatrix, installed: dict[str, Version]
) -> tuple[str, ...]:
    """``pip install`` of the newest xformers whose PyPI wheel pins this torch and has its CUDA major, else of
    the newest one pinning this torch whose README names the index of torch's own variant (``cu130``). The
    installed xformers may be that version (``0.0.23.post1+cu118`` satisfies ``==0.0.23.post1``): the command
    then forces the reinstall, else pip says "already satisfied"."""
    for row in matrix.xformers_for_torch(torch.version):
        _t, cuda, _w = matrix.xformers_wheel_build(row)
        if cuda is not None and cuda.major == major and row.torch is not None:
            return (pip(taking_effect(Install((Pin.exact("xformers", row.version),)), installed)),)
    return _xformers_from_index(torch, matrix, installed)


def _xformers_from_index(
    torch: InstalledPackage, matrix: CompatMatrix, installed: dict[str, Version]
) -> tuple[str, ...]:
    """The same from download.pytorch.org: xformers's README at each release tag lists the indexes it is on."""
    variant = matrix.torch_variants.get(torch.cuda_variant or "")
    if variant is None or variant.index_url is None:
        return ()
    for row in matrix.xformers_for_torch(torch.version):
        if row.torch is not None and variant.tag in matrix.xformers_indexes(row):
            command = Install((Pin.exact("xformers", row.version),), variant.index_url)
            return (pip(taking_effect(command, installed)),)
    return ()


class CD421(Check):
    """An xformers wheel was built with the CUDA major of the installed torch.

    What it checks: the CUDA xformers was built with (its ``+cuXYZ`` local version, or, for a PyPI wheel,
    the CUDA compat/ecosystem.toml read from that release's ``xformers/cpp_lib.json``) against the CUDA
    major of the installed torch build. The torch version itself is CD401's (xformers pins it).

    Why it matters: xformers's C++/CUDA extension links the CUDA runtime of its build; inside a torch of
    another CUDA major it fails to load ("xFormers can't load C++/CUDA extensions. xFormers was built
    for: PyTorch 2.9.0+cu130 with CUDA 1300 (you have 2.9.0+cu128)") and memory-efficient attention is
    gone. xformers 0.0.33's PyPI wheel, for one, is a CUDA 13.0 build while PyPI's torch 2.9.0 is CUDA 12.8.

    How to fix: install the xformers release (or variant) built for torch's CUDA major (the command is
    given where compat/ecosystem.toml knows one), or the torch build xformers was made for.
    """

    name = "xformers-cuda-matches-torch"
    category = "python"
    severity = Status.FAIL

    def check(self, packages: dict[str, InstalledPackage], matrix: CompatMatrix) -> Problem | None:
        xformers, torch = _with_torch(packages, "xformers")
        torch_major = _torch_cuda_major(torch)
        if torch_major is None:
            if torch.cuda_variant is not None and not torch.cuda_variant.startswith("cu"):
                raise NotApplicable(f"torch is a {torch.cuda_variant} build (CD402 judges CUDA builds on GPUs)")
            raise CannotJudge("torch's CUDA build is not known")
        built, where = _xformers_build(xformers, matrix)
        if built.major == torch_major:
            return None
        return Problem(
            f"xformers {xformers.version} was built with CUDA {built}, but torch {torch.version} is a CUDA "
            f"{torch_major} build: xformers's C++/CUDA extensions will not load",
            {"xformers": f"{xformers.version}: CUDA {built} ({where})", "torch": f"{torch.version}"},
            Remediation(
                "Install the xformers build for torch's CUDA major, or the torch build xformers was made for.",
                _xformers_for(torch, torch_major, matrix, installed_versions(packages)),
            ),
        )
