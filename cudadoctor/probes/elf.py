"""What the dynamic loader reads of a shared object: its dynamic section, and nothing else.

A small, bounded ELF reader (pure Python, no dependency): the ELF header, the program headers, the
``PT_DYNAMIC`` segment and the strings and version-need records it points to — ``DT_NEEDED``,
``DT_SONAME``, ``DT_RPATH``, ``DT_RUNPATH`` and ``DT_VERNEED`` (the symbol versions a library needs
from each dependency, e.g. ``GLIBCXX_3.4.30`` from ``libstdc++.so.6`` or ``libcudart.so.12`` from
``libcudart.so.12``). Layouts from the System V gABI
(https://refspecs.linuxfoundation.org/elf/gabi4+/ch5.dynamic.html) and the LSB's symbol versioning
(https://refspecs.linuxfoundation.org/LSB_5.0.0/LSB-Core-generic/LSB-Core-generic/symversion.html).

Nothing is mapped or executed. Every count, offset and string is bounded: a truncated, looping or
hostile file ends in :class:`ElfError`, never in a traceback or a long read. Section headers are not
read (the loader does not read them either), which is why a 1 GB ``libtorch_cuda.so`` costs a few
small reads.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from cudadoctor.fileread import RegularFile
from cudadoctor.record import record

__all__ = [
    "ELF_MAGIC",
    "ElfDynamic",
    "ElfError",
    "NotSharedObject",
    "foreign",
    "parse_dynamic",
    "read_dynamic",
    "read_target",
]

ELF_MAGIC = b"\x7fELF"

#: Bounds: a real shared object has about 10 program headers, a few hundred dynamic entries and
#: version needs on a handful of files.
_MAX_PHNUM = 512
_MAX_DYN = 8192
_MAX_STRING = 4096
_MAX_VERNEED_FILES = 256
_MAX_VERNEED_AUX = 256
_MAX_TOTAL_READ = 4 << 20
_BLOCK = 4096

_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ = 0, 1, 5, 10
_DT_SONAME, _DT_RPATH, _DT_RUNPATH = 14, 15, 29
_DT_VERNEED, _DT_VERNEEDNUM = 0x6FFFFFFE, 0x6FFFFFFF
_ET_DYN = 3


class ElfError(ValueError):
    """The file is not an ELF shared object this reader can read, and why."""


class NotSharedObject(ElfError):
    """The file is not an ELF shared object at all (no ELF magic, or an executable or relocatable object): ld.so
    could not load it as a library, so it needs nothing. Any other :class:`ElfError` is an object that could not be
    read (truncated, lying headers): what it needs is unknown."""


#: ``uname -m`` -> (e_machine, ELF class, byte order) of the objects its ld.so loads: ld.so skips a library of
#: another machine, class or byte order and goes on searching (elf(5), https://man7.org/linux/man-pages/man5/elf.5.html;
#: the numbers from the System V gABI, https://refspecs.linuxfoundation.org/elf/gabi4+/ch4.eheader.html).
TARGETS = {
    "x86_64": (62, 64, "<"),
    "aarch64": (183, 64, "<"),
    "ppc64le": (21, 64, "<"),
    "s390x": (22, 64, ">"),
    "i686": (3, 32, "<"),
    "armv7l": (40, 32, "<"),
}
_MACHINE_NAMES = {62: "x86-64", 183: "AArch64", 21: "PowerPC64", 22: "S/390", 3: "i386", 40: "ARM"}


@record
class ElfDynamic:
    """The loader-relevant entries of one ELF file's dynamic section."""

    needed: tuple[str, ...] = ()  #: DT_NEEDED, in order
    soname: str | None = None
    rpath: tuple[str, ...] = ()  #: DT_RPATH, split on ``:``
    runpath: tuple[str, ...] = ()  #: DT_RUNPATH, split on ``:``
    #: DT_VERNEED: (file, (version names …)), e.g. ("libstdc++.so.6", ("GLIBCXX_3.4.29",))
    version_needs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    machine: int = 0  #: e_machine (62 = x86-64, 183 = AArch64)
    elf_class: int = 64  #: 32 or 64


