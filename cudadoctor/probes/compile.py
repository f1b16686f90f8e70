"""What Triton needs to compile a kernel here, read from files: its ptxas and that binary's CUDA release, the
driver's libcuda by the names Triton's release looks for, the C compiler it would run and the target interpreter's
Python.h. Nothing is run: Triton itself runs ``ldconfig -p`` and ``ptxas --version``; the loader cache is read
(:mod:`.ldcache`, shared with the loader's view) and the version string is read out of the binary.

Triton's own lookups, per release, are in compat/triton.toml (read from each release's wheel,
compat/notes/triton.md). The probe records what a check needs to replay them for the installed release:

* ptxas: the variable (``TRITON_PTXAS_PATH``, ``TRITON_PTXAS_BLACKWELL_PATH``) when it names an existing file —
  Triton tries it first — and the bundled binary. The bundled binary of a release compat/triton.toml lists is
  versioned from the table on x86_64 (the binary holds the same string, ~22-38 MB into a 20-52 MB file: read once
  by the table's method, not on every run); any other ptxas is read, at most :data:`_MAX_PTXAS` bytes, for its
  ``Cuda compilation tools, release X.Y, VX.Y.Z`` line.
* libcuda: every directory Triton's search or the launcher's link can use — the loader cache's ``libcuda`` entries,
  ``LD_LIBRARY_PATH``, ``TRITON_LIBCUDA_PATH``, ``LIBRARY_PATH`` and the default directories — with whether it holds
  ``libcuda.so`` and ``libcuda.so.1`` (a fixed handful of stats, no listing).
* the C compiler: ``CC``, else ``gcc``, else ``clang`` on ``PATH`` (``shutil.which`` as Triton calls it; the file's
  existence is checked, not its execute bit).
* Python.h: ``<base prefix>/include/pythonX.Y/Python.h``, sysconfig's ``include`` path of the ``posix_prefix``
  scheme Triton asks for (https://docs.python.org/3/library/sysconfig.html#installation-paths); a venv's base
  prefix is the directory above pyvenv.cfg's ``home``.
"""

from __future__ import annotations

import functools
import posixpath
import re
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from cudadoctor.errors import CompatDataError
from cudadoctor.facts.compile import CCompiler, CompileEnv, LibcudaDir, PtxasBinary, PythonHeaders
from cudadoctor.facts.source import Source, SourceKind
from cudadoctor.probes import loader
from cudadoctor.probes.context import ProbeContext
from cudadoctor.probes.interpreter import parse_pyvenv_cfg, target_python
from cudadoctor.probes.packages import distributions

if TYPE_CHECKING:
    from cudadoctor.data.rows import TritonRelease

__all__ = [
    "TRITON_VARIABLES",
    "find_compiler",
    "parse_ptxas_version",
    "probe_compile_env",
    "python_include_dir",
    "triton_rows",
]

_PROBE = "compile"
#: The variables Triton reads for its toolchain (compat/triton.toml ``ptxas_env``, ``ptxas_blackwell_env``,
#: ``libcuda_env``; ``CC`` in every release's ``_build``), plus the linker's ``LIBRARY_PATH``.
TRITON_VARIABLES = (
    "TRITON_PTXAS_PATH",
    "TRITON_PTXAS_BLACKWELL_PATH",
    "TRITON_PTXAS-BLACKWELL_PATH",
    "TRITON_LIBCUDA_PATH",
    "CC",
    "LIBRARY_PATH",
)
#: The largest ptxas read for its version: the biggest bundled one (triton 3.9.0's ptxas-blackwell) is 52 MB.
_MAX_PTXAS = 96 << 20
#: At most this many PATH / LD_LIBRARY_PATH / LIBRARY_PATH entries are looked at (a hostile value must stay cheap).
_MAX_DIRS = 64
_PTXAS_RELEASE = re.compile(rb"Cuda compilation tools, release (\d{1,3}\.\d{1,3}), V(\d{1,3}\.\d{1,3}\.\d{1,6})")
_UNVERSIONED = "libcuda.so"
_SONAME = "libcuda.so.1"


def parse_ptxas_version(data: bytes) -> Version | None:
    """The CUDA release of a ptxas binary, from the line ``ptxas --version`` prints, as the binary holds it.

    Parse, e.g. (bytes of triton 3.0.0's bundled ptxas)::

        b"...\\x00Cuda compilation tools, release 12.4, V12.4.99\\x00Build cuda_12.4.r12.4/..." -> Version("12.4.99")

    :return: the full version (``V12.4.99``); None when the line is not there.
    """
    match = _PTXAS_RELEASE.search(data)
    if match is None:
        return None
    return Version(match.group(2).decode("ascii"))


def _path_dirs(value: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(d for d in (value or "").split(":") if d.strip()))[:_MAX_DIRS]


