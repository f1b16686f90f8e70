"""Which probe fills which fact: the probes' half of a fact's declaration.

The facts model (:mod:`cudadoctor.facts.model`) says what a fact is; this table says what reads it, and how the
collector (:mod:`cudadoctor.probes.collect`) runs it: in a thread when it mostly waits on C code or a child
process, from the memo (:mod:`cudadoctor.probes.memo`) when it reads only files and variables. The model imports
nothing of this: a fact whose name is not here is filled by the application (``errors``, ``runtime``, ``mode`` …).

Each probe is imported when it first runs (a run whose file probes answer from the memo never imports the loader's
view), through ``importlib.import_module`` of a fixed name: nothing in cudadoctor imports a computed name
(tests/security/test_static.py).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from cudadoctor.facts.registry import FACTS
from cudadoctor.record import record

__all__ = ["PROBES", "Probe", "probe_function", "probed"]


@record
class Probe:
    """The probe that fills one fact, and how it is run."""

    #: the probe function ``probe_x(ctx: ProbeContext) -> X``, imported on first use
    load: Callable[[], Callable[..., Any]]
    #: the probe mostly waits on C code or a child process, so it runs in a thread
    background: bool = False
    #: the probe only reads files, variables and this interpreter's sys.path: its answer is kept for the next
    #: run while everything it read is unchanged (:mod:`cudadoctor.probes.memo`)
    memo: bool = False


#: The probe of each probed fact, by the fact's name (a field of :class:`~cudadoctor.facts.model.Facts`).
PROBES: dict[str, Probe] = {
    "host": Probe(lambda: import_module("cudadoctor.probes.host").probe_host),
    "driver": Probe(lambda: import_module("cudadoctor.probes.driver").probe_driver, background=True),
    "gpus": Probe(lambda: import_module("cudadoctor.probes.gpus").probe_gpus),
    "visible": Probe(lambda: import_module("cudadoctor.probes.gpus").probe_visible),
    "toolkits": Probe(lambda: import_module("cudadoctor.probes.toolkit").probe_toolkits),
    "nvcc": Probe(lambda: import_module("cudadoctor.probes.toolkit").probe_nvcc, background=True),
    "compile_env": Probe(lambda: import_module("cudadoctor.probes.compile").probe_compile_env, memo=True),
    "cuda_wheels": Probe(lambda: import_module("cudadoctor.probes.libraries").probe_cuda_wheels, memo=True),
    "cudnn": Probe(lambda: import_module("cudadoctor.probes.libraries").probe_cudnn, memo=True),
    "nccl": Probe(lambda: import_module("cudadoctor.probes.libraries").probe_nccl, memo=True),
    "tensorrt": Probe(lambda: import_module("cudadoctor.probes.libraries").probe_tensorrt, memo=True),
    "loader": Probe(lambda: import_module("cudadoctor.probes.linkage").probe_loader_view, memo=True),
    "llama_cpp": Probe(lambda: import_module("cudadoctor.probes.llama_cpp").probe_llama_cpp, memo=True),
    "python": Probe(lambda: import_module("cudadoctor.probes.interpreter").probe_python, memo=True),
    "packages": Probe(lambda: import_module("cudadoctor.probes.packages").probe_packages, memo=True),
    "health": Probe(lambda: import_module("cudadoctor.probes.health").probe_health, background=True),
    "root_kind": Probe(lambda: import_module("cudadoctor.probes.origin").probe_root_kind),
    "platform": Probe(lambda: import_module("cudadoctor.probes.origin").probe_platform),
    "nvidia_module": Probe(lambda: import_module("cudadoctor.probes.kmod").probe_nvidia_module),
}


def probed() -> dict[str, Probe]:
    """The facts a probe fills, in the order they are declared (= collected and shown)."""
    return {name: PROBES[name] for name in FACTS if name in PROBES}


def probe_function(probe: Probe) -> Callable[..., Any]:
    """The probe function itself (its module imported on first use)."""
    return probe.load()
