"""GPU model names -> compute capability, from ``compat/gpus.toml``; and the ``--assume-gpu`` spelling.

The names NVML, ``nvidia-smi`` and ``/proc/driver/nvidia/gpus/*/information`` print
("NVIDIA H200", "NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-16GB") are matched against the
table's aliases by *token prefix*: both sides are normalised into tokens, and an alias matches
when its tokens begin the name's tokens, so "NVIDIA H100 80GB HBM3" matches the alias "H100" and
"RTX 4000 SFF Ada Generation" prefers "RTX 4000 SFF Ada" over "RTX 4000" (the longest alias wins).
Whole tokens only: "L4" never matches "L40S". The code holds no model numbers; they live in
``compat/gpus.toml`` with their sources (see ``compat/gpus.SOURCES.md``), and the product names of NVIDIA's device
list (``compat/gpu_devices.toml``: "NVIDIA A10G", "NVIDIA GeForce GTX 1650") that no record there matches.

Everything here except :func:`load_models` is pure. The table's rows are :class:`cudadoctor.data.rows.GpuModel`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cudadoctor.data.queries import CompatMatrix
from cudadoctor.data.rows import GpuDevice, GpuModel

if TYPE_CHECKING:
    from cudadoctor.facts.model import GpuInfo

__all__ = [
    "GpuModel",
    "GpuTable",
    "device_models",
    "devices_named",
    "gpu_segment",
    "gpu_segments",
    "load_models",
    "lookup",
    "model_named",
    "normalise",
    "parse_gpu_spec",
]

#: Marketing words that some sources print and others do not ("Tesla V100" vs "V100",
#: "NVIDIA GeForce RTX 4090" vs "RTX 4090"); they never tell two models apart.
_NOISE_WORDS = frozenset({"nvidia", "geforce", "tesla", "quadro"})

#: Words that, right after a model's name, mark another chip: the "GeForce RTX 3050 A Laptop GPU" is
#: reported to be an Ada part, not the Ampere RTX 3050 (not confirmed from an NVIDIA table, so it stays
#: unknown: compat/gpus.SOURCES.md), and "RTX 3050" must not claim it with 8.6. Other suffixes (Ti, SUPER,
#: D, Laptop GPU, Max-Q, Mobile, memory sizes, form factors) keep the base model's compute capability.
_OTHER_CHIP_WORDS = frozenset({"a"})

_SPLIT = re.compile(r"[\s\-_]+")
_CC = re.compile(r"^([0-9]{1,9})\.([0-9]{1,9})$")  # ASCII digits, few enough for int()
#: ``sm_90``, ``sm_90a``, ``sm_100f``, ``compute_89``: the last digit is the minor version
#: (nvcc ``-arch`` naming; the ``a``/``f`` suffixes select arch- or family-specific features).
_SM = re.compile(r"^(?:sm|compute)_([0-9]{1,8})([0-9])([af]?)$")


#: The models of ``compat/gpus.toml`` (:attr:`cudadoctor.data.CompatMatrix.gpu_models`), or a test's own.
GpuTable = Sequence[GpuModel]


def normalise(name: str) -> tuple[str, ...]:
    """A GPU name as tokens: ``"NVIDIA GeForce RTX 4090"`` -> ``("rtx", "4090")``.

    ``"Tesla V100-SXM2-16GB"`` -> ``("v100", "sxm2", "16gb")``. Lower-cased, split on spaces,
    ``-`` and ``_``, with the words "nvidia", "geforce", "tesla" and "quadro" dropped.
    """
    return tuple(t for t in _SPLIT.split(name.lower()) if t and t not in _NOISE_WORDS)


def load_models() -> tuple[GpuModel, ...]:
    """The models of the bundled ``compat/gpus.toml``, every record validated, then the product names of
    ``compat/gpu_devices.toml`` that no record of it matches (:func:`device_models`).

    :raises CompatDataError: when a table is missing or malformed.
    """
    matrix = CompatMatrix()
    return matrix.gpu_models + device_models(matrix)


def devices_named(matrix: CompatMatrix, tokens: tuple[str, ...]) -> tuple[GpuDevice, ...]:
    """The rows of compat/gpu_devices.toml whose name has these tokens (:func:`normalise` of a GPU's name), else
    those whose name begins with them (a model name such as "H100" stands for every "NVIDIA H100 …")."""
    if not tokens:
        return ()
    # Both answers are names whose tokens begin with these, so each token is in the name: only the rows holding
    # every one are built and split into tokens (this runs on every CD114 of a GPU; "rtx" alone holds 244 rows).
    named = [(normalise(d.name), d) for d in matrix.gpu_devices_naming(*tokens)]
    exact = tuple(d for key, d in named if key == tokens)
    return exact or tuple(d for key, d in named if key[: len(tokens)] == tokens)


def device_models(matrix: CompatMatrix, devices: Sequence[GpuDevice] | None = None) -> tuple[GpuModel, ...]:
    """One model per product name of compat/gpu_devices.toml whose compute capability does not come from a
    compat/gpus.toml record (``cc_model``; a test keeps that field equal to what :func:`lookup` finds), so a
    name the curated table answers is answered by it alone. The model cites the device table's source;
    ``architecture`` is compat/gpu_archs.toml's name for the compute capability. ``devices``: only these rows of
    the table (in its order), as :func:`model_named` asks."""
    models: dict[tuple[str, ...], GpuModel] = {}
    for device in matrix.gpu_devices if devices is None else devices:
        cc = device.compute_capability
        if cc is None or device.cc_model is not None:
            continue
        arch = matrix.gpu_arch(cc)
        model = GpuModel(
            name=device.name,
            compute_capability=cc,
            architecture=arch.name if arch is not None else None,
            source=device.source,
            inferred=device.inferred,
        )
        models.setdefault(normalise(device.name), model)
    return tuple(models.values())


def model_named(name: str) -> GpuModel | None:
    """``lookup(name, load_models())`` without building whole tables: a model (a record of compat/gpus.toml or a
    device's) can only match a name whose first token its own name or an alias holds, so only those rows are made
    (``CompatMatrix.gpu_models_naming``, ``gpu_devices_naming``). CD701 asks this for each GPU (a segment alone:
    :func:`gpu_segment`).

    :raises CompatDataError: when a table is missing or malformed.
    """
    tokens = normalise(name)
    if not tokens:
        return None
    matrix = CompatMatrix()
    word = tokens[0]  # the first token of every name or alias that can match
    return lookup(name, matrix.gpu_models_naming(word) + device_models(matrix, matrix.gpu_devices_naming(word)))


def lookup(name: str, table: GpuTable) -> GpuModel | None:
    """The model whose alias (or name) is the longest token prefix of ``name``; None when none is.

    :param name: a GPU name as a driver source prints it, e.g. ``"NVIDIA H100 80GB HBM3"``.
    :param table: the models of ``compat/gpus.toml`` (or a test's subset).
    """
    tokens = normalise(name)
    if not tokens:
        return None
    best: GpuModel | None = None
    best_len = 0
    for model in table:
        for alias in (model.name, *model.aliases):
            alias_tokens = normalise(alias)
            n = len(alias_tokens)
            # Strictly longer only: on a tie the first record in the table keeps the match.
            if n > best_len and tokens[:n] == alias_tokens and not _other_chip(tokens, n):
                best, best_len = model, n
    return best


def _other_chip(tokens: tuple[str, ...], n: int) -> bool:
    """Does the word after the ``n`` matched tokens name a different chip ("RTX 3050 A Laptop GPU")?"""
    return len(tokens) > n and tokens[n] in _OTHER_CHIP_WORDS


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
    models = table
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
        from cudadoctor.didyoumean import did_you_mean

        tokens = normalise(text)
        listed = [d for d in devices_named(CompatMatrix(), tokens) if normalise(d.name) == tokens]
        if listed:
            raise ValueError(
                f"unknown GPU {text!r}: {listed[0].name} (PCI ID {listed[0].pci}) is in NVIDIA's device list, but no "
                "source gives its compute capability (compat/notes/gpu-devices.md): give the compute capability "
                "instead ('X.Y')"
            )

        raise ValueError(f"unknown GPU {text!r}: {_HOW_TO_SPELL}{did_you_mean(text, (m.name for m in models))}")
    return model


def _cc_key(cc: str) -> tuple[int, ...]:
    return tuple(int(p) for p in cc.split("."))


def gpu_segment(name: str) -> str | None:
    """The segment of the compat/gpus.toml record :func:`model_named` finds for ``name``; None without one.

    Only compat/gpus.toml is read: a model made from the device table has no segment, and it is found only for a
    name no record of compat/gpus.toml matches (its own name matches none: :func:`device_models`; a shorter alias
    matching the GPU's name would match it too), so the device table cannot change the answer.

    :raises CompatDataError: when the table is missing or malformed.
    """
    tokens = normalise(name)
    if not tokens:
        return None
    model = lookup(name, CompatMatrix().gpu_models_naming(tokens[0]))
    return model.segment if model else None


def gpu_segments(gpus: tuple[GpuInfo, ...]) -> tuple[tuple[str, str | None], ...]:
    """(name, segment in compat/gpus.toml) of each GPU; the segment is None for a model the table lacks. Each name is
    looked up once (the GPUs of a host are mostly one model)."""
    segments = {name: gpu_segment(name) for name in {gpu.name for gpu in gpus}}
    return tuple((gpu.name, segments[gpu.name]) for gpu in gpus)
