"""A tiny writer of minimal ELF64 little-endian shared objects, for tests: written at test time, never checked in.

The file has what the loader (and :mod:`cudadoctor.probes.elf`) reads: the ELF header, two program
headers (one PT_LOAD mapping the whole file at address 0, one PT_DYNAMIC), a string table, optional
version needs (DT_VERNEED) and the dynamic section (System V gABI layouts,
https://refspecs.linuxfoundation.org/elf/gabi4+/ch5.dynamic.html).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

__all__ = ["shared_object"]

_EHDR, _PHDR, _DYN = 64, 56, 16


def shared_object(
    needed: Sequence[str] = (),
    soname: str | None = None,
    runpath: Sequence[str] = (),
    rpath: Sequence[str] = (),
    version_needs: Sequence[tuple[str, Sequence[str]]] = (),
    machine: int = 62,
) -> bytes:
    """The bytes of an ELF shared object with these dynamic entries (x86-64 by default)."""
    strings = bytearray(b"\0")

    def add(text: str) -> int:
        offset = len(strings)
        strings.extend(text.encode() + b"\0")
        return offset

    tags: list[tuple[int, int]] = [(1, add(name)) for name in needed]
    if soname:
        tags.append((14, add(soname)))
    if runpath:
        tags.append((29, add(":".join(runpath))))
    if rpath:
        tags.append((15, add(":".join(rpath))))
    verneed = bytearray()
    for index, (file, versions) in enumerate(version_needs):
        file_off = add(file)
        last = index == len(version_needs) - 1
        verneed += struct.pack("<HHIII", 1, len(versions), file_off, 16, 0 if last else 16 + 16 * len(versions))
        for number, name in enumerate(versions):
            final = number == len(versions) - 1
            verneed += struct.pack("<IHHII", 0, 0, 2 + number, add(name), 0 if final else 16)
    str_off = _EHDR + 2 * _PHDR
    ver_off = (str_off + len(strings) + 7) & ~7
    dyn_off = (ver_off + len(verneed) + 7) & ~7
    tags.append((5, str_off))
    tags.append((10, len(strings)))
    if verneed:
        tags += [(0x6FFFFFFE, ver_off), (0x6FFFFFFF, len(version_needs))]
    tags.append((0, 0))
    dynamic = b"".join(struct.pack("<qQ", tag, value) for tag, value in tags)
    total = dyn_off + len(dynamic)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, machine, 1, 0, _EHDR, 0, 0, _EHDR, _PHDR, 2, 64, 0, 0)
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, total, total, 0x1000)
    dyn_ph = struct.pack("<IIQQQQQQ", 2, 6, dyn_off, dyn_off, dyn_off, len(dynamic), len(dynamic), 8)
    body = bytearray(header + load + dyn_ph + strings)
    body += bytes(ver_off - len(body)) + verneed
    body += bytes(dyn_off - len(body)) + dynamic
    return bytes(body)
