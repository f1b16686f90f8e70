"""The install that brings a CUDA library a package needs, given what the installed packages pin (issue #28).

pip takes the newest release a requirement allows and ignores what other installed packages require of it
(https://pip.pypa.io/en/stable/topics/dependency-resolution/). So ``nvidia-cudnn-cu12==8.*`` beside a torch that
pins ``nvidia-cudnn-cu12==8.9.2.26`` installs 8.9.7.29 and breaks torch's pin: the wheel is installed at the
version the pin names. Where the pin holds another major of that library (torch 2.3.1's cuDNN 8 where
onnxruntime-gpu 1.19.2 needs cuDNN 9) no version of the wheel serves both: the fix is the needing package's build
for the library the pin holds, from compat data (onnxruntime-gpu 1.18.0's CUDA 12 + cuDNN 8 build,
microsoft/onnxruntime#22198), or, where the data lists none, no command.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudadoctor.facts.names import canonical_name
from cudadoctor.facts.requires import exact_pins
from cudadoctor.record import record

if TYPE_CHECKING:
    from cudadoctor.data import CompatMatrix
    from cudadoctor.facts.model import InstalledPackage, NeededLibrary

__all__ = ["PinnedWheel", "fitting_build_fix", "pinned_wheel"]

_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(.*)$")
_SONAME = re.compile(r"^lib([A-Za-z]+)(?:_[a-z_]+)?\.so\.(\d+)")


@record
class PinnedWheel:
    """The wheel to install, and the installed package whose exact pin of it excludes the major needed."""

    wheel: str  #: ``nvidia-cudnn-cu12==8.9.2.26`` (the pinned version) or the wheel as asked
    owner: str | None = None  #: ``torch 2.3.1``: its pin excludes what ``wheel`` asks for
    pinned: str | None = None  #: ``nvidia-cudnn-cu12==8.9.2.26``, the pin that excludes it


def pinned_wheel(wheel: str, packages: dict[str, InstalledPackage]) -> PinnedWheel:
    """``wheel`` (``nvidia-cudnn-cu12==8.*``) at the version an installed package pins exactly, where the wheel's
    range holds it; the owner and pin where it does not (another major)."""
    match = _REQUIREMENT.match(wheel)
    if match is None:
        return PinnedWheel(wheel)
    name = canonical_name(match.group(1))
    try:
        spec = SpecifierSet(match.group(2))
    except InvalidSpecifier:
        return PinnedWheel(wheel)
    for owner, package in sorted(packages.items()):
        pinned = exact_pins(package).get(name)
        if pinned is None or owner == name:
            continue
        try:
            version = Version(pinned)
        except InvalidVersion:
            continue
        if spec.contains(version, prereleases=True):
            return PinnedWheel(f"{match.group(1)}=={pinned}")
        return PinnedWheel(wheel, f"{owner} {package.version}", f"{match.group(1)}=={pinned}")
    return PinnedWheel(wheel)


def fitting_build_fix(
    need: NeededLibrary,
    cuda_major: int | None,
    pin: PinnedWheel,
    packages: dict[str, InstalledPackage],
    matrix: CompatMatrix | None,
) -> tuple[str, tuple[str, ...]]:
    """The text and command for a library whose wheel another package pins at another major: the needing
    package's newest build for the pinned major, from compat data; no command where the data lists none."""
    from cudadoctor.fixes import Install, Pin
    from cudadoctor.fixes.build import pip
    from cudadoctor.fixes.releases import fitting_build

    library = _SONAME.match(need.soname)
    stem = library.group(1) if library is not None else None
    pinned_major = Version(str(pin.pinned).split("==", 1)[1]).major
    installed = packages.get(need.package)
    label = f"{need.package} {installed.version}" if installed is not None else need.package
    owner = str(pin.owner)
    text = f"{label} needs {need.soname}, but {owner} pins {pin.pinned}: installing {pin.wheel} would break it"
    build = None
    if stem is not None and cuda_major is not None and matrix is not None:
        build = fitting_build(matrix, need.package, cuda_major, stem, pinned_major)
    if build is None:
        return f"{text}; install the {need.package} build made for the libraries {owner} pins.", ()
    where = f" (from {build.index_url}, not PyPI)" if build.index_url else ""
    text += (
        f". Install {need.package} {build.version}, its newest build for CUDA {cuda_major} with "
        f"lib{stem}.so.{pinned_major}{where}."
    )
    return text, (pip(Install((Pin.exact(need.package, build.version),), build.index_url)),)
