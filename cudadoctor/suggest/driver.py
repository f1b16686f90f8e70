"""``cudadoctor suggest driver``: the NVIDIA driver branches that run every GPU of a machine, and how to install one.

Pure, offline, on compat data only, through the rules `check` asks: a branch is a candidate while NVIDIA's
data center lifecycle supports it (rules/branches.py ``supported_branches``) or as the last branch of a legacy GPU's
architecture (compat/gpu_archs.toml ``last_driver_branch``), and runs a GPU when CD114's rule
(rules/driver.py ``driver_supports_gpu``) says so on the branch's oldest release in compat data.

The kernel module's flavour follows the GPUs: the open modules support Turing and newer only, and NVIDIA's
Blackwell GPUs need them (the NVIDIA Driver Installation Guide, "Kernel Modules",
https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html; NVIDIA's blog,
https://developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-kernel-modules/).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from dataclasses import replace

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverVersion
from cudadoctor.record import record
from cudadoctor.rules.archs import parse_cc
from cudadoctor.rules.branches import BranchFit, branch_label, branch_status, branches_for_gpus, lifecycle_covers
from cudadoctor.rules.driver import driver_supports_gpu
from cudadoctor.rules.verdict import Outcome, Verdict, fits
from cudadoctor.suggest.constraints import Gpu

__all__ = ["DriverOption", "DriverPlan", "install_commands", "module_flavor", "suggest_driver"]

#: the first compute capability the open kernel modules drive (Turing), and the first that needs them (Blackwell)
_OPEN_FROM = (7, 5)
_OPEN_ONLY_FROM = (10, 0)
#: NVIDIA's Unix driver archive: the GeForce and RTX driver's branches, with no end of life
_UNIX_ARCHIVE = "https://www.nvidia.com/en-us/drivers/unix.html"


@record
class DriverOption:
    """One driver branch judged for the GPUs."""

    branch: int  #: ``580``
    label: str  #: ``R580 (long-term support branch, end of life June 2028)``
    release: str  #: its oldest release in compat data (``580.65.06``), "" when none is known
    cuda: str  #: the newest CUDA that release runs (``13.0``), "" when unknown
    #: True: every GPU runs on it; False: one does not (``why``); None: the data cannot place a GPU (``why``)
    fits: bool | None
    why: str  #: what decided a branch that does not fit or could not be judged; "" when it fits
    supported: bool  #: NVIDIA's data center lifecycle still supports it (a legacy branch it ended is not)
    #: (where, command) for each distribution family the plan is for
    commands: tuple[tuple[str, str], ...] = ()


@record
class DriverPlan:
    """The branches for a set of GPUs, best first (supported and fitting, long-term first), with advice."""

    gpus: tuple[str, ...]  #: the GPUs planned for, by name
    flavor: str  #: ``open``, ``proprietary`` or ``either``: the kernel module the GPUs need; "" when none fits all
    options: tuple[DriverOption, ...]
    advice: tuple[str, ...] = ()

    @property
    def best(self) -> DriverOption | None:
        """The branch to install: the first that fits and is supported; None also where no one kernel module
        flavour drives every GPU."""
        if not self.flavor:
            return None
        return next((o for o in self.options if o.fits and o.supported), None)


def module_flavor(compute_capabilities: Sequence[str]) -> str:
    """The kernel module GPUs of these compute capabilities need: ``open`` (a Blackwell), ``proprietary`` (a GPU
    before Turing), ``either``, or "" when they need both."""
    ccs = [c for c in (parse_cc(cc) for cc in compute_capabilities) if c is not None]
    needs_open = any(c >= _OPEN_ONLY_FROM for c in ccs)
    needs_proprietary = any(c < _OPEN_FROM for c in ccs)
    if needs_open and needs_proprietary:
        return ""
    return "open" if needs_open else "proprietary" if needs_proprietary else "either"


def _family(distro: str | None) -> str | None:
    """``ubuntu``, ``debian``, ``el`` (RHEL and its rebuilds 8 and 9, where NVIDIA's DNF module streams exist) or
    None, from os-release's PRETTY_NAME."""
    name = (distro or "").lower()
    if "ubuntu" in name:
        return "ubuntu"
    if "debian" in name:
        return "debian"
    if any(w in name for w in ("red hat", "rhel", "rocky", "almalinux", "centos", "oracle linux")):
        release = re.search(r"\b(\d+)", name)
        return "el" if release is not None and int(release.group(1)) in (8, 9) else None
    return None


def install_commands(branch: int, flavor: str, distro: str | None) -> tuple[tuple[str, str], ...]:
    """(where, command) installing ``branch`` with the module ``flavor`` needs: Ubuntu's own packages
    (nvidia-driver-<branch>[-open], https://ubuntu.com/server/docs/nvidia-drivers-installation), NVIDIA's CUDA
    repository on Debian (the cuda-drivers-<branch> meta package) and its DNF module streams on RHEL 8/9
    (``nvidia-driver:<branch>-open`` / ``-dkms``; NVIDIA Driver Installation Guide, "Advanced Options",
    https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/advanced-options.html). Only the
    distribution's own line when it is known; none for an unknown one, nor where no flavour runs every GPU."""
    if not flavor:
        return ()
    lines = {
        "ubuntu": ("Ubuntu", f"sudo apt install nvidia-driver-{branch}" + ("-open" if flavor == "open" else "")),
        "debian": ("Debian (NVIDIA's CUDA repository)", f"sudo apt install cuda-drivers-{branch}"),
        "el": (
            "RHEL 8/9 (NVIDIA's CUDA repository)",
            f"sudo dnf module install nvidia-driver:{branch}-" + ("dkms" if flavor == "proprietary" else "open"),
        ),
    }
    family = _family(distro)
    if distro is None:
        return tuple(lines.values())
    return (lines[family],) if family is not None else ()


def _option(
    matrix: CompatMatrix, branch: int, fit: BranchFit, label: str, supported: bool, flavor: str, distro: str | None
) -> DriverOption:
    problem = next((v for v in fit.verdicts if v.is_problem), None)
    unknown = next((v for v in fit.verdicts if v.is_unknown), None)
    fits = False if problem is not None else None if unknown is not None else True
    why = (
        f"{problem.observed}: needs {problem.required}"
        if problem is not None
        else f"{unknown.missing} is not in the data"
        if unknown is not None
        else ""
    )
    release = str(fit.release) if "." in str(fit.release) else ""
    cuda = matrix.cuda_for_driver(fit.release) if release else None
    commands = install_commands(branch, flavor, distro) if fits else ()
    if not supported:
        # a branch NVIDIA ended: distributions turn its packages into transitional ones to a newer branch (Ubuntu's
        # nvidia-driver-470 installs 535, https://github.com/linuxmint/mintdrivers/issues/111; 570 became 580,
        # https://launchpad.net/ubuntu/+source/nvidia-graphics-drivers-570/570.211.01-0ubuntu1.24.04.1), so no
        # package name is printed: the driver is NVIDIA's last release of the branch (its Unix driver archive)
        commands = ()
    return DriverOption(branch, label, release, str(cuda or ""), fits, why, supported, commands)


def _legacy(
    matrix: CompatMatrix, gpus: Sequence[Gpu], have: set[int], today: datetime.date
) -> list[tuple[int, BranchFit, str]]:
    """The last branch of each legacy GPU's architecture that is not among the supported ones, judged the same way,
    with its label (a branch NVIDIA's table no longer lists is end of life by that table's note)."""
    from cudadoctor.rules.branches import known_branches

    known = known_branches(matrix)
    found = []
    for branch in sorted({b for g in gpus if (b := matrix.last_driver_branch(g.compute_capability))} - have):
        status = branch_status(matrix, branch, today)
        row = status.detail
        if row is None:
            continue  # no lifecycle row names it or ends it: nothing sourced to say about it
        label = branch_label(row) if row.branch == branch else f"R{branch} (legacy, end of life)"
        release = known.get(branch) or DriverVersion(str(branch))
        verdicts = tuple(_on_legacy(matrix, branch, release, g) for g in gpus)
        found.append((branch, BranchFit(row, release, verdicts), label))
    return found


def _on_legacy(matrix: CompatMatrix, branch: int, release: DriverVersion, gpu: Gpu) -> Verdict[object]:
    """A GPU on a legacy branch: its architecture's own last branch runs it (compat/gpu_archs.toml
    ``last_driver_branch``, the "Last Driver Support" of NVIDIA's matrix); another GPU is judged by CD114's rule."""
    if matrix.last_driver_branch(gpu.compute_capability) == branch:
        return fits("driver-too-old-for-gpu", f"R{branch} is the last branch for compute capability "
                    f"{gpu.compute_capability} (compat/gpu_archs.toml)")  # fmt: skip
    return driver_supports_gpu(matrix, release, gpu.compute_capability, gpu.name)


def suggest_driver(
    matrix: CompatMatrix, gpus: Sequence[Gpu], distro: str | None = None, today: datetime.date | None = None
) -> DriverPlan:
    """The driver branches for ``gpus`` on ``distro`` (os-release's PRETTY_NAME; None: every family's command).

    :param matrix: the compat data.
    :param gpus: the GPUs every branch must run (probed, from the PCI bus, or given with ``--gpu``).
    :param distro: the distribution the install commands are for; None when not known (all are shown).
    :param today: the day the lifecycle is judged on (today when None).
    """
    day = today or datetime.date.today()
    pairs = [(g.name, g.compute_capability) for g in gpus]
    flavor = module_flavor([g.compute_capability for g in gpus])
    supported = branches_for_gpus(matrix, pairs, day)
    legacy = _legacy(matrix, gpus, {f.branch.branch for f in supported}, day)
    options = [_option(matrix, f.branch.branch, f, branch_label(f.branch), True, flavor, distro) for f in supported]
    options += [_option(matrix, b, f, label, False, flavor, distro) for b, f, label in legacy]
    options.sort(key=lambda o: (o.fits is not True, not o.supported))
    # the commands of the first branch that fits only: the one to install (a later branch's packages may not be in
    # every distribution's archive yet)
    options = [o if i == 0 else replace(o, commands=()) for i, o in enumerate(options)]
    advice = []
    if not gpus:
        advice.append("no NVIDIA GPU to plan for: name one with --gpu (e.g. --gpu 'RTX 4090')")
    if not flavor:
        advice.append(
            "these GPUs need different kernel modules (Blackwell the open one, a GPU before Turing the proprietary "
            "one): no one driver install runs them all"
        )
    covers = lifecycle_covers(matrix, [(g.name, g.segment) for g in gpus])
    if covers.outcome is Outcome.NOT_APPLICABLE and gpus:
        advice.append(
            "NVIDIA publishes end-of-life dates for data center GPU drivers only; for these GPUs the branches are "
            f"those its data center lifecycle supports, and the Unix driver archive ({_UNIX_ARCHIVE}) names the "
            "latest GeForce/RTX production branch"
        )
    if gpus and not any(o.fits and o.supported for o in options):
        advice.append(
            "no supported branch runs every GPU: a legacy branch's last release is on NVIDIA's Unix driver archive "
            f"({_UNIX_ARCHIVE}) and gets no fixes (distributions turn its packages into transitional ones to a newer "
            "branch that drops the GPU)"
        )
    return DriverPlan(tuple(g.name for g in gpus), flavor, tuple(options), tuple(advice))
