"""CUDA libraries outside the toolkit: pip CUDA wheels, and every copy of cuDNN, NCCL and TensorRT.

Nothing is loaded or imported: versions come from pip dist-info ``METADATA``, conda-meta JSON,
version headers (``cudnn_version.h``, ``nccl.h``, ``NvInferVersion.h``) and versioned library
file names (``libcudnn.so.9.14.0``) in the loader's search directories. The file layouts are the ones
measured on a real H200 (tests/fixtures/h200/capture.txt), which has two copies of cuDNN (pip 9.19.0.56,
apt 9.14.0) and of NCCL (pip 2.28.9, apt 2.28.3).

One *copy* is one install: the header, library files and dist-info or conda-meta record of the
same install and version are merged into a single :class:`~cudadoctor.facts.model.LibraryCopy`. Where a
file was found decides its origin: under a site-packages directory ``pip``, under
``$CONDA_PREFIX`` ``conda``, under a CUDA toolkit root ``toolkit``, under a TensorRT tarball
directory ``tarball``, anywhere else ``system``.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import field
from functools import partial
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from cudadoctor.bounded import json_object, parse_version, version_or_none
from cudadoctor.facts.model import CudaWheels, LibraryCopy, Source, SourceKind, WheelComponent
from cudadoctor.facts.names import canonical_name
from cudadoctor.probes import loader, toolkit
from cudadoctor.probes.context import ProbeContext
from cudadoctor.record import mutable_record, record

if TYPE_CHECKING:
    from cudadoctor.data.rows import TorchBundledCudnn

__all__ = [
    "CTK_WHEEL_COMPONENTS",
    "parse_c_defines",
    "parse_conda_meta",
    "parse_cudnn_version_header",
    "parse_dist_metadata",
    "parse_nccl_header",
    "parse_nvinfer_version_header",
    "probe_cuda_wheels",
    "probe_cudnn",
    "probe_nccl",
    "probe_tensorrt",
]

#: CUDA toolkit components shipped as pip wheels, by name without the ``nvidia-`` prefix and the
#: ``-cu11``/``-cu12`` suffix. Source: the extras of the ``cuda-toolkit`` 13.0.2 meta-package
#: (https://pypi.org/project/cuda-toolkit/13.0.2/; its METADATA as installed on a real H200 is in
#: tests/fixtures/h200/capture.txt). cuDNN, NCCL, NVSHMEM and cuSPARSELt are separate
#: products and reported elsewhere.
CTK_WHEEL_COMPONENTS = frozenset(
    {
        "cublas",
        "cuda-cccl",
        "cuda-crt",
        "cuda-culibos",
        "cuda-cupti",
        "cuda-cuxxfilt",
        "cuda-nvcc",
        "cuda-nvrtc",
        "cuda-opencl",
        "cuda-profiler-api",
        "cuda-runtime",
        "cuda-sanitizer-api",
        "cufft",
        "cufile",
        "curand",
        "cusolver",
        "cusparse",
        "npp",
        "nvfatbin",
        "nvjitlink",
        "nvjpeg",
        "nvml-dev",
        "nvptxcompiler",
        "nvtx",
        "nvvm",
    }
)

_CU_SUFFIX = re.compile(r"-cu(\d+)$")
_TRIPLETS = ("x86_64-linux-gnu", "aarch64-linux-gnu")


# --- parsers --------------------------------------------------------------------------------------


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*(.*)$", re.MULTILINE)
#: ASCII digits, and few enough for int() (which refuses more than 4300 digits).
_INTEGER = re.compile(r"^\(?\s*([0-9]{1,18})[uUlL]*\s*\)?$")
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")


def parse_c_defines(text: str) -> dict[str, str]:
    """Object-like ``#define NAME VALUE`` macros of a C header, with comments stripped.

    Parse, e.g.::

        #define NV_TENSORRT_MAJOR TRT_MAJOR_ENTERPRISE //!< TensorRT major version.
        #define CUDNN_MAJOR 9

    gives ``{"NV_TENSORRT_MAJOR": "TRT_MAJOR_ENTERPRISE", "CUDNN_MAJOR": "9"}``. Function-like
    macros (``#define NCCL_VERSION(X,Y,Z) ...``) are skipped; the first definition of a name wins.
    """
    defines: dict[str, str] = {}
    for match in _DEFINE.finditer(text):
        value = re.sub(r"/\*.*?\*/", " ", match.group(2)).split("//", 1)[0].strip()
        defines.setdefault(match.group(1), value)
    return defines


def _define_int(defines: dict[str, str], name: str) -> int | None:
    """An integer macro, following macro-to-macro indirection a few levels deep."""
    value = defines.get(name)
    for _ in range(4):
        if value is None:
            return None
        number = _INTEGER.match(value)
        if number:
            return int(number.group(1))
        if not _IDENTIFIER.match(value):
            return None
        value = defines.get(value)
    return None


def _version_from(defines: dict[str, str], *names: str) -> Version | None:
    parts = [_define_int(defines, name) for name in names]
    if any(part is None for part in parts):
        return None
    return Version(".".join(str(part) for part in parts))


def parse_cudnn_version_header(text: str) -> Version | None:
    """The cuDNN version in ``cudnn_version.h`` (cuDNN >= 8) or ``cudnn.h`` (cuDNN <= 7).

    Parse, e.g. (captured, apt cuDNN 9.14)::

        #define CUDNN_MAJOR 9
        #define CUDNN_MINOR 14
        #define CUDNN_PATCHLEVEL 0
    """
    return _version_from(parse_c_defines(text), "CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL")


def parse_nccl_header(text: str) -> Version | None:
    """The NCCL version in ``nccl.h``: the three macros, else ``NCCL_VERSION_CODE``.

    Parse, e.g. (captured, apt NCCL 2.28.3)::

        #define NCCL_MAJOR 2
        #define NCCL_MINOR 28
        #define NCCL_PATCH 3
        #define NCCL_SUFFIX ""

        #define NCCL_VERSION_CODE 22803

    The code is X*10000 + Y*100 + Z from NCCL 2.9 on and X*1000 + Y*100 + Z before
    (the ``NCCL_VERSION`` macro in the same header:
    https://github.com/NVIDIA/nccl/blob/master/src/nccl.h.in).
    """
    defines = parse_c_defines(text)
    version = _version_from(defines, "NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH")
    if version is not None:
        return version
    code = _define_int(defines, "NCCL_VERSION_CODE")
    if code is None or code < 1000:
        return None
    if code < 10000:
        return Version(f"{code // 1000}.{code % 1000 // 100}.{code % 100}")
    return Version(f"{code // 10000}.{code % 10000 // 100}.{code % 100}")


def parse_nvinfer_version_header(text: str) -> Version | None:
    """The TensorRT version in ``NvInferVersion.h`` (or ``NvInfer.h`` before TensorRT 7).

    Parse, e.g. (TensorRT 10.14 public header; the numbers sit one macro away)::

        #define TRT_MAJOR_ENTERPRISE 10
        #define TRT_MINOR_ENTERPRISE 14
        #define TRT_PATCH_ENTERPRISE 1
        #define TRT_BUILD_ENTERPRISE 48
        #define NV_TENSORRT_MAJOR TRT_MAJOR_ENTERPRISE //!< TensorRT major version.
        #define NV_TENSORRT_MINOR TRT_MINOR_ENTERPRISE //!< TensorRT minor version.
        #define NV_TENSORRT_PATCH TRT_PATCH_ENTERPRISE //!< TensorRT patch version.
        #define NV_TENSORRT_BUILD TRT_BUILD_ENTERPRISE //!< TensorRT build number.

    gives 10.14.1.48 (the build number is appended when defined, as pip versions are written).
    """
    defines = parse_c_defines(text)
    version = _version_from(defines, "NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR", "NV_TENSORRT_PATCH")
    if version is None:
        return None
    build = _define_int(defines, "NV_TENSORRT_BUILD")
    return Version(f"{version}.{build}") if build is not None else version


def parse_dist_metadata(text: str) -> tuple[str | None, str | None]:
    """``(Name, Version)`` from the header block of a dist-info ``METADATA`` file.

    Parse, e.g. (captured)::

        Metadata-Version: 2.4
        Name: nvidia-cudnn-cu13
        Version: 9.19.0.56
        Summary: cuDNN runtime libraries

    Scanning stops at the first blank line (the description body); garbage gives ``(None, None)``.
    """
    name = version = None
    for line in text.splitlines():
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "name" and name is None:
            name = value.strip() or None
        elif key == "version" and version is None:
            version = value.strip() or None
    return name, version


def parse_conda_meta(text: str) -> tuple[str, Version] | None:
    """``(name, version)`` from a ``conda-meta/<name>-<version>-<build>.json`` record.

    Parse, e.g. (standard conda layout, abridged)::

        {"name": "cudnn", "version": "9.3.0.75", "build": "h93bb076_0", "depends": [...]}
    """
    data = json_object(text)
    if data is None:
        return None
    name, version = data.get("name"), data.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        return None
    parsed = version_or_none(version)
    return (name, parsed) if parsed is not None else None


# --- shared reading -------------------------------------------------------------------------------


def _site_paths(ctx: ProbeContext) -> tuple[str, ...]:
    """The target interpreter's site-packages directories (owned by the packages probe)."""
    # Imported here: the packages probe owns the interpreter and caches its answer under
    # ctx.once("python.site_paths"); tests replace this function.
    from cudadoctor.probes import interpreter

    return tuple(interpreter.site_paths(ctx))


def _sites(ctx: ProbeContext) -> tuple[str, ...]:
    def compute() -> tuple[str, ...]:
        try:
            return _site_paths(ctx)
        except Exception as exc:  # another probe's failure must not take these four down
            ctx.fail("libraries", f"site-packages directories unknown: {type(exc).__name__}: {exc}")
            return ()

    return ctx.once("libraries.site_paths", compute)


def _resolve(ctx: ProbeContext, path: str) -> str | None:
    try:
        return ctx.fs.resolve(path)
    except OSError:
        return None


def _read(ctx: ProbeContext, probe: str, path: str) -> str | None:
    try:
        return ctx.fs.read_text(path)
    except OSError as exc:
        ctx.fail(probe, f"cannot read: {exc.strerror or exc}", path)
        return None


@record
class _Dist:
    """One ``*.dist-info`` of interest."""

    name: str  #: canonical
    version: Version
    site: str  #: the site-packages directory as given
    path: str  #: the dist-info directory
    source: Source


def _interesting(name: str) -> bool:
    return name.startswith(("nvidia-", "tensorrt")) or name == "cuda-toolkit"


def _dists(ctx: ProbeContext) -> tuple[_Dist, ...]:
    """Every NVIDIA-related dist-info in every site directory, in site order (duplicates kept)."""

    def compute() -> tuple[_Dist, ...]:
        found: list[_Dist] = []
        for site in _sites(ctx):
            for path in ctx.fs.glob(site, "*.dist-info"):
                # One dist-info that breaks the reader is recorded and skipped, never the whole probe.
                dist = ctx.attempt("libraries", path, partial(_read_dist, ctx, site, path), None, path)
                if dist is not None:
                    found.append(dist)
        return tuple(found)

    return ctx.once("libraries.dists", compute)


def _read_dist(ctx: ProbeContext, site: str, path: str) -> _Dist | None:
    # Directory names are normalised: nvidia_cudnn_cu13-9.19.0.56.dist-info (as installed on a real H200,
    # tests/fixtures/h200/capture.txt).
    stem = posixpath.basename(path)[: -len(".dist-info")]
    dir_name, _, dir_version = stem.partition("-")
    if not _interesting(canonical_name(dir_name)):
        return None
    metadata = posixpath.join(path, "METADATA")
    name: str | None = None
    version: str | None = None
    try:
        name, version = parse_dist_metadata(ctx.fs.read_text(metadata))
        problem = None if name and version else "no Name/Version headers"
    except OSError as exc:
        problem = f"cannot read: {exc.strerror or exc}"
    source = Source(SourceKind.METADATA, metadata)
    if problem is not None:
        # The installer writes the directory name from the same metadata; fall back to it, and say so.
        name, version = dir_name, dir_version
        source = Source(SourceKind.FILENAME, path)
    try:
        parsed = parse_version(version or "")
    except InvalidVersion:
        ctx.fail(
            "libraries",
            f"METADATA {problem or 'has an invalid Version'}; no version in the dist-info name either",
            metadata,
        )
        return None
    if problem is not None:
        ctx.fail("libraries", f"METADATA {problem}; version taken from the dist-info name", metadata)
    return _Dist(canonical_name(name or dir_name), parsed, site, path, source)


def _cuda_major_of(name: str) -> int | None:
    """``nvidia-cudnn-cu13`` -> 13; ``nvidia-cuda-runtime-cu117`` (CUDA 11.7 era) -> 11."""
    match = _CU_SUFFIX.search(name) or re.search(r"-cu(\d+)-", name)
    if not match:
        return None
    digits = match.group(1)
    return int(digits[:2]) if len(digits) >= 3 else int(digits)


# --- pip CUDA wheels ------------------------------------------------------------------------------


def _component_base(name: str) -> tuple[str, int | None] | None:
    """``nvidia-cublas-cu12`` -> ``("cublas", 12)``; ``nvidia-cublas`` -> ``("cublas", None)``."""
    if not name.startswith("nvidia-"):
        return None
    base = name[len("nvidia-") :]
    major = None
    match = _CU_SUFFIX.search(base)
    if match:
        base = base[: match.start()]
        major = _cuda_major_of(name)
    return (base, major) if base in CTK_WHEEL_COMPONENTS else None


def _unified_dir(ctx: ProbeContext, site: str) -> str | None:
    """The one ``nvidia/cuNN`` directory of the CUDA 13 layout in ``site``, when there is one."""
    dirs = [d for d in ctx.fs.glob(posixpath.join(site, "nvidia"), "cu[0-9]*") if ctx.fs.is_dir(d)]
    return dirs[0] if len(dirs) == 1 else None


def probe_cuda_wheels(ctx: ProbeContext) -> CudaWheels | None:
    """The CUDA runtime and math libraries installed as pip wheels in the target environment.

    Both layouts are read: CUDA 13 (unsuffixed names, one ``nvidia/cu13/lib``) and CUDA 12/11
    (``-cu12``/``-cu11`` names, ``nvidia/<component>/lib``). A name found in two site directories
    counts once, from the first (the one Python imports). ``layout`` is the layout of the
    ``nvidia-cuda-runtime*`` wheels, ``mixed`` when runtime wheels of two layouts are installed;
    without a runtime wheel it is that of the other components (``mixed`` if they disagree).

    :param ctx: the probe context.
    :return: None when no CUDA component wheel and no ``cuda-toolkit`` meta-package is installed.
    """
    seen: set[str] = set()
    components: list[WheelComponent] = []
    layouts: dict[str, str] = {}  # distribution -> layout
    toolkit_meta: Version | None = None
    for dist in _dists(ctx):
        if dist.name in seen:
            continue
        seen.add(dist.name)
        if dist.name == "cuda-toolkit":
            toolkit_meta = dist.version
            continue
        parsed = _component_base(dist.name)
        if parsed is None:
            continue
        base, major = parsed
        if major is not None:
            lib_dir: str | None = posixpath.join(dist.site, "nvidia", base.replace("-", "_"), "lib")
            layouts[dist.name] = f"cu{major}"
        else:
            unified = _unified_dir(ctx, dist.site)
            lib_dir = posixpath.join(unified, "lib") if unified else None
            if unified:
                layouts[dist.name] = posixpath.basename(unified)
        if lib_dir is not None and not ctx.fs.is_dir(lib_dir):
            lib_dir = None
        components.append(WheelComponent(dist.name, dist.version, lib_dir, dist.source))
    if not components and toolkit_meta is None:
        return None
    runtimes = [c for c in components if (_component_base(c.distribution) or ("",))[0] == "cuda-runtime"]
    for runtime in runtimes:  # unsuffixed runtime without an nvidia/cuNN dir: its own major says
        layouts.setdefault(runtime.distribution, f"cu{runtime.version.major}")
    pool = [layouts[c.distribution] for c in (runtimes or components) if c.distribution in layouts]
    kinds = set(pool)
    layout = "mixed" if len(kinds) > 1 else (pool[0] if pool else "unknown")
    return CudaWheels(
        layout=layout,
        components=tuple(components),
        toolkit_meta=toolkit_meta,
        runtime_version=max((r.version for r in runtimes), default=None),
    )


# --- cuDNN, NCCL, TensorRT copies -----------------------------------------------------------------


@record
class _Spec:
    """How one library (cuDNN, NCCL, TensorRT) is found: its headers and their parser, its library files, wheels
    and conda packages."""

    library: str  #: ``cudnn`` / ``nccl`` / ``tensorrt``
    #: header name patterns in tiers: a later tier is read only in a directory where no earlier
    #: tier matched (``cudnn.h`` holds the version only for cuDNN <= 7)
    headers: tuple[tuple[str, ...], ...]
    parse: Callable[[str], Version | None]
    lib_pattern: str  #: versioned library file names (``libcudnn.so.*``)
    dist: re.Pattern[str]  #: pip distributions that install it
    pip_include: tuple[str, ...]  #: header dirs relative to site-packages
    pip_lib: tuple[str, ...]  #: library dirs relative to site-packages
    conda_names: tuple[str, ...]  #: conda package names
    #: copies of one version in one place merge unless their distributions differ (cu12 vs cu13
    #: wheels of one cuDNN); TensorRT's split wheels (``tensorrt``, ``-cu12``, ``-cu12-libs``) merge
    split_by_dist: bool = True
    tarballs: tuple[tuple[str, str], ...] = ()  #: (directory, pattern) of tarball install roots


_CUDNN = _Spec(
    library="cudnn",
    headers=(("cudnn_version.h", "cudnn_version_v*.h"), ("cudnn.h",)),
    parse=parse_cudnn_version_header,
    lib_pattern="libcudnn.so.*",
    dist=re.compile(r"^nvidia-cudnn(-cu\d+)?$"),
    pip_include=("nvidia/cudnn/include",),
    pip_lib=("nvidia/cudnn/lib",),
    conda_names=("cudnn", "libcudnn"),
)
_NCCL = _Spec(
    library="nccl",
    headers=(("nccl.h",),),
    parse=parse_nccl_header,
    lib_pattern="libnccl.so.*",
    dist=re.compile(r"^nvidia-nccl(-cu\d+)?$"),
    pip_include=("nvidia/nccl/include",),
    pip_lib=("nvidia/nccl/lib",),
    conda_names=("nccl", "libnccl"),
)
# pip TensorRT >= 10 puts its libraries in site-packages/tensorrt_libs; 8.x wheels kept them in
# the tensorrt package directory (public install notes, e.g. "tensorrt_libs/libnvinfer.so.10").
_TENSORRT = _Spec(
    library="tensorrt",
    headers=(("NvInferVersion.h",), ("NvInfer.h",)),
    parse=parse_nvinfer_version_header,
    lib_pattern="libnvinfer.so.*",
    dist=re.compile(r"^(nvidia-tensorrt|tensorrt(-cu\d+)?(-libs|-bindings)?)$"),
    pip_include=(),
    pip_lib=("tensorrt_libs", "tensorrt"),
    conda_names=("tensorrt", "libnvinfer"),
    split_by_dist=False,
    tarballs=(("/usr/local", "TensorRT*"), ("/opt", "tensorrt*")),
)

_ORIGIN_ORDER = ("pip", "conda", "toolkit", "tarball", "system")
_KIND_ORDER = ("meta", "header", "lib")


@mutable_record
class _Item:
    """One piece of evidence about a copy: a dist-info / conda record, a header or a library."""

    kind: str  #: ``meta`` / ``header`` / ``lib``
    origin: str
    owner: str  #: the site dir, conda prefix, toolkit or tarball root it lies under ("" for system)
    version: Version | None  #: None for a library name that carries only the SONAME major
    path: str
    source: Source
    distribution: str | None = None
    major: int | None = None  #: the SONAME major of a ``lib`` item without a full version


@mutable_record
class _Group:
    """The items of one install of a library, gathered before it becomes one copy."""

    items: list[_Item] = field(default_factory=list)


def _vkey(version: Version) -> tuple[int, ...]:
    """What a header, a library name and a dist-info of one install agree on: major.minor.patch."""
    return (*version.release, 0, 0, 0)[:3]


class _Places:
    """Where each kind of install lives, resolved once per probe call."""

    def __init__(self, ctx: ProbeContext, spec: _Spec) -> None:
        self.sites = [(s, r) for s in _sites(ctx) if (r := _resolve(ctx, s))]
        prefix = (ctx.env.get("CONDA_PREFIX") or "").strip()
        self.conda = _resolve(ctx, prefix) if prefix.startswith("/") else None
        self.conda_prefix = prefix if self.conda else None
        self.toolkits = [real for _root, real, _ways in toolkit.install_roots(ctx)]
        self.tarballs = [
            real
            for directory, pattern in spec.tarballs
            for path in ctx.fs.glob(directory, pattern)
            if ctx.fs.is_dir(path) and (real := _resolve(ctx, path))
        ]

    def classify(self, real: str) -> tuple[str, str]:
        """``(origin, owner)`` of a resolved path."""
        for _site, site_real in self.sites:
            if _under(real, site_real):
                return "pip", site_real
        if self.conda and _under(real, self.conda):
            return "conda", self.conda
        for root in self.toolkits:
            if root not in ("/", "/usr") and _under(real, root):
                return "toolkit", root
        for root in self.tarballs:
            if _under(real, root):
                return "tarball", root
        return "system", ""


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _header_dirs(ctx: ProbeContext, spec: _Spec, places: _Places) -> list[str]:
    dirs = [posixpath.join(site, rel) for site, _ in places.sites for rel in spec.pip_include]
    if places.conda_prefix:
        dirs.append(posixpath.join(places.conda_prefix, "include"))
    dirs += ["/usr/include", *(f"/usr/include/{t}" for t in _TRIPLETS), "/usr/local/cuda/include"]
    for _root, real, _ways in toolkit.install_roots(ctx):
        dirs += toolkit.include_dirs(ctx, real)
    dirs += [posixpath.join(root, "include") for root in places.tarballs]
    return dirs


def _header_items(ctx: ProbeContext, spec: _Spec, places: _Places) -> Iterable[_Item]:
    seen: set[str] = set()
    for directory in _header_dirs(ctx, spec, places):
        for tier in spec.headers:
            paths = [p for pattern in tier for p in ctx.fs.glob(directory, pattern) if ctx.fs.is_file(p)]
            for path in paths:
                real = _resolve(ctx, path)
                if real is None or real in seen:
                    continue
                seen.add(real)
                text = _read(ctx, spec.library, path)
                if text is None:
                    continue
                version = spec.parse(text)
                if version is None:
                    ctx.fail(spec.library, f"no {spec.library} version macros in {posixpath.basename(path)}", path)
                    continue
                origin, owner = places.classify(real)
                yield _Item("header", origin, owner, version, path, Source(SourceKind.FILE, path))
            if paths:
                break


def _lib_items(ctx: ProbeContext, spec: _Spec, places: _Places) -> Iterable[_Item]:
    pip_dirs = [posixpath.join(site, rel) for site, _ in places.sites for rel in spec.pip_lib]
    conda_dirs = [posixpath.join(places.conda_prefix, "lib")] if places.conda_prefix else []
    dirs = [*pip_dirs, *conda_dirs, *loader.search_dirs(ctx)]
    for path in loader.find_in_dirs(ctx, dirs, spec.lib_pattern):
        if not ctx.fs.is_file(path):
            ctx.fail(spec.library, "dangling or looping symbolic link", path)
            continue
        real = _resolve(ctx, path) or path
        written = loader.soname_version(path) or ""
        target = loader.soname_version(real) or ""
        # libcudnn.so.9 -> libcudnn.so.9.14.0: the link's target names the full version.
        full = target if target.startswith(written + ".") else written
        if not full:
            continue
        origin, owner = places.classify(real)
        source = Source(SourceKind.FILENAME, path if full == written else real)
        if full.count(".") >= 2 and (parsed_full := version_or_none(full)) is not None:
            yield _Item("lib", origin, owner, parsed_full, path, source)
        elif full.count(".") >= 2:
            continue  # \d admits other scripts' digits: no version Python can compare
        else:
            yield _Item("lib", origin, owner, None, path, source, major=int(full.split(".")[0]))


def _meta_items(ctx: ProbeContext, spec: _Spec, places: _Places) -> Iterable[_Item]:
    for dist in _dists(ctx):
        if not spec.dist.match(dist.name):
            continue
        site_real = _resolve(ctx, dist.site) or dist.site
        yield _Item(
            "meta", "pip", site_real, dist.version, dist.path, dist.source, dist.name, major=_cuda_major_of(dist.name)
        )
    if places.conda_prefix and places.conda:
        meta_dir = posixpath.join(places.conda_prefix, "conda-meta")
        for name in spec.conda_names:
            for path in ctx.fs.glob(meta_dir, f"{name}-[0-9]*.json"):
                text = _read(ctx, spec.library, path)
                parsed = parse_conda_meta(text) if text is not None else None
                if parsed is None:
                    if text is not None:
                        ctx.fail(spec.library, "conda-meta record without a name and version", path)
                    continue
                if parsed[0] == name:
                    yield _Item("meta", "conda", places.conda, parsed[1], path, Source(SourceKind.FILE, path))


def _copies(ctx: ProbeContext, spec: _Spec) -> tuple[LibraryCopy, ...]:
    places = _Places(ctx, spec)
    groups: dict[tuple[object, ...], _Group] = {}

    def add(key: tuple[object, ...], item: _Item) -> None:
        groups.setdefault(key, _Group()).items.append(item)

    for item in _meta_items(ctx, spec, places):
        if item.version is None:
            continue
        family = item.distribution if spec.split_by_dist else None
        add((item.origin, item.owner, _vkey(item.version), family), item)
    for item in [*_header_items(ctx, spec, places), *_lib_items(ctx, spec, places)]:
        if item.version is not None:
            matches = [k for k in groups if k[:3] == (item.origin, item.owner, _vkey(item.version))]
        else:  # a SONAME-major name joins the copies of that major in the same place
            matches = [
                k
                for k in groups
                if k[:2] == (item.origin, item.owner) and isinstance(k[2], tuple) and k[2][0] == item.major
            ]
        for key in matches or [(item.origin, item.owner, _vkey(item.version) if item.version else None, None)]:
            add(key, item)
    copies = [_copy(spec, group) for group in groups.values()]
    copies.sort(key=lambda c: _ORIGIN_ORDER.index(c.origin))
    return tuple(copies)


def _dist_rank(name: str | None) -> int:
    """Which of TensorRT's split wheels names the copy: ``tensorrt-cu12`` before ``tensorrt``."""
    if name is None:
        return 9
    if name.endswith(("-libs", "-bindings")):
        return 2
    return 0 if _CU_SUFFIX.search(name) else 1


def _copy(spec: _Spec, group: _Group) -> LibraryCopy:
    items = sorted(group.items, key=lambda i: (_KIND_ORDER.index(i.kind), _dist_rank(i.distribution)))
    primary = items[0]
    libs = list(dict.fromkeys(i.path for i in items if i.kind == "lib"))
    cuda_major = next((i.major for i in items if i.kind == "meta" and i.major is not None), None)
    return LibraryCopy(
        library=spec.library,
        version=primary.version,
        origin=primary.origin,
        path=primary.path,
        source=primary.source,
        distribution=primary.distribution,
        cuda_major=cuda_major,
        lib_paths=tuple(libs),
    )


def probe_cudnn(ctx: ProbeContext) -> tuple[LibraryCopy, ...]:
    """Every installed copy of cuDNN: pip wheels, torch 1.x's bundled copy, conda, the toolkit, system packages.

    :param ctx: the probe context.
    :return: one :class:`LibraryCopy` per install, pip copies first.
    """
    copies = _copies(ctx, _CUDNN)
    bundled = torch_bundled_cudnn(ctx)
    if bundled is None:
        return copies
    pip = [c for c in copies if c.origin == "pip"]
    return (*pip, bundled, *(c for c in copies if c.origin != "pip"))


#: Where a framework's wheel keeps a cuDNN of its own, under site-packages: torch 1.x wheels copied
#: libcudnn.so.8 and its sub-libraries into torch/lib (compat/torch.toml ``bundled_cudnn``).
_BUNDLED_CUDNN = (("torch", "torch/lib"),)


def torch_bundled_cudnn(ctx: ProbeContext) -> LibraryCopy | None:
    """The cuDNN shim a framework's wheel bundles in its own directory, if any (its file names carry only the
    soname major: the version is the one compat/torch.toml records for that torch release and CUDA variant)."""
    for owner, rel in _BUNDLED_CUDNN:
        for site in _sites(ctx):
            found = [p for p in ctx.fs.glob(posixpath.join(site, rel), "libcudnn*.so.*") if ctx.fs.is_file(p)]
            shim = next((p for p in sorted(found) if re.search(r"/libcudnn\.so\.\d+$", p)), None)
            if shim is not None:
                version = _bundled_version(ctx, owner)
                source = Source(SourceKind.FILENAME, shim)
                return LibraryCopy(
                    "cudnn", version, "pip", shim, source, lib_paths=tuple(sorted(found)), bundled_by=owner
                )
    return None


def _bundled_version(ctx: ProbeContext, owner: str) -> Version | None:
    """The cuDNN version compat/torch.toml gives for the installed torch's release and ``+cuXXX`` variant."""
    from cudadoctor.probes import packages  # owns the distributions

    dist = packages.distributions(ctx).get(owner)
    version = version_or_none(dist.dir_version or "") if dist else None
    local = version.local if version is not None else None
    if version is None or not local or not local.startswith("cu"):
        return None
    rows = bundled_cudnn_rows()
    public = Version(version.public)
    row = next((r for r in rows if r.variant == local and r.releases.contains(public, prereleases=True)), None)
    return row.cudnn if row is not None else None


@functools.cache
def bundled_cudnn_rows() -> tuple[TorchBundledCudnn, ...]:
    """compat/torch.toml's ``bundled_cudnn`` rows, read once per process (empty when the data cannot be read)."""
    from cudadoctor.data import CompatMatrix
    from cudadoctor.errors import CompatDataError

    try:
        return CompatMatrix(cache_dir=False).torch_bundled_cudnn_rows
    except CompatDataError:
        return ()


def probe_nccl(ctx: ProbeContext) -> tuple[LibraryCopy, ...]:
    """Every installed copy of NCCL (``nccl.h``, ``libnccl.so.2.X.Y``, ``nvidia-nccl-cu*``).

    :param ctx: the probe context.
    :return: one :class:`LibraryCopy` per install, pip copies first.
    """
    return _copies(ctx, _NCCL)


def probe_tensorrt(ctx: ProbeContext) -> tuple[LibraryCopy, ...]:
    """Every installed copy of TensorRT, plus TensorRT-LLM wheels as ``library="tensorrt-llm"``.

    TensorRT's split pip wheels of one version in one site (``tensorrt``, ``tensorrt-cu12``,
    ``tensorrt-cu12-libs``, ``tensorrt-cu12-bindings``) are one copy. ``tensorrt-llm`` is reported
    under its own library name: its version (0.x, 1.x) is not a TensorRT version.

    :param ctx: the probe context.
    :return: one :class:`LibraryCopy` per install, pip copies first.
    """
    copies = list(_copies(ctx, _TENSORRT))
    for dist in _dists(ctx):
        if dist.name == "tensorrt-llm":
            copies.append(
                LibraryCopy(
                    library="tensorrt-llm",
                    version=dist.version,
                    origin="pip",
                    path=dist.path,
                    source=dist.source,
                    distribution=dist.name,
                )
            )
    return tuple(copies)
