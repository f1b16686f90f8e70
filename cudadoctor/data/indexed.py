"""Releases known from the package index (the `cudadoctor update` cache), for the compatibility matrix's release
lists.

The cache holds what a package index says about each release (Requires-Dist pins, wheel tags,
platforms); this module turns a torch or vLLM record into the same row the curated tables give, so
that a release newer than the bundled data can still be planned for. Curated rows always win; a
derived row says so in ``derived`` (the date it was read).

Reading the cache is free when there is none: the file's existence is checked before anything of
the refresh machinery is imported, so ``cudadoctor check`` never loads the network code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.cachedir import cache_file
from cudadoctor.data.rows import TorchRelease, VllmRelease

if TYPE_CHECKING:
    from cudadoctor.update.records import IndexData, ReleaseRecord

__all__ = [
    "derived_torch",
    "derived_vllm",
    "inherit_torch_archs",
    "inherit_vllm_floor",
    "new_records",
    "read_index_data",
]

_R = TypeVar("_R")

#: ``name==version`` at the start of a Requires-Dist line (PEP 508), with optional extras and the
#: parenthesised form older METADATA files use (``nvidia-cuda-runtime-cu12 (==12.4.127)``).
_PIN = re.compile(r"^\s*([A-Za-z0-9._-]+)(?:\[[^\]]*\])?\s*\(?\s*==\s*([0-9][0-9.]*)")
_CPYTHON_TAG = re.compile(r"cp3(\d+)")
#: a free-threaded CPython wheel's tag as the release records write it (``cp313t``, update/releases.py)
_FREE_THREADED_TAG = re.compile(r"cp3(\d+)t")
#: The PEP 508 environment the pins are read for: the doctor plans for Linux x86_64.
_LINUX_X86_64 = {
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "extra": "",
    "python_version": "3.12",
}
#: Packages whose pinned version names the CUDA a torch wheel was built with, in order of preference.
_CUDA_PINS = ("cuda-toolkit", "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime-cu11")


def read_index_data(cache_dir: str | bool | None = None) -> tuple[IndexData | None, str | None]:
    """The `cudadoctor update` cache and a warning when it exists but cannot be used. Never raises.

    :param cache_dir: the cache directory; None for the default, False to ignore the cache
    :return: ``(data, None)``, ``(None, None)`` without a cache, ``(None, warning)`` for a broken one
    """
    if cache_dir is False:
        return None, None
    path = cache_file(cache_dir if isinstance(cache_dir, str) else None)
    if not os.path.exists(path):
        return None, None  # the common case: no `cudadoctor update` yet; the refresh code is never imported
    from cudadoctor.update.cache import load_cache

    return load_cache(os.path.dirname(path))


def new_records(data: IndexData | None, package: str, curated: Iterable[Version]) -> list[ReleaseRecord]:
    """The cached releases of ``package`` that the curated data lacks, not yanked, with metadata read."""
    if data is None:
        return []
    known = set(curated)
    records: Mapping[str, ReleaseRecord] = data.packages.get(package, {})
    return [r for v, r in records.items() if Version(v) not in known and not r.yanked and r.metadata == "read"]


def _pins(record: ReleaseRecord) -> dict[str, str]:
    """name -> exact pinned version, from Requires-Dist lines whose marker holds on Linux x86_64."""
    from packaging.markers import Marker

    out: dict[str, str] = {}
    for line in record.pins:
        requirement, _, marker = line.partition(";")
        if marker.strip():
            try:
                if not Marker(marker.strip()).evaluate(dict(_LINUX_X86_64)):
                    continue
            except Exception:  # noqa: S112 - an unusual marker: do not guess from it
                continue
        match = _PIN.match(requirement)
        if match:
            out[match.group(1).lower().replace("_", "-")] = match.group(2)
    return out


def _cuda_from_pins(pins: Mapping[str, str]) -> tuple[Version | None, str | None]:
    for name in _CUDA_PINS:
        if name in pins:
            parts = pins[name].split(".")
            return Version(f"{parts[0]}.{parts[1]}"), f"Requires-Dist {name}=={pins[name]} (derived)"
    return None, None


def _tag_pythons(tags: Iterable[str], pattern: re.Pattern[str] = _CPYTHON_TAG) -> tuple[str, ...]:
    """``cp311``, ``cp312`` … → ``3.11``, ``3.12`` (CPython tags only, PEP 425), oldest first."""
    found = {f"3.{m.group(1)}" for tag in tags if (m := pattern.fullmatch(tag))}
    return tuple(sorted(found, key=lambda p: int(p.split(".")[1])))


def derived_torch(record: ReleaseRecord) -> TorchRelease | None:
    """A torch row from a cached release; None when it has no Linux x86_64 wheel."""
    if "manylinux_x86_64" not in record.platforms:
        return None
    cuda, evidence = _cuda_from_pins(_pins(record))
    # keywords, not positions: the row types are the data layer's and may gain fields
    return TorchRelease(
        version=Version(record.version),
        python=_tag_pythons(record.python_tags),
        python_aarch64=(),
        python_freethreaded=_tag_pythons(record.python_tags, _FREE_THREADED_TAG),
        pypi_default_cuda=cuda,
        pypi_default_evidence=evidence,
        pypi_aarch64_cuda=None,
        variants=(),
        torchvision=None,
        torchaudio=None,
        derived=record.fetched,
    )


def derived_vllm(record: ReleaseRecord) -> VllmRelease | None:
    """A vLLM row from a cached release; None when its metadata pins no torch."""
    pins = _pins(record)
    if "torch" not in pins:
        return None
    return VllmRelease(
        version=Version(record.version),
        torch=SpecifierSet(f"=={pins['torch']}"),
        requires_python=SpecifierSet(record.requires_python) if record.requires_python else None,
        python=_tag_pythons(record.python_tags),
        abi3=record.abi3,
        linux_x86_64_tag="manylinux_x86_64" if "manylinux_x86_64" in record.platforms else None,
        cuda=None,
        min_compute_capability=None,
        derived=record.fetched,
    )


# --- what a derived row inherits from the curated ones (labelled *inferred* wherever it is used) ---------


def inherit_torch_archs(
    row: TorchRelease, curated: Iterable[TorchRelease], arch_list: Callable[[Version, str], tuple[str, ...] | None]
) -> TorchRelease:
    """``row`` with the GPU targets of its default wheel's variant from the newest earlier curated release.

    PyTorch changes a variant's TORCH_CUDA_ARCH_LIST rarely and says so in its release notes (targets are
    set per CUDA version in .ci/manywheel/build_cuda.sh, https://github.com/pytorch/pytorch), so the
    newest earlier release that has a list for the same variant is the best guess; it is labelled
    *inferred* and ranked below verified lists. Unchanged when no earlier release has one.
    """
    cuda = row.pypi_default_cuda
    if cuda is None:
        return row
    variant = f"cu{cuda.major}{cuda.minor}"
    for earlier in sorted((t for t in curated if t.version < row.version), key=lambda t: t.version, reverse=True):
        archs = arch_list(earlier.version, variant)
        if archs is not None:
            why = f"the {variant} GPU targets of torch {earlier.version}, the newest earlier release that has them"
            return _with(row, inherited_archs=archs, inherited=why)
    return row


def inherit_vllm_floor(row: VllmRelease, curated: Iterable[VllmRelease]) -> VllmRelease:
    """``row`` with the minimum compute capability of the newest curated release not newer than it.

    vLLM raises its GPU floor rarely and states it in its installation docs
    (https://docs.vllm.ai/en/latest/getting_started/installation/gpu.html), so a release the data does
    not know yet is taken to keep its predecessor's floor; labelled *inferred*. Unchanged without one.
    """
    known = [v for v in curated if v.version < row.version and v.min_compute_capability is not None]
    if row.min_compute_capability is not None or not known:
        return row
    earlier = max(known, key=lambda v: v.version)
    floor = earlier.min_compute_capability
    why = f"minimum compute capability {floor} of vLLM {earlier.version}, the newest curated release before it"
    return _with(row, min_compute_capability=floor, inherited=why)


def _with(row: _R, **changes: object) -> _R:
    """A copy of a row with some fields changed (rows are immutable)."""
    import dataclasses

    return dataclasses.replace(row, **changes)  # type: ignore[type-var]
