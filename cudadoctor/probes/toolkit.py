"""CUDA toolkit installs and the ``nvcc`` on PATH: where each toolkit lives and which version it is.

Installs are found through ``CUDA_HOME``, ``CUDA_PATH``, the ``/usr/local/cuda`` link,
``/usr/local/cuda-*``, ``/opt/cuda``, a conda prefix (``$CONDA_PREFIX`` with ``bin/nvcc`` or
``targets/<arch>-linux``) and the root above the first ``nvcc`` on PATH; installs that resolve to
the same real directory are merged (layouts as measured on a real H200, tests/fixtures/h200/capture.txt,
and CuPy's conda rule, https://github.com/cupy/cupy/blob/main/cupy/_environment.py).

A toolkit's version is read, in order, from ``version.json``, ``version.txt`` and the
``CUDA_VERSION`` macro of ``cuda.h``. A directory's *name* (``cuda-13.0``) is never used: apt
component installs have neither manifest (the H200 capture), and a renamed or half-removed
directory would lie. ``nvcc --version`` is run at most once per context, for the first ``nvcc``
on PATH, and never for an image root (``--root``: nothing from an image is executed).
"""

from __future__ import annotations

import posixpath
import re

from packaging.version import Version

from cudadoctor.bounded import json_object
from cudadoctor.facts.model import NvccInfo, Source, SourceKind, ToolkitInstall
from cudadoctor.probes.context import ProbeContext

__all__ = [
    "NVCC_TIMEOUT",
    "VERSION_JSON_KEYS",
    "include_dirs",
    "install_roots",
    "parse_cuda_h",
    "parse_nvcc_version",
    "parse_version_json",
    "parse_version_txt",
    "probe_nvcc",
    "probe_toolkits",
]

#: Seconds ``nvcc --version`` may take (it took 39 ms, measured on a real H200).
NVCC_TIMEOUT = 10.0

#: ``version.json`` keys tried in order. The component versions come first because the top-level
#: ``cuda`` (SDK) version can be date-stamped: one public 12.6.3 install reports
#: ``"12.6.20241114"`` (tests/fixtures/toolkit/version-12.6-sdk-only.json), which would compare above any
#: real 12.6.x. The
#: cudart component always carries the toolkit's major.minor (13.3.29 in a 13.3.1 SDK, 11.8.89 in
#: 11.8), while other components may not (``cuda_cccl`` 13.2.86 in that same 13.3.1 SDK).
VERSION_JSON_KEYS = ("cuda_cudart", "cuda_nvcc", "cuda")

#: conda's ``targets/`` directory per CPU (CuPy's rule: https://github.com/cupy/cupy/blob/main/cupy/_environment.py).
_CONDA_TARGETS = {
    "x86_64": ("x86_64-linux",),
    "aarch64": ("sbsa-linux", "aarch64-linux"),
    "ppc64le": ("ppc64le-linux",),
}

_PROBE = "toolkit"


# --- parsers --------------------------------------------------------------------------------------


def parse_version_json(text: str) -> tuple[Version, str] | None:
    """The toolkit version in a ``version.json`` and the key it was read from.

    Parse, e.g. (3-space indent, space before the colon)::

        {
           "cuda" : {
              "name" : "CUDA SDK",
              "version" : "13.3.1"
           },
           "cuda_cudart" : {
              "name" : "CUDA Runtime (cudart)",
              "version" : "13.3.29"
           }
        }

    gives ``(Version("13.3.29"), "cuda_cudart")``; keys are tried in :data:`VERSION_JSON_KEYS`
    order. None for text that is not such a JSON object.
    """
    data = json_object(text)
    if data is None:
        return None
    for key in VERSION_JSON_KEYS:
        entry = data.get(key)
        if isinstance(entry, dict) and isinstance(entry.get("version"), str):
            try:
                return Version(entry["version"].strip()), key
            except ValueError:  # InvalidVersion, or a number past int()'s 4300-digit limit
                continue
    return None


