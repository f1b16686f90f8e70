"""Exact pins in an installed package's Requires-Dist: ``nvidia-cudnn-cu11==8.5.0.96`` or
``nvidia-nccl-cu12 (==2.21.5)``, the name first and then ``==``. A marker's ``==`` (``extra == "cudnn"``,
``platform_system == "Linux"``) pins nothing."""

from __future__ import annotations

import re

from cudadoctor.facts.model import InstalledPackage

__all__ = ["exact_pins"]

_EXACT_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9_.-]*)\s*\(?\s*==\s*([0-9][^\s;,)]*)")


def exact_pins(pkg: InstalledPackage) -> dict[str, str]:
    """Distribution (canonical name) -> the version ``pkg`` pins it to."""
    pins: dict[str, str] = {}
    for line in pkg.requires:
        match = _EXACT_PIN.match(line)
        if match is not None:
            pins.setdefault(re.sub(r"[-_.]+", "-", match.group(1)).lower(), match.group(2))
    return pins
