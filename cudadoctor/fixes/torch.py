"""The command that installs one build of a torch release from where it is published.

PyTorch's index of a variant (https://download.pytorch.org/whl/cu121) carries every wheel with its
``+cu121`` local version, so a ``+variant`` pin takes that build whatever is installed (the 1.x builds
without an index of their own from the links page, ``-f``
https://download.pytorch.org/whl/torch_stable.html, as https://pytorch.org/get-started/previous-versions/
writes them); PyPI's wheel of the
release's default build carries none, so replacing another build of the same version there needs a forced
reinstall (its dependencies, the CUDA runtime wheels, may differ between builds, so not ``--no-deps``).
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import TorchRelease
from cudadoctor.fixes.build import install_from
from cudadoctor.fixes.model import Install, Pin
from cudadoctor.rules.companions import companion_for_torch

__all__ = ["torch_build_install", "torch_default_tag"]


def torch_default_tag(release: TorchRelease) -> tuple[str, ...]:
    """The variant tag of the release's default PyPI wheel (``cu121``), when the data says it."""
    cuda = release.pypi_default_cuda
    return (f"cu{cuda.major}{cuda.minor}",) if cuda is not None else ()


def torch_build_install(
    matrix: CompatMatrix, release: TorchRelease, variant: str, installed: Mapping[str, Version]
) -> Install | None:
    """``pip install`` of the ``variant`` build of ``release``, with the torchvision and torchaudio of that
    release where they are installed (a companion of another release or build no longer loads into it); None
    when the data has no such build."""
    from cudadoctor.fixes.releases import torch_build_source
    from cudadoctor.fixes.verify import satisfied

    source = torch_build_source(matrix, release, variant)
    if source is None:
        return None
    pins = []
    for name in ("torch", "torchvision", "torchaudio"):
        version = release.version if name == "torch" else companion_for_torch(release, name)
        if version is not None and (name == "torch" or name in installed):
            local = f"+{variant}" if name in source.local_tag else ""
            pins.append(Pin.exact(name, f"{version}{local}"))
    # PyPI's wheel carries no local version: a forced reinstall where the installed version satisfies the pin
    forced = source.option == "pypi" and any(satisfied(p, installed) for p in pins)
    return install_from(tuple(pins), source.url, source.option, force_reinstall=forced)
