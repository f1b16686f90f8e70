"""Whether GPUs are there, for the checks that need them: one answer, from :func:`cudadoctor.facts.derive.gpu_evidence`.

A check that judges the GPUs' models (compute capability, architecture, brand) needs the probed GPUs. When nothing
shows a GPU it is not applicable; when only the device nodes /dev/nvidia0..N or the PCI bus show GPUs (NVML does
not answer, /proc/driver/nvidia/gpus is not there: a container, an image root), GPUs are there but their models are
unknown, so it could not judge: never "no GPU found" while a device node says otherwise.
"""

from __future__ import annotations

from cudadoctor.checks._base import CannotJudge, NotApplicable
from cudadoctor.facts.derive import GpuEvidence
from cudadoctor.facts.model import GpuInfo

__all__ = ["NO_GPU", "gpus_to_judge"]

#: Why a check about the GPUs does not apply when nothing shows one.
NO_GPU = "no GPU found (NVML, nvidia-smi, /proc/driver/nvidia/gpus, /dev/nvidia0..N, the PCI bus)"


def gpus_to_judge(gpus: tuple[GpuInfo, ...], gpu_evidence: GpuEvidence | None) -> tuple[GpuInfo, ...]:
    """The probed GPUs, for a check that needs their models.

    :raises NotApplicable: nothing shows a GPU.
    :raises CannotJudge: GPUs are there (device nodes, the PCI bus) but no source named their models.
    """
    if gpus:
        return gpus
    if gpu_evidence is None:
        raise NotApplicable(NO_GPU)
    raise CannotJudge(
        f"a GPU is present ({gpu_evidence.strongest()}) but no source named its model (NVML did not answer, no "
        "/proc/driver/nvidia/gpus): pass --assume-gpu"
    )