_VERSION_TXT = re.compile(r"^\s*CUDA Version\s+(\d+(?:\.\d+)+)\s*$", re.MULTILINE)


def parse_version_txt(text: str) -> Version | None:
    """The version in a legacy ``version.txt`` (CUDA <= 11.0).

    Parse, e.g.::

        CUDA Version 9.0.176
    """
    match = _VERSION_TXT.search(text)
    if not match:
        return None
    try:
        return Version(match.group(1))
    except ValueError:  # \d admits other scripts' digits, which Version refuses; or a number past int()'s limit
        return None


_CUDA_VERSION_DEFINE = re.compile(r"^\s*#\s*define\s+CUDA_VERSION\s+([0-9]{1,9})\b", re.MULTILINE)


def parse_cuda_h(text: str) -> Version | None:
    """The toolkit's major.minor from ``cuda.h``.

    Parse, e.g. (captured, CUDA 13.0)::

        #define CUDA_VERSION 13000

    ``13000`` decodes as major = v // 1000, minor = (v % 1000) // 10
    (https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__VERSION.html).
    """
    match = _CUDA_VERSION_DEFINE.search(text)
    if not match:
        return None
    value = int(match.group(1))
    if value < 1000:
        return None
    return Version(f"{value // 1000}.{(value % 1000) // 10}")


_NVCC_RELEASE = re.compile(r"release (\d+)\.(\d+), V(\d+(?:\.\d+)*)")


def parse_nvcc_version(text: str) -> tuple[Version, Version] | None:
    """``(release, version)`` from ``nvcc --version``; works without the ``Build`` line (CUDA < 11).

    Parse, e.g. (captured, CUDA 13.0)::

        nvcc: NVIDIA (R) Cuda compiler driver
        Copyright (c) 2005-2025 NVIDIA Corporation
        Built on Wed_Aug_20_01:58:59_PM_PDT_2025
        Cuda compilation tools, release 13.0, V13.0.88
        Build cuda_13.0.r13.0/compiler.36424714_0

    gives ``(Version("13.0"), Version("13.0.88"))``.
    """
    match = _NVCC_RELEASE.search(text)
    if not match:
        return None
    try:
        return Version(f"{match.group(1)}.{match.group(2)}"), Version(match.group(3))
    except ValueError:  # \d admits other scripts' digits, which Version refuses; or a number past int()'s limit
        return None


# --- file checks ----------------------------------------------------------------------------------


# --- nvcc -----------------------------------------------------------------------------------------


def _first_nvcc(ctx: ProbeContext) -> str | None:
    """The first ``nvcc`` file in the examined environment's PATH (found, not run)."""

    def compute() -> str | None:
        for directory in (ctx.env.get("PATH") or "").split(":"):
            if not directory.startswith("/"):
                continue  # "" and relative entries depend on the caller's working directory
            candidate = posixpath.join(posixpath.normpath(directory), "nvcc")
            if ctx.fs.is_file(candidate):
                return candidate
        return None

    return ctx.once("toolkit.nvcc_path", compute)


def probe_nvcc(ctx: ProbeContext) -> NvccInfo | None:
    """The first ``nvcc`` on PATH and, on the live machine, what ``nvcc --version`` says.

    :param ctx: the probe context; ``ctx.env["PATH"]`` is searched through ``ctx.fs``.
    :return: None when no ``nvcc`` is on PATH. With ``--root`` the path is reported with
        ``release``/``version`` None and one note, since nothing from an image is run.
    """
    return ctx.once("toolkit.nvcc", lambda: _probe_nvcc(ctx))


