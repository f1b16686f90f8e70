"""A command verified on the examined machine: its installed packages, its Python and its wheel platform."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import Facts, InstalledPackage
from cudadoctor.fixes.model import Command

if TYPE_CHECKING:
    from cudadoctor.fixes.verify import Verification

__all__ = ["installed_versions", "verify_on"]


def installed_versions(packages: Mapping[str, InstalledPackage]) -> dict[str, Version]:
    """canonical name -> installed version, as the builders and the verifier take it."""
    return {name: package.version for name, package in packages.items()}


def verify_on(command: Command, matrix: CompatMatrix, facts: Facts) -> Verification:
    """:func:`~cudadoctor.fixes.verify.verify` with what ``facts`` say is installed, the Python and the platform."""
    from cudadoctor.fixes.verify import verify
    from cudadoctor.rules.wheels import wheel_platform

    python = facts.python.version if facts.python is not None else None
    platform = wheel_platform(facts.host.os, facts.host.arch)
    requires = {name: package.requires for name, package in facts.packages.items() if package.requires}
    installed = installed_versions(facts.packages)
    return verify(command, matrix, installed, python=python, platform=platform, requires=requires)
