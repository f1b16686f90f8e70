"""pip and uv commands as values, and their one rendering.

A command is built once as data and rendered for pip or uv: ``python -m pip install [flags] pins
[index options]``. Requirements are quoted only where a shell would otherwise read them (``'torch>=2.0'``,
``'jax[cuda12]'``), with :func:`shlex.quote`.

pip's options: https://pip.pypa.io/en/stable/cli/pip_install/ (``--force-reinstall``, ``--no-deps``,
``--index-url``, ``--extra-index-url``, ``--find-links``, ``--no-build-isolation``, ``--no-cache-dir``);
uv's: https://docs.astral.sh/uv/reference/cli/#uv-pip-install (``--reinstall``, ``--no-cache``; its
``uv pip uninstall`` asks nothing, so it has no ``-y``).
"""

from __future__ import annotations

import shlex
from typing import Literal

from cudadoctor.record import record

__all__ = ["Command", "Install", "Pin", "Steps", "Tool", "Uninstall", "render"]

Tool = Literal["pip", "uv"]

_HEAD = {"pip": "python -m pip", "uv": "uv pip"}


@record
class Pin:
    """One requirement: ``name[extras]spec`` (``spec`` as pip reads it: ``==2.1.0+cu121``, ``>=2.0``,
    ``==8.*``; empty: any version), or a wheel by its URL (``url``; ``spec`` then empty)."""

    name: str
    spec: str = ""
    extras: tuple[str, ...] = ()
    url: str | None = None

    @classmethod
    def exact(cls, name: str, version: object, extras: tuple[str, ...] = ()) -> Pin:
        """``name==version``; an empty version leaves it to the resolver (the bare name)."""
        text = str(version)
        return cls(name, f"=={text}" if text else "", extras)

    @property
    def text(self) -> str:
        if self.url is not None:
            return self.url
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.name}{extras}{self.spec}"

    @property
    def version(self) -> str | None:
        """The version of an exact pin (``==2.1.0+cu121`` -> ``2.1.0+cu121``), else None."""
        if self.spec.startswith("==") and "*" not in self.spec and "," not in self.spec:
            return self.spec[2:]
        return None


@record
class Install:
    """``pip install``: the pins, where they come from, and what pip must do with what is installed."""

    pins: tuple[Pin, ...]
    index_url: str | None = None  #: replaces PyPI (and any configured index) for this command
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()  #: ``-f``: a page of wheel links (old PyTorch builds: torch_stable.html)
    #: reinstall even where the installed version satisfies the pin (pip says "already satisfied" otherwise)
    force_reinstall: bool = False
    no_deps: bool = False
    upgrade: bool = False
    no_build_isolation: bool = False
    no_cache_dir: bool = False
    env: tuple[tuple[str, str], ...] = ()  #: variables set for the command: ``FLASH_ATTENTION_FORCE_BUILD=TRUE``
    tool: Tool = "pip"


@record
class Uninstall:
    """``pip uninstall``: the distributions to remove."""

    names: tuple[str, ...]
    tool: Tool = "pip"


@record
class Steps:
    """Commands run one after the other (``a && b``): an uninstall before the install that replaces it."""

    steps: tuple[Install | Uninstall, ...]


Command = Install | Uninstall | Steps


def _install(c: Install) -> str:
    words = [f"{name}={value}" for name, value in c.env]
    words += [_HEAD[c.tool], "install"]
    if c.upgrade:
        words.append("-U")
    if c.force_reinstall:
        words.append("--force-reinstall" if c.tool == "pip" else "--reinstall")
    if c.no_deps:
        words.append("--no-deps")
    if c.no_build_isolation:
        words.append("--no-build-isolation")
    if c.no_cache_dir:
        words.append("--no-cache-dir" if c.tool == "pip" else "--no-cache")
    words += [shlex.quote(p.text) for p in c.pins]
    if c.index_url:
        words += ["--index-url", c.index_url]
    for url in c.extra_index_urls:
        words += ["--extra-index-url", url]
    for url in c.find_links:
        words += ["-f", url]
    return " ".join(words)


def _uninstall(c: Uninstall) -> str:
    yes = " -y" if c.tool == "pip" else ""
    return f"{_HEAD[c.tool]} uninstall{yes} " + " ".join(shlex.quote(n) for n in c.names)


def render(command: Command) -> str:
    """The command line, as printed."""
    if isinstance(command, Steps):
        return " && ".join(render(step) for step in command.steps)
    if isinstance(command, Uninstall):
        return _uninstall(command)
    return _install(command)
