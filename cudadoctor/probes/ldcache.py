"""``/etc/ld.so.cache``: the soname → path table ``ldconfig`` writes and ``ld.so`` consults.

Two layouts exist (glibc's ``sysdeps/generic/dl-cache.h``,
https://sourceware.org/git/?p=glibc.git;a=blob;f=sysdeps/generic/dl-cache.h): the old ``ld.so-1.7.0``
table, and the new one whose header starts ``glibc-ld.so.cache`` with version ``1.1``. glibc 2.32
and later write only the new one; older ldconfig wrote the old table followed by the new one (the
new header then starts at the next 8-byte boundary after the old entries). Only the new table is
read: every glibc since 2.2 writes it. Its string offsets count from the start of the new header.

Each new entry is ``int32 flags, uint32 key, uint32 value, uint32 osversion, uint64 hwcap`` (24
bytes); the header is 48 bytes. ``flags & 0xff`` is the library type (3: ELF libc6) and
``flags & 0xff00`` the architecture (0x0300 x86-64, 0x0a00 AArch64 in ``dl-cache.h``).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = ["CacheEntry", "arch_flag", "by_soname", "lookup", "parse_ld_so_cache"]

_NEW_MAGIC = b"glibc-ld.so.cache1.1"
_OLD_MAGIC = b"ld.so-1.7.0"
_NEW_HEADER = 48
_NEW_ENTRY = 24
_OLD_ENTRY = 12
#: A real cache holds a few thousand entries; more is a hostile or corrupt file.
_MAX_ENTRIES = 200_000
_MAX_NAME = 4096

#: FLAG_ELF_LIBC6 and the architecture bits of dl-cache.h.
_FLAG_ELF_LIBC6 = 0x0003
_ARCH_FLAGS = {"x86_64": 0x0300, "aarch64": 0x0A00}


class CacheEntry(NamedTuple):
    """One line of ``ldconfig -p``: ``libcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9``.

    A tuple, not a record: a cache holds about a thousand entries, read on every run (never reported).
    """

    soname: str
    path: str
    flags: int


def arch_flag(machine: str) -> int | None:
    """The cache's architecture bits for ``machine`` (None when unknown: every entry then qualifies)."""
    return _ARCH_FLAGS.get(machine)


def _new_start(data: bytes) -> int | None:
    if data.startswith(_NEW_MAGIC):
        return 0
    if not data.startswith(_OLD_MAGIC) or len(data) < 16:
        return None
    (count,) = struct.unpack_from("<I", data, 12)
    if count > _MAX_ENTRIES:
        return None
    start = 16 + count * _OLD_ENTRY
    start = (start + 7) & ~7
    return start if data[start : start + len(_NEW_MAGIC)] == _NEW_MAGIC else None


def _string(data: bytes, base: int, offset: int) -> str | None:
    start = base + offset
    if offset <= 0 or start >= len(data):
        return None
    end = data.find(b"\0", start, start + _MAX_NAME)
    if end < 0:
        return None
    return data[start:end].decode("utf-8", "replace")


def parse_ld_so_cache(data: bytes) -> tuple[CacheEntry, ...] | None:
    """The entries of an ``ld.so.cache`` in file order (the order ``ld.so`` searches), or None.

    None means the file is no cache this reader knows (only the old table, or garbage); entries
    whose strings point outside the file are dropped. Little-endian caches only (x86-64, AArch64).
    """
    base = _new_start(data)
    if base is None or len(data) < base + _NEW_HEADER:
        return None
    (count,) = struct.unpack_from("<I", data, base + 20)
    count = min(count, _MAX_ENTRIES, (len(data) - base - _NEW_HEADER) // _NEW_ENTRY)
    table = data[base + _NEW_HEADER : base + _NEW_HEADER + count * _NEW_ENTRY]
    entries = []
    for flags, key, value, _osversion, _hwcap in struct.iter_unpack("<iIIIQ", table):
        soname, path = _string(data, base, key), _string(data, base, value)
        if soname and path:
            entries.append(CacheEntry(soname, path, flags))
    return tuple(entries)


def by_soname(entries: tuple[CacheEntry, ...]) -> dict[str, tuple[CacheEntry, ...]]:
    """The entries grouped by soname, each group in the cache's own order (built once per run: a linear
    scan of a thousand entries for each of a few hundred needs cost tens of milliseconds)."""
    groups: dict[str, list[CacheEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.soname, []).append(entry)
    return {soname: tuple(group) for soname, group in groups.items()}


def lookup(entries: tuple[CacheEntry, ...], soname: str, machine: str) -> str | None:
    """The path ``ld.so`` takes from the cache for ``soname`` on ``machine``: the first matching entry.

    ``entries`` may be the whole cache or only the entries of ``soname`` (a group of :func:`by_soname`).
    """
    wanted = arch_flag(machine)
    for entry in entries:
        if entry.soname != soname or entry.flags & 0xFF != _FLAG_ELF_LIBC6 & 0xFF:
            continue
        if wanted is None or entry.flags & 0xFF00 == wanted:
            return entry.path
    return None
