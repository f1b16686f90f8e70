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
    "conf_dirs",
    "default_dirs",
    "find_in_dirs",
    "ld_library_path",
    "parse_ld_so_conf",
    "parse_ld_so_conf_entries",
    "search_dirs",
    "soname_version",
]

_MAX_INCLUDE_DEPTH = 4
#: Configuration files read in one walk at most (a real system has tens; a hostile image, any number).
_MAX_CONF_FILES = 256


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


def parse_ld_so_conf_entries(text: str) -> list[tuple[str, str]]:
    """An ld.so.conf as ordered ``("dir", path)`` and ``("include", pattern)`` entries.

    Order matters: ldconfig reads an ``include`` where it stands, so directories from included
    files come before the lines that follow it. Parse, e.g.::

        include /etc/ld.so.conf.d/*.conf
        /usr/local/cuda/targets/x86_64-linux/lib
    """
    entries: list[tuple[str, str]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if words[0] == "include":
            entries.extend(("include", pattern) for pattern in words[1:])
        elif words[0] == "hwcap":
            continue
        else:
            # Old glibc allowed "dir=type" and comma/space-separated lists. A bare "=type" names no
            # directory and is dropped (normpath would make it ".", the current directory).
            entries.extend(("dir", p.split("=", 1)[0]) for p in re.split(r"[\s,]+", line) if p.split("=", 1)[0])
    return entries


def parse_ld_so_conf(text: str) -> tuple[list[str], list[str]]:
    """Split an ld.so.conf into (directories, include patterns), each in file order.

    Parse, e.g.::

        include /etc/ld.so.conf.d/*.conf
        /usr/local/cuda/targets/x86_64-linux/lib
    """
    entries = parse_ld_so_conf_entries(text)
    return [v for k, v in entries if k == "dir"], [v for k, v in entries if k == "include"]


def _conf_dirs(ctx: ProbeContext, path: str, depth: int, seen: set[tuple[int, int]]) -> list[str]:
    # Each file is read once by its identity (device, inode), not its name: links that alias one
    # file under many names (a.conf -> b.conf, "include *.conf" in each) made the walk exponential.
    identity = ctx.fs.identity(path)
    if depth > _MAX_INCLUDE_DEPTH or identity is None or identity in seen or len(seen) >= _MAX_CONF_FILES:
        return []
    seen.add(identity)
    try:
        text = ctx.fs.read_text(path)
    except OSError:
        return []
    dirs: list[str] = []
    for kind, value in parse_ld_so_conf_entries(text):
        if kind == "dir":
            dirs.append(value)
            continue
        pattern = value if value.startswith("/") else posixpath.join(posixpath.dirname(path), value)
        directory, name_pattern = posixpath.split(pattern)
        for included in ctx.fs.glob(directory, name_pattern):
            dirs.extend(_conf_dirs(ctx, included, depth + 1, seen))
    return dirs


def conf_dirs(ctx: ProbeContext) -> tuple[str, ...]:
    """The directories ``/etc/ld.so.conf`` (and what it includes) lists, in order, without duplicates."""
    return tuple(dict.fromkeys(posixpath.normpath(d) for d in _conf_dirs(ctx, "/etc/ld.so.conf", 0, set())))


def search_dirs(ctx: ProbeContext) -> tuple[str, ...]:
    """Every directory the loader searches, in order, without duplicates."""

    def compute() -> tuple[str, ...]:
        # A dict keeps the order and dedupes in linear time: LD_LIBRARY_PATH may hold 100,000 entries.
        ordered: dict[str, None] = {}
        for directory in (
            *ld_library_path(ctx.env.get("LD_LIBRARY_PATH")),
            *_conf_dirs(ctx, "/etc/ld.so.conf", 0, set()),
            *default_dirs(ctx.machine),
        ):
            ordered.setdefault(posixpath.normpath(directory), None)
        return tuple(ordered)

    return ctx.once("loader.search_dirs", compute)


def find_in_dirs(ctx: ProbeContext, dirs: tuple[str, ...] | list[str], pattern: str) -> list[str]:
    """Entries matching ``pattern`` in ``dirs``, in search order, each directory searched once.

    A directory that resolves to one already searched is skipped, so on a merged-/usr system
    (``/lib -> usr/lib``) ``/lib/x86_64-linux-gnu/libnccl.so.2`` and
    ``/usr/lib/x86_64-linux-gnu/libnccl.so.2`` are not both listed. Entries are kept by *name*:
    a SONAME link (``libcudnn.so.9``) and the file it points to (``libcudnn.so.9.14.0``) both
    appear, because each name carries a different part of the version. Entries whose links loop
    are dropped; dangling links are kept (callers check :meth:`RootFS.is_file`).
    """
    found: list[str] = []
    seen_dirs: set[str] = set()
    for directory in dirs:
        try:
            real_dir = ctx.fs.resolve(directory)
        except OSError:
            continue
        if real_dir in seen_dirs:
            continue
        seen_dirs.add(real_dir)
        for path in ctx.fs.glob(directory, pattern):
            try:
                ctx.fs.resolve(path)
            except OSError:  # ELOOP: a symbolic link loop
                continue
            found.append(path)
    return found


_SONAME_VERSION = re.compile(r"\.so\.(\d+(?:\.\d+)*)$")


def soname_version(filename: str) -> str | None:
    """The version suffix of a library file name: ``libcuda.so.580.95.05`` -> ``580.95.05``."""
    match = _SONAME_VERSION.search(posixpath.basename(filename))
    return match.group(1) if match else None
