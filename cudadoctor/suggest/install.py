"""How a torch plan is installed: its pins (torch, torchvision, torchaudio), the commands, and what they replace.

pip treats an installed ``2.13.0+cpu`` as satisfying ``torch==2.13.0`` (a public version matches any local
version, https://packaging.python.org/en/latest/specifications/version-specifiers/#local-version-identifiers),
so a plan that keeps the version but changes the build must say so: a ``+cu126`` local pin on PyTorch's
index (its wheels carry the tag), or a forced reinstall from PyPI (whose wheels carry none).
"""

from __future__ import annotations

from typing import NamedTuple

from packaging.version import Version

from cudadoctor.data.rows import TorchRelease
from cudadoctor.fixes.build import both_tools, install_from, pins_of
from cudadoctor.fixes.releases import TorchSource
from cudadoctor.rules.companions import companion_for_torch
from cudadoctor.suggest.constraints import Constraints

__all__ = ["ECOSYSTEM", "Install", "configured_index_text", "torch_install", "torch_pins"]

#: installed packages built for one torch release; replacing torch leaves them behind
ECOSYSTEM = ("vllm", "xformers", "flash-attn", "flash_attn")


class Install(NamedTuple):
    pins: tuple[tuple[str, str], ...]
    commands: tuple[str, ...]
    caveats: tuple[str, ...]
    keeps: bool  #: the installed torch is already this build


def torch_pins(release: TorchRelease) -> tuple[tuple[str, str], ...]:
    """torch with its companions: the torchvision/torchaudio compat/torch.toml matches with it (an exact
    Requires-Dist pin, or the release published with it whose torch range admits it).

    Without a sourced torchvision, torchvision goes in the same command unpinned: the resolver then picks one
    that accepts the pinned torch, where a later ``pip install torchvision`` could pull another torch.
    torchaudio without a sourced match is left out.
    """
    vision, audio = companion_for_torch(release, "torchvision"), companion_for_torch(release, "torchaudio")
    pins = [("torch", str(release.version)), ("torchvision", str(vision or ""))]
    if audio:
        pins.append(("torchaudio", str(audio)))
    return tuple(pins)


def _companion_caveats(release: TorchRelease) -> list[str]:
    out = []
    if companion_for_torch(release, "torchvision") is None:
        out.append(
            f"no torchvision release pins torch {release.version} exactly (compat/torch.toml); torchvision is "
            "installed in the same command so the resolver picks one that accepts it"
        )
    if companion_for_torch(release, "torchaudio") is None:
        out.append(f"no torchaudio release in compat data matches torch {release.version}; it is left out")
    return out


def configured_index_text(index: tuple[str, str]) -> str:
    """``the index pip is configured with (URL, where)``: uv's own variables (UV_INDEX_URL, UV_DEFAULT_INDEX) set
    uv's index only, and uv reads neither pip's files nor PIP_INDEX_URL
    (https://docs.astral.sh/uv/reference/environment/, https://docs.astral.sh/uv/pip/compatibility/)."""
    url, where = index
    tool = "uv" if where.startswith("UV_") else "pip"
    return f"the index {tool} is configured with ({url}, {where})"


def _installed_variant(c: Constraints) -> str | None:
    return c.installed_torch_variant if c.installed_torch is not None else None


def torch_install(
    c: Constraints, release: TorchRelease, variant: str, index_url: str | None, form: TorchSource | None = None
) -> Install:
    """The commands installing ``release``'s ``variant`` build (from ``index_url``; None: the default index).

    ``form``: the build is installed as a torch 1.x one (compat/torch.toml ``[[install_form]]``): ``index_url`` goes
    to pip as ``form.option`` (``-f`` or ``--extra-index-url``), and the packages of ``form.local_tag`` are always
    pinned ``+variant``: beside PyPI (and, on the shared ``torch_stable.html``, beside every other build) a plain
    ``torch==1.10.1`` could resolve to any build of that version.
    """
    pins = torch_pins(release)
    caveats = _companion_caveats(release)
    if form is not None:
        pins = tuple((n, f"{v}+{variant}" if v and n in form.local_tag else v) for n, v in pins)
    installed = c.installed_torch
    same_version = installed is not None and Version(installed.public) == release.version
    other_build = _installed_variant(c) not in (None, variant)
    keeps = same_version and not other_build
    reinstall = False
    if same_version and other_build:
        shown = f"torch {installed} ({_installed_variant(c)} build)"
        if form is not None:
            caveats.append(f"replaces the installed {shown}: the +{variant} pins make pip take the {variant} build")
        elif index_url is not None:  # PyTorch's index tags every wheel with its build
            pins = tuple((n, f"{v}+{variant}" if v else v) for n, v in pins)
            caveats.append(f"replaces the installed {shown}: the +{variant} pins make pip take the {variant} build")
        else:
            reinstall = True
            caveats.append(f"replaces the installed {shown}: a forced reinstall, as the version alone matches it")
    elif installed is not None and not same_version:
        caveats.append(f"replaces the installed torch {installed} with {release.version}")
    if installed is not None and not keeps:
        caveats += _ecosystem_caveats(c, release)
    option = form.option if form is not None else "index-url"
    if index_url is not None and c.user_index is not None and option == "index-url":
        caveats.append(
            f"--index-url replaces {configured_index_text(c.user_index)} for this command: "
            f"the {variant} build is published on PyTorch's own index"
        )
    commands = both_tools(install_from(pins_of(pins), index_url, option, force_reinstall=reinstall))
    return Install(pins, commands, tuple(caveats), keeps)


def _ecosystem_caveats(c: Constraints, release: TorchRelease) -> list[str]:
    """Installed packages built for the torch being replaced, and what each needs."""
    out = []
    for name, version in c.installed_ecosystem:
        if name == "vllm":
            out.append(
                f"the installed vllm {version} pins its torch: replacing torch breaks it; plan vllm instead "
                "(cudadoctor suggest vllm), which brings the torch it needs"
            )
        else:
            out.append(
                f"the installed {name} {version} was built for torch {c.installed_torch}: install a {name} build "
                f"for torch {release.version} with it"
            )
    return out
