"""Loading the compatibility data in ``compat/``: find it, validate it, and answer questions from it.

``compat/`` sits at the top of the repository and is shipped inside the wheel as
``cudadoctor/compat`` (see ``pyproject.toml``). The code never holds compatibility numbers; it
reads them from here. :func:`validate_table` is the schema: it checks every record of a file and
reports every problem at once (file, record, field), so one bad edit cannot hide another.
:class:`CompatMatrix` answers the questions checks ask (the minimum driver for a CUDA version, the
CUDA version a driver supports, a GPU architecture …), loading each file the first time it is used.
"""

from __future__ import annotations

import datetime
import functools
import itertools
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudadoctor.errors import CompatDataError
from cudadoctor.facts.model import DriverVersion

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "SCHEMAS",
    "CompatMatrix",
    "CudaRelease",
    "GpuArch",
    "MinorCompat",
    "TorchRelease",
    "TorchVariant",
    "VllmRelease",
    "compat_dir",
    "data_as_of",
    "index_data_as_of",
    "load_table",
    "table_names",
    "validate_meta",
    "validate_table",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_DRIVER = re.compile(r"^\d+\.\d+(\.\d+)?$")
_CC = re.compile(r"^\d+\.\d+[af]?$")

#: Field types: ``version`` (PEP 440), ``driver`` (NVIDIA driver version), ``cc`` (compute
#: capability "9.0", "9.0a"), ``specifier`` (PEP 440 specifier set), ``str``, ``int``, ``bool``,
#: ``date``, ``list[str]``, ``list[int]``, ``list[version]``, ``list[cc]``, ``table`` (free-form).
#: A trailing ``!`` marks a required field. Every record also takes ``source``/``sources`` (one is
#: required) and ``note``.
SCHEMAS: dict[str, dict[str, dict[str, str]]] = {
    "gpu-models": {
        "gpu": {
            "name": "str!",
            "aliases": "list[str]!",
            "compute_capability": "cc!",
            "architecture": "str",
            "segment": "str",
        },
    },
    "cuda-toolkit-drivers": {
        "release": {
            "version": "version!",
            "label": "str",
            "min_driver_linux": "driver",
            "min_driver_windows": "driver",
        },
        "minor_compat": {
            "cuda_major": "int!",
            "min_driver_branch": "str",
            "min_driver_linux": "driver!",
            "min_driver_windows": "driver",
            "upper_driver_branch_exclusive": "str",
            "limits": "list[str]",
        },
        "forward_compat_package": {
            "package": "str!",
            "compatible_driver_branches": "list[str]",
            "paired_driver_branch": "str",
        },
    },
    "gpu-architectures": {
        "arch": {
            "compute_capability": "cc!",
            "name": "str!",
            "first_cuda": "version",
            "last_cuda_major": "int",
            "arch_specific": "list[cc]",
            "family_runs_on": "list[cc]",
            "renumbered_from": "cc",
            "renumbered_to": "cc",
            "renumbered_in_cuda": "version",
            "last_driver_branch": "str",
            "min_driver_branch": "str",
        },
    },
    "torch-releases": {
        "variant": {"tag": "str!", "cuda": "version", "index_url": "str"},
        "release": {
            "version": "version!",
            "python": "list[str]",
            "python_aarch64": "list[str]",
            "requires_python": "specifier",
            "pypi_default_cuda": "version",
            "pypi_default_evidence": "str",
            "pypi_aarch64_cuda": "version",
            "pypi_aarch64_evidence": "str",
            "variants": "list[str]",
            "variants_partial": "bool",
            "torchvision": "version",
            "torchaudio": "version",
        },
        "arch_list": {"releases": "specifier!", "variant": "str!", "archs": "list[str]!"},
    },
    "vllm-releases": {
        "release": {
            "version": "version!",
            "torch": "specifier",
            "requires_python": "specifier",
            "python": "list[str]",
            "abi3": "bool",
            "linux_x86_64_tag": "str",
            "cuda": "version",
            "cuda_major_linked": "int",
            "min_compute_capability": "cc",
            "other_cuda": "list[version]",
            "other_cuda_index": "str",
            "other_cuda_torch_index": "str",
            "torch_pypi_cuda_pin": "str",
        },
    },
    "tensorrt-releases": {
        "release": {
            "version": "version!",
            "trt_build": "str",
            "early_access": "bool",
            "packages": "list[str]",
            "plain_tensorrt_kind": "str",
            "plain_tensorrt_pulls": "str",
            "plain_tensorrt_pulls_win32": "str",
            "plain_tensorrt_index": "str",
            "cuda": "list[str]",
            "cuda_builds": "list[version]",
            "cudnn": "version",
            "requires_python": "specifier",
            "python": "list[str]",
            "linux_x86_64_bindings": "bool",
            "readme_tag": "str",
        },
    },
    "cuda-libraries": {
        "cudnn": {
            "version": "version!",
            "release": "version",
            "cuda_majors": "list[int]",
            "wheels": "list[str]",
            "wheel_platforms": "table",
            "linux_x86_64": "table",
            "requires": "table",
            "yanked": "list[str]",
            "pinned_by_torch": "list[version]",
            "min_driver_linux_by_cuda": "table",
        },
        "nccl": {
            "version": "version!",
            "cuda_majors": "list[int]",
            "wheels": "list[str]",
            "wheel_platforms": "table",
            "linux_x86_64": "table",
            "yanked": "list[str]",
            "pinned_by_torch": "list[version]",
        },
    },
    "cuda-errors": {
        "error": {
            "code": "int!",
            "name": "str!",
            "api": "str!",
            "summary": "str!",
            "cause": "str!",
            "fix": "str!",
            "observed": "str",
            "checks": "list[str]",
        },
    },
    "ecosystem": {
        "jax": {
            "version": "version!",
            "requires_python": "specifier",
            "jaxlib": "specifier",
            "jaxlib_in_cuda12_extra": "specifier",
            "jaxlib_same_version_on_pypi": "bool",
            "plugin_in_cuda12_extra": "specifier",
            "plugin_in_cuda13_extra": "specifier",
            "cuda_plugins": "list[str]",
            "min_cudnn": "table",
            "cudnn_requirement": "table",
            "cudnn_pin_in": "str",
            "yanked": "bool",
        },
        "flash_attn": {
            "version": "version!",
            "requires_python": "specifier",
            "torch_requirement": "str",
            "release_tag": "str",
            "wheels_torch": "list[str]",
            "wheels_python": "list[str]",
            "wheels_cuda_build": "list[str]",
            "wheels_cuda_tag": "list[str]",
            "wheels_cuda_majors": "list[int]",
            "wheels_cxx11abi": "list[str]",
            "wheels_excluded": "list[table]",
            "wheels_os": "list[str]",
        },
        "xformers": {"version": "version!", "torch": "specifier", "requires_python": "specifier"},
        "onnxruntime_gpu": {
            "version": "version!",
            "cuda_major": "int",
            "cudnn_major": "int",
            "cuda_build": "str",
            "requires_python": "specifier",
            "cuda_extra_runtime": "str",
            "cudnn_extra": "str",
            "wheel_sonames": "list[str]",
            "wheel_read": "str",
            "evidence": "list[str]",
            "docs_builds": "list[table]",
        },
        "cupy": {
            "package": "str!",
            "cuda_major": "int!",
            "first_version": "version",
            "first_uploaded": "str",
            "last_version": "version",
            "last_uploaded": "str",
            "releases": "int",
            "latest_requires_python": "specifier",
            "yanked": "list[str]",
        },
        "tensorflow": {
            "version": "version!",
            "cuda": "version",
            "cudnn": "version",
            "tested_python": "str",
            "requires_python": "specifier",
            "and_cuda": "table",
        },
    },
    "container-images": {
        "nvidia_cuda_tag": {"tag": "str!", "cuda": "version!", "os": "str", "flavour": "str", "variant": "str"},
        "pytorch_image": {
            "tag": "str!",
            "torch": "version",
            "cuda": "version",
            "cudnn": "str",
            "flavour": "str",
            "registry": "str",
        },
        "vllm_image": {"tag": "str!", "vllm": "version", "cuda": "version"},
        "ngc_pytorch": {
            "release": "str!",
            "tag": "str",
            # As NVIDIA's release notes write them ("10.1 Update 1", "418.xx"), not normalised.
            "cuda": "str",
            "torch": "str",
            "min_driver_linux": "str",
            "forward_compat_drivers": "list[str]",
        },
    },
}

