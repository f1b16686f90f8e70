"""The builders every check and planner calls: an install that changes what it must, whatever is installed.

pip keeps an installed distribution that satisfies a pin ("Requirement already satisfied",
https://pip.pypa.io/en/stable/cli/pip_install/), so reinstalling the version that is there (a wheel built for
another torch, a file another variant overwrote) needs ``--force-reinstall``; ``--no-deps`` keeps the
reinstall to that one package (its dependencies are what the user has, and are not the problem).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from packaging.version import Version

from cudadoctor.fixes.model import Install, Pin, Steps, Tool, Uninstall, render

__all__ = ["both_tools", "install_from", "pins_of", "pip", "taking_effect", "uninstall_then_install"]


def pins_of(pairs: Iterable[tuple[str, str]]) -> tuple[Pin, ...]:
    """``(name, version)`` pairs as exact pins (an empty version: the bare name)."""
    return tuple(Pin.exact(name, version) for name, version in pairs)


def install_from(
    pins: tuple[Pin, ...], url: str | None, option: str = "index-url", *, force_reinstall: bool = False
) -> Install:
    """``pip install`` of ``pins`` from ``url``, given to pip as ``option`` says (compat/torch.toml
    ``[[install_form]]``): ``index-url`` (the index instead of PyPI), ``extra-index-url`` (beside PyPI) or
    ``find-links`` (a page of wheel links, ``-f``: torch 1.x's ``torch_stable.html``,
    https://pip.pypa.io/en/stable/cli/pip_install/#cmdoption-f); no URL (or ``pypi``): the default index."""
    where = (url,) if url else ()
    return Install(
        pins,
        url if option == "index-url" else None,
        where if option == "extra-index-url" else (),
        where if option == "find-links" else (),
        force_reinstall=force_reinstall,
    )


def taking_effect(command: Install, installed: Mapping[str, Version], *, deps: bool = False) -> Install:
    """``command``, made to take effect: where the installed version already satisfies one of its pins, a
    forced reinstall of the pinned packages, without their dependencies (``--no-deps``) unless ``deps``: a
    torch of another build needs its own CUDA runtime wheels."""
    from cudadoctor.fixes.verify import satisfied  # the verifier's data queries: only where a fix is built

    if command.force_reinstall or not any(satisfied(p, installed) for p in command.pins):
        return command
    return replace(command, force_reinstall=True, no_deps=not deps or command.no_deps)


def uninstall_then_install(names: Iterable[str], then: Install) -> Steps:
    """Remove packages first (another variant owning the same files), then install."""
    return Steps((Uninstall(tuple(names), then.tool), then))


def pip(command: Install | Uninstall | Steps) -> str:
    """The pip command line."""
    return render(command)


def both_tools(command: Install) -> tuple[str, str]:
    """The pip and the uv command lines of one install."""
    return render(command), render(_with_tool(command, "uv"))


def _with_tool(command: Install, tool: Tool) -> Install:
    return replace(command, tool=tool)
