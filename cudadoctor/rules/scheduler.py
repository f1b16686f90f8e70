"""Which scheduler set CUDA_VISIBLE_DEVICES, and the fix that belongs to it.

Under a scheduler, CUDA_VISIBLE_DEVICES is the scheduler's answer to what the job asked for: unsetting it
in the job only hides the real mistake (and may hand the job GPUs another job was given). The fix is the
request:

- Ray sets CUDA_VISIBLE_DEVICES to the GPUs a task or actor reserved, an empty value for one declared
  without ``num_gpus`` (https://docs.ray.io/en/latest/ray-core/scheduling/accelerators.html);
- Slurm sets it to the GPUs of the allocation, requested with ``--gres=gpu:N`` or ``--gpus``
  (https://slurm.schedmd.com/gres.html, "GPU Management"); its jobs carry SLURM_JOB_ID;
- Kubernetes' NVIDIA device plugin hands a container the GPUs of its ``nvidia.com/gpu`` resource limit
  (https://kubernetes.io/docs/tasks/manage-gpus/scheduling-gpus/); pods carry KUBERNETES_SERVICE_HOST.

The Ray worker's own variables are not kept as facts, so Ray is told by what the job can hold: the
``ray`` package installed and CUDA_VISIBLE_DEVICES set empty (the value Ray gives a task without GPUs).
"""

from __future__ import annotations

from collections.abc import Mapping

from cudadoctor.record import record

__all__ = ["SLURM_VARS", "Scheduler", "detect_scheduler", "scheduler_fix"]

#: Variables Slurm exports into a job step (https://slurm.schedmd.com/sbatch.html, "OUTPUT ENVIRONMENT
#: VARIABLES"); none holds a secret.
SLURM_VARS = ("SLURM_JOB_ID", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS")


@record
class Scheduler:
    """A scheduler that hands out GPUs, and what showed it."""

    name: str  #: ``ray``, ``slurm`` or ``kubernetes``
    evidence: str  #: ``SLURM_JOB_ID is set``, ``the ray package is installed`` …


def detect_scheduler(
    env: Mapping[str, str],
    packages: Mapping[str, object],
    cuda_visible_devices: str | None,
    container_markers: tuple[str, ...] = (),
) -> Scheduler | None:
    """The scheduler this process runs under, or None when nothing shows one.

    :param env: the kept environment variables (name -> value)
    :param packages: the installed distributions by canonical name
    :param cuda_visible_devices: the variable as the process sees it (None when unset)
    :param container_markers: what the container probe saw (``KUBERNETES_SERVICE_HOST`` …)
    """
    slurm = next((name for name in SLURM_VARS if name in env), None)
    if slurm is not None:
        return Scheduler("slurm", f"{slurm} is set")
    if any(name.startswith("RAY_") for name in env):
        return Scheduler("ray", "RAY_* variables are set")
    if "ray" in packages and cuda_visible_devices == "":
        return Scheduler("ray", "the ray package is installed and CUDA_VISIBLE_DEVICES is set empty")
    if "KUBERNETES_SERVICE_HOST" in env or "KUBERNETES_SERVICE_HOST" in container_markers:
        return Scheduler("kubernetes", "KUBERNETES_SERVICE_HOST is set")
    return None


def scheduler_fix(scheduler: Scheduler | None, gpu_count: int) -> tuple[str, tuple[str, ...]]:
    """What to do, and the exact commands, when CUDA_VISIBLE_DEVICES hides the GPUs a job needs.

    :param gpu_count: the GPUs on the machine (the indices a manual setting may list)
    """
    if scheduler is None:
        return "Unset CUDA_VISIBLE_DEVICES, or list the GPU indices to use.", (
            "unset CUDA_VISIBLE_DEVICES",
            "export CUDA_VISIBLE_DEVICES=" + ",".join(str(i) for i in range(max(gpu_count, 1))),
        )
    if scheduler.name == "ray":
        return (
            "Ray gives a task or actor only the GPUs it declares: request one on the code that uses CUDA "
            "(num_gpus=1); do not unset CUDA_VISIBLE_DEVICES inside the task.",
            ("@ray.remote(num_gpus=1)",),
        )
    if scheduler.name == "slurm":
        return (
            "Slurm exposes only the GPUs the job requested: request them with --gres=gpu:N (or --gpus=N); do "
            "not override CUDA_VISIBLE_DEVICES in the job.",
            (f"srun --gres=gpu:{max(gpu_count, 1)} <command>", f"#SBATCH --gres=gpu:{max(gpu_count, 1)}"),
        )
    return (
        "The pod sees only the GPUs of its nvidia.com/gpu resource limit: set the limit on the container; "
        "do not override CUDA_VISIBLE_DEVICES in the pod.",
        ("resources: {limits: {nvidia.com/gpu: 1}}",),
    )