#: Single tables (not arrays) allowed per kind; their contents are free-form facts with a source.
_SINGLE_TABLES: dict[str, tuple[str, ...]] = {
    "cuda-toolkit-drivers": ("forward_compat",),
    "container-images": ("nvidia_cuda", "pytorch_image_scheme", "vllm_image_scheme"),
}


def compat_dir() -> str:
    """The compat/ directory in use: the wheel's copy, else the source checkout's."""
    for candidate in (
        os.path.join(_PACKAGE_DIR, "compat"),  # installed wheel (force-include)
        os.path.join(os.path.dirname(_PACKAGE_DIR), "compat"),  # source checkout / editable install
    ):
        if os.path.isdir(candidate):
            return candidate
    raise CompatDataError(f"compat data not found next to {_PACKAGE_DIR}; the installation is incomplete")


def table_names() -> list[str]:
    """The data files shipped, by name (``cuda`` for compat/cuda.toml)."""
    return sorted(n[:-5] for n in os.listdir(compat_dir()) if n.endswith(".toml"))


def validate_meta(name: str, data: Mapping[str, Any]) -> list[str]:
    """Problems with a table's ``[meta]`` block, each as ``file: field: message``."""
    problems: list[str] = []
    meta = data.get("meta")
    if not isinstance(meta, Mapping):
        return [f"{name}: meta: missing [meta] block"]
    for key in ("schema", "kind", "covers", "updated", "sources"):
        if key not in meta:
            problems.append(f"{name}: meta.{key}: missing")
    if "updated" in meta and not isinstance(meta["updated"], datetime.date):
        problems.append(f"{name}: meta.updated: not a date")
    sources = meta.get("sources", [])
    if not isinstance(sources, list) or not sources:
        problems.append(f"{name}: meta.sources: needs at least one source")
    else:
        ids = [s.get("id") for s in sources if isinstance(s, Mapping)]
        for i, source in enumerate(sources):
            if not isinstance(source, Mapping) or not source.get("id") or not source.get("url"):
                problems.append(f"{name}: meta.sources[{i}]: needs id and url")
        problems.extend(f"{name}: meta.sources: id {i!r} listed twice" for i in {i for i in ids if ids.count(i) > 1})
    return problems


