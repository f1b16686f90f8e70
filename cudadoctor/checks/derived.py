"""What a check's parameters may name: the probed facts, the derived facts, and what a run supplies.

A check that needs "the installed torch" or "the CUDA version applications get from the driver" asks for it by
parameter name, like a probed fact; :data:`DERIVED` says how each such value is computed from the facts (with the
compat data and the rules where it needs them), once per run, instead of inside each check. The check engine
(:mod:`cudadoctor.checks.engine`) injects them; the check registry refuses, at definition time, a parameter that
names none of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.derive import env_map, frameworks_by_cuda_major, gpu_evidence, ld_library_path
from cudadoctor.facts.model import Facts, InstalledPackage
from cudadoctor.facts.registry import FACTS
from cudadoctor.record import record
from cudadoctor.rules.driver import effective_cuda, forward_compat
from cudadoctor.rules.scheduler import detect_scheduler
from cudadoctor.rules.toolchain import build_toolkit

__all__ = [
    "CONTEXT",
    "DERIVED",
    "Derived",
    "absent_reason",
    "injectable_names",
    "injectables",
    "with_data_builds",
]

#: Values a run supplies besides the facts, and why a check needing one is not applicable without it.
CONTEXT: dict[str, str] = {"facts": "", "matrix": "", "requirements": "no --require given"}


@record
class Derived:
    """One derived fact: how to compute it and why a check needing it is not applicable when absent."""

    #: (the facts, the compat data) -> the value
    compute: Callable[[Facts, CompatMatrix], Any]
    absent: str
    doc: str


def with_data_builds(
    packages: dict[str, InstalledPackage], matrix: CompatMatrix, arch: str
) -> dict[str, InstalledPackage]:
    """The packages, where a release's CUDA build shows nowhere in its files but is known from the data
    (ctranslate2 links cudart statically: compat/runtime_libraries.toml ``cuda_build``) carrying that build."""
    out = dict(packages)
    for name, pkg in packages.items():
        if pkg.cuda_build:
            continue
        build = next((r.cuda_build for r in matrix.runtime_loads_for(name, pkg.version, arch) if r.cuda_build), None)
        if build is not None:
            out[name] = dataclasses.replace(
                pkg, cuda_build=f"{build.major}.{build.minor}", cuda_variant=f"cu{build.major}{build.minor}",
                cuda_variant_source="compat/runtime_libraries.toml",
            )  # fmt: skip
    return out


def _package(name: str) -> Callable[[Facts, CompatMatrix], InstalledPackage | None]:
    def compute(facts: Facts, _matrix: CompatMatrix) -> InstalledPackage | None:
        return facts.packages.get(name)

    return compute


DERIVED: dict[str, Derived] = {
    "torch": Derived(_package("torch"), "torch is not installed", "the installed torch distribution"),
    "vllm": Derived(_package("vllm"), "vLLM is not installed", "the installed vLLM distribution"),
    "env": Derived(lambda f, _m: env_map(f.host), "", "the examined environment's variables, by name"),
    "build_toolkit": Derived(
        lambda f, _m: build_toolkit(f.toolkits, f.nvcc),
        "no CUDA toolkit to build extensions with",
        "the toolkit torch.utils.cpp_extension builds with (CUDA_HOME, else nvcc on PATH, else /usr/local/cuda)",
    ),
    "ld_library_path": Derived(
        lambda f, _m: ld_library_path(f.host), "LD_LIBRARY_PATH is not set", "LD_LIBRARY_PATH's directories, in order"
    ),
    "driver_cuda": Derived(
        lambda f, m: effective_cuda(f.driver, m) if f.driver is not None else None,
        "no NVIDIA driver found",
        "the CUDA version applications get from the driver, and how that was decided",
    ),
    "forward": Derived(
        lambda f, _m: forward_compat(f.driver) if f.driver is not None else None,
        "no forward compatibility in effect",
        "the cuda-compat libcuda in effect and the CUDA it reports",
    ),
    "gpu_evidence": Derived(
        lambda f, _m: gpu_evidence(f.gpus, f.visible, f.health),
        "no GPU found (NVML, nvidia-smi, /proc/driver/nvidia/gpus, /dev/nvidia0..N, the PCI bus)",
        "what shows NVIDIA GPUs (the probed GPUs, the /dev/nvidiaN device nodes, the PCI bus) and how many a "
        "process reaches",
    ),
    "scheduler": Derived(
        lambda f, _m: detect_scheduler(
            env_map(f.host),
            f.packages,
            f.visible.cuda_visible_devices if f.visible else None,
            f.host.container.markers if f.host.container else (),
        ),
        "no scheduler (Ray, Slurm, Kubernetes) detected",
        "the scheduler that hands this process its GPUs (Ray, Slurm, Kubernetes), and what showed it",
    ),
    "cuda_builds": Derived(
        lambda f, _m: frameworks_by_cuda_major(f.packages),
        "no framework built for CUDA installed",
        "the installed frameworks by the CUDA major they were built for",
    ),
}


def injectable_names() -> frozenset[str]:
    """Every name a check's parameter may use."""
    return frozenset(FACTS) | frozenset(DERIVED) | frozenset(CONTEXT)


def absent_reason(name: str) -> str:
    """Why a check that needs ``name`` is not applicable when the value is absent."""
    if name in FACTS:
        return FACTS[name].absent
    if name in DERIVED:
        return DERIVED[name].absent
    return CONTEXT.get(name, "")


def injectables(facts: Facts, context: Mapping[str, Any]) -> dict[str, Any]:
    """Every value a check may ask for, by name: probed, derived and context; None or empty means absent."""
    values: dict[str, Any] = {name: getattr(facts, name) for name in FACTS}
    matrix: Any = context.get("matrix")  # the CompatMatrix of the run (None only in tests of facts alone)
    values.update({name: derived.compute(facts, matrix) for name, derived in DERIVED.items()})
    values.update(context)
    values["facts"] = facts
    return values
