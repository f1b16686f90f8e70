"""The ELF scan's cache: what each shared object needs, keyed by (path, size, mtime), and the
listings of the directories scanned, keyed by their mtime.

A second ``cudadoctor check`` on an unchanged environment stats the directories, and reads no ELF
file and lists no directory. The cache lives in the user cache directory
(``~/.cache/cudadoctor/elf-scan.json``, next to ``update``'s), is written atomically, and only when
something changed; an unreadable or foreign cache is ignored and rewritten. Only the loader-relevant
part of each file is kept: its CUDA needs, soname, RPATH/RUNPATH and the CUDA version needs — a file
that needs no CUDA library is stored as ``null`` ("nothing to resolve").
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

from cudadoctor.cachedir import default_cache_dir, write_private
from cudadoctor.fileread import read_file
from cudadoctor.probes.elf import ElfDynamic, ElfError, read_dynamic

__all__ = ["CACHE_NAME", "Observer", "ScanCache", "cache_path", "site_objects"]

#: ``observe(kind, path, answer)``: ``mtime`` of a directory, ``sig`` (size, mtime) of a file, or the OSError
Observer = Callable[[str, str, object], None]

CACHE_NAME = "elf-scan.json"
_FORMAT = 3
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
        raw = read_file(path, _MAX_CACHE_BYTES + 1)
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


class ScanCache:
    """One run's view of the cache: directory listings by mtime, dynamic sections by (size, mtime)."""

    def __init__(self, observe: Observer | None = None) -> None:
        #: told each stat this cache decides by (:mod:`cudadoctor.probes.memo` remembers them)
        self.observe = observe
        self.where = cache_path()
        data = _load(self.where)
        self.files: dict[str, Any] = data.get("files", {}) if isinstance(data.get("files"), dict) else {}
        self.dirs: dict[str, Any] = data.get("dirs", {}) if isinstance(data.get("dirs"), dict) else {}
        #: objects that open CUDA libraries by name (compat/runtime_libraries.toml): their soname and search paths
        self.openers: dict[str, Any] = data.get("openers", {}) if isinstance(data.get("openers"), dict) else {}
        self.changed = False
        #: directories whose listing is unchanged since the cache was written
        self.unchanged: set[str] = set()

    def listing(self, host_dir: str) -> tuple[list[str], list[str]]:
        """(shared-object file names, subdirectory names but ``__pycache__``) of a directory on this machine's
        disk; [] when unreadable.

        A directory's mtime changes whenever an entry is added, removed or renamed in it, so an
        unchanged mtime means an unchanged listing: a warm run stats directories instead of listing them.
        """
        try:
            mtime = os.stat(host_dir).st_mtime_ns
        except OSError as exc:
            self._observed("mtime", host_dir, exc)
            return [], []
        self._observed("mtime", host_dir, mtime)
        entry = self.dirs.get(host_dir)
        if isinstance(entry, list) and len(entry) == 3 and entry[0] == mtime:
            self.unchanged.add(host_dir)
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
        except OSError:
            return [], []
        files.sort()
        subdirs.sort()
        self.dirs[host_dir] = [mtime, files, subdirs]
        self.changed = True
        return files, subdirs

    def dynamic(self, host: str) -> ElfDynamic | None:
        """The loader-relevant dynamic section of a file, or None (not ELF, unreadable, no CUDA need).

        A file in a directory whose listing is unchanged is taken from the cache without a stat: pip,
        uv and conda replace a file by writing a new one and renaming it, which changes the directory's
        mtime. (A file overwritten in place keeps its directory's mtime; ``rm ~/.cache/cudadoctor/elf-scan.json``
        forgets everything.)
        """
        entry = self.files.get(host)
        if isinstance(entry, list) and len(entry) == 2 and host.rpartition("/")[0] in self.unchanged:
            return _from_slim(entry[1]) if entry[1] is not None else None
        signed = self._signature(host)
        if signed is None:
            return None
        key, size = signed
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == key:
            slim = entry[1]
        else:
            try:
                slim = _slim(read_dynamic(host, size, _needs_cuda))
            except (ElfError, OSError):
                slim = None
            self.files[host] = [key, slim]
            self.changed = True
        return _from_slim(slim) if slim is not None else None

    def opener(self, host: str) -> ElfDynamic:
        """The soname, RPATH and RUNPATH of an object that opens CUDA libraries by name, by (size, mtime) like
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
        """(the cache key ``size:mtime``, the size) of a file, told to the memo; None when it cannot be stat'ed."""
        try:
            stat = os.stat(host)
        except OSError as exc:
            self._observed("sig", host, exc)
            return None
        self._observed("sig", host, (stat.st_size, stat.st_mtime_ns))
        return f"{stat.st_size}:{stat.st_mtime_ns}", stat.st_size

    def _observed(self, kind: str, host: str, answer: object) -> None:
        if self.observe is not None:
            self.observe(kind, host, answer)

    def save(self) -> None:
        if not self.changed:
            return
        if len(self.files) + len(self.dirs) > _MAX_ENTRIES:
            return
        _save(self.where, {"format": _FORMAT, "files": self.files, "dirs": self.dirs, "openers": self.openers})


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