def _probe_nvcc(ctx: ProbeContext) -> NvccInfo | None:
    path = _first_nvcc(ctx)
    if path is None:
        return None
    if not ctx.live:
        ctx.fail("nvcc", "not run: commands from an image root are never executed; version unknown", path)
        return NvccInfo(path=path, release=None, version=None, source=Source(SourceKind.FILENAME, path))
    argv = (path, "--version")
    source = Source(SourceKind.COMMAND, " ".join(argv))
    result = ctx.runner.run(argv, timeout=NVCC_TIMEOUT)
    if not result.ok:
        ctx.fail("nvcc", f"nvcc --version: {result.describe()}", path)
        return NvccInfo(path=path, release=None, version=None, source=source)
    parsed = parse_nvcc_version(result.stdout)
    if parsed is None:
        ctx.fail("nvcc", "nvcc --version: no 'release X.Y, VX.Y.Z' in its output", path)
        return NvccInfo(path=path, release=None, version=None, source=source)
    return NvccInfo(path=path, release=parsed[0], version=parsed[1], source=source)


# --- install discovery ----------------------------------------------------------------------------


def _candidates(ctx: ProbeContext) -> list[tuple[str, str]]:
    """(directory, how it was found) in discovery order; directories may repeat."""
    found: list[tuple[str, str]] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = (ctx.env.get(var) or "").strip()
        if value:
            found.append((posixpath.normpath(value), var))
    link = "/usr/local/cuda"
    found.append((link, f"{link} link" if ctx.fs.is_symlink(link) else link))
    for path in ctx.fs.glob("/usr/local", "cuda-[0-9]*"):  # not cuda-samples, cuda-keyring …
        found.append((path, "glob /usr/local/cuda-*"))
    found.append(("/opt/cuda", "/opt/cuda"))
    prefix = (ctx.env.get("CONDA_PREFIX") or "").strip()
    if prefix and _looks_like_conda_cuda(ctx, prefix):
        found.append((posixpath.normpath(prefix), "CONDA_PREFIX"))
    nvcc = _first_nvcc(ctx)
    if nvcc is not None:
        try:
            root = posixpath.dirname(posixpath.dirname(ctx.fs.resolve(nvcc)))
        except OSError:
            root = ""
        # /usr/bin/nvcc (a distro package) would make all of /usr a "toolkit"; skip such roots.
        if root not in ("", "/", "/usr", "/usr/local") and _has_version_file(ctx, root):
            found.append((root, "nvcc on PATH"))
    return found


def _looks_like_conda_cuda(ctx: ProbeContext, prefix: str) -> bool:
    if ctx.fs.is_file(posixpath.join(prefix, "bin", "nvcc")):
        return True
    return any(
        ctx.fs.is_dir(posixpath.join(prefix, "targets", target)) for target in _CONDA_TARGETS.get(ctx.machine, ())
    )


def _has_version_file(ctx: ProbeContext, root: str) -> bool:
    paths = [posixpath.join(root, "version.json"), posixpath.join(root, "version.txt")]
    paths += [posixpath.join(d, "cuda.h") for d in include_dirs(ctx, root)]
    return any(ctx.fs.is_file(path) for path in paths)


def install_roots(ctx: ProbeContext) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """Every toolkit directory as ``(root as found, real path, found_via)``, merged by real path.

    Cheap (no command is run); :mod:`cudadoctor.probes.libraries` uses it to find headers.
    """

    def compute() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
        merged: dict[str, tuple[str, list[str]]] = {}
        for path, how in _candidates(ctx):
            try:
                real = ctx.fs.resolve(path)
            except OSError as exc:
                ctx.fail(_PROBE, f"{how}: cannot resolve {path}: {exc.strerror or exc}", path)
                continue
            if not ctx.fs.is_dir(real):
                if how in ("CUDA_HOME", "CUDA_PATH"):
                    ctx.fail(_PROBE, f"{how}={path}: no such directory", path)
                continue
            if real in merged:
                if how not in merged[real][1]:
                    merged[real][1].append(how)
            else:
                merged[real] = (path, [how])
        return tuple((root, real, tuple(ways)) for real, (root, ways) in merged.items())

    return ctx.once("toolkit.roots", compute)


