"""The target Python interpreter and the distributions of interest installed in it.

Nothing here imports a framework or executes a file of the examined environment: the interpreter is
found from the environment variables and the file layout (``pyvenv.cfg``, ``conda-meta/``,
``lib/python3.X/site-packages``), distributions from their ``*.dist-info`` / ``*.egg-info``
directory names, and only the distributions listed in :data:`INTERESTING_NAMES` /
:data:`INTERESTING_PREFIXES` have their ``METADATA`` read. torch's build is read from
``torch/version.py`` *as text*. The one command ever run is ``<python> -I -c <print sys.path>``,
and only for ``--python PATH`` pointing at another interpreter of the live machine.

Which interpreter (first match wins):

1. ``--python PATH`` (``ctx.python``);
2. ``VIRTUAL_ENV``, then ``CONDA_PREFIX`` in the examined environment;
3. live: this interpreter, unless cudadoctor itself runs from a pipx / ``uv tool`` environment,
   whose packages are not the user's: then the first ``python3`` on ``PATH``;
4. ``--root``: the first ``python3`` / ``python`` on the image's ``PATH``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import posixpath
import re
import sys
from functools import partial

from packaging.version import InvalidVersion, Version

from cudadoctor.bounded import (
    loads_json,
    parse_int,
    parse_marker,
    parse_version,
    requirement_or_none,
    version_or_none,
)
from cudadoctor.facts.model import InstalledPackage, PythonEnv, Source, SourceKind, TorchBuild
from cudadoctor.facts.names import INTERESTING_NAMES, INTERESTING_PREFIXES, canonical_name, is_interesting
from cudadoctor.facts.requires import read_requirement
from cudadoctor.probes import markers
from cudadoctor.probes.context import ProbeContext, own_sys_path
from cudadoctor.record import record

__all__ = [
    "INTERESTING_NAMES",
    "INTERESTING_PREFIXES",
    "SYS_PATH_SCRIPT",
    "Distribution",
    "canonical_name",
    "cuda_variant_from_local",
    "cuda_variant_from_name",
    "distributions",
    "is_interesting",
    "parse_dist_dirname",
    "parse_metadata",
    "parse_pyvenv_cfg",
    "parse_requires_txt",
    "parse_torch_version_py",
    "probe_packages",
    "probe_python",
    "site_paths",
    "target_python",
]

_PROBE = "python"
_PKG_PROBE = "packages"

#: Printed by ``<python> -I -c`` for ``--python``: one JSON line. ``-I`` keeps the user's
#: PYTHONPATH, user site and current directory out of the child (PYTHONPATH is added back from the
#: examined environment).
SYS_PATH_SCRIPT = (
    "import json,sys;print(json.dumps({'version':list(sys.version_info[:3]),'prefix':sys.prefix,"
    "'base_prefix':getattr(sys,'base_prefix',sys.prefix),'path':sys.path,'executable':sys.executable}))"
)

#: cudadoctor installed as an isolated application: its own environment is not the user's.
#: ``pipx install`` / ``uv tool install`` keep it under ``…/pipx/venvs/`` / ``…/uv/tools/``; ``pipx run``
#: under ``…/pipx/.cache/``, and ``uvx`` in the uv cache's ``environments-v1``/``-v2``
#: (https://github.com/astral-sh/uv/issues/6325).
_TOOL_ENV_MARKERS = ("/pipx/venvs/", "/uv/tools/", "/pipx/.cache/", "/uv/environments-v")

#: PATH when an image's environment does not set one (Debian's and the OCI images' default).
_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_RUN_TIMEOUT = 10.0


# --- the target interpreter -----------------------------------------------------------------------


def parse_pyvenv_cfg(text: str) -> dict[str, str]:
    """The ``key = value`` pairs of a venv's ``pyvenv.cfg``, keys lower-cased.

    Parse, e.g.::

        home = /usr/bin
        include-system-site-packages = false
        version = 3.12.3
        executable = /usr/bin/python3.12
    """
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            values[key.strip().lower()] = value.strip()
    return values


def _python_version(text: str | None) -> Version | None:
    """``3.12.3`` from ``3.12.3``, ``3.12.3.final.0`` (virtualenv's version_info) or ``python3.12``."""
    if not text:
        return None
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not match:
        return None
    return version_or_none(".".join(part for part in match.groups() if part is not None))


def _xy(version: Version) -> str:
    return f"{version.major}.{version.minor}"


def _lib_versions(ctx: ProbeContext, prefix: str) -> list[Version]:
    """The ``python3.X`` directories under ``<prefix>/lib``, newest first."""
    found = []
    for path in ctx.fs.glob(posixpath.join(prefix, "lib"), "python3.*"):
        match = re.fullmatch(r"python(\d+\.\d+)", posixpath.basename(path))
        if match and ctx.fs.is_dir(path) and (version := version_or_none(match.group(1))) is not None:
            found.append(version)
    return sorted(found, reverse=True)


def _existing_dirs(ctx: ProbeContext, candidates: list[str]) -> list[str]:
    out: list[str] = []
    listed: set[str] = set()  # a set: 120,000 PYTHONPATH entries deduplicated against a list took 192 s
    seen: set[str] = set()
    for path in candidates:
        if not path or not path.startswith("/"):
            continue
        normal = posixpath.normpath(path)
        if normal in listed:
            continue
        listed.add(normal)
        if not ctx.fs.is_dir(normal):
            continue
        try:
            real = ctx.fs.resolve(normal)
        except OSError:
            continue
        if real in seen:  # lib64 -> lib in a venv
            continue
        seen.add(real)
        out.append(normal)
    return out


def _pythonpath(ctx: ProbeContext) -> list[str]:
    return [p for p in ctx.env.get("PYTHONPATH", "").split(":") if p]


def _user_site(ctx: ProbeContext, version: Version | None) -> list[str]:
    home = ctx.env.get("HOME")
    if not home or version is None or ctx.env.get("PYTHONNOUSERSITE"):
        return []
    return [f"{home.rstrip('/')}/.local/lib/python{_xy(version)}/site-packages"]


def _prefix_site_dirs(prefix: str, version: Version) -> list[str]:
    xy = _xy(version)
    return [f"{prefix}/lib/python{xy}/site-packages", f"{prefix}/lib64/python{xy}/site-packages"]


def _system_site_dirs(prefix: str, version: Version) -> list[str]:
    """A distribution-packaged interpreter's site directories, in its sys.path order.

    Debian/Ubuntu: ``/usr/local/lib/python3.X/dist-packages`` (pip), ``/usr/lib/python3/dist-packages``
    (apt); Fedora/RHEL and the python:3 images: ``<prefix>/lib{,64}/python3.X/site-packages``.
    """
    xy = _xy(version)
    dirs: list[str] = []
    if prefix in ("/usr", "/"):
        dirs += [
            f"/usr/local/lib/python{xy}/dist-packages",
            f"/usr/local/lib/python{xy}/site-packages",
            "/usr/lib/python3/dist-packages",
            f"/usr/lib/python{xy}/dist-packages",
        ]
        prefix = "/usr"
    return dirs + _prefix_site_dirs(prefix, version)


def _conda_python_version(ctx: ProbeContext, prefix: str) -> Version | None:
    """The python version recorded in ``conda-meta/python-3.11.5-<build>.json``."""
    for path in ctx.fs.glob(posixpath.join(prefix, "conda-meta"), "python-3*.json"):
        match = re.match(r"python-(\d+\.\d+(?:\.\d+)?)-", posixpath.basename(path))
        if match and (version := version_or_none(match.group(1))) is not None:
            return version
    return None


def _from_layout(ctx: ProbeContext, executable: str, chosen_by: str, prefix: str | None = None) -> PythonEnv:
    """Describe the interpreter at ``executable`` (or the environment at ``prefix``) from files alone."""
    if prefix is None:
        bindir = posixpath.dirname(executable)
        prefix = posixpath.dirname(bindir) if posixpath.basename(bindir) in ("bin", "Scripts") else bindir
    prefix = posixpath.normpath(prefix)
    cfg_path = posixpath.join(prefix, "pyvenv.cfg")
    if ctx.fs.is_file(cfg_path) or chosen_by == "VIRTUAL_ENV":
        return _venv_layout(ctx, executable, prefix, cfg_path, chosen_by)
    if ctx.fs.is_dir(posixpath.join(prefix, "conda-meta")):
        version = _conda_python_version(ctx, prefix) or next(iter(_lib_versions(ctx, prefix)), None)
        sites = _prefix_site_dirs(prefix, version) if version else []
        return PythonEnv(
            executable=executable,
            version=version,
            prefix=prefix,
            kind="conda",
            site_paths=tuple(_existing_dirs(ctx, _pythonpath(ctx) + sites)),
            source=Source(SourceKind.FILE, posixpath.join(prefix, "conda-meta")),
            chosen_by=chosen_by,
        )
    # A distribution's or self-built interpreter: follow /usr/bin/python3 -> python3.12.
    try:
        real = ctx.fs.resolve(executable)
    except OSError:
        real = executable
    real_prefix = posixpath.dirname(posixpath.dirname(real)) or "/"
    version = _python_version(posixpath.basename(real))
    if version is None:
        version = next(iter(_lib_versions(ctx, real_prefix)), None)
    sites = _user_site(ctx, version) + _system_site_dirs(real_prefix, version) if version else []
    return PythonEnv(
        executable=executable,
        version=version,
        prefix=real_prefix,
        kind="system" if ctx.fs.exists(real) else "unknown",
        site_paths=tuple(_existing_dirs(ctx, _pythonpath(ctx) + sites)),
        source=Source(SourceKind.FILENAME, real),
        chosen_by=chosen_by,
    )


def _venv_layout(ctx: ProbeContext, executable: str, prefix: str, cfg_path: str, chosen_by: str) -> PythonEnv:
    cfg: dict[str, str] = {}
    source = Source(SourceKind.FILE, cfg_path)
    if not ctx.fs.exists(cfg_path):  # VIRTUAL_ENV without pyvenv.cfg: the lib/python3.X dirs say
        source = Source(SourceKind.ENV, "VIRTUAL_ENV")
    else:
        try:
            cfg = parse_pyvenv_cfg(ctx.fs.read_text(cfg_path, limit=64 << 10))
        except OSError as exc:
            ctx.fail(_PROBE, f"cannot read pyvenv.cfg: {exc.strerror or exc}", cfg_path)
    version = _python_version(cfg.get("version") or cfg.get("version_info"))
    if version is None:
        version = next(iter(_lib_versions(ctx, prefix)), None)
    sites: list[str] = _prefix_site_dirs(prefix, version) if version else []
    if version and cfg.get("include-system-site-packages", "").lower() == "true":
        home = cfg.get("home", "").rstrip("/")
        base = posixpath.dirname(home) if posixpath.basename(home) in ("bin", "Scripts") else home
        if base:
            if ctx.fs.is_dir(posixpath.join(base, "conda-meta")):
                sites += _prefix_site_dirs(base, version)
            else:
                sites += _user_site(ctx, version) + _system_site_dirs(base, version)
    return PythonEnv(
        executable=executable,
        version=version,
        prefix=prefix,
        kind="venv",
        site_paths=tuple(_existing_dirs(ctx, _pythonpath(ctx) + sites)),
        source=source,
        chosen_by=chosen_by,
    )


def _filter_sys_path(
    ctx: ProbeContext, paths: list[str], stdlib_prefixes: tuple[str, ...], version: Version | None
) -> list[str]:
    """sys.path without the standard library (it holds no distributions) and non-directories."""
    stdlib = {f"{p}/lib/python{_xy(version)}" for p in stdlib_prefixes} if version else set()
    kept = [
        p for p in paths
        if isinstance(p, str) and p.startswith("/") and not p.endswith((".zip", "/lib-dynload"))
        and posixpath.normpath(p) not in stdlib
    ]  # fmt: skip
    return _existing_dirs(ctx, kept)


def _this_interpreter(ctx: ProbeContext, chosen_by: str) -> PythonEnv:
    """cudadoctor's own interpreter: ``sys`` says everything exactly, for free."""
    version = Version(".".join(str(part) for part in sys.version_info[:3]))
    if sys.prefix != sys.base_prefix:
        kind = "venv"
    elif os.path.isdir(os.path.join(sys.prefix, "conda-meta")):
        kind = "conda"
    else:
        kind = "system"
    return PythonEnv(
        executable=sys.executable,
        version=version,
        prefix=sys.prefix,
        kind=kind,
        site_paths=tuple(_filter_sys_path(ctx, own_sys_path(), (sys.base_prefix, sys.prefix), version)),
        source=Source(SourceKind.API, "sys.path"),
        chosen_by=chosen_by,
    )


def _run_interpreter(ctx: ProbeContext, executable: str) -> PythonEnv | None:
    """Ask another interpreter for its sys.path (``--python`` on the live machine)."""
    argv = [executable, "-I", "-c", SYS_PATH_SCRIPT]
    result = ctx.runner.run(argv, timeout=_RUN_TIMEOUT)
    if not result.ok:
        ctx.fail(_PROBE, f"could not run {executable}: {result.describe()}", executable)
        return None
    for line in reversed(result.stdout.strip().splitlines()):
        if not line.startswith("{"):
            continue
        try:
            data = loads_json(line)
            version = parse_version(".".join(str(parse_int(str(v))) for v in data["version"]))
            prefix = str(data["prefix"])
            base_prefix = str(data.get("base_prefix") or prefix)
            paths = [str(p) for p in data["path"]]
        except (ValueError, KeyError, TypeError, InvalidVersion):
            break
        if prefix != base_prefix:
            kind = "venv"
        elif ctx.fs.is_dir(posixpath.join(prefix, "conda-meta")):
            kind = "conda"
        else:
            kind = "system"
        # -I dropped PYTHONPATH; the interpreter run normally would have it in front.
        sites = _existing_dirs(ctx, _pythonpath(ctx))
        sites += _filter_sys_path(ctx, paths, (base_prefix, prefix), version)
        return PythonEnv(
            executable=str(data.get("executable") or executable),
            version=version,
            prefix=prefix,
            kind=kind,
            site_paths=tuple(dict.fromkeys(sites)),
            source=Source(SourceKind.COMMAND, f"{executable} -I -c <print sys.path>"),
            chosen_by="--python",
        )
    ctx.fail(_PROBE, f"{executable} printed no sys.path", executable)
    return None


def _env_python(ctx: ProbeContext, prefix: str) -> str:
    for name in ("python3", "python"):
        candidate = posixpath.join(prefix, "bin", name)
        if ctx.fs.exists(candidate):
            return candidate
    return posixpath.join(prefix, "bin", "python3")


def _python_on_path(ctx: ProbeContext, skip_prefix: str | None = None) -> str | None:
    """The first ``python3`` (then ``python``) in each PATH directory, in PATH order."""
    for directory in (ctx.env.get("PATH") or _DEFAULT_PATH).split(":"):
        if not directory.startswith("/"):
            continue
        for name in ("python3", "python"):
            candidate = posixpath.join(directory, name)
            if skip_prefix and candidate.startswith(skip_prefix.rstrip("/") + "/"):
                continue
            if ctx.fs.is_file(candidate):
                return candidate
    return None


def _is_tool_env(prefix: str) -> bool:
    return any(marker in prefix.replace(os.sep, "/") + "/" for marker in _TOOL_ENV_MARKERS)


def _same_as_this(ctx: ProbeContext, executable: str | None = None, prefix: str | None = None) -> bool:
    if not ctx.live:
        return False
    if prefix is not None:
        return os.path.normpath(prefix) == os.path.normpath(sys.prefix)
    return executable is not None and os.path.abspath(executable) == os.path.abspath(sys.executable)


def _choose(ctx: ProbeContext) -> PythonEnv:
    if ctx.python:
        if _same_as_this(ctx, executable=ctx.python):
            return _this_interpreter(ctx, "--python")
        if ctx.live:
            ran = _run_interpreter(ctx, ctx.python)
            if ran is not None:
                return ran
        return _from_layout(ctx, ctx.python, "--python")
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = ctx.env.get(variable)
        if prefix and prefix.startswith("/"):
            if not ctx.fs.is_dir(prefix):  # a deleted environment still named by the shell
                ctx.fail(_PROBE, f"{variable} names a directory that does not exist: {prefix}", variable)
                continue
            if _same_as_this(ctx, prefix=prefix):
                return _this_interpreter(ctx, variable)
            return _from_layout(ctx, _env_python(ctx, prefix), variable, prefix=prefix)
    if ctx.live:
        if not _is_tool_env(sys.prefix):
            return _this_interpreter(ctx, "this interpreter")
        found = _python_on_path(ctx, skip_prefix=sys.prefix)
        if found is None:
            return _this_interpreter(ctx, "this interpreter (pipx/uv tool; no python3 on PATH)")
        return _from_layout(ctx, found, "PATH (cudadoctor runs from a pipx/uv tool environment)")
    found = _python_on_path(ctx)
    if found is None:
        ctx.fail(_PROBE, "no python3 or python on the image's PATH", "PATH")
        return PythonEnv(
            executable="",
            version=None,
            prefix=None,
            kind="unknown",
            site_paths=(),
            source=Source(SourceKind.ENV, "PATH"),
            chosen_by="PATH",
        )
    return _from_layout(ctx, found, "PATH")


def target_python(ctx: ProbeContext) -> PythonEnv:
    """The interpreter whose packages are examined (cached per context).

    :param ctx: the probe context.
    :return: the interpreter, its version, prefix, kind and site directories.
    """
    return ctx.once("python.env", lambda: _choose(ctx))


def site_paths(ctx: ProbeContext) -> tuple[str, ...]:
    """The target interpreter's site directories, in import order (cached per context)."""
    return ctx.once("python.site_paths", lambda: target_python(ctx).site_paths)


def probe_python(ctx: ProbeContext) -> PythonEnv | None:
    """The target interpreter; None when an image has no Python at all."""
    env = target_python(ctx)
    return env if env.executable else None


# --- distributions --------------------------------------------------------------------------------


@record
class Distribution:
    """One installed distribution, known so far only by its metadata directory's name."""

    name: str  #: canonical name (``nvidia-cudnn-cu13``)
    dir_version: str | None  #: the version in the directory name (``9.19.0.56``), as written
    path: str  #: the ``*.dist-info`` / ``*.egg-info`` path
    location: str  #: the site directory holding it


_DIST_DIR = re.compile(r"^(?P<name>.+?)(?:-(?P<version>\d[^-]*?)(?:-.*)?)?\.(?:dist-info|egg-info)$", re.IGNORECASE)


def parse_dist_dirname(dirname: str) -> tuple[str, str | None] | None:
    """(canonical name, version as written) from a metadata directory's name; None for others.

    Parse, e.g.::

        nvidia_cudnn_cu13-9.19.0.56.dist-info   ->  ("nvidia-cudnn-cu13", "9.19.0.56")
        torch-2.5.1+cu124.dist-info             ->  ("torch", "2.5.1+cu124")
        Foo_Bar-1.0-py3.8.egg-info              ->  ("foo-bar", "1.0")
        foo.egg-info                            ->  ("foo", None)
    """
    if not dirname.endswith((".dist-info", ".egg-info")):
        return None
    match = _DIST_DIR.match(dirname)
    if not match or not match.group("name"):
        return None
    return canonical_name(match.group("name")), match.group("version")


def distributions(ctx: ProbeContext) -> dict[str, Distribution]:
    """Every distribution in the target's site directories, by canonical name (cached).

    Only directory listings: no file is opened. As with sys.path, the first site directory that
    holds a distribution wins; within one directory, the first name in sorted order.
    """

    def compute() -> dict[str, Distribution]:
        found: dict[str, Distribution] = {}
        for site in site_paths(ctx):
            try:
                names = ctx.fs.listdir(site)
            except OSError:
                continue
            for entry in names:
                parsed = parse_dist_dirname(entry)
                if parsed is None or parsed[0] in found:
                    continue
                found[parsed[0]] = Distribution(parsed[0], parsed[1], posixpath.join(site, entry), site)
        return found

    return ctx.once("python.distributions", compute)


# --- METADATA -------------------------------------------------------------------------------------


def parse_metadata(text: str) -> dict[str, list[str]]:
    """The header fields of a core-metadata file (``METADATA`` / ``PKG-INFO``), keys lower-cased.

    Stops at the first blank line (the description follows). Parse, e.g.::

        Metadata-Version: 2.4
        Name: torch
        Version: 2.11.0
        Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"
    """
    fields: dict[str, list[str]] = {}
    last: list[str] | None = None
    end = text.find("\n\n")  # only the headers, not a long description
    for line in (text if end < 0 else text[:end]).splitlines():
        if not line.strip():
            break
        if line[0] in " \t":
            if last:
                last[-1] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            last = None
            continue
        last = fields.setdefault(key.strip().lower(), [])
        last.append(value.strip())
    return fields


def parse_requires_txt(text: str) -> list[str]:
    """An egg-info ``requires.txt`` as Requires-Dist strings (sections become markers).

    Parse, e.g.::

        numpy>=1.20
        [:sys_platform == "linux"]
        nvidia-cuda-runtime-cu12==12.1.105
        [dev]
        pytest
    """
    out: list[str] = []
    extra, marker = "", ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            extra, _, marker = line[1:-1].partition(":")
            extra, marker = extra.strip(), marker.strip()
            continue
        conditions = [f"({marker})"] if marker else []
        if extra:
            conditions.append(f'extra == "{extra}"')
        out.append(f"{line}; {' and '.join(conditions)}" if conditions else line)
    return out


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


_SYS_PLATFORM = {"Linux": "linux", "Darwin": "darwin", "Windows": "win32"}


def _marker_env(ctx: ProbeContext, python: PythonEnv) -> dict[str, str]:
    """The marker environment of the *target*: its OS, CPU and Python, not cudadoctor's."""
    env = {
        "sys_platform": _SYS_PLATFORM.get(ctx.system, ctx.system.lower()),
        "platform_system": ctx.system,
        "platform_machine": ctx.machine,
        "os_name": "nt" if ctx.system == "Windows" else "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }
    if python.version is not None:
        env["python_version"] = _xy(python.version)
        env["python_full_version"] = str(python.version)
        env["implementation_version"] = str(python.version)
    return env


def _applicable(lines: list[str], env: dict[str, str], cache: dict[str, bool]) -> list[str]:
    """The Requires-Dist lines that apply without an extra on the target."""
    out = []
    for line in lines:
        head, sep, marker_text = line.partition(";")
        if "@" in head and sep:  # "name @ url ; marker": the URL may hold a ';'
            if (parsed := requirement_or_none(line)) is None:
                continue
            marker_text = str(parsed.marker) if parsed.marker else ""
        marker_text = marker_text.strip()
        if not marker_text:
            out.append(line)
            continue
        if marker_text not in cache:
            cache[marker_text] = _marker_applies(marker_text, env)
        if cache[marker_text]:
            out.append(line)
    return out


def _marker_applies(marker_text: str, env: dict[str, str]) -> bool:
    simple = markers.evaluate(marker_text, env)
    if simple is not None:
        return simple
    # Imported here: packaging's marker parser costs ~11 ms to import, paid only for a marker of a rarer form.
    from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName

    try:
        return parse_marker(marker_text).evaluate(env)
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName, ValueError):
        return False


def _requirement_name(line: str) -> str | None:
    match = _REQ_NAME.match(line)
    return canonical_name(match.group(1)) if match else None


# --- CUDA variants --------------------------------------------------------------------------------


def _cu_digits(digits: str) -> str:
    """``130`` -> ``13.0``, ``118`` -> ``11.8``, ``92`` -> ``9.2``: the last digit is the minor."""
    return f"{int(digits[:-1])}.{digits[-1]}"


def cuda_variant_from_local(local: str | None) -> tuple[str, str | None] | None:
    """(variant, CUDA version) from a version's local tag; None when it names no build.

    ``cu130`` -> (``cu130``, ``13.0``); ``cu118`` -> (``cu118``, ``11.8``); ``rocm6.2`` ->
    (``rocm6.2``, None); ``cpu`` and ``cpu.cxx11.abi`` -> (``cpu``, None); ``xpu`` -> (``xpu``, None);
    jaxlib's old ``cuda12.cudnn89`` -> (``cuda12``, ``12``); older still ``cuda112`` -> (``cuda112``, ``11.2``).
    """
    if not local:
        return None
    local = local.lower()
    if match := re.match(r"cu(\d{2,3})(?:$|\.)", local):
        return f"cu{match.group(1)}", _cu_digits(match.group(1))
    if match := re.match(r"rocm(\d+(?:\.\d+)*)", local):
        return f"rocm{match.group(1)}", None
    if match := re.match(r"cuda(\d+)(?:$|\.)", local):
        # jaxlib's tags: cuda11 / cuda12 name a major; the older cuda101 … cuda112 a major and minor
        # (https://storage.googleapis.com/jax-releases/jax_cuda_releases.html: jaxlib-0.1.65+cuda112)
        digits = match.group(1)
        return f"cuda{digits}", _cu_digits(digits) if len(digits) == 3 else digits
    first = local.split(".", 1)[0]
    if first in ("cpu", "xpu"):
        return first, None
    return None


def cuda_variant_from_name(name: str) -> tuple[str, str | None] | None:
    """(variant, CUDA version) that a distribution's name carries; None when it carries none.

    ``cupy-cuda12x`` -> (``cuda12x``, ``12``); ``cupy-cuda117`` -> (``cuda117``, ``11.7``);
    ``jax-cuda13-plugin`` -> (``cuda13``, ``13``); ``jax-rocm60-plugin`` -> (``rocm6.0``, None);
    ``tensorrt-cu12``, ``nvidia-cudnn-cu13`` -> (``cu12``/``cu13``, major only);
    ``mxnet-cu112`` -> (``cu112``, ``11.2``); ``cupy-rocm-5-0`` -> (``rocm5.0``, None).
    """
    if match := re.fullmatch(r"cupy-cuda(\d+)x", name):
        return f"cuda{match.group(1)}x", match.group(1)
    if match := re.fullmatch(r"cupy-cuda(\d{2,3})", name):
        return f"cuda{match.group(1)}", _cu_digits(match.group(1))
    if match := re.fullmatch(r"cupy-rocm-(\d+)-(\d+)", name):
        return f"rocm{match.group(1)}.{match.group(2)}", None
    if match := re.fullmatch(r"jax-cuda(\d+)-(?:plugin|pjrt)", name):
        return f"cuda{match.group(1)}", match.group(1)
    if match := re.fullmatch(r"jax-rocm(\d)(\d*)-(?:plugin|pjrt)", name):
        minor = f".{match.group(2)}" if match.group(2) else ""
        return f"rocm{match.group(1)}{minor}", None
    if match := re.fullmatch(r"mxnet-cu(\d{2,3})(?:mkl)?", name):
        return f"cu{match.group(1)}", _cu_digits(match.group(1))
    if match := re.search(r"-cu(\d{2})(?:-|$)", name):
        return f"cu{match.group(1)}", match.group(1)
    return None


#: Distributions whose own version is the CUDA version they belong to (the toolkit meta-package
#: and the components NVIDIA versions with the CUDA release, 13.0.96 for CUDA 13.0).
_CUDA_VERSIONED = re.compile(r"cuda-toolkit|nvidia-cuda-(?:runtime|nvrtc|cupti|nvcc)(?:-cu\d+)?")
#: cuda-python / cuda-bindings: the major version is the CUDA major (13.x binds CUDA 13).
_CUDA_MAJOR_VERSIONED = ("cuda-bindings", "cuda-python")


def _variant_from_pins(requires: list[str]) -> tuple[str, str, str] | None:
    """From an exact pin of a CUDA-versioned component: ``cuda-toolkit[...]==13.0.2`` -> cu130."""
    best: tuple[int, str, str, str] | None = None
    for line in requires:
        name = _requirement_name(line)
        if name is None or not _CUDA_VERSIONED.fullmatch(name):
            continue
        read = read_requirement(line)
        if read is None:
            continue
        pins = [spec.version for spec in read[1] if spec.operator == "=="]
        if len(pins) != 1:
            continue
        match = re.match(r"(\d+)(?:\.(\d+))?", pins[0])
        if not match:
            continue
        major, minor = match.groups()
        variant = f"cu{major}{minor}" if minor is not None else f"cu{major}"
        build = f"{major}.{minor}" if minor is not None else major
        rank = 0 if name == "cuda-toolkit" else 1 if "runtime" in name else 2
        if best is None or rank < best[0]:
            best = (rank, variant, build, f"Requires-Dist {name}=={pins[0]}")
    return best[1:] if best else None


def _cuda_variant(
    name: str, version: Version, requires: list[str], version_py: dict[str, str | None] | None
) -> tuple[str | None, str | None, str | None]:
    """(variant, CUDA version, how it was established), by the first rule that applies.

    1. the local version tag: ``2.5.1+cu124`` -> cu124 / 12.4 (``rocm6.1``, ``cpu``, ``xpu`` too);
    2. the module's own ``version.py`` (torch, torchvision, torchaudio), for PyPI's default wheels
       whose dist-info has no local tag (``2.11.0``) while ``torch/version.py`` says ``2.11.0+cu130``:
       its ``__version__`` tag, else its ``cuda`` / ``hip`` / ``xpu`` fields; a version.py that
       says ``cuda = None`` and no ``hip`` is a CPU build (the macOS wheels, which use MPS);
    3. an exact Requires-Dist pin of ``cuda-toolkit`` / ``nvidia-cuda-runtime*`` /
       ``nvidia-cuda-nvrtc*``: ``cuda-toolkit[...]==13.0.2`` -> cu130 / 13.0;
    4. the distribution's own version for CUDA-versioned components (``nvidia-cuda-runtime
       13.0.96`` -> cu130) and cuda-bindings / cuda-python (major only);
    5. the name: ``cupy-cuda12x``, ``jax-cuda13-plugin``, ``tensorrt-cu12``, ``nvidia-*-cu12`` …
    """
    if found := cuda_variant_from_local(version.local):
        return found[0], found[1], "local version tag"
    if version_py is not None:
        how = f"{name}/version.py"
        try:
            tagged = version_or_none(version_py.get("__version__"))
        except InvalidVersion:
            tagged = None
        if tagged is not None and (found := cuda_variant_from_local(tagged.local)):
            return found[0], found[1], how
        cuda, hip, xpu = version_py.get("cuda"), version_py.get("hip"), version_py.get("xpu")
        if cuda and (match := re.match(r"(\d+)\.(\d+)", cuda)):
            return f"cu{match.group(1)}{match.group(2)}", f"{match.group(1)}.{match.group(2)}", how
        if hip and (match := re.match(r"(\d+)\.(\d+)", hip)):
            return f"rocm{match.group(1)}.{match.group(2)}", None, how
        if xpu:
            return "xpu", None, how
        if "cuda" in version_py and cuda is None and hip is None:
            return "cpu", None, how
    if found3 := _variant_from_pins(requires):
        return found3
    if _CUDA_VERSIONED.fullmatch(name):
        return f"cu{version.major}{version.minor}", f"{version.major}.{version.minor}", "package version"
    if name in _CUDA_MAJOR_VERSIONED:
        return f"cu{version.major}", str(version.major), "package version"
    if found := cuda_variant_from_name(name):
        return found[0], found[1], "package name"
    return None, None, None


# --- torch/version.py -----------------------------------------------------------------------------


_VERSION_PY_KEYS = ("__version__", "cuda", "hip", "debug", "git_version", "xpu")


@functools.cache
def _assignments() -> re.Pattern[str]:
    # `name = '…'`, `name: Optional[str] = '…'`, `name = None`, `name = True`; compiled on first use (only
    # an environment with torch reads a version.py)
    names = "|".join(_VERSION_PY_KEYS)
    return re.compile(
        rf"^({names})\s*(?::[^=\n]*)?=\s*(?:'([^'\n]*)'|\"([^\"\n]*)\"|(None|True|False))\s*$", re.MULTILINE
    )


def _version_py_fields(text: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for match in _assignments().finditer(text):
        key = match.group(1)
        if key in out:
            continue  # the first assignment counts, as a search per name found it
        quoted = match.group(2) if match.group(2) is not None else match.group(3)
        # the bare name None is Python's None; a quoted 'None' is a string like any other
        out[key] = quoted if quoted is not None else (None if match.group(4) == "None" else match.group(4))
    return {key: out[key] for key in _VERSION_PY_KEYS if key in out}


_CXX11_ABI = re.compile(r"-D_GLIBCXX_USE_CXX11_ABI=([01])")


def parse_torch_cxx11_abi(text: str) -> bool | None:
    """torch's C++ ABI from its ``TorchConfig.cmake``, which sets, e.g.::

        set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")

    (written by torch's build, cmake/TorchConfig.cmake.in:
    https://github.com/pytorch/pytorch/blob/main/cmake/TorchConfig.cmake.in).
    """
    match = _CXX11_ABI.search(text)
    return match.group(1) == "1" if match else None


def _torch_abi(ctx: ProbeContext, version_py: str) -> bool | None:
    config = posixpath.join(posixpath.dirname(version_py), "share", "cmake", "Torch", "TorchConfig.cmake")
    try:
        return parse_torch_cxx11_abi(ctx.fs.read_text(config, limit=64 << 10))
    except OSError:
        return None


def parse_torch_version_py(text: str, where: str = "torch/version.py") -> TorchBuild | None:
    """torch's build facts from ``torch/version.py`` read as text; None when it says nothing.

    Parse, e.g. (torch 2.11.0 from PyPI; older files write ``cuda = '12.1'`` without annotation)::

        __version__ = '2.11.0+cu130'
        debug = False
        cuda: Optional[str] = '13.0'
        git_version = '70d99e998b4955e0049d13a98d77ae1b14db1f45'
        hip: Optional[str] = None
    """
    fields = _version_py_fields(text)
    if "__version__" not in fields and "cuda" not in fields:
        return None
    try:
        version = parse_version(raw) if (raw := fields.get("__version__")) else None
    except InvalidVersion:  # bounded: a number past int()'s 4300-digit limit is one too
        version = None
    debug = fields.get("debug")
    return TorchBuild(
        version=version,
        cuda=fields.get("cuda"),
        hip=fields.get("hip"),
        debug=None if debug is None else debug == "True",
        git_version=fields.get("git_version"),
        source=Source(SourceKind.FILE, where),
    )


# --- packages -------------------------------------------------------------------------------------

#: Modules whose ``<module>/version.py`` carries the build's local tag (torchvision: ``0.20.1+cu124``).
_VERSION_PY_MODULES = {"torch": "torch", "torchvision": "torchvision", "torchaudio": "torchaudio"}


def _read_fields(ctx: ProbeContext, dist: Distribution) -> tuple[dict[str, list[str]], str, list[str]] | None:
    """(METADATA fields, the file read, egg-info requires) or None when unreadable (recorded)."""
    is_egg = dist.path.endswith(".egg-info")
    if is_egg and ctx.fs.is_file(dist.path):
        meta_path = dist.path
    else:
        meta_path = posixpath.join(dist.path, "PKG-INFO" if is_egg else "METADATA")
    try:
        text = ctx.fs.read_text(meta_path)
    except OSError as exc:
        ctx.fail(_PKG_PROBE, f"cannot read the metadata of {dist.name}: {exc.strerror or exc}", meta_path)
        return None
    fields = parse_metadata(text)
    egg_requires: list[str] = []
    if is_egg and meta_path != dist.path and "requires-dist" not in fields:
        with contextlib.suppress(OSError):
            egg_requires = parse_requires_txt(ctx.fs.read_text(posixpath.join(dist.path, "requires.txt")))
    return fields, meta_path, egg_requires


def _module_version(ctx: ProbeContext, dist: Distribution, module: str) -> tuple[str | None, str]:
    path = posixpath.join(dist.location, module, "version.py")
    try:
        return ctx.fs.read_text(path, limit=64 << 10), path
    except OSError:
        return None, path


def _read_package(
    ctx: ProbeContext, dist: Distribution, env: dict[str, str], cache: dict[str, bool]
) -> InstalledPackage | None:
    read = _read_fields(ctx, dist)
    if read is None:
        return None
    fields, meta_path, egg_requires = read
    version_text = next(iter(fields.get("version", [])), None)
    source = Source(SourceKind.METADATA, meta_path)
    if not version_text:  # a truncated or corrupt METADATA: the directory name still says it
        version_text = dist.dir_version
        source = Source(SourceKind.FILENAME, dist.path)
    if not version_text:
        ctx.fail(_PKG_PROBE, f"{dist.name}: no version in its metadata or directory name", meta_path)
        return None
    try:
        version = parse_version(version_text)
    except InvalidVersion:
        ctx.fail(_PKG_PROBE, f"{dist.name}: invalid version {version_text[:60]!r}", meta_path)
        return None

    requires = _applicable(fields.get("requires-dist", []) or egg_requires, env, cache)
    cuda_requires = tuple(
        line for line in requires
        if (n := _requirement_name(line)) is not None and (n.startswith("nvidia-") or n == "cuda-toolkit")
    )  # fmt: skip

    torch_build = None
    version_py = None
    module = _VERSION_PY_MODULES.get(dist.name)
    if module is not None:
        text, path = _module_version(ctx, dist, module)
        if text is not None:
            version_py = _version_py_fields(text)
            if dist.name == "torch":
                torch_build = parse_torch_version_py(text, path)
                if torch_build is not None:
                    torch_build = dataclasses.replace(torch_build, cxx11_abi=_torch_abi(ctx, path))
        elif dist.name == "torch":
            ctx.fail(_PKG_PROBE, "torch/version.py is missing", path)

    variant, build, how = _cuda_variant(dist.name, version, requires, version_py)
    installer = None
    with contextlib.suppress(OSError):
        installer = ctx.fs.read_text(posixpath.join(dist.path, "INSTALLER"), limit=256).strip() or None
    return InstalledPackage(
        name=dist.name,
        version=version,
        location=dist.location,
        source=source,
        cuda_variant=variant,
        cuda_build=build,
        cuda_variant_source=how,
        cuda_requires=cuda_requires,
        requires=tuple(requires),
        torch_build=torch_build,
        installer=installer,
    )


def probe_packages(ctx: ProbeContext) -> dict[str, InstalledPackage]:
    """The distributions of interest in the target environment, by canonical name (cached).

    :param ctx: the probe context.
    :return: ``{name: InstalledPackage}`` in name order; a distribution whose metadata cannot be
        read or whose version is invalid is left out and recorded as a probe error.
    """

    def compute() -> dict[str, InstalledPackage]:
        env = _marker_env(ctx, target_python(ctx))
        cache: dict[str, bool] = {}
        found: dict[str, InstalledPackage] = {}
        for name, dist in sorted(distributions(ctx).items()):
            if not is_interesting(name):
                continue
            # One dist-info that breaks the reader is recorded and skipped; the others (torch) stay.
            package = ctx.attempt(
                _PKG_PROBE, f"the metadata of {name}", partial(_read_package, ctx, dist, env, cache), None, dist.path
            )
            if package is not None:
                found[name] = package
        return found

    return ctx.once("python.packages", compute)
