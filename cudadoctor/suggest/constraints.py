"""What a plan must fit (:class:`Constraints`) and what planning answers (:class:`Suggestion`)."""

from __future__ import annotations

from dataclasses import field

from packaging.version import Version

from cudadoctor.facts.model import DriverVersion
from cudadoctor.record import record
from cudadoctor.rules.driver import ForwardCompat
from cudadoctor.rules.wheels import PLATFORMS

__all__ = [
    "PLATFORMS",
    "Constraints",
    "Exclusion",
    "Gpu",
    "Plan",
    "Suggestion",
    "Upgrade",
    "pin",
    "short",
]


@record
class Gpu:
    """A GPU a plan must run on: its name, compute capability, where that came from and its segment."""

    name: str
    compute_capability: str
    source: str  #: ``probed`` or ``--gpu`` (with the rule of an *inferred* compute capability)
    #: its segment in compat/gpus.toml (``datacenter``, ``geforce`` …); None when the table lacks the model
    segment: str | None = None


@record
class Constraints:
    """What a plan must fit. ``None`` means unknown: the rule that needs it is not applied (and said so)."""

    driver: DriverVersion | None = None
    driver_cuda: Version | None = None  #: the CUDA version the driver supports (for images and ranking)
    gpus: tuple[Gpu, ...] = ()
    python: Version | None = None
    platform: str = "linux-x86_64"
    cuda_ceiling: Version | None = None  #: --cuda: no build for a newer CUDA than this
    installed_torch: Version | None = None
    installed_torch_variant: str | None = None
    #: where each constraint came from, for the report (``driver``: ``probed`` / ``--driver`` …)
    origins: dict[str, str] = field(default_factory=dict)
    #: the cuda-compat libcuda this host's loader picks (forward compatibility); None: there is none, and
    #: no plan counts on one
    forward_compat: ForwardCompat | None = None
    #: what the machine computes with: ``cuda``, ``cpu``, ``rocm``, ``mps``, ``xpu`` or ``jetson``; None when
    #: unknown (CUDA plans, not checked against a GPU)
    accelerator: str | None = None
    rocm: Version | None = None  #: the host's ROCm (/opt/rocm/.info/version)
    jetson_l4t: str | None = None  #: the Jetson's L4T release (/etc/nv_tegra_release)
    #: the host's Intel display devices (HostInfo.intel_gpus: ``<PCI slot> <vendor:device>``)
    intel_gpus: tuple[str, ...] = ()
    #: installed torch-ecosystem packages besides torch, (name, version): xformers, flash-attn, vllm …
    installed_ecosystem: tuple[tuple[str, str], ...] = ()
    #: the index pip is configured with when it is not PyPI, as (URL with credentials masked, where it is set)
    user_index: tuple[str, str] | None = None
    #: the build the target names (``cu126`` of ``torch==2.13.0+cu126``); None: any
    wanted_variant: str | None = None


@record
class Exclusion:
    """Why one candidate does not fit: the rule, what was observed, what it requires."""

    candidate: str
    rule: str
    observed: str
    required: str


@record
class Plan:
    """One installable plan: the packages and versions, the CUDA variant and the index to install from."""

    target: str
    packages: tuple[tuple[str, str], ...]  #: (name, version) pairs to install
    variant: str  #: ``cu126``, or ``pypi`` for the default PyPI wheel
    cuda: Version | None
    index_url: str | None
    commands: tuple[str, ...]
    why: tuple[str, ...]
    caveats: tuple[str, ...] = ()
    keeps_installed: bool = False
    #: container images that fit the plan and the host, each with why
    images: tuple[tuple[str, str], ...] = ()
    #: how ``index_url`` is given to pip: ``index-url``, ``extra-index-url`` or ``find-links`` (torch 1.x)
    index_option: str = "index-url"


@record
class Upgrade:
    """One change to the machine and the best plan it would unlock (``suggest`` under that assumption)."""

    change: str  #: ``driver`` or ``python``
    value: str  #: the driver version (the oldest of its branch in data) or the Python version
    plan: Plan  #: the top plan under that change
    text: str


@record
class Suggestion:
    """What suggest answers for one target: the plans that fit, those excluded and why."""

    target: str
    requirement: str
    plans: tuple[Plan, ...]
    excluded: tuple[Exclusion, ...]
    #: what would have to change when nothing fits (or to unlock a better plan)
    advice: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    #: newer releases a supported driver branch or another Python would unlock, each checked by planning
    upgrades: tuple[Upgrade, ...] = ()


def short(version: Version) -> str:
    return f"{version.major}.{version.minor}"


def pin(name: str, version: str) -> str:
    """``name==version``, or the bare name when the version is left to the resolver (``""``)."""
    return f"{name}=={version}" if version else name