def find_compiler(ctx: ProbeContext) -> CCompiler | None:
    """The C compiler Triton's ``_build`` would run: ``CC`` as given, else the first ``gcc`` on PATH, else ``clang``.

    ``shutil.which`` semantics without running anything: a name with a slash is a path; otherwise the PATH
    directories in order (Python's ``os.defpath`` when PATH is unset).
    """
    path_dirs = _path_dirs(ctx.env.get("PATH", "/bin:/usr/bin"))

    def which(name: str) -> str | None:
        if "/" in name:
            return name if ctx.fs.is_file(name) else None
        return next((p for d in path_dirs if ctx.fs.is_file(p := posixpath.join(d, name))), None)

    cc = ctx.env.get("CC")
    if cc is not None:  # Triton takes CC as the whole command, even an empty or missing one
        return CCompiler(cc, which(cc) if cc else None, Source(SourceKind.ENV, "CC"))
    for name in ("gcc", "clang"):
        found = which(name)
        if found is not None:
            return CCompiler(name, found, Source(SourceKind.FILENAME, found))
    return None


def python_include_dir(ctx: ProbeContext) -> tuple[str | None, str]:
    """(the target interpreter's ``include/pythonX.Y`` directory, where its base prefix was read) or (None, why)."""
    python = target_python(ctx)
    if python.version is None or not python.prefix:
        return None, "the target interpreter's version or prefix is unknown"
    xy = f"{python.version.major}.{python.version.minor}"
    base = python.prefix
    where = f"the interpreter's prefix ({python.source})"
    if python.kind == "venv":
        cfg_path = posixpath.join(python.prefix, "pyvenv.cfg")
        try:
            home = parse_pyvenv_cfg(ctx.fs.read_text(cfg_path, limit=64 << 10)).get("home", "")
        except OSError:
            return None, f"{cfg_path} could not be read (the venv's base interpreter is unknown)"
        if not home:
            return None, f"{cfg_path} names no home (the venv's base interpreter is unknown)"
        home = posixpath.normpath(home)
        base = posixpath.dirname(home) if posixpath.basename(home) in ("bin", "Scripts") else home
        where = f"{cfg_path} home = {home}"
    include = posixpath.join(base, "include", f"python{xy}")
    # A free-threaded build's headers sit in include/pythonX.Yt (its abiflags "t").
    if not ctx.fs.is_dir(include) and ctx.fs.is_dir(include + "t"):
        include += "t"
    return include, where


def _headers(ctx: ProbeContext, unread: list[str]) -> PythonHeaders | None:
    include, where = python_include_dir(ctx)
    if include is None:
        unread.append(f"Python.h: {where}")
        return None
    header = posixpath.join(include, "Python.h")
    return PythonHeaders(include, ctx.fs.is_file(header), Source(SourceKind.FILENAME, f"{header} ({where})"))


def _version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def _ptxas_of(ctx: ProbeContext, path: str, chosen_by: str, role: str, unread: list[str]) -> PtxasBinary:
    """A ptxas that is not the bundled one of a known release: its version read out of the binary."""
    if not ctx.fs.is_file(path):
        return PtxasBinary(path, chosen_by, False, None, Source(SourceKind.FILENAME, path), role)
    try:
        version = parse_ptxas_version(ctx.fs.read_bytes(path, _MAX_PTXAS))
    except OSError as exc:
        unread.append(f"{path}: {exc.strerror or exc}")
        version = None
    if version is None and not any(u.startswith(path) for u in unread):
        unread.append(f"{path}: no 'Cuda compilation tools, release' line in its first {_MAX_PTXAS >> 20} MiB")
    return PtxasBinary(path, chosen_by, True, version, Source(SourceKind.FILE, path), role)


@functools.cache
def triton_rows() -> tuple[TritonRelease, ...]:
    """compat/triton.toml's releases, read once per process (empty when the data cannot be read)."""
    from cudadoctor.data import CompatMatrix

    try:
        return CompatMatrix(cache_dir=False).triton_releases
    except CompatDataError:
        return ()


