"""Which MIG devices a process can use: pure rules over the GPUs and CUDA_VISIBLE_DEVICES.

CUDA 11/R450 and CUDA 12/R525 enumerate a single MIG device per process: "regardless of how many MIG
devices are created (or made available to a container), a single CUDA process can only enumerate a single
MIG device" (MIG user guide, "CUDA Device Enumeration",
https://docs.nvidia.com/datacenter/tesla/mig-user-guide/#cuda-visible-devices). A GPU in MIG mode with no
MIG device created (or none assigned to the process) gives CUDA nothing to run on.
"""

from __future__ import annotations

from collections.abc import Sequence

from cudadoctor.facts.model import GpuInfo
from cudadoctor.record import record

__all__ = ["MigView", "mig_gpus", "mig_view"]


@record
class MigView:
    """What CUDA_VISIBLE_DEVICES leaves a process of the MIG devices; ``devices`` None when unknown."""

    devices: int | None  #: MIG devices the process is given (CUDA enumerates only the first)
    plain_gpus: int  #: GPUs without MIG mode that the process is given
    why: str  #: how the count was reached, for evidence; or, when ``devices`` is None, what is missing


def mig_gpus(gpus: Sequence[GpuInfo]) -> list[GpuInfo]:
    """The GPUs in MIG mode."""
    return [g for g in gpus if (g.mig_mode or "").lower() == "enabled"]


def mig_view(gpus: Sequence[GpuInfo], cuda_visible_devices: str | None) -> MigView:
    """The MIG devices and plain GPUs a process gets, from NVML's per-GPU MIG device counts.

    ``CUDA_VISIBLE_DEVICES`` unset: every GPU. ``MIG-<uuid>`` entries: one MIG device each. GPU indices:
    those GPUs. GPU UUIDs (``GPU-…``) cannot be mapped: cudadoctor keeps no UUID.
    """
    if cuda_visible_devices is None:
        return _count(gpus, "CUDA_VISIBLE_DEVICES unset: every GPU")
    tokens = [t.strip() for t in cuda_visible_devices.split(",") if t.strip()]
    if tokens and all(t.upper().startswith("MIG-") for t in tokens):
        return MigView(len(tokens), 0, f"CUDA_VISIBLE_DEVICES names {len(tokens)} MIG device(s)")
    by_index = {g.index: g for g in gpus}
    chosen: list[GpuInfo] = []
    for token in tokens:
        if not token.isdigit() or int(token) not in by_index:
            # CUDA stops at the first entry it cannot use; a GPU UUID is not mappable without UUIDs.
            if not chosen:
                return MigView(None, 0, f"CUDA_VISIBLE_DEVICES entry {token!r} does not name a GPU index")
            break
        chosen.append(by_index[int(token)])
    return _count(chosen, f"CUDA_VISIBLE_DEVICES={cuda_visible_devices}")


def _count(gpus: Sequence[GpuInfo], why: str) -> MigView:
    migs = mig_gpus(gpus)
    plain = len(gpus) - len(migs)
    counts = [g.mig_devices for g in migs]
    if any(c is None for c in counts):
        return MigView(None, plain, "NVML did not report the MIG devices of a GPU in MIG mode")
    return MigView(sum(c or 0 for c in counts), plain, why)
