"""Derived facts: values computed once from the probed facts and injected into checks by name.

A check that needs "the installed torch" or "the directories of LD_LIBRARY_PATH" asks for it by
parameter name, like a probed fact; the computation lives here, once, instead of inside each check.
Each function is pure: facts in, value out; ``None`` (or an empty collection) means absent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cudadoctor.facts.model import Facts, HostInfo, InstalledPackage
from cudadoctor.rules.toolchain import build_toolkit

__all__ = ["DERIVED", "Derived", "env_map", "ld_library_path"]


@dataclass(frozen=True)
class Derived:
    """One derived fact: how to compute it and why a check needing it is not applicable when absent."""

    compute: Callable[[Facts], Any]
    absent: str
    doc: str


def env_map(host: HostInfo) -> dict[str, str]:
    """The examined environment's variables that matter to CUDA, by name."""
    return {v.name: v.value for v in host.env}


def ld_library_path(host: HostInfo) -> tuple[str, ...] | None:
    """The directories of LD_LIBRARY_PATH in order, empty entries dropped; None when it is unset.

    An empty entry means the current directory to ld.so (ld.so(8)); no library of interest is
    found that way in a report, so it is left out rather than guessed.
    """
    value = env_map(host).get("LD_LIBRARY_PATH")
    if value is None:
        return None
    return tuple(p for p in value.split(":") if p)


def _package(name: str) -> Callable[[Facts], InstalledPackage | None]:
    def compute(facts: Facts) -> InstalledPackage | None:
        return facts.packages.get(name)

    return compute


DERIVED: dict[str, Derived] = {
    "torch": Derived(_package("torch"), "torch is not installed", "the installed torch distribution"),
    "vllm": Derived(_package("vllm"), "vLLM is not installed", "the installed vLLM distribution"),
    "jax": Derived(_package("jax"), "JAX is not installed", "the installed JAX distribution"),
    "env": Derived(lambda f: env_map(f.host), "", "the examined environment's variables, by name"),
    "build_toolkit": Derived(
        lambda f: build_toolkit(f.toolkits, f.nvcc),
        "no CUDA toolkit to build extensions with",
        "the toolkit torch.utils.cpp_extension builds with (CUDA_HOME, else nvcc on PATH, else /usr/local/cuda)",
    ),
    "ld_library_path": Derived(
        lambda f: ld_library_path(f.host), "LD_LIBRARY_PATH is not set", "LD_LIBRARY_PATH's directories, in order"
    ),
}