def _type_problem(kind: str, value: Any) -> str | None:
    """Why ``value`` is not of field type ``kind`` (None when it is)."""
    if kind.startswith("list["):
        if not isinstance(value, list):
            return "expected a list"
        for item in value:
            problem = _type_problem(kind[5:-1], item)
            if problem:
                return f"item {item!r}: {problem}"
        return None
    if kind == "str":
        return None if isinstance(value, str) and value else "expected a non-empty string"
    if kind == "int":
        return None if isinstance(value, int) and not isinstance(value, bool) else "expected an integer"
    if kind == "bool":
        return None if isinstance(value, bool) else "expected true or false"
    if kind == "date":
        return None if isinstance(value, datetime.date) else "expected a date"
    if kind == "table":
        return None if isinstance(value, dict) else "expected a table"
    if not isinstance(value, str):
        return "expected a string"
    if kind == "version":
        try:
            Version(value)
        except InvalidVersion:
            return f"{value!r} is not a version"
        return None
    if kind == "driver":
        return None if _DRIVER.match(value) else f"{value!r} is not a driver version"
    if kind == "cc":
        return None if _CC.match(value) else f"{value!r} is not a compute capability"
    if kind == "specifier":
        try:
            SpecifierSet(value)
        except InvalidSpecifier:
            return f"{value!r} is not a version specifier"
        return None
    return f"unknown field type {kind!r}"  # pragma: no cover - a schema bug