Read = Callable[[int, int], bytes]
#: Whether an object's ``DT_NEEDED`` names make the rest of its dynamic section worth reading.
Relevant = Callable[[tuple[str, ...]], bool]


class _Reader:
    """Bounded reads at offsets, counting what was read, served from aligned blocks where they fit.

    A dynamic section's strings (needed sonames, version names) lie close together in ``.dynstr``, and the ELF and
    program headers in the first block: reading whole 4 KiB blocks once turns a file's 20-odd small reads into 3-5.
    """

    def __init__(self, read: Read, size: int) -> None:
        self._read = read
        self.size = size
        self.total = 0
        self._blocks: dict[int, bytes] = {}

    def take(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ElfError(f"truncated: {length} bytes at {offset} are past its end ({self.size} bytes)")
        first = offset - offset % _BLOCK
        if offset + length <= first + _BLOCK:  # within one block: read the block once, slice it every time
            block = self._blocks.get(first)
            if block is None:
                block = self._blocks[first] = self._fetch(first, min(_BLOCK, self.size - first))
            return block[offset - first : offset - first + length]
        return self._fetch(offset, length)

    def _fetch(self, offset: int, length: int) -> bytes:
        self.total += length
        if self.total > _MAX_TOTAL_READ:
            raise ElfError("too much to read for a dynamic section")
        data = self._read(offset, length)
        if len(data) != length:
            raise ElfError("short read: the file is truncated")
        return data


class _Layout:
    """Byte order and class of one file (a plain class: made once per file of hundreds scanned)."""

    __slots__ = ("endian", "wide")

    def __init__(self, endian: str, wide: bool) -> None:
        self.endian = endian  #: "<" or ">"
        self.wide = wide  #: ELF64


def _header(reader: _Reader) -> tuple[_Layout, int, int, int, int]:
    """(layout, e_machine, e_phoff, e_phentsize, e_phnum)."""
    if reader.take(0, min(4, reader.size)) != ELF_MAGIC:  # an empty file too: ld.so reads no library from it
        raise NotSharedObject("not an ELF file")
    ident = reader.take(0, 16)
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise ElfError("unknown ELF class or byte order")
    layout = _Layout("<" if ident[5] == 1 else ">", ident[4] == 2)
    if layout.wide:
        fields = struct.unpack(layout.endian + "HHIQQQIHHHHHH", reader.take(16, 48))
    else:
        fields = struct.unpack(layout.endian + "HHIIIIIHHHHHH", reader.take(16, 36))
    e_type, e_machine, _ver, _entry, phoff, _shoff, _flags, _ehsize, phentsize, phnum = fields[:10]
    if e_type != _ET_DYN:
        raise NotSharedObject(f"not a shared object (e_type {e_type})")
    if phnum > _MAX_PHNUM or phentsize < (56 if layout.wide else 32):
        raise ElfError("implausible program header table")
    return layout, e_machine, phoff, phentsize, phnum


def _segments(reader: _Reader, layout: _Layout, phoff: int, phentsize: int, phnum: int) -> list[tuple[int, ...]]:
    """Program headers as (type, offset, vaddr, filesz)."""
    table = reader.take(phoff, phentsize * phnum)
    if layout.wide and phentsize == 56:  # the size every ELF64 writer uses: one unpack for the whole table
        return [(t, o, v, f) for t, _fl, o, v, _pa, f, _m, _al in struct.iter_unpack(layout.endian + "IIQQQQQQ", table)]
    out: list[tuple[int, ...]] = []
    for index in range(phnum):
        raw = table[index * phentsize : index * phentsize + (56 if layout.wide else 32)]
        if layout.wide:
            p_type, _flags, offset, vaddr, _paddr, filesz = struct.unpack(layout.endian + "IIQQQQ", raw[:40])
        else:
            p_type, offset, vaddr, _paddr, filesz = struct.unpack(layout.endian + "IIIII", raw[:20])
        out.append((p_type, offset, vaddr, filesz))
    return out


def _offset_of(loads: list[tuple[int, ...]], vaddr: int) -> int:
    """The file offset of a virtual address, through the PT_LOAD segment that maps it."""
    for _type, offset, start, filesz in loads:
        if start <= vaddr < start + filesz:
            return offset + (vaddr - start)
    raise ElfError(f"address {vaddr:#x} is in no loaded segment")


#: The tags read besides DT_NEEDED: the first of each counts, as for ld.so.
_TAGS = frozenset((_DT_STRTAB, _DT_STRSZ, _DT_SONAME, _DT_RPATH, _DT_RUNPATH, _DT_VERNEED, _DT_VERNEEDNUM))


def _entries(reader: _Reader, layout: _Layout, offset: int, size: int) -> tuple[list[int], dict[int, int]]:
    """(the DT_NEEDED string offsets in order, the first value of each other tag read), up to DT_NULL."""
    width = 16 if layout.wide else 8
    count = min(size // width, _MAX_DYN)
    data = reader.take(offset, count * width)
    needed: list[int] = []
    first: dict[int, int] = {}
    for tag, value in struct.iter_unpack(layout.endian + ("qQ" if layout.wide else "iI"), data):
        if tag == _DT_NEEDED:
            needed.append(value)
        elif tag == _DT_NULL:
            break
        elif tag in _TAGS and tag not in first:
            first[tag] = value
    return needed, first


class _Strings:
    def __init__(self, reader: _Reader, offset: int, size: int) -> None:
        self.reader, self.offset, self.size = reader, offset, size

    def get(self, index: int) -> str:
        if index >= self.size:
            raise ElfError(f"string index {index} is outside the string table")
        start = self.offset + index
        limit = min(_MAX_STRING, self.size - index, self.reader.size - start)
        pieces: list[bytes] = []
        taken = 0
        while taken < limit:  # block by block: a name rarely crosses a block's end
            step = min(limit - taken, _BLOCK - (start + taken) % _BLOCK)
            piece = self.reader.take(start + taken, step)
            end = piece.find(b"\0")
            if end >= 0:
                pieces.append(piece[:end])
                return b"".join(pieces).decode("utf-8", "replace")
            pieces.append(piece)
            taken += step
        raise ElfError("unterminated string")


def _version_needs(
    reader: _Reader, layout: _Layout, strings: _Strings, offset: int, count: int
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    needs = []
    seen: set[int] = set()
    for _ in range(min(count, _MAX_VERNEED_FILES)):
        if offset in seen:
            raise ElfError("version needs loop")
        seen.add(offset)
        _version, cnt, file_index, aux, next_ = struct.unpack(layout.endian + "HHIII", reader.take(offset, 16))
        names = []
        aux_offset = offset + aux
        for _ in range(min(cnt, _MAX_VERNEED_AUX)):
            _hash, _flags, _other, name, aux_next = struct.unpack(layout.endian + "IHHII", reader.take(aux_offset, 16))
            names.append(strings.get(name))
            if aux_next == 0:
                break
            aux_offset += aux_next
        needs.append((strings.get(file_index), tuple(names)))
        if next_ == 0:
            break
        offset += next_
    return tuple(needs)


def parse_dynamic(read: Read, size: int, relevant: Relevant | None = None) -> ElfDynamic:
    """The dynamic section of an ELF shared object, read through ``read(offset, length)``.

    :param read: returns ``length`` bytes at ``offset`` of the file (fewer: the file is truncated).
    :param size: the file's size in bytes.
    :param relevant: asked with the ``DT_NEEDED`` names; when it says False, the rest (soname, search paths,
        version needs) is not read and stays empty. A scan that keeps only objects needing a CUDA library reads a
        few strings of the hundreds of other objects instead of all their version names.
    :raises ElfError: for anything that is not a well-formed, bounded ELF shared object.
    """
    reader = _Reader(read, size)
    try:
        layout, machine, phoff, phentsize, phnum = _header(reader)
        segments = _segments(reader, layout, phoff, phentsize, phnum)
        dynamic = [s for s in segments if s[0] == _PT_DYNAMIC]
        if not dynamic:
            return ElfDynamic(machine=machine, elf_class=64 if layout.wide else 32)
        loads = [s for s in segments if s[0] == _PT_LOAD]
        needed, first = _entries(reader, layout, dynamic[0][1], dynamic[0][3])
        return _from_entries(reader, layout, loads, needed, first, machine, relevant)
    except struct.error as exc:
        raise ElfError(f"malformed: {exc}") from None
    except OverflowError as exc:
        raise ElfError(f"malformed: {exc}") from None


def _from_entries(
    reader: _Reader,
    layout: _Layout,
    loads: list[tuple[int, ...]],
    needed_at: list[int],
    first: dict[int, int],
    machine: int,
    relevant: Relevant | None,
) -> ElfDynamic:
    if _DT_STRTAB not in first:
        raise ElfError("a dynamic section without a string table")
    strings = _Strings(reader, _offset_of(loads, first[_DT_STRTAB]), first.get(_DT_STRSZ, _MAX_STRING))
    needed = tuple(strings.get(index) for index in needed_at)
    if relevant is not None and not relevant(needed):
        return ElfDynamic(needed, machine=machine, elf_class=64 if layout.wide else 32)
    soname = strings.get(first[_DT_SONAME]) if _DT_SONAME in first else None
    rpath = _paths(strings, first.get(_DT_RPATH))
    runpath = _paths(strings, first.get(_DT_RUNPATH))
    needs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    if _DT_VERNEED in first:
        offset = _offset_of(loads, first[_DT_VERNEED])
        needs = _version_needs(reader, layout, strings, offset, first.get(_DT_VERNEEDNUM, 0))
    return ElfDynamic(needed, soname, rpath, runpath, needs, machine, 64 if layout.wide else 32)


def _paths(strings: _Strings, index: int | None) -> tuple[str, ...]:
    if index is None:
        return ()
    return tuple(part for part in strings.get(index).split(":") if part)


def read_dynamic(path: str, size: int, relevant: Relevant | None = None) -> ElfDynamic:
    """:func:`parse_dynamic` of the file at ``path`` (a path on this machine's disk)."""
    with RegularFile(path) as handle:  # regular files only, opened without blocking (never a FIFO)
        return parse_dynamic(handle.read, size, relevant)


def read_target(path: str) -> tuple[int, int, str]:
    """(e_machine, ELF class 32 or 64, byte order ``<`` or ``>``) from the first 20 bytes of the file at ``path``.

    :raises ElfError: not an ELF file (:class:`NotSharedObject`), or a header that names no known class or order.
    :raises OSError: it cannot be opened (regular files only, never a FIFO).
    """
    with RegularFile(path) as handle:
        ident = handle.read(0, 20)
    if len(ident) < 20 or ident[:4] != ELF_MAGIC:
        raise NotSharedObject("not an ELF file")
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise ElfError("unknown ELF class or byte order")
    order = "<" if ident[5] == 1 else ">"
    (machine,) = struct.unpack(order + "H", ident[18:20])
    return machine, 64 if ident[4] == 2 else 32, order


def foreign(target: tuple[int, int, str], machine: str) -> str | None:
    """What makes an object of ``target`` (:func:`read_target`) one ld.so of ``machine`` (``uname -m``) skips, e.g.
    ``"for AArch64"``; None when it would load it, or when ``machine`` is one this table does not know."""
    wanted = TARGETS.get(machine)
    if wanted is None or target == wanted:
        return None
    e_machine, elf_class, order = target
    if e_machine != wanted[0]:
        return f"for {_MACHINE_NAMES.get(e_machine, f'machine {e_machine}')}"
    if elf_class != wanted[1]:
        return f"{elf_class}-bit"
    return "big-endian" if order == ">" else "little-endian"
