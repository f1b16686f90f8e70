"""List the GPU code a shared library of a wheel on PyPI carries (its .nv_fatbin section), per architecture.

How to run (needs network access to pypi.org and files.pythonhosted.org; standard library only):

    python3 compat/tools/fatbin_archs.py torch 2.15.0 --wheel 'cp312-cp312-manylinux.*x86_64' \
        --member torch/lib/libtorch_cuda.so
    python3 compat/tools/fatbin_archs.py --file ./libfoo.so        # a library already on disk

It prints one line per kind and architecture: "sm_XY <n>" for n SASS (cubin) entries built for
compute capability X.Y and "compute_XY <n>" for n PTX entries, i.e. what `cuobjdump --list-elf/--list-ptx`
would list. The member is streamed into a temporary file (the compressed member is transferred once; the
rest of the wheel is not). The wheel's URL is printed first (the row's evidence).

The fatbin layout read here (documented by NVIDIA only through its tools; the field offsets below are the
ones cuobjdump's output agrees with for a library built locally by nvcc with -gencode for sm_75, sm_90
and compute_120): a container header (magic 0xBA55ED50, u16 version, u16 header size, u64 payload size)
followed by entries, each with u16 kind (1 = PTX, 2 = ELF), u32 header size at offset 4, u64 payload size
at offset 8 and u32 architecture (10 * major + minor) at offset 28.
Nothing runs at import.
"""

from __future__ import annotations

import argparse
import collections
import mmap
import os
import shutil
import struct
import sys
import tempfile

FATBIN_MAGIC = 0xBA55ED50
KINDS = {1: "compute", 2: "sm"}


def elf_section(data: bytes | mmap.mmap, wanted: str) -> bytes:
    """The bytes of the named section of a little-endian ELF64 file (empty when it has none)."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not an ELF64 file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_off = headers[shstrndx][4]
    for name, _type, _flags, _addr, offset, size in headers:
        end = data.find(b"\0", names_off + name)
        if end < 0:
            raise ValueError("unterminated section name")
        if data[names_off + name : end].decode() == wanted:
            return data[offset : offset + size]
    return b""


def fatbin_entries(section: bytes) -> collections.Counter[str]:
    """Count the entries of every fatbin container in a .nv_fatbin section by kind and architecture."""
    counts: collections.Counter[str] = collections.Counter()
    pos = 0
    while pos + 16 <= len(section):
        magic, _version, header, size = struct.unpack_from("<IHHQ", section, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # containers are 8-byte aligned; skip padding
            continue
        entry, end = pos + header, pos + header + size
        while entry + 32 <= end:
            kind, _flags, entry_header, payload = struct.unpack_from("<HHIQ", section, entry)
            (arch,) = struct.unpack_from("<I", section, entry + 28)
            counts[f"{KINDS.get(kind, f'kind{kind}')}_{arch}"] += 1
            entry += entry_header + payload
        pos = end
    return counts


def member_to_file(package: str, version: str, pattern: str, member: str) -> str:
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from wheel_member import find_wheel, open_wheel  # only when reading from PyPI

    file = find_wheel(package, version, pattern)
    print("# wheel:", file["url"].split("#")[0], file=sys.stderr)
    out = tempfile.NamedTemporaryFile(suffix=".so", delete=False)  # noqa: SIM115 - kept for the caller
    with open_wheel(file) as zf, zf.open(member) as src, out:
        shutil.copyfileobj(src, out, 1 << 24)
    return out.name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?")
    parser.add_argument("version", nargs="?")
    parser.add_argument("--wheel", default=r"manylinux.*x86_64", help="regex on the wheel file name")
    parser.add_argument("--member", help="the library inside the wheel")
    parser.add_argument("--file", help="read a library on disk instead")
    args = parser.parse_args(argv)
    path = args.file or member_to_file(args.package, args.version, args.wheel, args.member)
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            counts = fatbin_entries(elf_section(data, ".nv_fatbin"))  # mapped: a 1 GB library is not read whole
    finally:
        if not args.file:
            os.unlink(path)
    for key in sorted(counts, key=lambda k: (k.split("_")[0], int(k.split("_")[1]))):
        print(key, counts[key])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
