"""GPU model names -> compute capability, from ``compat/gpus.toml``; and the ``--assume-gpu`` spelling.

The names NVML, ``nvidia-smi`` and ``/proc/driver/nvidia/gpus/*/information`` print
("NVIDIA H200", "NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-16GB") are matched against the
table's aliases by *token prefix*: both sides are normalised into tokens, and an alias matches
when its tokens begin the name's tokens, so "NVIDIA H100 80GB HBM3" matches the alias "H100" and
"RTX 4000 SFF Ada Generation" prefers "RTX 4000 SFF Ada" over "RTX 4000" (the longest alias wins).
Whole tokens only: "L4" never matches "L40S". The code holds no model numbers; they live in
``compat/gpus.toml`` with their sources (see ``compat/gpus.SOURCES.md``).

Everything here except :func:`load_models` is pure.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cudadoctor.errors import CompatDataError
from cudadoctor.matrix import load_table

__all__ = [
    "GpuModel",
    "GpuTable",
    "load_models",
    "lookup",
    "models_from_table",
    "normalise",
    "parse_gpu_spec",
]

#: Marketing words that some sources print and others do not ("Tesla V100" vs "V100",
#: "NVIDIA GeForce RTX 4090" vs "RTX 4090"); they never tell two models apart.
_NOISE_WORDS = frozenset({"nvidia", "geforce", "tesla", "quadro"})

_SPLIT = re.compile(r"[\s\-_]+")
_CC = re.compile(r"^([0-9]{1,9})\.([0-9]{1,9})$")  # ASCII digits, few enough for int()
#: ``sm_90``, ``sm_90a``, ``sm_100f``, ``compute_89``: the last digit is the minor version
#: (nvcc ``-arch`` naming; the ``a``/``f`` suffixes select arch- or family-specific features).
_SM = re.compile(r"^(?:sm|compute)_([0-9]{1,8})([0-9])([af]?)$")


@dataclass(frozen=True)
class GpuModel:
    """One GPU model of the table, or a bare compute capability given on the command line."""

    name: str  #: as the table names it ("H200"), or the spec as given ("sm_90a")
    compute_capability: str  #: ``"9.0"``
    architecture: str | None = None  #: ``Hopper``
    segment: str | None = None  #: ``datacenter`` / ``geforce`` / ``workstation`` …
    source: str | None = None  #: the ``[[meta.sources]]`` id the record cites
    aliases: tuple[str, ...] = ()


#: A loaded ``compat/gpus.toml`` (as :func:`cudadoctor.matrix.load_table` returns it) or its models.
GpuTable = Mapping[str, Any] | Sequence[GpuModel]


def normalise(name: str) -> tuple[str, ...]:
    """A GPU name as tokens: ``"NVIDIA GeForce RTX 4090"`` -> ``("rtx", "4090")``.

    ``"Tesla V100-SXM2-16GB"`` -> ``("v100", "sxm2", "16gb")``. Lower-cased, split on spaces,
    ``-`` and ``_``, with the words "nvidia", "geforce", "tesla" and "quadro" dropped.
    """
    return tuple(t for t in _SPLIT.split(name.lower()) if t and t not in _NOISE_WORDS)


def models_from_table(table: Mapping[str, Any]) -> tuple[GpuModel, ...]:
    """The ``[[gpu]]`` records of a loaded ``compat/gpus.toml``.

    Parse, e.g.::

        [[gpu]]
        name = "H200"
        aliases = ["H200", "H200 NVL"]
        compute_capability = "9.0"
        architecture = "Hopper"
        segment = "datacenter"
        source = "nvidia-cuda-gpus"

    :raises CompatDataError: naming every malformed record at once.
    """
    records = table.get("gpu", [])
    problems: list[str] = []
    models: list[GpuModel] = []
    if not isinstance(records, list):
        raise CompatDataError("compat/gpus.toml: gpu: must be an array of [[gpu]] tables")
    for i, record in enumerate(records):
        where = f"compat/gpus.toml: gpu[{i}]"
        if not isinstance(record, Mapping):
            problems.append(f"{where}: not a table")
            continue
        name = record.get("name")
        cc = record.get("compute_capability")
        aliases = record.get("aliases", [])
        if not isinstance(name, str) or not name.strip():
            problems.append(f"{where}: name: missing")
            continue
        if not isinstance(cc, str) or not _CC.match(cc):
            problems.append(f'{where} ({name}): compute_capability: expected "X.Y", got {cc!r}')
            continue
        if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
            problems.append(f"{where} ({name}): aliases: must be a list of names")
            continue
        models.append(
            GpuModel(
                name=name,
                compute_capability=cc,
                architecture=_opt_str(record.get("architecture")),
                segment=_opt_str(record.get("segment")),
                source=_opt_str(record.get("source")),
                aliases=tuple(aliases),
            )
        )
    if problems:
        raise CompatDataError("; ".join(problems))
    return tuple(models)


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _models(table: GpuTable) -> Sequence[GpuModel]:
    if isinstance(table, Mapping):
        return models_from_table(table)
    return table


@functools.cache
def load_models() -> tuple[GpuModel, ...]:
    """The models of the bundled ``compat/gpus.toml``.

    :raises CompatDataError: when the table is missing or malformed.
    """
    return models_from_table(load_table("gpus"))


def lookup(name: str, table: GpuTable) -> GpuModel | None:
    """The model whose alias (or name) is the longest token prefix of ``name``; None when none is.

    :param name: a GPU name as a driver source prints it, e.g. ``"NVIDIA H100 80GB HBM3"``.
    :param table: a loaded ``compat/gpus.toml`` or the models from it.
    """
    tokens = normalise(name)
    if not tokens:
        return None
    best: GpuModel | None = None
    best_len = 0
    for model in _models(table):
        for alias in (model.name, *model.aliases):
            alias_tokens = normalise(alias)
            n = len(alias_tokens)
            # Strictly longer only: on a tie the first record in the table keeps the match.
            if n > best_len and tokens[:n] == alias_tokens:
                best, best_len = model, n
    return best


_HOW_TO_SPELL = (
    "give a model name as nvidia-smi prints it (e.g. 'H100', 'RTX 4090') "
    "or a compute capability ('8.9', 'sm_89', 'sm_90a')"
)


def parse_gpu_spec(spec: str, table: GpuTable) -> GpuModel:
    """A GPU given on the command line: a model name, ``X.Y``, or ``sm_XY[a|f]``.

    ``"H100"`` -> the H100 record; ``"8.9"`` / ``"sm_89"`` -> compute capability 8.9 (its
    architecture when every model of the table with that capability shares one). A bare integer
    such as ``"89"`` is refused: it could be a compute capability or a model number ("4090").

    :raises ValueError: with a one-line message saying how to spell it.
    """
    text = spec.strip()
    if not text:
        raise ValueError(f"empty GPU name: {_HOW_TO_SPELL}")
    if text.isdigit():
        raise ValueError(
            f"{text!r} is ambiguous: write a compute capability with a dot or an sm_ prefix "
            "('8.9', 'sm_89'), or a model name with its series ('RTX 4090')"
        )
    models = _models(table)
    cc: str | None = None
    match = _CC.match(text)
    if match:
        cc = f"{int(match.group(1))}.{int(match.group(2))}"
    else:
        sm = _SM.match(text.lower())
        if sm:
            cc = f"{int(sm.group(1))}.{sm.group(2)}"
    if cc is not None:
        same = [m for m in models if m.compute_capability == cc]
        if not same:
            known = ", ".join(sorted({m.compute_capability for m in models}, key=_cc_key))
            raise ValueError(f"compute capability {cc} is not in compat/gpus.toml (known: {known})")
        architectures = {m.architecture for m in same}
        return GpuModel(
            name=text,
            compute_capability=cc,
            architecture=architectures.pop() if len(architectures) == 1 else None,
            source="compat/gpus.toml",
        )
    model = lookup(text, models)
    if model is None:
        raise ValueError(f"unknown GPU {text!r}: {_HOW_TO_SPELL}")
    return model


def _cc_key(cc: str) -> tuple[int, ...]:
    return tuple(int(p) for p in cc.split("."))
