"""Reading files of the machine being examined: ``/`` live, or an image's root with ``--root``.

Every file-reading probe goes through a :class:`RootFS`, so the same probe reads the live system
or an extracted image (``docker export``) without change. Paths are always written as the machine
sees them (``/usr/local/cuda/version.json``); symbolic links inside an image root are followed
*within* that root, so an absolute link such as ``/usr/local/cuda -> /etc/alternatives/cuda``
never escapes to the host's files.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import posixpath
import stat

from cudadoctor.fileread import RegularFile, read_file, safe_path

__all__ = ["MAX_READ_BYTES", "RootFS", "match_names"]

#: The most bytes read from any one file. Version files, headers' first lines and METADATA are
#: small; a huge or endless file (a broken /proc entry, a planted file) must not stall a probe.
MAX_READ_BYTES = 1 << 20

#: Symbolic links followed in one path before giving up (a loop, or a hostile image).
_MAX_LINKS = 40


def match_names(names: tuple[str, ...] | list[str], pattern: str) -> list[str]:
    """The names that ``pattern`` matches, as ``fnmatch.filter`` on POSIX (case-sensitive).

    The probes' patterns use only ``*`` (``libcudnn*.so.*``); fnmatch turns each into a regular expression,
    and compiling ~40 of them cost ~5 ms of a ``check`` on the H200 (measured). A ``*``-only pattern is
    matched piece by piece instead; anything with ``?``, ``[`` or ``\\`` still goes through fnmatch.
    """
    if "?" in pattern or "[" in pattern or "\\" in pattern:
        return fnmatch.filter(names, pattern)
    if "*" not in pattern:
        return [n for n in names if n == pattern]
    head, *middle, tail = pattern.split("*")
    least = len(head) + len(tail) + sum(map(len, middle))
    out = []
    for name in names:
        if len(name) < least or not name.startswith(head) or not name.endswith(tail):
            continue
        at, end = len(head), len(name) - len(tail)
        for piece in middle:
            found = name.find(piece, at, end)
            if found < 0:
                break
            at = found + len(piece)
        else:
            out.append(name)
    return out


class RootFS:
    """File access relative to a root directory (``/`` for the live machine)."""

    def __init__(self, root: str = "/") -> None:
        self.root = os.path.abspath(root)
        self.is_live = self.root == "/"
        self._real_cache: dict[str, str] = {}
        self._listings: dict[str, tuple[str, ...]] = {}

    # --- paths ------------------------------------------------------------------------------------

    def host_path(self, path: str) -> str:
        """Where ``path`` (as the examined machine names it) is on this machine's disk."""
        # A NUL byte (from ld.so.conf, an env value) makes every os call raise ValueError: an OSError here.
        path = posixpath.normpath("/" + safe_path(path).lstrip("/"))
        if self.is_live:
            return path
        return self.root + path if path != "/" else self.root

    def resolve(self, path: str) -> str:
        """``path`` with every symbolic link followed inside the root (like realpath in a chroot).

        Raises :class:`OSError` (``ELOOP``) when links nest too deep. Missing components are kept
        as written, as :func:`os.path.realpath` does.
        """
        if self.is_live:
            return self._live_real(safe_path(path))
        parts = [p for p in posixpath.normpath("/" + path.lstrip("/")).split("/") if p]
        resolved = "/"
        links = 0
        while parts:
            part = parts.pop(0)
            if part == "..":
                resolved = posixpath.dirname(resolved) or "/"
                continue
            candidate = posixpath.join(resolved, part)
            try:
                target = os.readlink(self.host_path(candidate))
            except OSError:
                resolved = candidate
                continue
            links += 1
            if links > _MAX_LINKS:
                raise OSError(errno.ELOOP, "too many levels of symbolic links", path)
            if target.startswith("/"):
                resolved = "/"
            parts = [p for p in target.split("/") if p and p != "."] + parts
        return resolved

    def _live_real(self, path: str) -> str:
        """:func:`os.path.realpath` on the live machine, with each directory's answer kept for the run.

        realpath lstats every component of every path; the loader view asks for hundreds of paths in
        the same few directories, so each directory is resolved once and a path costs one lstat.
        """
        if not path.startswith("/") or path.startswith("//") or "/.." in path:
            return os.path.realpath(path)  # relative, POSIX's "//", or ".." that must follow links first
        parts = [p for p in path.split("/") if p and p != "."]
        real = "/"
        for depth in range(len(parts)):
            prefix = "/" + "/".join(parts[: depth + 1])
            cached = self._real_cache.get(prefix)
            if cached is None:
                candidate = posixpath.join(real, parts[depth])
                cached = os.path.realpath(candidate) if os.path.islink(candidate) else candidate
                self._real_cache[prefix] = cached
            real = cached
        return real

    # --- queries ----------------------------------------------------------------------------------

    def _resolved(self, path: str) -> str | None:
        try:
            if self.is_live:
                # The OS follows links itself on the live machine; realpath would lstat every
                # component of every path (a thousand paths per run with torch installed).
                return self.host_path(path)
            return self.host_path(self.resolve(path))
        except OSError:  # a link loop: the path leads nowhere
            return None

    def exists(self, path: str) -> bool:
        resolved = self._resolved(path)
        return resolved is not None and os.path.exists(resolved)

    def is_file(self, path: str) -> bool:
        resolved = self._resolved(path)
        return resolved is not None and os.path.isfile(resolved)

    def is_dir(self, path: str) -> bool:
        resolved = self._resolved(path)
        return resolved is not None and os.path.isdir(resolved)

    def is_symlink(self, path: str) -> bool:
        try:
            return os.path.islink(self.host_path(path))
        except OSError:  # a NUL byte in the path
            return False

    def is_char_device(self, path: str) -> bool:
        resolved = self._resolved(path)
        try:
            return resolved is not None and stat.S_ISCHR(os.stat(resolved).st_mode)
        except OSError:
            return False

    def identity(self, path: str) -> tuple[int, int] | None:
        """(device, inode) of what ``path`` leads to, the same for every name of one file; None when
        it leads nowhere."""
        resolved = self._resolved(path)
        try:
            info = os.stat(resolved) if resolved is not None else None
        except (OSError, ValueError):
            return None
        return (info.st_dev, info.st_ino) if info is not None else None

    def size(self, path: str) -> int:
        """The size in bytes of what ``path`` leads to; raises OSError."""
        return os.path.getsize(self._followed(path))

    def readlink(self, path: str) -> str:
        return os.readlink(self.host_path(path))  # host_path: OSError, never ValueError, for a NUL

    def listdir(self, path: str) -> list[str]:
        """Sorted entries of a directory; raises OSError when it cannot be listed.

        Each directory is listed once per run: the cuDNN, NCCL, TensorRT, driver and loader probes all
        look through the same library directories (``/usr/lib/x86_64-linux-gnu`` holds a thousand entries
        on a CUDA machine), each for its own pattern.
        """
        host = self._followed(path)
        names = self._listings.get(host)
        if names is None:
            names = self._listings[host] = tuple(sorted(os.listdir(host)))
        return list(names)

    def glob(self, directory: str, pattern: str) -> list[str]:
        """Entries of ``directory`` whose names match ``pattern``, as full paths; [] on any error."""
        try:
            names = self.listdir(directory)
        except OSError:
            return []
        return [posixpath.join(directory, n) for n in match_names(names, pattern)]

    def read_text(self, path: str, limit: int = MAX_READ_BYTES) -> str:
        """The file's text (undecodable bytes replaced), at most ``limit`` bytes of it.

        Raises :class:`OSError` when the file cannot be read or is no regular file (a FIFO or a
        device is never opened for reading: it could block forever). Reads through the resolved
        path so an image's absolute links stay inside the image.
        """
        return self.read_bytes(path, limit).decode("utf-8", errors="replace")

    def read_bytes(self, path: str, limit: int = MAX_READ_BYTES) -> bytes:
        return read_file(self._followed(path), limit)

    def open_ranges(self, path: str) -> RegularFile:
        """The regular file at ``path`` for reading byte ranges (a format read in pieces); a context manager."""
        return RegularFile(self._followed(path))

    def read_tail(self, path: str, limit: int = MAX_READ_BYTES) -> str:
        """The last ``limit`` bytes of a regular file as text (a log, whose newest lines are at its end)."""
        return read_file(self._followed(path), limit, tail=True).decode("utf-8", errors="replace")

    def _followed(self, path: str) -> str:
        """The host path to open for ``path``: links inside an image root resolved within it."""
        return self.host_path(path) if self.is_live else self.host_path(self.resolve(path))