def _ptxas(ctx: ProbeContext, name: str, version: Version | None, site: str, unread: list[str]) -> list[PtxasBinary]:
    row = None
    if name == "triton" and version is not None and not version.local:
        row = next((r for r in triton_rows() if r.version == version), None)
    found: list[PtxasBinary] = []
    if row is None:  # an unknown release or pytorch-triton: the files of the 3.x layout, then 2.x's, read
        for role, rel in (
            ("ptxas", "triton/backends/nvidia/bin/ptxas"),
            ("ptxas-blackwell", "triton/backends/nvidia/bin/ptxas-blackwell"),
            ("ptxas", "triton/third_party/cuda/bin/ptxas"),
        ):
            path = posixpath.join(site, rel)
            if ctx.fs.is_file(path) and not any(p.role == role for p in found):
                found.append(_ptxas_of(ctx, path, "bundled", role, unread))
        for variable, role in (("TRITON_PTXAS_PATH", "ptxas"), ("TRITON_PTXAS_BLACKWELL_PATH", "ptxas-blackwell")):
            if value := ctx.env.get(variable):
                found.append(_ptxas_of(ctx, value, variable, role, unread))
        return found
    wanted: list[tuple[str, str, str, Version | None]] = [("ptxas", row.ptxas_file, row.ptxas_env, row.ptxas)]
    if row.ptxas_blackwell_file and row.ptxas_blackwell_env:
        wanted.append(("ptxas-blackwell", row.ptxas_blackwell_file, row.ptxas_blackwell_env, row.ptxas_blackwell))
    for role, rel, variable, bundled_version in wanted:
        if value := ctx.env.get(variable):
            found.append(_ptxas_of(ctx, value, variable, role, unread))
        path = posixpath.join(site, rel)
        present = ctx.fs.is_file(path)
        if ctx.machine == "x86_64" or not present:  # the table was read from the x86_64 wheels only
            where = f"compat/triton.toml: triton {row.version} bundles {posixpath.basename(rel)} {bundled_version}"
            found.append(PtxasBinary(path, "bundled", present, bundled_version, Source(SourceKind.FILE, where), role))
        else:
            found.append(_ptxas_of(ctx, path, "bundled", role, unread))
    return found


def _cache_entries(ctx: ProbeContext) -> tuple[dict[str, list[str]], str, str]:
    """(directory -> the libcuda names the loader cache lists there, the ``via`` of those directories, the note)."""
    from cudadoctor.probes.linkage import loader_cache  # the loader's search, built once a run and shared

    entries, conf_dirs, note = loader_cache(ctx)
    by_dir: dict[str, list[str]] = {}
    if entries is not None:
        for entry in entries:
            if "libcuda.so" in entry.soname or "libcuda.so" in posixpath.basename(entry.path):
                by_dir.setdefault(posixpath.dirname(entry.path), []).append(entry.soname)
        return by_dir, "ld.so.cache", note
    # No readable cache: ldconfig would list the libcuda names of the ld.so.conf and trusted directories.
    for directory in (*conf_dirs, "/lib", "/usr/lib"):
        names = [n for n in (_SONAME, _UNVERSIONED) if ctx.fs.is_file(posixpath.join(directory, n))]
        if names:
            by_dir.setdefault(posixpath.normpath(directory), names)
    return by_dir, "ld.so.conf", note


def _libcuda_dirs(ctx: ProbeContext) -> tuple[tuple[LibcudaDir, ...], str]:
    cached, cache_via, note = _cache_entries(ctx)
    candidates: list[tuple[str, str]] = [(d, cache_via) for d in cached]
    candidates += [(d, "LD_LIBRARY_PATH") for d in _path_dirs(ctx.env.get("LD_LIBRARY_PATH"))]
    if value := ctx.env.get("TRITON_LIBCUDA_PATH"):
        candidates.append((value, "TRITON_LIBCUDA_PATH"))
    candidates += [(d, "LIBRARY_PATH") for d in _path_dirs(ctx.env.get("LIBRARY_PATH"))]
    candidates += [(d, "default") for d in loader.default_dirs(ctx.machine)]
    dirs: list[LibcudaDir] = []
    seen: set[tuple[str, str]] = set()
    for directory, via in candidates:
        path = posixpath.normpath(directory)
        if (path, via) in seen:
            continue
        seen.add((path, via))
        dirs.append(
            LibcudaDir(
                path,
                via,
                tuple(cached.get(path, ())) if via == cache_via else (),
                ctx.fs.is_file(posixpath.join(path, _UNVERSIONED)),
                ctx.fs.is_file(posixpath.join(path, _SONAME)),
            )
        )
    return tuple(dirs), note


def probe_compile_env(ctx: ProbeContext) -> CompileEnv | None:
    """What Triton needs to compile a kernel; None when neither triton nor torch 2.0 or later is installed."""
    dists = distributions(ctx)
    triton = dists.get("triton") or dists.get("pytorch-triton")
    torch = dists.get("torch")
    torch_version = _version(torch.dir_version) if torch is not None else None
    if triton is None and (torch_version is None or torch_version < Version("2")):
        return None
    unread: list[str] = []
    triton_version = _version(triton.dir_version) if triton is not None else None
    ptxas: list[PtxasBinary] = []
    if triton is not None:
        ptxas = _ptxas(ctx, triton.name, triton_version, triton.location, unread)
    libcuda_dirs, note = _libcuda_dirs(ctx)
    env = tuple((name, ctx.env[name]) for name in TRITON_VARIABLES if name in ctx.env)
    return CompileEnv(
        triton=triton.name if triton is not None else None,
        triton_version=triton_version,
        ptxas=tuple(ptxas),
        libcuda_dirs=libcuda_dirs,
        cache_note=note,
        compiler=find_compiler(ctx),
        headers=_headers(ctx, unread),
        env=env,
        unread=tuple(unread),
    )
