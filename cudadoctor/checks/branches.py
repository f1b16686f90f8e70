"""CD115: the driver's branch is still supported by NVIDIA (not end of life)."""

from __future__ import annotations

import datetime

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.checks.hostfix import assumed_driver, assumed_host, is_image
from cudadoctor.data import CompatMatrix
from cudadoctor.errors import CompatDataError
from cudadoctor.facts.model import (
    DriverInfo,
    DriverVersion,
    GpuInfo,
    HostInfo,
    ManagedPlatform,
    RootKind,
)
from cudadoctor.gpu_models import gpu_segments
from cudadoctor.record import record
from cudadoctor.rules.branches import branch_status, lifecycle_covers, oldest_of_branch
from cudadoctor.rules.verdict import Outcome, Verdict

__all__ = ["CD115", "as_of"]


def as_of(collected_at: str) -> datetime.date:
    """The day the facts were gathered (``collected_at``, ISO 8601), today when not recorded."""
    try:
        return datetime.date.fromisoformat(collected_at[:10])
    except ValueError:
        return datetime.date.today()


def _segments(gpus: tuple[GpuInfo, ...]) -> tuple[tuple[str, str | None], ...]:
    """(name, segment) of each GPU; every segment unknown when the GPU table cannot be read (the GPU probe records
    that as its reason)."""
    try:
        return gpu_segments(gpus)
    except CompatDataError:
        return tuple((gpu.name, None) for gpu in gpus)


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
    feature) and end-of-life month, and NVIDIA's note that every earlier branch missing from its table is end of
    life. NVIDIA publishes that lifecycle for data center GPUs only (compat/cuda.toml ``driver_lifecycle``, by
    the GPU's segment in compat/gpus.toml): on a machine with no data center GPU (GeForce, RTX/Quadro
    workstation GPUs, whose driver archive gives no branch an end of life) it is not applicable, and where a
    GPU's product line is unknown a branch that lifecycle ended could not be judged (a supported one is ok). The
    branch to move to is the oldest supported long-term support branch newer than the driver (else a production
    branch) that still runs every GPU (a legacy GPU's last branch bounds it). Judged on the day the facts were
    gathered; a branch newer than every branch of the data is not applicable (*inferred*: no table read can have
    ended it); a branch between listed ones that no table names, and a Windows driver whose version does not
    name its branch, could not be judged. Jetson's L4T drivers are not applicable.

    Why it matters: an end-of-life branch gets no security or bug fixes, new CUDA releases and GPUs need
    newer branches, and NVIDIA's forward-compatibility packages support only the listed branches.

    How to fix: on a host, install the named long-term support branch (for example `sudo apt install
    nvidia-driver-580` on Ubuntu, or the data center driver of that branch); in a container image, nothing
    in the image: a container runs on the host's kernel driver, so upgrade the host's driver (a driver is
    never installed in an image, CD101); with a driver given by --assume-driver (a build stage's pre-flight), the
    text names that machine and there is no command. A GPU whose last branch is end of life has no supported
    driver left.
    Not applicable on a managed platform (Colab, Kaggle, SageMaker …), whose driver only the platform can
    change.
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
        root_kind: RootKind | None = None,
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
        covers = lifecycle_covers(matrix, _segments(gpus))
        if covers.outcome is Outcome.NOT_APPLICABLE:  # no lifecycle is published for these GPUs
            raise NotApplicable(covers.basis)
        last, legacy = _last_branch(matrix, gpus)
        verdict = branch_status(matrix, branch, as_of(collected_at), last=last)
        if verdict.outcome is Outcome.NOT_APPLICABLE:
            raise NotApplicable(verdict.basis)
        if verdict.is_unknown:
            raise CannotJudge(f"{verdict.missing} is not in the data")
        if verdict.is_ok:
            return None  # supported in the only lifecycle NVIDIA publishes, whatever an unknown GPU's line
        if covers.is_unknown:  # ended for a data center GPU: whether it is one decides
            raise CannotJudge(f"{covers.missing} is not known; branch {verdict.observed} ended for data center GPUs")
        where = _Where(
            is_image(root_kind), "ubuntu" in (host.distro or "").lower(), assumed_host(root_kind), _given(driver)
        )
        return _problem(matrix, driver.version, verdict, legacy, where)


@record
class _Where:
    """Where the fix runs: a container image (nothing to install there), an Ubuntu host (its package), and why a
    host's fix was given to a root of unknown kind ("" when the kind is known)."""

    image: bool
    ubuntu: bool
    assumed: str
    given: str  #: where a driver given on the command line came from (``--assume-driver``); "" when it was read


def _given(driver: DriverInfo) -> str:
    """``--assume-driver`` when the driver version was given, not read: it describes another machine (the host a
    build stage's image will run on), where the fix belongs."""
    if driver.kernel_module is not None:
        return ""
    given = assumed_driver(driver)
    return given.source.where if given is not None else ""


def _problem(
    matrix: CompatMatrix, version: DriverVersion, verdict: Verdict[object], legacy: list[str], where: _Where
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
    lifecycle = "https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html"
    message = f"driver {version}: branch {verdict.observed} is end of life; move to {target}"
    if where.image:
        text = (
            f"Upgrade the host's driver to the R{branch} branch: a container runs on the host's kernel driver, and "
            f"a driver is never installed in an image (NVIDIA's data center driver lifecycle: {lifecycle})."
        )
        return Problem(message, evidence, Remediation(text, ()))
    if where.given:
        text = (
            f"Upgrade the driver of the machine {where.given} describes to the R{branch} branch; nothing is to be "
            f"installed here (NVIDIA's data center driver lifecycle: {lifecycle})."
        )
        return Problem(message, evidence, Remediation(text, ()))
    if where.assumed:
        evidence["root"] = f"taken for a host: {where.assumed}"
    return Problem(
        message,
        evidence,
        Remediation(
            f"Install a driver of the R{branch} branch (NVIDIA's data center driver lifecycle: {lifecycle}).",
            (f"sudo apt install nvidia-driver-{branch}",) if where.ubuntu else (),
        ),
    )
