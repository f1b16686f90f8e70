"""CD130-CD131: the MIG devices a process is given, as CUDA will enumerate them.

CD130  one process is given at most one MIG device (CUDA enumerates only the first)
CD131  a process given GPUs in MIG mode has a MIG device to run on
The counts come from NVML (nvmlDeviceGetMigDeviceHandleByIndex per GPU), else the driver's MIG capability files
(:mod:`cudadoctor.probes.mig_caps`: a container or ``--root`` where NVML does not answer), or an ``--assume-gpu``
MIG profile; the rule is :func:`cudadoctor.rules.mig.mig_view`.
"""

from __future__ import annotations

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation
from cudadoctor.facts.model import GpuInfo, VisibleDevices
from cudadoctor.rules.mig import MigView, mig_gpus, mig_view

__all__ = ["CD130", "CD131"]

_GUIDE = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/"


def _view(gpus: tuple[GpuInfo, ...], visible: VisibleDevices) -> tuple[list[GpuInfo], MigView]:
    migs = mig_gpus(gpus)
    if not migs:
        raise NotApplicable("no GPU is in MIG mode")
    view = mig_view(gpus, visible.cuda_visible_devices)
    if view.devices is None:
        raise CannotJudge(f"the MIG devices this process is given: {view.why}")
    return migs, view


def _evidence(migs: list[GpuInfo], view: MigView) -> dict[str, str]:
    per_gpu = "; ".join(
        f"GPU {g.index} {g.name}: {g.mig_devices} MIG device(s) ({(g.mig_source or g.source).where})" for g in migs
    )
    return {"GPUs in MIG mode": per_gpu, "given to this process": f"{view.devices} MIG device(s), {view.why}"}


class CD130(Check):
    """One process is given at most one MIG device.

    What it checks: how many MIG devices a process started here is given (NVML's MIG devices of every GPU
    in MIG mode that CUDA_VISIBLE_DEVICES leaves it, or the MIG-<uuid> entries of CUDA_VISIBLE_DEVICES).

    Why it matters: CUDA enumerates a single MIG device per process however many it is given (MIG user
    guide, CUDA device enumeration), so torch.cuda.device_count() is 1 and every device index beyond 0
    fails: "invalid device ordinal", "device >= 0 && device < num_gpus INTERNAL ASSERT FAILED". Training
    across MIG devices in one process, or one rank per device index, cannot work.

    How to fix: start one process per MIG device, each with CUDA_VISIBLE_DEVICES=MIG-<uuid> (nvidia-smi -L
    lists the UUIDs) set before the process starts, and use device 0 inside it; under a scheduler request
    one MIG device per task.
    """

    name = "one-mig-device-per-process"
    category = "gpus"

    def check(self, gpus: tuple[GpuInfo, ...], visible: VisibleDevices) -> Problem | None:
        migs, view = _view(gpus, visible)
        if (view.devices or 0) <= 1:
            return None
        return Problem(
            f"this process is given {view.devices} MIG devices, but CUDA enumerates only one MIG device per "
            "process: device_count() is 1 and every device index beyond 0 fails",
            _evidence(migs, view),
            Remediation(
                "Give each process one MIG device: list their UUIDs with `nvidia-smi -L`, then start one process "
                "per MIG device with CUDA_VISIBLE_DEVICES=MIG-<uuid> set before it starts (not from inside the "
                f"script) and use device 0 in it. See {_GUIDE}",
                ("nvidia-smi -L", "CUDA_VISIBLE_DEVICES=MIG-<uuid> python <script>.py"),
            ),
        )


class CD131(Check):
    """A process given GPUs in MIG mode has a MIG device to run on.

    What it checks: whether every GPU this process is given is in MIG mode with no MIG device created or
    assigned to it (NVML lists none), and no GPU outside MIG mode is given either.

    Why it matters: a GPU in MIG mode runs CUDA only on its MIG devices (a GPU instance with a compute
    instance); with none, CUDA finds no device at all (CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is
    detected").

    How to fix: create a GPU instance with a compute instance (sudo nvidia-smi mig -cgi <profile> -C), or
    have the scheduler assign the job a MIG device; or turn MIG mode off (sudo nvidia-smi -i <gpu> -mig 0).
    """

    name = "mig-device-exists"
    category = "gpus"

    def check(self, gpus: tuple[GpuInfo, ...], visible: VisibleDevices) -> Problem | None:
        migs, view = _view(gpus, visible)
        if view.devices or view.plain_gpus:
            return None
        return Problem(
            "the GPUs this process is given are in MIG mode with no MIG device created or assigned to it: "
            "CUDA finds no device (CUDA_ERROR_NO_DEVICE)",
            _evidence(migs, view),
            Remediation(
                "Create a MIG device (a GPU instance with its compute instance: `nvidia-smi mig -lgip` lists the "
                "profiles), or request one from the scheduler for the job, or turn MIG mode off on that GPU. "
                f"See {_GUIDE}",
                ("nvidia-smi mig -lgip", "sudo nvidia-smi mig -i 0 -cgi <profile> -C"),
            ),
        )
