"""Releases derived from the package index (`cudadoctor update`), as rows of the curated tables' types.

The compat tables themselves are loaded, validated and queried in :mod:`cudadoctor.data`.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.data.queries import CompatMatrix
from cudadoctor.data.rows import TorchRelease, VllmRelease

__all__ = ["index_data_as_of"]


def index_data_as_of() -> datetime.date | None:
    """When `cudadoctor update` last refreshed the user's cache (None: never, or unusable)."""
    data = CompatMatrix().index_data
    return data.updated if data is not None else None


# --- releases derived from the package index (`cudadoctor update`) ------------------------------------

_PIN = re.compile(r"^\s*([A-Za-z0-9._-]+)(?:\[[^\]]*\])?\s*\(?\s*==\s*([0-9][0-9.]*)")


def _pins(record: Any) -> dict[str, str]:
    """name -> exact pinned version, from Requires-Dist lines whose marker holds on Linux x86_64."""
    from packaging.markers import Marker

    env = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "extra": ""}
    out: dict[str, str] = {}
    for line in record.pins:
        requirement, _, marker = line.partition(";")
        if marker.strip():
            try:
                if not Marker(marker.strip()).evaluate({**env, "python_version": "3.12"}):
                    continue
            except Exception:  # noqa: S112 - an unusual marker: do not guess from it
                continue
        match = _PIN.match(requirement)
        if match:
            out[match.group(1).lower().replace("_", "-")] = match.group(2)
    return out


def _cuda_from_pins(pins: dict[str, str]) -> tuple[Version | None, str | None]:
    for name in ("cuda-toolkit", "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime-cu11"):
        if name in pins:
            parts = pins[name].split(".")
            return Version(f"{parts[0]}.{parts[1]}"), f"Requires-Dist {name}=={pins[name]} (derived)"
    return None, None


def _tag_pythons(tags: tuple[str, ...]) -> tuple[str, ...]:
    found = []
    for tag in tags:
        match = re.fullmatch(r"cp3(\d+)", tag)
        if match:
            found.append(f"3.{match.group(1)}")
    return tuple(sorted(set(found), key=lambda p: int(p.split(".")[1])))


def _derived_torch(record: Any) -> TorchRelease | None:
    if "manylinux_x86_64" not in record.platforms:
        return None
    cuda, evidence = _cuda_from_pins(_pins(record))
    return TorchRelease(
        Version(record.version),
        _tag_pythons(record.python_tags),
        (),
        cuda,
        evidence,
        None,
        (),
        None,
        None,
        derived=record.fetched,
    )


def _derived_vllm(record: Any) -> VllmRelease | None:
    pins = _pins(record)
    if "torch" not in pins:
        return None
    return VllmRelease(
        Version(record.version),
        SpecifierSet(f"=={pins['torch']}"),
        SpecifierSet(record.requires_python) if record.requires_python else None,
        _tag_pythons(record.python_tags),
        record.abi3,
        "manylinux_x86_64" if "manylinux_x86_64" in record.platforms else None,
        None,
        None,
        derived=record.fetched,
    )
