"""A machine described by flags, as ``suggest --driver … --gpu … --no-probe`` describes it: the tests' one builder
of :class:`~cudadoctor.suggest.Constraints`."""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverVersion
from cudadoctor.suggest import Constraints, Gpu

_MATRIX = CompatMatrix()


def described(driver: str | None, *gpus: tuple[str, str], python: str | None = "3.12", **kw: Any) -> Constraints:
    """A driver (its CUDA from compat/cuda.toml), GPUs as (name, compute capability), a Python, and any other field."""
    drv = DriverVersion(driver) if driver else None
    return Constraints(
        driver=drv,
        driver_cuda=_MATRIX.cuda_for_driver(drv) if drv else None,
        gpus=tuple(Gpu(name, cc, "--gpu") for name, cc in gpus),
        python=Version(python) if python else None,
        **kw,
    )
