"""/etc/ld.so.cache in glibc's new format (glibc-ld.so.cache1.1), built here byte by byte as dl-cache.h lays it out."""

from __future__ import annotations

import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudadoctor.probes.ldcache import lookup, parse_ld_so_cache

EXAMPLES = 150
X86 = 0x0303  # FLAG_ELF_LIBC6 | FLAG_X8664_LIB64
ARM = 0x0A03  # FLAG_ELF_LIBC6 | FLAG_AARCH64_LIB64


def new_cache(entries: list[tuple[str, str, int]], old_prefix: bool = False) -> bytes:
    strings = bytearray()
    offsets = []
    header = 48 + 24 * len(entries)
    for soname, path, _flags in entries:
        key = header + len(strings)
        strings += soname.encode() + b"\0"
        value = header + len(strings)
        strings += path.encode() + b"\0"
        offsets.append((key, value))
    body = b"glibc-ld.so.cache" + b"1.1" + struct.pack("<II", len(entries), len(strings)) + bytes(4)
    body += struct.pack("<I", 0) + bytes(12)
    for (key, value), (_s, _p, flags) in zip(offsets, entries, strict=True):
        body += struct.pack("<iIIIQ", flags, key, value, 0, 0)
    body += bytes(strings)
    if not old_prefix:
        return body
    old = b"ld.so-1.7.0" + bytes(1) + struct.pack("<I", 1) + struct.pack("<iII", 1, 0, 0)
    return old + bytes(((len(old) + 7) & ~7) - len(old)) + body


def test_entries_in_order_and_lookup_by_architecture():
    data = new_cache([
        ("libcudnn.so.9", "/usr/lib/aarch64-linux-gnu/libcudnn.so.9", ARM),
        ("libcudnn.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", X86),
        ("libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2", X86),
    ])  # fmt: skip
    entries = parse_ld_so_cache(data)
    assert entries is not None and [e.soname for e in entries] == ["libcudnn.so.9", "libcudnn.so.9", "libnccl.so.2"]
    assert lookup(entries, "libcudnn.so.9", "x86_64") == "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"
    assert lookup(entries, "libcudnn.so.9", "aarch64") == "/usr/lib/aarch64-linux-gnu/libcudnn.so.9"
    assert lookup(entries, "libcudnn.so.8", "x86_64") is None


def test_new_table_after_the_old_one():
    entries = parse_ld_so_cache(new_cache([("libcuda.so.1", "/usr/lib64/libcuda.so.1", X86)], old_prefix=True))
    assert entries is not None and entries[0].path == "/usr/lib64/libcuda.so.1"


@pytest.mark.skipif(not os.path.isfile("/etc/ld.so.cache"), reason="no ld.so.cache on this machine")
def test_this_machines_cache_parses():
    with open("/etc/ld.so.cache", "rb") as handle:
        entries = parse_ld_so_cache(handle.read())
    assert entries is not None and any(e.soname.startswith("libc.so.") for e in entries)


@pytest.mark.parametrize("data", [b"", b"ld.so-1.7.0", b"glibc-ld.so.cache1.1", b"garbage" * 50])
def test_not_a_cache_is_none_or_empty(data):
    assert not parse_ld_so_cache(data)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.binary(max_size=1024), st.booleans())
def test_hostile_bytes_never_raise(tail, with_magic):
    data = (b"glibc-ld.so.cache1.1" if with_magic else b"") + tail
    parse_ld_so_cache(data)


def test_lookup_by_soname_group_equals_the_whole_cache_scan() -> None:
    """The per-soname index answers every soname exactly as the linear scan of the whole cache does."""
    from cudadoctor.probes.ldcache import CacheEntry, by_soname, lookup

    x86, arm = 0x0303, 0x0A03  # libc6 x86-64 / aarch64 flags, as ldconfig writes them
    entries = (
        CacheEntry("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", x86),
        CacheEntry("libcuda.so.1", "/usr/local/cuda/compat/libcuda.so.1", x86),
        CacheEntry("libcudnn.so.9", "/usr/lib/aarch64-linux-gnu/libcudnn.so.9", arm),
        CacheEntry("libcudnn.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", x86),
        CacheEntry("libz.so.1", "/lib/libz.so.1", 0x0001),
    )
    index = by_soname(entries)
    for soname in ("libcuda.so.1", "libcudnn.so.9", "libz.so.1", "libnone.so.3"):
        for machine in ("x86_64", "aarch64"):
            assert lookup(index.get(soname, ()), soname, machine) == lookup(entries, soname, machine)
    assert lookup(index["libcuda.so.1"], "libcuda.so.1", "x86_64") == "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
