"""CD104: the GPUs CUDA_VISIBLE_DEVICES leaves a process."""

# CD1xx: driver and GPUs
#   CD104  CUDA_VISIBLE_DEVICES leaves at least one GPU visible

from __future__ import annotations

import re

from packaging.version import Version

from cudadoctor.checks._base import Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.facts.derive import (
    GpuEvidence,
)
from cudadoctor.facts.model import (
    GpuInfo,
    InstalledPackage,
    VisibleDevices,
)
from cudadoctor.fixes import Install, Pin
from cudadoctor.fixes.build import pip
from cudadoctor.rules.scheduler import Scheduler, scheduler_fix

__all__ = ["CD104", "parse_visible_devices"]


def parse_visible_devices(value: str, count: int) -> list[str] | None:
    """The devices ``CUDA_VISIBLE_DEVICES`` leaves visible, or None when it cannot be told.

    CUDA reads a comma-separated list of indices or UUIDs and stops at the first invalid entry
    (CUDA C++ Programming Guide, "CUDA Environment Variables"). UUIDs (GPU-…, MIG-…) cannot be
    verified here (cudadoctor never keeps them), so a list with one gives None.
    """
    visible: list[str] = []
    indices: set[int] = set()  # a set: duplicates found in linear time (60,000 GPUs took 392 s)
    for raw in value.split(","):
        entry = raw.strip()
        if entry.upper().startswith(("GPU-", "MIG-")):
            return None
        # ASCII digits only (str.isdigit accepts "²", which int refuses); "00" is the same GPU as "0".
        if not re.fullmatch(r"[0-9]{1,9}", entry) or int(entry) >= count or int(entry) in indices:
            break
        visible.append(entry)
        indices.add(int(entry))
    return visible


#: The first torch release whose CUDA_VISIBLE_DEVICES parser accepts GPU UUIDs: torch 1.13 read only
#: ordinals and counted no GPU for ``GPU-<uuid>`` (https://github.com/pytorch/pytorch/issues/90543).
TORCH_PARSES_GPU_UUIDS = Version("2.0")


def _uuid_misread_by_torch(value: str, torch: InstalledPackage | None) -> Problem | None:
    """A warning when torch older than 2.0 reads a CUDA_VISIBLE_DEVICES that lists GPUs by UUID."""
    if torch is None or torch.version.release >= TORCH_PARSES_GPU_UUIDS.release:
        return None
    if not any(entry.strip().upper().startswith("GPU-") for entry in value.split(",")):
        return None
    return Problem(
        f"CUDA_VISIBLE_DEVICES lists GPUs by UUID, which CUDA accepts, but torch {torch.version} counts no GPU "
        "for UUID entries (torch.cuda.device_count() == 0; pytorch#90543, fixed in torch 2.0)",
        {"CUDA_VISIBLE_DEVICES": "GPU-<uuid> entries", "torch": str(torch.version)},
        Remediation(
            "Upgrade torch to 2.0 or newer, or have the scheduler export GPU indices instead of UUIDs.",
            (pip(Install((Pin("torch", ">=2.0"),), upgrade=True)),),
        ),
        status=Status.WARN,
    )


class CD104(Check):
    """CUDA_VISIBLE_DEVICES leaves the GPUs visible that it lists.

    What it checks: the value of CUDA_VISIBLE_DEVICES against the number of GPUs present (from NVML,
    /proc/driver/nvidia/gpus or the /dev/nvidiaN nodes). CUDA reads a comma-separated list of indices,
    GPU-<uuid> or MIG-<uuid> entries and stops at the first invalid one (CUDA C++ Programming Guide,
    "CUDA Environment Variables",
    https://docs.nvidia.com/cuda/cuda-c-programming-guide/#cuda-environment-variables). UUID forms are
    valid; torch older than 2.0 misread GPU UUIDs (pytorch#90543), which is a warning.

    Why it matters: an empty value, -1, or an index beyond the GPUs present hides every GPU: cuInit
    returns CUDA_ERROR_NO_DEVICE (100) and frameworks report "CUDA available: False" while
    nvidia-smi lists the GPUs. An invalid entry after valid ones hides the GPUs listed after it.
    Under Ray, Slurm or Kubernetes the value is the scheduler's answer to what the job requested.

    How to fix: under a scheduler, request the GPUs from it (Ray ``num_gpus=1``, Slurm
    ``--gres=gpu:N``, the pod's ``nvidia.com/gpu`` limit); otherwise unset CUDA_VISIBLE_DEVICES or set it
    to the indices of the GPUs to use.
    """

    name = "visible-devices-not-empty"
    category = "gpus"

    def check(
        self,
        visible: VisibleDevices,
        # gpus first: a GPU probe that crashed makes this "could not judge", not "no GPU" (engine order)
        gpus: tuple[GpuInfo, ...] = (),
        gpu_evidence: GpuEvidence | None = None,
        scheduler: Scheduler | None = None,
        torch: InstalledPackage | None = None,
    ) -> Problem | None:
        value = visible.cuda_visible_devices
        gpu_count = gpu_evidence.count if gpu_evidence is not None else 0
        if gpu_evidence is None or not gpu_count:
            raise NotApplicable(
                "no GPU this process could reach (NVML, nvidia-smi, /proc/driver/nvidia/gpus, /dev/nvidia0..N)"
                + (f"; only {gpu_evidence.strongest()}" if gpu_evidence is not None else "")
            )
        if value is None:
            return None
        shown = parse_visible_devices(value, gpu_count)
        if shown is None:
            return _uuid_misread_by_torch(value, torch)
        listed = [e for e in value.split(",") if e.strip()]
        if shown and len(shown) == len(listed):
            return None
        text, commands = scheduler_fix(scheduler, gpu_count)
        evidence = {
            "CUDA_VISIBLE_DEVICES": repr(value),
            "GPUs present": str(gpu_count),
            "GPUs shown by": gpu_evidence.strongest(),
        }
        if scheduler is not None:
            evidence["scheduler"] = f"{scheduler.name} ({scheduler.evidence})"
        if shown:
            return Problem(
                f"CUDA_VISIBLE_DEVICES={value!r} stops at an entry that is not one of the {gpu_count} GPU(s): "
                f"CUDA sees only {','.join(shown)} and ignores the entries after it",
                evidence,
                Remediation(text, commands),
                status=Status.WARN,
            )
        return Problem(
            f"CUDA_VISIBLE_DEVICES={value!r} hides all {gpu_count} GPU(s): CUDA will report no device (error 100)",
            evidence,
            Remediation(text, commands),
        )
