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

import functools
import re
from collections.abc import Iterable, Mapping

from cudadoctor.data.rows import GpuArch
from cudadoctor.rules.verdict import Verdict, cannot_judge, fails, fits

__all__ = ["arch_families", "build_covers_gpu", "covers", "parse_cc", "parse_target"]

_TARGET = re.compile(r"^(sm|compute)_([0-9]{1,8})([0-9])([af]?)$")  # few enough digits for int()


def parse_target(target: str) -> tuple[str, int, int, str] | None:
    """``sm_90a`` -> ("sm", 9, 0, "a"); ``compute_120`` -> ("compute", 12, 0, ""); None if not a target."""
    match = _TARGET.match(target.strip().lower())
    if not match:
        return None
    kind, major, minor, suffix = match.groups()
    return kind, int(major), int(minor), suffix


_CC = re.compile(r"^([0-9]{1,9})\.([0-9]{1,9})(?![0-9])")


@functools.lru_cache(maxsize=1024)
def parse_cc(cc: str) -> tuple[int, int] | None:
    """``"9.0"`` -> (9, 0); ``"9.0a"`` -> (9, 0); None when ``cc`` is not a compute capability (cached: the
    planners ask for the same few thousands of times)."""
    match = _CC.match(cc.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def covers(targets: Iterable[str], cc: str, families: Mapping[str, Iterable[str]] | None = None) -> str | None:
    """The target in ``targets`` that lets code run on compute capability ``cc``, or None.

    A cubin match is preferred to PTX (which needs the driver's JIT at first launch).
    ``families`` maps a compute capability ("10.0") to the ones its family-specific code runs on.
    """
    gpu = parse_cc(cc)
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
                members = {parse_cc(c) for c in (families or {}).get(f"{major}.{minor}", [f"{major}.{minor}"])}
                if gpu in members:
                    return target
            if not suffix and major == gpu[0] and minor <= gpu[1] and (best is None or minor > best[0]):
                best = (minor, target)
        elif ptx is None and ((suffix == "a" and (major, minor) == gpu) or (not suffix and (major, minor) <= gpu)):
            ptx = target
    return best[1] if best else ptx


def arch_families(gpu_archs: Mapping[str, GpuArch]) -> dict[str, tuple[str, ...]]:
    """Compute capability -> the ones its family-specific code (``sm_XYf``) runs on, where the data says."""
    return {a.compute_capability: a.family_runs_on for a in gpu_archs.values() if a.family_runs_on}


def build_covers_gpu(
    archs: tuple[str, ...] | None, cc: str, gpu_archs: Mapping[str, GpuArch], gpu: str = ""
) -> Verdict[str]:
    """Does a build whose GPU targets are ``archs`` hold code that runs on compute capability ``cc``?

    Ok carries the target that covers it (``detail``); could not judge when the build's arch list is not
    known (``archs`` None) or ``cc`` is not a compute capability.
    """
    if archs is None:
        return cannot_judge("gpu-arch-list", "the build's GPU architecture list (compat/torch.toml arch_list)")
    if parse_cc(cc) is None:
        return cannot_judge("gpu-arch-list", f"the compute capability of {gpu or 'the GPU'}")
    target = covers(archs, cc, arch_families(gpu_archs))
    if target is None:
        return fails("gpu-arch-list", f"{gpu}: compute capability {cc}", "one of " + " ".join(archs))
    return fits("gpu-arch-list", f"{target} runs on compute capability {cc}", target)
