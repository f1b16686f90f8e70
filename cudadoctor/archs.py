"""Which compiled GPU code runs on which GPU: the CUDA binary and PTX compatibility rules.

From the CUDA C++ Programming Guide ("Binary Compatibility", "PTX Compatibility") and NVIDIA's
architecture-specific / family-specific feature notes:

* a cubin for ``sm_XY`` runs on GPUs of compute capability X.Z with Z >= Y (same major only);
* an arch-specific cubin ``sm_XYa`` runs only on compute capability X.Y;
* a family-specific cubin ``sm_XYf`` runs on the compute capabilities of its family, which
  ``compat/gpu_archs.toml`` lists per architecture (``family_runs_on``);
* PTX for ``compute_XY`` is JIT-compiled by the driver for any GPU of compute capability >= X.Y;
  ``compute_XYa`` PTX only for X.Y.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["covers", "parse_target"]

_TARGET = re.compile(r"^(sm|compute)_([0-9]{1,8})([0-9])([af]?)$")  # few enough digits for int()


def parse_target(target: str) -> tuple[str, int, int, str] | None:
    """``sm_90a`` -> ("sm", 9, 0, "a"); ``compute_120`` -> ("compute", 12, 0, ""); None if not a target."""
    match = _TARGET.match(target.strip().lower())
    if not match:
        return None
    kind, major, minor, suffix = match.groups()
    return kind, int(major), int(minor), suffix


def _cc(cc: str) -> tuple[int, int] | None:
    match = re.match(r"^([0-9]{1,9})\.([0-9]{1,9})(?![0-9])", cc.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def covers(targets: Iterable[str], cc: str, families: Mapping[str, Iterable[str]] | None = None) -> str | None:
    """The target in ``targets`` that lets code run on compute capability ``cc``, or None.

    A cubin match is preferred to PTX (which needs the driver's JIT at first launch).
    ``families`` maps a compute capability ("10.0") to the ones its family-specific code runs on.
    """
    gpu = _cc(cc)
    if gpu is None:
        return None
    ptx: str | None = None
    best: tuple[int, str] | None = None  # the closest plain cubin (highest minor) wins
    for target in targets:
        parsed = parse_target(target)
        if parsed is None:
            continue
        kind, major, minor, suffix = parsed
        if kind == "sm":
            if suffix == "a" and (major, minor) == gpu:
                return target
            if suffix == "f":
                members = {_cc(c) for c in (families or {}).get(f"{major}.{minor}", [f"{major}.{minor}"])}
                if gpu in members:
                    return target
            if not suffix and major == gpu[0] and minor <= gpu[1] and (best is None or minor > best[0]):
                best = (minor, target)
        elif ptx is None and ((suffix == "a" and (major, minor) == gpu) or (not suffix and (major, minor) <= gpu)):
            ptx = target
    return best[1] if best else ptx
