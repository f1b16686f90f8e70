"""The ELF scan's cache: what each shared object needs, keyed by (path, size, mtime).

A second ``cudadoctor check`` on an unchanged environment stats the shared objects and reads no
ELF file. The cache lives in the user cache directory (``~/.cache/cudadoctor/elf-scan.json``,
next to ``update``'s), is written atomically, and only when something changed; an unreadable or
foreign cache is ignored and rewritten. Only the loader-relevant part of each file is kept: its
CUDA needs, soname, RPATH/RUNPATH and the CUDA version needs — a file that needs no CUDA library is
stored as ``null`` ("nothing to resolve").
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from typing import Any

from cudadoctor.cachedir import default_cache_dir
from cudadoctor.probes.context import ProbeContext
from cudadoctor.probes.elf import ElfDynamic, ElfError, read_dynamic

__all__ = ["CACHE_NAME", "cache_path", "read_all"]

CACHE_NAME = "elf-scan.json"
_FORMAT = 1
#: Entries kept at most: a cache is never allowed to grow without bound.
_MAX_ENTRIES = 20_000
_MAX_CACHE_BYTES = 16 << 20
_CUDA = re.compile(
    r"^lib(cudart|cublasLt|cublas|cudnn|nccl|nvJitLink|cusparse|cufft|curand|cusolver|nvrtc|cupti|nvinfer|myelin)"
)


def cache_path() -> str:
    """Where the scan cache is kept (``$XDG_CACHE_HOME/cudadoctor`` or ``~/.cache/cudadoctor``)."""
    return os.path.join(default_cache_dir(), CACHE_NAME)


def _load(path: str) -> dict[str, Any]:
    try:
        if os.path.getsize(path) > _MAX_CACHE_BYTES:
            return {}
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("files"), dict):
        return {}
    return data["files"]  # type: ignore[no-any-return]


def _save(path: str, files: dict[str, Any]) -> None:
    if len(files) > _MAX_ENTRIES:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".elf-scan-", dir=os.path.dirname(path))
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"format": _FORMAT, "files": files}, handle, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError:
        return  # a read-only home: the next run scans again


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


def read_all(ctx: ProbeContext, paths: list[str]) -> dict[str, ElfDynamic]:
    """The dynamic sections of ``paths`` that need a CUDA library, by path; cached across runs.

    A file that is not an ELF shared object, cannot be read, or needs no CUDA library is left out.
    """
    where = cache_path()
    cached = _load(where)
    fresh: dict[str, Any] = {}
    out: dict[str, ElfDynamic] = {}
    for path in paths:
        try:
            host = ctx.fs.host_path(ctx.fs.resolve(path))
            stat = os.stat(host)
        except OSError:
            continue
        key = f"{stat.st_size}:{stat.st_mtime_ns}"
        entry = cached.get(host)
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == key:
            slim = entry[1]
        else:
            try:
                slim = _slim(read_dynamic(host, stat.st_size))
            except (ElfError, OSError):
                slim = None
        fresh[host] = [key, slim]
        dyn = _from_slim(slim) if slim is not None else None
        if dyn is not None:
            out[path] = dyn
    if fresh != {k: cached.get(k) for k in fresh}:
        merged = {**cached, **fresh}
        _save(where, merged if len(merged) <= _MAX_ENTRIES else fresh)
    return out
