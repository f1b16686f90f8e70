"""The target Python interpreter: which one, its version and its site directories.

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

import os
import posixpath
import re
import sys

from packaging.version import InvalidVersion, Version

from cudadoctor.bounded import (
    loads_json,
    parse_int,
    parse_version,
    version_or_none,
)
from cudadoctor.facts.model import PythonEnv, Source, SourceKind
from cudadoctor.probes.context import ProbeContext, own_sys_path

__all__ = ["SYS_PATH_SCRIPT", "parse_pyvenv_cfg", "probe_python", "site_paths", "target_python"]

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
