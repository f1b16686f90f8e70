"""The ELF reader: real dynamic sections (written at test time), and hostile files never raise anything but ElfError."""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudadoctor.probes.elf import ElfError, parse_dynamic, read_dynamic
from tests.elfwriter import shared_object

EXAMPLES = 150


def _parse(data: bytes):
    return parse_dynamic(lambda offset, length: data[offset : offset + length], len(data))


def test_reads_needed_soname_runpath_and_version_needs():
    data = shared_object(
        ["libcudart.so.12", "libcublas.so.12", "libc.so.6"],
        "libtorch_cuda.so",
        ["$ORIGIN/../../nvidia/cublas/lib", "$ORIGIN"],
        version_needs=[("libcudart.so.12", ["libcudart.so.12"]), ("libstdc++.so.6", ["GLIBCXX_3.4.29", "CXXABI_1.3"])],
    )
    dyn = _parse(data)
    assert dyn.needed == ("libcudart.so.12", "libcublas.so.12", "libc.so.6")
    assert dyn.soname == "libtorch_cuda.so"
    assert dyn.runpath == ("$ORIGIN/../../nvidia/cublas/lib", "$ORIGIN")
    assert dyn.rpath == ()
    assert dyn.version_needs == (
        ("libcudart.so.12", ("libcudart.so.12",)),
        ("libstdc++.so.6", ("GLIBCXX_3.4.29", "CXXABI_1.3")),
    )
    assert dyn.machine == 62


def test_rpath_is_read_apart_from_runpath():
    dyn = _parse(shared_object(["libnccl.so.2"], rpath=["/opt/nccl/lib"]))
    assert dyn.rpath == ("/opt/nccl/lib",) and dyn.runpath == ()


def _counting(data: bytes) -> tuple[list[tuple[int, int]], object]:
    reads: list[tuple[int, int]] = []

    def read(offset: int, length: int) -> bytes:
        reads.append((offset, length))
        return data[offset : offset + length]

    return reads, read


def test_names_across_block_ends_read_whole_and_each_block_once():
    # 300 needed names of 40-odd bytes: a 13 KB string table, names straddling every 4 KiB block end
    needed = [f"libwith_a_rather_long_name_number_{i:04d}.so.1" for i in range(300)]
    versions = [("libstdc++.so.6", [f"GLIBCXX_3.4.{i}" for i in range(30)])]
    data = shared_object(needed, "libmany.so", ["$ORIGIN/../lib"], version_needs=versions)
    reads, read = _counting(data)
    dyn = parse_dynamic(read, len(data))
    assert dyn.needed == tuple(needed) and dyn.soname == "libmany.so"
    assert dyn.version_needs == (("libstdc++.so.6", tuple(v for _f, vs in versions for v in vs)),)
    assert len(reads) == len(set(reads)) and len(reads) <= len(data) // 4096 + 3


def test_relevant_false_leaves_the_rest_unread():
    data = shared_object(["libc.so.6"], "libplain.so", ["$ORIGIN"], version_needs=[("libc.so.6", ["GLIBC_2.34"])])
    seen: list[tuple[str, ...]] = []

    def cuda_only(needed: tuple[str, ...]) -> bool:
        seen.append(needed)
        return any(n.startswith("libcu") for n in needed)

    plain = parse_dynamic(lambda o, n: data[o : o + n], len(data), cuda_only)
    assert seen == [("libc.so.6",)]
    assert (plain.needed, plain.soname, plain.runpath, plain.version_needs) == (("libc.so.6",), None, (), ())
    cuda = shared_object(["libcudart.so.12"], "libuser.so", ["$ORIGIN"], version_needs=[("libcudart.so.12", ["x"])])
    full = parse_dynamic(lambda o, n: cuda[o : o + n], len(cuda), cuda_only)
    assert full == _parse(cuda) and full.soname == "libuser.so"


GCC = shutil.which("gcc")


@pytest.mark.skipif(GCC is None, reason="gcc is not installed (CI's clean Debian has only Python)")
def test_agrees_with_a_library_the_toolchain_built(tmp_path):
    assert GCC is not None
    dep = tmp_path / "libdep.so.3"
    src = tmp_path / "a.c"
    src.write_text("int dep(void){return 1;}\n")
    subprocess.run([GCC, "-shared", "-fPIC", "-Wl,-soname,libdep.so.3", "-o", str(dep), str(src)], check=True)
    lib = tmp_path / "libuser.so"
    src.write_text('#include <stdio.h>\nint dep(void); int user(void){puts("x"); return dep();}\n')
    subprocess.run(
        [GCC, "-shared", "-fPIC", "-Wl,-soname,libuser.so.1", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/lib",
         "-o", str(lib), str(src), str(dep)],
        check=True,
    )  # fmt: skip
    dyn = read_dynamic(str(lib), os.path.getsize(lib))
    assert "libdep.so.3" in dyn.needed
    assert dyn.soname == "libuser.so.1"
    assert dyn.runpath == ("$ORIGIN/lib",)
    assert any(file.startswith("libc.so") for file, _versions in dyn.version_needs)


