"""CD115: the driver's branch is still supported by NVIDIA (not end of life)."""

from __future__ import annotations

import datetime

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverInfo, DriverVersion, GpuInfo, HostInfo, ManagedPlatform
from cudadoctor.rules.branches import branch_status, oldest_of_branch
from cudadoctor.rules.verdict import Verdict

__all__ = ["CD115", "as_of"]


def as_of(collected_at: str) -> datetime.date:
    """The day the facts were gathered (``collected_at``, ISO 8601), today when not recorded."""
    try:
        return datetime.date.fromisoformat(collected_at[:10])
    except ValueError:
        return datetime.date.today()


def _last_branch(matrix: CompatMatrix, gpus: tuple[GpuInfo, ...]) -> tuple[int | None, list[str]]:
    """The newest branch every GPU allows (a legacy architecture's last branch), and the GPUs that bound it."""
    bounded = [(matrix.last_driver_branch(g.compute_capability), g) for g in gpus if g.compute_capability]
    limits = [(last, g) for last, g in bounded if last is not None]
    if not limits:
        return None, []
    last = min(b for b, _g in limits)
    return last, [f"{g.name} (last branch R{b})" for b, g in limits if b == last]


class CD115(Check):
    """The driver's branch is still supported by NVIDIA (not end of life).

    What it checks: the branch of the kernel driver (R580 for 580.95.05) against NVIDIA's data center driver
    lifecycle (compat/cuda.toml ``driver_branch``): each branch's type (long-term support, production, new
    feature) and end-of-life month, and NVIDIA's note that every earlier branch missing from its table is end
    of life. The branch to move to is the oldest supported long-term support branch newer than the driver
    (else a production branch) that still runs every GPU (a legacy GPU's last branch bounds it). Judged
    on the day the facts were gathered; a branch the data does not cover, and a Windows driver whose
    version does not name its branch, could not be judged. Jetson's L4T drivers are not applicable.

    Why it matters: an end-of-life branch gets no security or bug fixes, new CUDA releases and GPUs need
    newer branches, and NVIDIA's forward-compatibility packages support only the listed branches.

    How to fix: install the named long-term support branch (for example `sudo apt install
    nvidia-driver-580` on Ubuntu, or the data center driver of that branch); a GPU whose last branch is end
    of life has no supported driver left. Not applicable on a managed platform (Colab, Kaggle, SageMaker …),
    whose driver only the platform can change.
    """

    name = "driver-branch-supported"
    category = "driver"
    severity = Status.WARN

    def check(
        self,
        driver: DriverInfo,
        matrix: CompatMatrix,
        host: HostInfo,
        gpus: tuple[GpuInfo, ...] = (),
        collected_at: str = "",
        platform: ManagedPlatform | None = None,
    ) -> Problem | None:
        if host.jetson_l4t:
            raise NotApplicable("Jetson's driver comes with L4T/JetPack, not with a data center driver branch")
        if platform is not None:
            raise NotApplicable(f"the driver is {platform.name}'s ({platform.source}): its branch is the platform's "
                                "to move, nothing a user there can install")  # fmt: skip
        if driver.version is None:
            raise CannotJudge("the driver version is unknown")
        branch = driver.version.major
        windows = host.os == "Windows" or host.wsl
        if windows and matrix.driver_branch(branch) is None:
            raise CannotJudge(f"a Windows driver's version ({driver.version}) does not name its branch")
        last, legacy = _last_branch(matrix, gpus)
        verdict = branch_status(matrix, branch, as_of(collected_at), last=last)
        if verdict.is_unknown:
            raise CannotJudge(f"{verdict.missing} is not in the data")
        if verdict.is_ok:
            return None
        return _problem(matrix, driver.version, verdict, legacy, ubuntu="ubuntu" in (host.distro or "").lower())


def _problem(
    matrix: CompatMatrix, version: DriverVersion, verdict: Verdict[object], legacy: list[str], *, ubuntu: bool
) -> Problem:
    """An end-of-life branch, with the supported branch to move to (or why there is none)."""
    evidence = {"driver": str(version), "branch": verdict.observed}
    if legacy:
        evidence["GPUs"] = ", ".join(legacy)
    target = verdict.required.removeprefix("a supported branch: ")
    if verdict.required.endswith("(none in the data)"):
        why = f" and {', '.join(legacy)} run on no supported branch" if legacy else ""
        return Problem(
            f"driver {version}: branch {verdict.observed} is end of life{why}: no supported branch to move to",
            evidence,
            Remediation(
                "No supported NVIDIA driver branch runs this configuration; plan to replace the GPU "
                "or accept an unsupported driver.",
                (),
            ),
        )
    branch = int(target.split()[0].removeprefix("R"))
    oldest = oldest_of_branch(matrix, branch)
    evidence["move to"] = target + (f"; its oldest release in compat data is {oldest}" if oldest else "")
    return Problem(
        f"driver {version}: branch {verdict.observed} is end of life; move to {target}",
        evidence,
        Remediation(
            f"Install a driver of the R{branch} branch (NVIDIA's data center driver lifecycle: "
            "https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html).",
            (f"sudo apt install nvidia-driver-{branch}",) if ubuntu else (),
        ),
    )