def validate_table(name: str, data: Mapping[str, Any]) -> list[str]:
    """Every problem in one file: meta, record fields and types, source ids, order."""
    problems = validate_meta(name, data)
    meta = data.get("meta") if isinstance(data.get("meta"), Mapping) else {}
    kind = meta.get("kind")
    schema = SCHEMAS.get(kind) if isinstance(kind, str) else None
    if schema is None:
        return [*problems, f"{name}: meta.kind: unknown kind {kind!r}"]
    source_ids = {s.get("id") for s in meta.get("sources", []) if isinstance(s, Mapping)}
    for key, value in data.items():
        if key == "meta":
            continue
        if key in _SINGLE_TABLES.get(kind, ()):
            problems.extend(_check_sources(f"{name}: {key}", value, source_ids))
            continue
        if key not in schema:
            problems.append(f"{name}: {key}: not a known table for kind {kind!r}")
            continue
        if not isinstance(value, list):
            problems.append(f"{name}: {key}: expected an array of tables ([[{key}]])")
            continue
        fields = schema[key]
        for index, record in enumerate(value):
            where = f"{name}: {key}[{index}]"
            if not isinstance(record, dict):
                problems.append(f"{where}: expected a table")
                continue
            problems.extend(_check_sources(where, record, source_ids))
            for field, ftype in fields.items():
                if ftype.endswith("!") and field not in record:
                    problems.append(f"{where}.{field}: missing")
            for field, item in record.items():
                if field in ("source", "sources", "note", "notes"):
                    continue
                if field not in fields:
                    problems.append(f"{where}.{field}: unknown field")
                    continue
                problem = _type_problem(fields[field].rstrip("!"), item)
                if problem:
                    problems.append(f"{where}.{field}: {problem}")
        problems.extend(_check_order(f"{name}: {key}", value, fields))
    return problems


def _check_sources(where: str, record: Any, source_ids: set[Any]) -> list[str]:
    if not isinstance(record, dict):
        return [f"{where}: expected a table"]
    cited = record.get("sources", [record["source"]] if "source" in record else [])
    if not isinstance(cited, list) or not cited:
        return [f"{where}: no source (every record names its evidence)"]
    return [f"{where}.source: {c!r} is not in meta.sources" for c in cited if c not in source_ids]


def _check_order(where: str, records: list[Any], fields: dict[str, str]) -> list[str]:
    """Records keyed by a ``version`` field must be newest first."""
    if fields.get("version", "").rstrip("!") != "version":
        return []
    versions = []
    for record in records:
        try:
            versions.append(Version(record["version"]))
        except (InvalidVersion, KeyError, TypeError):
            return []
    return [
        f"{where}: {a} is listed before {b}; records go newest first" for a, b in itertools.pairwise(versions) if a < b
    ]


