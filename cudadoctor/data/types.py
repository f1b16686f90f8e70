"""The field types of compat rows that TOML has no word for, as ``Annotated`` markers.

A row field's annotation is its schema: ``Version`` is a PEP 440 version written as a string,
``SpecifierSet`` a PEP 440 specifier set, ``DriverVersion`` an NVIDIA driver version. The
markers here add what a plain Python type cannot say: a string that must match a pattern (a
compute capability) and a driver branch written as digits (``"580"``) but compared as a number.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Annotated, Any, NamedTuple

__all__ = ["Branch", "BranchDesignation", "Cc", "Digits", "Pattern", "PlainCc", "PreloadWhen", "YearMonth", "in_data"]


class Pattern(NamedTuple):
    """A string that must match ``regex``; ``what`` names it in a problem ("a compute capability")."""

    regex: re.Pattern[str]
    what: str


class Digits(NamedTuple):
    """A number written as a string of digits in the data (NVIDIA writes driver branches as ``"580"``)."""

    what: str


#: A compute capability as NVIDIA writes it, with nvcc's arch- or family-specific suffix allowed
#: ("9.0", "9.0a", "10.0f"; https://docs.nvidia.com/cuda/cuda-c-programming-guide/#compute-capabilities).
Cc = Annotated[str, Pattern(re.compile(r"^\d+\.\d+[af]?$"), "a compute capability")]
#: A GPU model's compute capability: "X.Y" only (a model has no suffix; the suffix selects code, not GPUs).
PlainCc = Annotated[str, Pattern(re.compile(r"^[0-9]{1,9}\.[0-9]{1,9}$"), 'a compute capability ("X.Y")')]
#: A driver branch's type in NVIDIA's lifecycle (https://docs.nvidia.com/datacenter/tesla/drivers/): Long Term
#: Support, Production, New Feature, or the Evaluation/Developer branch of 2020-2021.
BranchDesignation = Annotated[
    str, Pattern(re.compile(r"^(long-term|production|new-feature|evaluation)$"), "a branch designation")
]
#: A month as NVIDIA gives end-of-life dates ("June 2028" is written "2028-06").
YearMonth = Annotated[str, Pattern(re.compile(r"^[0-9]{4}-(0[1-9]|1[0-2])$"), 'a month ("YYYY-MM")')]
#: When a framework preloads its NVIDIA wheel libraries (compat/runtime_libraries.toml ``preload``).
PreloadWhen = Annotated[
    str, Pattern(re.compile(r"^(load_failure|wheel_cudart|cudart_loaded|always|on_call)$"), "a preload condition")
]
#: A driver branch ("R580" is written "580"), compared as an integer.
Branch = Annotated[int, Digits("a driver branch")]


def in_data(default: Any) -> Any:
    """A field the data must always give, but that code building a row by hand may leave out."""
    return dataclasses.field(default=default, metadata={"required": True})
