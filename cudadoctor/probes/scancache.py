"""The ELF scan's cache: what each shared object needs, keyed by its path and identity (device, inode, size,
modification and change times), and the listings of the directories scanned, keyed by theirs.

A second ``cudadoctor check`` on an unchanged environment stats the directories and the shared objects, and reads
no ELF file and lists no directory. The change time (``st_ctime``) is in the key because nobody can set it back:
``touch -d`` / :func:`os.utime` restores a modification time but moves the change time to now, and a file
rewritten in place or renamed over another has a new one (inode(7),
https://man7.org/linux/man-pages/man7/inode.7.html): a same-size replacement with its mtime restored is read again.

The cache lives in the user cache directory (``~/.cache/cudadoctor/elf-scan.json``, next to ``update``'s), is
written atomically, and only when something changed; an unreadable cache, or one this user does not own or others
may write, is ignored and rewritten. Only the loader-relevant part of each file is kept: its CUDA needs, soname,
RPATH/RUNPATH and the CUDA version needs — a file that needs no CUDA library is stored as ``null`` ("nothing to
resolve"), one that could not be read as ``{"unread": why}`` (it is named in the view every time).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

from cudadoctor.cachedir import default_cache_dir, write_private
from cudadoctor.fileread import read_file
from cudadoctor.probes.elf import ElfDynamic, ElfError, NotSharedObject, read_dynamic, read_target
from cudadoctor.probes.memo import file_key

__all__ = ["CACHE_NAME", "Observer", "ScanCache", "cache_path", "site_objects"]

#: ``observe(kind, path, answer)``: ``mtime`` of a directory, ``sig`` of a file (:func:`cudadoctor.probes.memo.file_key`
#: of each), or the OSError
Observer = Callable[[str, str, object], None]

CACHE_NAME = "elf-scan.json"
_FORMAT = 4
#: The file names a listing keeps: shared objects, the only files the scan reads (a site-packages tree holds tens
#: of thousands of other names, and the cache is read on every run).
_SHARED_OBJECT = re.compile(r"\.so(\.\d+)*$")
#: Entries kept at most: a cache is never allowed to grow without bound.
_MAX_ENTRIES = 20_000
_MAX_CACHE_BYTES = 16 << 20
_CUDA = re.compile(
    r"^lib(cudart|cublasLt|cublas|cudnn|nccl|nvJitLink|cusparse|cufft|curand|cusolver|nvrtc|cupti|nvinfer|myelin)"
)


#: Top-level entries of a site directory that hold no package's shared objects.
_SKIP_TOP = re.compile(r"(\.dist-info|\.egg-info|__pycache__|^_distutils_hack)$")
#: Subdirectories of a package never searched.
_SKIP_SUB = frozenset(("include", "__pycache__", "tests", "test"))


def cache_path() -> str:
    """Where the scan cache is kept (``$XDG_CACHE_HOME/cudadoctor`` or ``~/.cache/cudadoctor``)."""
    return os.path.join(default_cache_dir(), CACHE_NAME)


def _load(path: str) -> dict[str, Any]:
    try:
        raw = read_file(path, _MAX_CACHE_BYTES + 1, private=True)  # another user's, or writable by others: ignored
        if len(raw) > _MAX_CACHE_BYTES:
            return {}
        data = json.loads(raw)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return {}
    return data


def _save(path: str, data: dict[str, Any]) -> None:
    # one shot: the C encoder (dump's is pure Python); a read-only home: the next run scans again
    write_private(path, json.dumps(data, separators=(",", ":")))


def _needs_cuda(needed: tuple[str, ...]) -> bool:
    return any(_CUDA.match(name) for name in needed)


def _slim(dyn: ElfDynamic) -> list[Any] | None:
    needed = [n for n in dyn.needed if _CUDA.match(n)]
    if not needed:
        return None
    needs = [[f, list(v)] for f, v in dyn.version_needs if _CUDA.match(f)]
    return [needed, dyn.soname, list(dyn.rpath), list(dyn.runpath), needs]


def _from_slim(value: Any) -> ElfDynamic | None:
    if not isinstance(value, list) or len(value) != 5:
        return None
    needed, soname, rpath, runpath, needs = value
    try:
        return ElfDynamic(
            tuple(str(n) for n in needed),
            str(soname) if soname is not None else None,
            tuple(str(p) for p in rpath),
            tuple(str(p) for p in runpath),
            tuple((str(f), tuple(str(x) for x in v)) for f, v in needs),
        )
    except (TypeError, ValueError):
        return None


def _joined(identity: tuple[int, ...]) -> str:
    """A :func:`file_key` as the cache keeps it: one string (``dev:ino:size:mtime:ctime``) decodes faster than a
    list of numbers, on every run."""
    return ":".join(map(str, identity))


class ScanCache:
    """One run's view of the cache: directory listings and dynamic sections, each by its :func:`file_key`."""

    def __init__(self, observe: Observer | None = None) -> None:
        #: told each stat this cache decides by (:mod:`cudadoctor.probes.memo` remembers them)
        self.observe = observe
        self.where = cache_path()
        data = _load(self.where)
        self.files: dict[str, Any] = data.get("files", {}) if isinstance(data.get("files"), dict) else {}
        self.dirs: dict[str, Any] = data.get("dirs", {}) if isinstance(data.get("dirs"), dict) else {}
        #: objects that open CUDA libraries by name (compat/runtime_libraries.toml): their soname and search paths
        self.openers: dict[str, Any] = data.get("openers", {}) if isinstance(data.get("openers"), dict) else {}
        #: the libraries the loader would load: their (e_machine, class, byte order)
        self.targets: dict[str, Any] = data.get("targets", {}) if isinstance(data.get("targets"), dict) else {}
        self.changed = False
        #: path on this machine's disk -> why it was not read (an object or directory): what it needs is unknown
        self.unread: dict[str, str] = {}

    def listing(self, host_dir: str) -> tuple[list[str], list[str]]:
        """(shared-object file names, subdirectory names but ``__pycache__``) of a directory on this machine's
        disk; [] when unreadable (and, when it exists, :attr:`unread` says why).

        An entry added, removed or renamed changes a directory's mtime and change time, and nobody can set the
        change time back, so an unchanged :func:`file_key` means an unchanged listing: a warm run stats
        directories instead of listing them.
        """
        try:
            info = os.stat(host_dir)
        except OSError as exc:
            self._observed("mtime", host_dir, exc)
            return [], []
        identity = file_key(info, directory=True)
        self._observed("mtime", host_dir, identity)
        key = _joined(identity)
        entry = self.dirs.get(host_dir)
        if isinstance(entry, list) and len(entry) == 3 and entry[0] == key:
            return list(entry[1]), list(entry[2])
        files: list[str] = []
        subdirs: list[str] = []
        try:
            with os.scandir(host_dir) as entries:
                for item in entries:
                    try:
                        if item.is_dir(follow_symlinks=False):
                            if item.name != "__pycache__":
                                subdirs.append(item.name)
                        elif _SHARED_OBJECT.search(item.name) and item.is_file(follow_symlinks=False):
                            files.append(item.name)
                    except OSError:
                        continue
        except NotADirectoryError:
            return [], []
        except OSError as exc:
            self.unread[host_dir] = f"directory not listed ({exc.strerror or exc})"
            return [], []
        files.sort()
        subdirs.sort()
        self.dirs[host_dir] = [key, files, subdirs]
        self.changed = True
        return files, subdirs

    def dynamic(self, host: str) -> ElfDynamic | None:
        """The loader-relevant dynamic section of a file, or None: not a shared object, no CUDA need, or not read
        (then :attr:`unread` says why: a truncated object or one with lying headers needs something unknown).

        Every file is stat'ed (~4 µs each, measured): a file rewritten in place keeps its directory's listing, and a
        same-size copy with its mtime set back still has a new change time, so neither keeps an old answer.
        """
        signed = self._signature(host)
        if signed is None:
            return None
        key, size = signed
        entry = self.files.get(host)
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == key:
            slim = entry[1]
        else:
            try:
                slim = _slim(read_dynamic(host, size, _needs_cuda))
            except NotSharedObject:
                slim = None
            except ElfError as exc:
                slim = {"unread": str(exc)[:200]}
            except OSError as exc:  # not kept: a permission may be given back without a new file
                self.unread[host] = f"not read ({exc.strerror or exc})"
                return None
            self.files[host] = [key, slim]
            self.changed = True
        if isinstance(slim, dict):
            self.unread[host] = f"not read: {slim.get('unread')}"
            return None
        return _from_slim(slim) if slim is not None else None

    def target(self, host: str) -> tuple[int, int, str] | None:
        """(e_machine, ELF class, byte order) of a library the loader would load (:func:`read_target`), by its
        :func:`file_key` like :meth:`dynamic`; None when it is not an ELF file or cannot be read."""
        signed = self._signature(host)
        if signed is None:
            return None
        key = signed[0]
        entry = self.targets.get(host)
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == key:
            found = entry[1]
        else:
            try:
                found = list(read_target(host))
            except (ElfError, OSError):
                found = None
            self.targets[host] = [key, found]
            self.changed = True
        if isinstance(found, list) and len(found) == 3 and isinstance(found[0], int) and isinstance(found[1], int):
            return found[0], found[1], str(found[2])
        return None

    def opener(self, host: str) -> ElfDynamic:
        """The soname, RPATH and RUNPATH of an object that opens CUDA libraries by name, by :func:`file_key` like
        :meth:`dynamic` (which keeps only objects that link one); empty when it cannot be read."""
        signed = self._signature(host)
        if signed is None:
            return ElfDynamic()
        key, size = signed
        entry = self.openers.get(host)
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == key and (dyn := _from_slim(entry[1])):
            return dyn
        try:
            read = read_dynamic(host, size)
        except (ElfError, OSError):
            return ElfDynamic()
        slim = [[], read.soname, list(read.rpath), list(read.runpath), []]
        self.openers[host] = [key, slim]
        self.changed = True
        return _from_slim(slim) or ElfDynamic()

    def _signature(self, host: str) -> tuple[str, int] | None:
        """(the cache key: the file's :func:`file_key` joined, its size); the key is told to the memo. None when it
        cannot be stat'ed."""
        try:
            info = os.stat(host)
        except OSError as exc:
            self._observed("sig", host, exc)
            return None
        identity = file_key(info)
        self._observed("sig", host, identity)
        return _joined(identity), info.st_size

    def _observed(self, kind: str, host: str, answer: object) -> None:
        if self.observe is not None:
            self.observe(kind, host, answer)

    def save(self) -> None:
        if not self.changed:
            return
        if len(self.files) + len(self.dirs) + len(self.targets) > _MAX_ENTRIES:
            return
        data = {"format": _FORMAT, "files": self.files, "dirs": self.dirs, "openers": self.openers}
        _save(self.where, {**data, "targets": self.targets})


def site_objects(cache: ScanCache, host: str, limit: int) -> tuple[list[str], bool]:
    """The shared objects of one site directory (a path on this machine's disk) at the depths wheels put them, as
    paths relative to it, and whether there were more than ``limit``.

    The depths: ``*.so`` at the top, ``pkg/*.so`` and ``pkg/sub/*.so`` (``pkg.libs`` as auditwheel writes it
    included), and ``nvidia/<component>/lib/*.so`` one level deeper.
    """
    files, subdirs = cache.listing(host)
    found = list(files)
    for top in subdirs:
        if _SKIP_TOP.search(top):
            continue
        # NVIDIA's wheels keep their libraries a level deeper (nvidia/cublas/lib)
        found += _below(cache, host, top, 3 if top == "nvidia" else 2)
        if len(found) > limit:
            return found, True
    return found, False


def _below(cache: ScanCache, host: str, rel: str, depth: int) -> list[str]:
    files, subdirs = cache.listing(f"{host}/{rel}")
    found = [f"{rel}/{f}" for f in files]
    if depth > 1:
        for sub in subdirs:
            if sub not in _SKIP_SUB:
                found += _below(cache, host, f"{rel}/{sub}", depth - 1)
    return found
