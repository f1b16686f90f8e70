"""The registry of checks: every :class:`~cudadoctor.checks._base.Check` subclass, by code.

Codes are ``CD`` + three digits; the hundreds digit is the family. A code is never reused or
renumbered: a retired check stays listed in :data:`RETIRED` so ``--ignore`` lists keep working.

=======  ==============================================
CD1xx    driver, libcuda and GPUs
CD150-   GPU hardware health (part of CD1xx): NVML, PCI, kernel-log Xids, NCCL host
 CD199   prerequisites (``check --no-health`` skips them; :data:`HEALTH_PREFIXES`)
CD2xx    CUDA toolkit
CD3xx    cuDNN, NCCL and other libraries
CD4xx    Python packages (torch and friends)
CD5xx    vLLM
CD6xx    TensorRT
CD7xx    container and environment
CD8xx    run time (``check --deep``: what child processes saw)
CD9xx    cudadoctor itself (its data)
=======  ==============================================
"""

from __future__ import annotations

from collections.abc import Iterable

from cudadoctor.checks import (  # noqa: F401 - importing registers the checks
    access,
    archs,
    bitsandbytes,
    branches,
    byname,
    companions,
    compile,
    container,
    cpu_builds,
    dcgm,
    driver,
    extensions,
    health,
    kmod,
    libcuda,
    libraries,
    llama_cpp,
    loader,
    meta,
    mig,
    ortf,
    packages,
    runtime,
    tensorrt,
    visible,
    wsl,
)
from cudadoctor.checks._base import Check
from cudadoctor.errors import UsageError

__all__ = ["ALL_CHECKS", "FAMILIES", "HEALTH_PREFIXES", "RETIRED", "definition_problems", "resolve_codes", "selected"]

#: Code prefixes of the health checks (CD150-CD199), what ``--no-health`` leaves out.
HEALTH_PREFIXES = ("CD15", "CD16", "CD17", "CD18", "CD19")

#: Codes of checks that were removed; accepted by --select/--ignore, never reused.
RETIRED: dict[str, str] = {}

FAMILIES = {
    "CD1": "driver and GPUs",
    "CD2": "CUDA toolkit",
    "CD3": "libraries",
    "CD4": "Python packages",
    "CD5": "vLLM",
    "CD6": "TensorRT",
    "CD7": "container and environment",
    "CD8": "run time (--deep)",
    "CD9": "cudadoctor",
}


def _unknown_parameters(cls: type[Check]) -> list[str]:
    """A parameter that names no registered fact would skip the check forever as "unknown"."""
    import inspect

    from cudadoctor.checks.derived import injectable_names

    check = vars(cls).get("check")
    if check is None:
        return []
    known = injectable_names()
    names = [n for n in inspect.signature(check).parameters if n != "self"]
    return [f"{cls.__name__}: parameter {n!r} names no registered fact" for n in names if n not in known]


def _classes() -> list[type[Check]]:
    """Every concrete check class (family bases, named ``_…``, left out)."""
    found: list[type[Check]] = []
    pending = list(Check.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if not cls.__name__.startswith("_"):
            found.append(cls)
    return found


def _collect() -> dict[str, Check]:
    return dict(sorted((cls.__name__, cls()) for cls in _classes()))


def definition_problems() -> list[str]:
    """Programming errors in the check definitions: codes, docstring sections, names, parameters that name no
    fact. Run by the test suite (tests/checks/test_registry_definitions.py), not at every start: parsing every
    docstring cost ~5 ms of each ``check``."""
    problems: list[str] = []
    seen: set[str] = set()
    for cls in _classes():
        problems.extend(cls.validate())
        problems.extend(_unknown_parameters(cls))
        if cls.__name__ in seen or cls.__name__ in RETIRED:
            problems.append(f"{cls.__name__}: code used twice")
        seen.add(cls.__name__)
    names = [cls.name for cls in _classes()]
    problems.extend(f"name {n!r} used twice" for n in {n for n in names if names.count(n) > 1})
    return sorted(problems)


ALL_CHECKS: dict[str, Check] = _collect()


def resolve_codes(patterns: Iterable[str], option: str) -> set[str]:
    """Codes matched by ``patterns``: full codes (CD102), prefixes (CD1, CD10) or names."""
    by_name = {c.name: code for code, c in ALL_CHECKS.items()}
    codes: set[str] = set()
    for raw in patterns:
        pattern = raw.strip()
        upper = pattern.upper()
        if pattern in by_name:
            codes.add(by_name[pattern])
        elif upper in RETIRED:
            continue
        elif upper.startswith("CD") and (matches := {c for c in ALL_CHECKS if c.startswith(upper)}):
            codes |= matches
        else:
            from cudadoctor.didyoumean import did_you_mean

            hint = did_you_mean(pattern, [*ALL_CHECKS, *by_name])
            raise UsageError(
                f"{option} {raw!r}: no check has this code, prefix or name{hint} (see cudadoctor list-checks)"
            )
    return codes


def selected(select: Iterable[str], ignore: Iterable[str]) -> list[str]:
    """The codes to run, in order: all (or the selected ones) minus the ignored ones."""
    select = list(select)
    chosen = resolve_codes(select, "--select") if select else set(ALL_CHECKS)
    chosen -= resolve_codes(ignore, "--ignore")
    return sorted(chosen)
