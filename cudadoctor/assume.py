"""Describing the host an image will run on: ``--assume-driver`` and ``--assume-gpu``; and what the examined
root is: ``--root-kind``.

A Docker build stage has no GPU and no driver; these flags put the target host's driver and GPUs
into the facts, marked with :attr:`~cudadoctor.facts.model.SourceKind.ASSUMED`, so the rest of
cudadoctor treats them like probed facts. A flag overrides the probed fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from packaging.version import InvalidVersion

from cudadoctor import gpu_models
from cudadoctor.data import CompatMatrix
from cudadoctor.errors import InvalidValue
from cudadoctor.facts.model import (
    DriverInfo,
    DriverReading,
    DriverVersion,
    Facts,
    GpuInfo,
    RootKind,
    Source,
    SourceKind,
)

__all__ = ["ROOT_KINDS", "apply_assumptions", "apply_root_kind", "parse_driver_version", "resolve_driver",
           "split_mig_profile"]  # fmt: skip

#: ``--root-kind`` values: a machine's own system, a container image, or decided from the markers (the default).
ROOT_KINDS = ("auto", "host", "image")

#: A MIG profile as nvidia-smi names it after the GPU ("A100-SXM4-80GB MIG 3g.40gb", "H100 MIG 1g.10gb+me";
#: the MIG user guide's profile names, https://docs.nvidia.com/datacenter/tesla/mig-user-guide/).
_MIG_PROFILE = re.compile(r"^(?P<gpu>.+?)[\s-]+MIG[\s-]+(?P<profile>\d+g\.\d+gb(?:\+\w+)?)$", re.IGNORECASE)


def split_mig_profile(spec: str) -> tuple[str, str | None]:
    """``"A100-SXM4-80GB MIG 3g.40gb"`` -> (``"A100-SXM4-80GB"``, ``"3g.40gb"``); no profile -> (spec, None)."""
    match = _MIG_PROFILE.match(spec.strip())
    if match is None:
        return spec, None
    return match.group("gpu"), match.group("profile").lower()


def parse_driver_version(text: str) -> DriverVersion:
    """``550.54.15`` -> Version; a driver version is two or three dot-separated numbers."""
    parts = text.strip().split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise InvalidValue(text, "expected a driver version such as 550.54.15 or 535.104")
    try:
        return DriverVersion(text.strip())
    except (InvalidVersion, ValueError):  # e.g. a number too long for int()
        raise InvalidValue(text, "not a driver version") from None


def resolve_driver(text: str, matrix: CompatMatrix) -> tuple[DriverVersion, str | None]:
    """A driver version, or a branch (``550``) taken as its oldest release in compat/cuda.toml.

    :return: the version and, for a branch, the assumption in words (None for a full version).
    :raises InvalidValue: for neither, or a branch no CUDA release in compat data names a driver of.
    """
    from cudadoctor.rules.branches import known_branches, oldest_of_branch

    branch = text.strip().upper().removeprefix("R")
    if not branch.isdigit() or len(branch) > 4:
        return parse_driver_version(text), None
    oldest = oldest_of_branch(matrix, int(branch))
    if oldest is None:
        known = ", ".join(str(b) for b in sorted(known_branches(matrix)))
        raise InvalidValue(text, f"no driver of branch R{branch} in compat/cuda.toml (branches known: {known})")
    return oldest, f"branch R{branch}, taken as its oldest release in compat/cuda.toml ({oldest})"


def apply_assumptions(facts: Facts, *, driver: str | None = None, gpus: Sequence[str] = ()) -> Facts:
    """Facts with the assumed driver and GPUs in place of the probed ones.

    :raises InvalidValue: for a driver version or GPU that does not parse (the caller says which flag).
    """
    if driver is not None:
        matrix = CompatMatrix()
        version, assumption = resolve_driver(driver, matrix)
        # The CUDA version a driver supports comes from the release notes' driver table in compat/.
        cuda_api = matrix.cuda_for_driver(version)
        detail = "; ".join(d for d in (assumption, "CUDA version from compat/cuda.toml" if cuda_api else None) if d)
        reading = DriverReading(
            Source(SourceKind.ASSUMED, "--assume-driver"), version=version, cuda_api=cuda_api, detail=detail or None
        )
        old = facts.driver
        # What was read of the driver's files stays: the assumption replaces the version, not the libcuda files,
        # the loader's view of them or the WSL2 driver store (CD132-CD135 judge the store against the version).
        facts = replace(
            facts,
            driver=DriverInfo(
                version=version,
                cuda_api=cuda_api,
                readings=(reading, *(old.readings if old else ())),
                libcuda_files=old.libcuda_files if old else (),
                resolved_libcuda=old.resolved_libcuda if old else (),
                wsl=old.wsl if old else False,
                wsl_libraries=old.wsl_libraries if old else (),
            ),
        )
    if gpus:
        table = gpu_models.load_models()
        assumed: list[GpuInfo] = []
        for index, spec in enumerate(gpus):
            gpu, profile = split_mig_profile(spec)
            try:
                model = gpu_models.parse_gpu_spec(gpu, table)
            except ValueError as exc:
                raise InvalidValue(spec, str(exc)) from None
            # A MIG profile: the process gets one MIG device of that GPU, as CUDA_VISIBLE_DEVICES=MIG-<uuid> gives it.
            assumed.append(
                GpuInfo(
                    index=index,
                    name=model.name,
                    compute_capability=model.compute_capability,
                    source=Source(SourceKind.ASSUMED, f"--assume-gpu {spec}"),
                    mig_mode="Enabled" if profile else None,
                    mig_devices=1 if profile else None,
                )
            )
        facts = replace(facts, gpus=tuple(assumed))
    return facts


def apply_root_kind(facts: Facts, kind: str) -> Facts:
    """Facts whose root kind is ``kind`` (``host`` / ``image``), the probed markers kept; ``auto`` keeps the probed one.

    :raises InvalidValue: for another value (the caller says which flag).
    """
    if kind not in ROOT_KINDS:
        raise InvalidValue(kind, f"expected one of {', '.join(ROOT_KINDS)}")
    if kind == "auto":
        return facts
    probed = facts.root_kind or RootKind("unknown")  # its markers and mounted driver files stay
    source = Source(SourceKind.ASSUMED, f"--root-kind {kind}")
    return replace(facts, root_kind=replace(probed, kind=kind, source=source))