@pytest.mark.parametrize(
    "data",
    [b"", b"\x7fELF", b"not an elf at all" * 10, b"\x7fELF" + bytes([3, 1]) + bytes(58)],
    ids=["empty", "magic-only", "text", "bad-class"],
)
def test_not_elf_is_an_elf_error(data):
    with pytest.raises(ElfError):
        _parse(data)


def test_truncated_at_every_length_is_an_elf_error():
    data = shared_object(["libcudnn.so.9"], "x.so", ["$ORIGIN"], version_needs=[("libcudnn.so.9", ["v9"])])
    for cut in range(len(data)):
        with pytest.raises(ElfError):
            _parse(data[:cut])


def test_version_need_counts_are_bounded():
    data = bytearray(shared_object(["libcublas.so.12"], version_needs=[("libcublas.so.12", ["a", "b"])]))
    verneednum = data.index(struct.pack("<qQ", 0x6FFFFFFF, 1))
    struct.pack_into("<qQ", data, verneednum, 0x6FFFFFFF, 0xFFFFFFFF)  # claims four billion records
    start = data.index(struct.pack("<HH", 1, 2))  # the Verneed record: 1 version, 2 entries
    struct.pack_into("<HH", data, start, 1, 0xFFFF)  # claims 65535 entries
    try:
        dyn = _parse(bytes(data))
    except ElfError:
        return
    assert len(dyn.version_needs) <= 256 and all(len(v) <= 256 for _f, v in dyn.version_needs)


def test_huge_counts_are_refused_without_reading():
    data = bytearray(shared_object(["libcudart.so.12"]))
    struct.pack_into("<H", data, 56, 0xFFFF)  # e_phnum
    with pytest.raises(ElfError):
        _parse(bytes(data))


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.binary(max_size=2048))
def test_random_bytes_never_raise_anything_else(data):
    with contextlib.suppress(ElfError):
        _parse(data)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.data())
def test_corrupted_real_files_never_raise_anything_else(draw):
    data = bytearray(shared_object(["libcudnn.so.9", "libnccl.so.2"], "lib.so", ["$ORIGIN"],
                                   version_needs=[("libnccl.so.2", ["NCCL_2.0"])]))  # fmt: skip
    for _ in range(draw.draw(st.integers(1, 8))):
        index = draw.draw(st.integers(0, len(data) - 1))
        data[index] = draw.draw(st.integers(0, 255))
    try:
        dyn = _parse(bytes(data))
    except ElfError:
        return
    assert all(isinstance(n, str) for n in dyn.needed)


# --- issue #27: what ld.so would skip, and what could not be read ------------------------------------------


def test_the_target_of_an_object_and_what_makes_it_foreign(tmp_path) -> None:
    from cudadoctor.probes.elf import foreign, read_target

    lib = tmp_path / "libcudart.so.12"
    lib.write_bytes(shared_object(soname="libcudart.so.12", machine=183))
    assert read_target(str(lib)) == (183, 64, "<")
    assert foreign((183, 64, "<"), "x86_64") == "for AArch64"
    assert foreign((183, 64, "<"), "aarch64") is None
    assert foreign((62, 32, "<"), "x86_64") == "32-bit"
    assert foreign((21, 64, ">"), "ppc64le") == "big-endian"
    assert foreign((62, 64, "<"), "riscv64") is None  # a machine the table does not know: nothing is skipped
    thirty_two = bytearray(shared_object())
    thirty_two[4] = 1  # ELFCLASS32
    lib.write_bytes(bytes(thirty_two))
    assert read_target(str(lib)) == (62, 32, "<")


@pytest.mark.parametrize(
    ("data", "readable"),
    [(b"", False), (b"INPUT(-lfoo)\n", False), (b"\x7fELF\x02\x01", True), (b"\x7fELF" + bytes(60), True)],
    ids=["empty", "linker-script", "truncated-ident", "zero-header"],
)
def test_not_an_elf_file_needs_nothing_and_a_broken_one_could_not_be_read(tmp_path, data, readable) -> None:
    """No ELF magic: ld.so loads no library from it (NotSharedObject). ELF magic, then garbage: what it needs is
    unknown (an ElfError that is not NotSharedObject), which the loader's view names."""
    from cudadoctor.probes.elf import ElfError, NotSharedObject, read_dynamic

    lib = tmp_path / "lib.so"
    lib.write_bytes(data)
    with pytest.raises(ElfError) as info:
        read_dynamic(str(lib), len(data))
    assert isinstance(info.value, NotSharedObject) is not readable
