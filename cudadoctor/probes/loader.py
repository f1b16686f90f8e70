"""The dynamic loader's view: which directories it searches, and which library files they hold.

Order follows ld.so(8): ``LD_LIBRARY_PATH`` first, then the directories listed in
``/etc/ld.so.conf`` (and the files it includes), then the trusted defaults. RPATH/RUNPATH of a
particular binary is not modelled here; the runtime probes (``check --deep``) see what a process
really maps.
"""

from __future__ import annotations

import posixpath
import re

from cudadoctor.probes.context import ProbeContext

__all__ = [
    "default_dirs",
    "find_in_dirs",
    "ld_library_path",
    "parse_ld_so_conf",
    "search_dirs",
    "soname_version",
]

_MAX_INCLUDE_DEPTH = 4


def default_dirs(machine: str) -> tuple[str, ...]:
    """The loader's built-in directories, with the Debian multiarch ones for ``machine``."""
    triplet = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}.get(machine)
    multiarch = (f"/lib/{triplet}", f"/usr/lib/{triplet}") if triplet else ()
    return (*multiarch, "/lib64", "/usr/lib64", "/lib", "/usr/lib")


def ld_library_path(value: str | None) -> tuple[str, ...]:
    """``LD_LIBRARY_PATH`` split into directories; empty entries (meaning ".") are dropped."""
    if not value:
        return ()
    return tuple(part for part in re.split(r"[:;]", value) if part.strip())


def parse_ld_so_conf(text: str) -> tuple[list[str], list[str]]:
    """Split an ld.so.conf into (directories, include patterns).

    Parse, e.g.::

        include /etc/ld.so.conf.d/*.conf
        /usr/local/cuda/targets/x86_64-linux/lib
    """
    dirs: list[str] = []
    includes: list[str] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("include"):
            includes.extend(line.split()[1:])
        elif line.startswith("hwcap"):
            continue
        else:
            # Old glibc allowed "dir=type" and comma/space-separated lists.
            dirs.extend(p.split("=", 1)[0] for p in re.split(r"[\s,]+", line) if p)
    return dirs, includes


def _conf_dirs(ctx: ProbeContext, path: str, depth: int, seen: set[str]) -> list[str]:
    if depth > _MAX_INCLUDE_DEPTH or path in seen:
        return []
    seen.add(path)
    try:
        text = ctx.fs.read_text(path)
    except OSError:
        return []
    dirs, includes = parse_ld_so_conf(text)
    for pattern in includes:
        if not pattern.startswith("/"):
            pattern = posixpath.join(posixpath.dirname(path), pattern)
        directory, name_pattern = posixpath.split(pattern)
        for included in ctx.fs.glob(directory, name_pattern):
            dirs.extend(_conf_dirs(ctx, included, depth + 1, seen))
    return dirs


def search_dirs(ctx: ProbeContext) -> tuple[str, ...]:
    """Every directory the loader searches, in order, without duplicates."""

    def compute() -> tuple[str, ...]:
        ordered: list[str] = []
        for directory in (
            *ld_library_path(ctx.env.get("LD_LIBRARY_PATH")),
            *_conf_dirs(ctx, "/etc/ld.so.conf", 0, set()),
            *default_dirs(ctx.machine),
        ):
            normal = posixpath.normpath(directory)
            if normal not in ordered:
                ordered.append(normal)
        return tuple(ordered)

    return ctx.once("loader.search_dirs", compute)


def find_in_dirs(ctx: ProbeContext, dirs: tuple[str, ...] | list[str], pattern: str) -> list[str]:
    """Files matching ``pattern`` in ``dirs``, in search order, each real file listed once."""
    found: list[str] = []
    seen_real: set[str] = set()
    for directory in dirs:
        for path in ctx.fs.glob(directory, pattern):
            try:
                real = ctx.fs.resolve(path)
            except OSError:
                continue
            if real in seen_real and path in found:
                continue
            seen_real.add(real)
            found.append(path)
    return found


_SONAME_VERSION = re.compile(r"\.so\.(\d+(?:\.\d+)*)$")


def soname_version(filename: str) -> str | None:
    """The version suffix of a library file name: ``libcuda.so.580.95.05`` -> ``580.95.05``."""
    match = _SONAME_VERSION.search(posixpath.basename(filename))
    return match.group(1) if match else None