@functools.cache
def load_table(name: str, *, validate: bool = False) -> dict[str, Any]:
    """Parse ``compat/<name>.toml``; raise :class:`CompatDataError` naming every problem.

    The shipped files are validated record by record in the test suite (tests/test_matrix.py) and
    cannot change after install, so a normal run checks only the ``[meta]`` block: full validation
    of every record costs more than the rest of ``cudadoctor check``. ``validate=True`` checks
    everything (for data that can change, and for the tests).
    """
    path = os.path.join(compat_dir(), f"{name}.toml")
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise CompatDataError(f"compat/{name}.toml: cannot read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise CompatDataError(f"compat/{name}.toml: not valid TOML: {exc}") from exc
    where = f"compat/{name}.toml"
    problems = validate_table(where, data) if validate else validate_meta(where, data)
    if problems:
        raise CompatDataError(f"{len(problems)} problem(s) in compat data: " + "; ".join(problems))
    _LOADED_DATES[name] = data["meta"]["updated"]
    return data


#: ``meta.updated`` of each table loaded in this process, for the reports' "data as of" line.
_LOADED_DATES: dict[str, Any] = {}


# --- typed views ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CudaRelease:
    """A CUDA toolkit release and the driver it needs (the release notes' driver table)."""

    version: Version
    label: str
    min_driver_linux: DriverVersion | None
    min_driver_windows: DriverVersion | None


@dataclass(frozen=True)
class MinorCompat:
    """The oldest driver that runs any CUDA ``cuda_major``.x application (minor-version compatibility)."""

    cuda_major: int
    min_driver_linux: DriverVersion
    min_driver_windows: DriverVersion | None
    limits: tuple[str, ...]


@dataclass(frozen=True)
class GpuArch:
    """A compute capability's architecture and the CUDA versions that support it."""

    compute_capability: str
    name: str
    first_cuda: Version | None
    last_cuda_major: int | None
    arch_specific: tuple[str, ...]
    min_driver_branch: int | None
    #: the compute capabilities its family-specific code (``sm_XYf``) runs on
    family_runs_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class TorchVariant:
    """A build variant on PyTorch's wheel index (``cu124``, ``cpu``, ``rocm6.1``)."""

    tag: str
    cuda: Version | None
    index_url: str | None


@dataclass(frozen=True)
class TorchRelease:
    """One torch release: its variants, the CUDA of its default PyPI wheel, Python versions, companions."""

    version: Version
    python: tuple[str, ...]
    python_aarch64: tuple[str, ...]
    pypi_default_cuda: Version | None
    pypi_default_evidence: str | None
    pypi_aarch64_cuda: Version | None
    variants: tuple[str, ...]
    torchvision: Version | None
    torchaudio: Version | None
    #: read from the package index by `cudadoctor update` (the date), not curated; None when curated
    derived: str | None = None


def _v(value: Any) -> Version | None:
    return Version(value) if isinstance(value, str) else None


@dataclass(frozen=True)
class VllmRelease:
    """One vLLM release: its torch pin, Python range, the CUDA its wheel was built with, the GPU floor."""

    version: Version
    torch: SpecifierSet | None  #: the Requires-Dist pin of the Linux x86_64 wheel
    requires_python: SpecifierSet | None
    python: tuple[str, ...]  #: CPython tags of its wheels (an abi3 wheel lists its floor)
    abi3: bool
    linux_x86_64_tag: str | None  #: None when no Linux x86_64 wheel was published
    cuda: Version | None
    min_compute_capability: str | None
    derived: str | None = None  #: see TorchRelease.derived


def _driver(value: Any) -> DriverVersion | None:
    return DriverVersion(value) if isinstance(value, str) else None


class CompatMatrix:
    """The compatibility tables, each loaded (and validated) the first time a question needs it.

    Release lists (torch, vLLM) also take releases that `cudadoctor update` read from the package index
    into the user cache and that the curated tables do not have yet; curated records always win, and
    derived ones say so (``derived``: the date they were read). ``cache_dir=False`` ignores the cache.
    """

    def __init__(self, cache_dir: str | bool | None = None) -> None:
        self._cache_dir = cache_dir

    def table(self, name: str) -> dict[str, Any]:
        return load_table(name)

    @functools.cached_property
    def index_data(self) -> Any:
        """The `cudadoctor update` cache (``IndexData``) or None; a broken cache is ignored, never fatal."""
        if self._cache_dir is False:
            return None
        from cudadoctor.cachedir import cache_file

        directory = self._cache_dir if isinstance(self._cache_dir, str) else None
        if not os.path.exists(cache_file(directory)):
            return None  # the common case: no `cudadoctor update` yet; the update module is never imported
        from cudadoctor.update import load_cache

        data, warning = load_cache(os.path.dirname(cache_file(directory)))
        self.index_warning = warning
        return data

    #: why the `cudadoctor update` cache could not be used (a corrupt file), for CD902 to report
    index_warning: str | None = None

    def _derived(self, package: str, curated: set[Version]) -> list[Any]:
        data = self.index_data
        if data is None:
            return []
        records = data.packages.get(package, {})
        return [r for v, r in records.items() if Version(v) not in curated and not r.yanked and r.metadata == "read"]

    # --- CUDA toolkit and driver ------------------------------------------------------------------

    @functools.cached_property
    def cuda_releases(self) -> tuple[CudaRelease, ...]:
        return tuple(
            CudaRelease(
                Version(r["version"]),
                r.get("label", r["version"]),
                _driver(r.get("min_driver_linux")),
                _driver(r.get("min_driver_windows")),
            )
            for r in self.table("cuda").get("release", [])
        )

    def minor_compat(self, cuda_major: int) -> MinorCompat | None:
        for r in self.table("cuda").get("minor_compat", []):
            if r["cuda_major"] == cuda_major:
                return MinorCompat(
                    cuda_major,
                    DriverVersion(r["min_driver_linux"]),
                    _driver(r.get("min_driver_windows")),
                    tuple(r.get("limits", ())),
                )
        return None

    def cuda_for_driver(self, driver: Version, *, windows: bool = False) -> Version | None:
        """The newest CUDA (major.minor) whose toolkit driver requirement ``driver`` meets.

        This is the CUDA version a driver reports (``nvidia-smi``'s "CUDA Version"), derived from the
        release notes' table for an assumed driver that cannot be asked.
        """
        best: Version | None = None
        for release in self.cuda_releases:
            needed = release.min_driver_windows if windows else release.min_driver_linux
            if needed is not None and needed <= driver:
                short = Version(f"{release.version.major}.{release.version.minor}")
                if best is None or short > best:
                    best = short
        return best

    def min_driver_for_cuda(self, cuda: Version, *, windows: bool = False) -> DriverVersion | None:
        """The oldest driver whose own CUDA version is at least ``cuda`` (major.minor)."""
        candidates = [
            (r.min_driver_windows if windows else r.min_driver_linux)
            for r in self.cuda_releases
            if (r.version.major, r.version.minor) >= (cuda.major, cuda.minor)
        ]
        known = [c for c in candidates if c is not None]
        return min(known) if known else None

    # --- GPU architectures ------------------------------------------------------------------------

    @functools.cached_property
    def gpu_archs(self) -> dict[str, GpuArch]:
        archs = {}
        for r in self.table("gpu_archs").get("arch", []):
            archs[r["compute_capability"]] = GpuArch(
                r["compute_capability"],
                r["name"],
                Version(r["first_cuda"]) if r.get("first_cuda") else None,
                r.get("last_cuda_major"),
                tuple(r.get("arch_specific", ())),
                int(r["min_driver_branch"]) if r.get("min_driver_branch") else None,
                tuple(r.get("family_runs_on", ())),
            )
        return archs

    # --- PyTorch ---------------------------------------------------------------------------------

    @functools.cached_property
    def torch_variants(self) -> dict[str, TorchVariant]:
        return {
            v["tag"]: TorchVariant(v["tag"], _v(v.get("cuda")), v.get("index_url"))
            for v in self.table("torch").get("variant", [])
        }

    @functools.cached_property
    def torch_releases(self) -> tuple[TorchRelease, ...]:
        curated = self._curated_torch()
        derived = [_derived_torch(r) for r in self._derived("torch", {t.version for t in curated})]
        return tuple(sorted((*curated, *(d for d in derived if d)), key=lambda t: t.version, reverse=True))

    def _curated_torch(self) -> tuple[TorchRelease, ...]:
        return tuple(
            TorchRelease(
                Version(r["version"]),
                tuple(r.get("python", ())),
                tuple(r.get("python_aarch64", ())),
                _v(r.get("pypi_default_cuda")),
                r.get("pypi_default_evidence"),
                _v(r.get("pypi_aarch64_cuda")),
                tuple(r.get("variants", ())),
                _v(r.get("torchvision")),
                _v(r.get("torchaudio")),
            )
            for r in self.table("torch").get("release", [])
        )

    def torch_release(self, version: Version) -> TorchRelease | None:
        public = Version(version.public)
        return next((r for r in self.torch_releases if r.version == public), None)

    def torch_arch_list(self, version: Version, variant: str) -> tuple[str, ...] | None:
        """The GPU targets of a release's variant wheels, when the data has them."""
        public = Version(version.public)
        for entry in self.table("torch").get("arch_list", []):
            if entry["variant"] == variant and SpecifierSet(entry["releases"]).contains(public, prereleases=True):
                return tuple(entry["archs"])
        return None

    # --- vLLM ----------------------------------------------------------------------------------------

    @functools.cached_property
    def vllm_releases(self) -> tuple[VllmRelease, ...]:
        curated = self._curated_vllm()
        derived = [_derived_vllm(r) for r in self._derived("vllm", {v.version for v in curated})]
        return tuple(sorted((*curated, *(d for d in derived if d)), key=lambda v: v.version, reverse=True))

    def _curated_vllm(self) -> tuple[VllmRelease, ...]:
        return tuple(
            VllmRelease(
                Version(r["version"]),
                SpecifierSet(r["torch"]) if r.get("torch") else None,
                SpecifierSet(r["requires_python"]) if r.get("requires_python") else None,
                tuple(r.get("python", ())),
                bool(r.get("abi3")),
                r.get("linux_x86_64_tag"),
                _v(r.get("cuda")),
                r.get("min_compute_capability"),
            )
            for r in self.table("vllm").get("release", [])
        )


def index_data_as_of() -> datetime.date | None:
    """When `cudadoctor update` last refreshed the user's cache (None: never, or unusable)."""
    data = CompatMatrix().index_data
    return data.updated if data is not None else None


def data_as_of() -> datetime.date | None:
    """The oldest ``meta.updated`` among the compat tables this run has loaded (None when none was)."""
    dates = [d for d in _LOADED_DATES.values() if isinstance(d, datetime.date)]
    return min(dates) if dates else None


# --- releases derived from the package index (`cudadoctor update`) ------------------------------------

_PIN = re.compile(r"^\s*([A-Za-z0-9._-]+)(?:\[[^\]]*\])?\s*\(?\s*==\s*([0-9][0-9.]*)")


def _pins(record: Any) -> dict[str, str]:
    """name -> exact pinned version, from Requires-Dist lines whose marker holds on Linux x86_64."""
    from packaging.markers import Marker

    env = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "extra": ""}
    out: dict[str, str] = {}
    for line in record.pins:
        requirement, _, marker = line.partition(";")
        if marker.strip():
            try:
                if not Marker(marker.strip()).evaluate({**env, "python_version": "3.12"}):
                    continue
            except Exception:  # noqa: S112 - an unusual marker: do not guess from it
                continue
        match = _PIN.match(requirement)
        if match:
            out[match.group(1).lower().replace("_", "-")] = match.group(2)
    return out