def include_dirs(ctx: ProbeContext, real_root: str) -> list[str]:
    """A toolkit's header directories: ``include/`` and ``targets/*/include/``."""
    dirs = [posixpath.join(real_root, "include")]
    for target in ctx.fs.glob(posixpath.join(real_root, "targets"), "*"):
        dirs.append(posixpath.join(target, "include"))
    return [d for d in dirs if ctx.fs.is_dir(d)]


# --- versions -------------------------------------------------------------------------------------


def _read(ctx: ProbeContext, path: str, probe: str = _PROBE) -> str | None:
    """A file's text, or None (and one error) when it exists but cannot be read."""
    try:
        return ctx.fs.read_text(path)
    except OSError as exc:
        ctx.fail(probe, f"cannot read: {exc.strerror or exc}", path)
        return None


def _toolkit_version(ctx: ProbeContext, real: str) -> tuple[Version | None, Source | None]:
    path = posixpath.join(real, "version.json")
    if ctx.fs.is_file(path):
        text = _read(ctx, path)
        if text is not None:
            parsed = parse_version_json(text)
            if parsed is not None:
                return parsed[0], Source(SourceKind.FILE, f"{path}#{parsed[1]}")
            ctx.fail(_PROBE, "version.json: not JSON with a cuda_cudart, cuda_nvcc or cuda version", path)
    path = posixpath.join(real, "version.txt")
    if ctx.fs.is_file(path):
        text = _read(ctx, path)
        if text is not None:
            version = parse_version_txt(text)
            if version is not None:
                return version, Source(SourceKind.FILE, path)
            ctx.fail(_PROBE, "version.txt: no 'CUDA Version X.Y.Z' line", path)
    seen: set[str] = set()
    for path in (posixpath.join(d, "cuda.h") for d in include_dirs(ctx, real)):
        # include/ is usually a link to targets/<arch>/include: read each real file once
        if not ctx.fs.is_file(path):
            continue
        header = ctx.fs.resolve(path)  # cannot loop: is_file just resolved it
        if header in seen:
            continue
        seen.add(header)
        text = _read(ctx, path)
        if text is None:
            continue
        version = parse_cuda_h(text)
        if version is not None:
            return version, Source(SourceKind.FILE, path)
        ctx.fail(_PROBE, "cuda.h: no '#define CUDA_VERSION' line", path)
    return None, None


def _nvcc_root(ctx: ProbeContext, nvcc: NvccInfo | None) -> str | None:
    """The real toolkit root whose ``bin/`` holds ``nvcc``."""
    if nvcc is None:
        return None
    try:
        return posixpath.dirname(posixpath.dirname(ctx.fs.resolve(nvcc.path)))
    except OSError:
        return None


def probe_toolkits(ctx: ProbeContext) -> tuple[ToolkitInstall, ...]:
    """Every CUDA toolkit install, each with its version and where that version was read.

    :param ctx: the probe context.
    :return: installs in discovery order (``CUDA_HOME`` first); ``nvcc_version`` is filled for the
        install holding the first ``nvcc`` on PATH (live machine only).
    """
    return ctx.once("toolkit.installs", lambda: _probe_toolkits(ctx))


def _probe_toolkits(ctx: ProbeContext) -> tuple[ToolkitInstall, ...]:
    roots = install_roots(ctx)
    if not roots:
        return ()
    nvcc = probe_nvcc(ctx)
    nvcc_root = _nvcc_root(ctx, nvcc)
    installs: list[ToolkitInstall] = []
    for root, real, ways in roots:
        version, source = _toolkit_version(ctx, real)
        if version is None:
            ctx.fail(_PROBE, "no version.json, version.txt or cuda.h with a version", real)
        installs.append(
            ToolkitInstall(
                root=root,
                version=version,
                source=source,
                found_via=ways,
                nvcc_version=nvcc.version if nvcc is not None and real == nvcc_root else None,
                real_path=real,
            )
        )
    return tuple(installs)