def _cuda_from_pins(pins: dict[str, str]) -> tuple[Version | None, str | None]:
    for name in ("cuda-toolkit", "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime-cu11"):
        if name in pins:
            parts = pins[name].split(".")
            return Version(f"{parts[0]}.{parts[1]}"), f"Requires-Dist {name}=={pins[name]} (derived)"
    return None, None


def _tag_pythons(tags: tuple[str, ...]) -> tuple[str, ...]:
    found = []
    for tag in tags:
        match = re.fullmatch(r"cp3(\d+)", tag)
        if match:
            found.append(f"3.{match.group(1)}")
    return tuple(sorted(set(found), key=lambda p: int(p.split(".")[1])))


def _derived_torch(record: Any) -> TorchRelease | None:
    if "manylinux_x86_64" not in record.platforms:
        return None
    cuda, evidence = _cuda_from_pins(_pins(record))
    return TorchRelease(
        Version(record.version),
        _tag_pythons(record.python_tags),
        (),
        cuda,
        evidence,
        None,
        (),
        None,
        None,
        derived=record.fetched,
    )


def _derived_vllm(record: Any) -> VllmRelease | None:
    pins = _pins(record)
    if "torch" not in pins:
        return None
    return VllmRelease(
        Version(record.version),
        SpecifierSet(f"=={pins['torch']}"),
        SpecifierSet(record.requires_python) if record.requires_python else None,
        _tag_pythons(record.python_tags),
        record.abi3,
        "manylinux_x86_64" if "manylinux_x86_64" in record.platforms else None,
        None,
        None,
        derived=record.fetched,
    )
