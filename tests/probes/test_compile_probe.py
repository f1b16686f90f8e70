"""The compile_env probe: ptxas's version read out of the binary, the C compiler and Python.h found from files,
and the directories Triton's libcuda search can use (cudadoctor/probes/compile.py)."""

from __future__ import annotations

import pytest
from packaging.version import Version

from cudadoctor.probes.compile import parse_ptxas_version, probe_compile_env
from tests.conftest import make_ctx

#: The bytes around the version line of triton 3.0.0's bundled ptxas (triton/backends/nvidia/bin/ptxas of the cp311
#: manylinux x86_64 wheel, offset 21917960; compat/notes/triton.md), and of 3.9.0's ptxas-blackwell (offset 37991584).
_PTXAS_300 = (
    b"\x00\x00ptxas: NVIDIA (R) Ptx optimizing assembler\x00Copyright (c) 2005-2024 NVIDIA Corporation\x00"
    b"Cuda compilation tools, release 12.4, V12.4.99\x00Build cuda_12.4.r12.4/compiler.33961263_0\x00"
)
_PTXAS_BLACKWELL_390 = (
    b"\x7fELF\x02\x01\x01"
    + b"\x00" * 64
    + (b"Cuda compilation tools, release 13.4, V13.4.59\x00Build cuda_13.4.r13.4/compiler.38657139_0\x00")
)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_PTXAS_300, Version("12.4.99")),
        (_PTXAS_BLACKWELL_390, Version("13.4.59")),
        (b"Cuda compilation tools, release 12.0, V12.0.76", Version("12.0.76")),
        (b"\x7fELF" + b"\x00" * 1000, None),
        (b"", None),
        (b"Cuda compilation tools, release twelve", None),
    ],
    ids=["triton-3.0.0-ptxas", "triton-3.9.0-ptxas-blackwell", "bare-line", "elf-without-line", "empty", "junk"],
)
def test_parse_ptxas_version(data: bytes, expected: Version | None) -> None:
    assert parse_ptxas_version(data) == expected


_SITE = "/opt/venv/lib/python3.12/site-packages"


def _venv(fs, *, triton: str | None = "3.4.0", torch: str | None = "2.8.0") -> None:  # type: ignore[no-untyped-def]
    fs.create_file("/opt/venv/pyvenv.cfg", contents="home = /usr/bin\nversion = 3.12.3\n")
    fs.create_file("/opt/venv/bin/python3")
    for name, version in (("triton", triton), ("torch", torch)):
        if version is not None:
            fs.create_file(
                f"{_SITE}/{name}-{version}.dist-info/METADATA", contents=f"Name: {name}\nVersion: {version}\n"
            )


def _ctx(env: dict[str, str] | None = None, machine: str = "x86_64"):  # type: ignore[no-untyped-def]
    base = {"VIRTUAL_ENV": "/opt/venv", "PATH": "/usr/local/bin:/usr/bin:/bin"}
    return make_ctx(env={**base, **(env or {})}, machine=machine)


def test_nothing_when_neither_triton_nor_torch_2(fs) -> None:  # type: ignore[no-untyped-def]
    _venv(fs, triton=None, torch="1.13.1")
    assert probe_compile_env(_ctx()) is None


def test_known_release_versions_its_bundled_ptxas_from_the_table_without_reading_it(fs) -> None:  # type: ignore[no-untyped-def]
    _venv(fs)
    # an empty file: the version comes from compat/triton.toml, not from its bytes
    fs.create_file(f"{_SITE}/triton/backends/nvidia/bin/ptxas")
    found = probe_compile_env(_ctx())
    assert found is not None and found.triton == "triton" and found.triton_version == Version("3.4.0")
    (ptxas,) = found.ptxas
    assert (ptxas.present, ptxas.version, ptxas.chosen_by) == (True, Version("12.8.93"), "bundled")
    assert "compat/triton.toml" in ptxas.source.where


def test_a_variable_names_a_ptxas_whose_version_is_read_from_the_binary(fs) -> None:  # type: ignore[no-untyped-def]
    _venv(fs)
    fs.create_file(f"{_SITE}/triton/backends/nvidia/bin/ptxas")
    fs.create_file("/usr/local/cuda-13.0/bin/ptxas", contents=_PTXAS_BLACKWELL_390)
    found = probe_compile_env(_ctx({"TRITON_PTXAS_PATH": "/usr/local/cuda-13.0/bin/ptxas"}))
    assert found is not None
    chosen = [p for p in found.ptxas if p.chosen_by == "TRITON_PTXAS_PATH"]
    assert [(p.path, p.version) for p in chosen] == [("/usr/local/cuda-13.0/bin/ptxas", Version("13.4.59"))]
    assert ("TRITON_PTXAS_PATH", "/usr/local/cuda-13.0/bin/ptxas") in found.env


def test_on_aarch64_the_bundled_binary_is_read(fs) -> None:  # type: ignore[no-untyped-def]
    _venv(fs)
    fs.create_file(f"{_SITE}/triton/backends/nvidia/bin/ptxas", contents=_PTXAS_300)
    found = probe_compile_env(_ctx(machine="aarch64"))
    assert found is not None and found.ptxas[0].version == Version("12.4.99")
    assert found.ptxas[0].source.kind.value == "file"


def test_an_unreadable_version_is_named(fs) -> None:  # type: ignore[no-untyped-def]
    _venv(fs, triton=None)
    fs.create_file(f"{_SITE}/pytorch_triton-3.5.0+git7416ffcb.dist-info/METADATA", contents="Name: pytorch-triton\n")
    fs.create_file(f"{_SITE}/triton/backends/nvidia/bin/ptxas", contents=b"\x7fELF")
    found = probe_compile_env(_ctx())
    assert found is not None and found.triton == "pytorch-triton"
    assert found.ptxas[0].version is None
    assert any("no 'Cuda compilation tools, release' line" in u for u in found.unread)


def test_compiler_cc_then_gcc_then_clang(fs) -> None:  # type: ignore[no-untyped-def]
    _venv(fs)
    fs.create_file("/usr/bin/clang")
    assert probe_compile_env(_ctx()).compiler.path == "/usr/bin/clang"  # type: ignore[union-attr]
    fs.create_file("/usr/local/bin/gcc")
    assert probe_compile_env(_ctx()).compiler.path == "/usr/local/bin/gcc"  # type: ignore[union-attr]
    missing = probe_compile_env(_ctx({"CC": "/opt/cc/bin/gcc-13"})).compiler  # type: ignore[union-attr]
    assert missing is not None and (missing.name, missing.path) == ("/opt/cc/bin/gcc-13", None)


def test_no_compiler(fs) -> None:  # type: ignore[no-untyped-def]
    _venv(fs)
    assert probe_compile_env(_ctx()).compiler is None  # type: ignore[union-attr]


def test_python_h_of_a_venv_is_its_base_interpreters(fs) -> None:  # type: ignore[no-untyped-def]
    _venv(fs)
    headers = probe_compile_env(_ctx()).headers  # type: ignore[union-attr]
    assert headers is not None and headers.include_dir == "/usr/include/python3.12" and not headers.present
    fs.create_file("/usr/include/python3.12/Python.h")
    assert probe_compile_env(_ctx()).headers.present  # type: ignore[union-attr]


def test_libcuda_directories_from_ld_so_conf_without_a_cache(fs) -> None:  # type: ignore[no-untyped-def]
    _venv(fs)
    fs.create_file("/etc/ld.so.conf", contents="/usr/lib/x86_64-linux-gnu\n")
    fs.create_file("/usr/lib/x86_64-linux-gnu/libcuda.so.1")
    fs.create_file("/usr/lib64-nvidia/libcuda.so.1")
    fs.create_file("/usr/lib64-nvidia/libcuda.so")
    found = probe_compile_env(_ctx({"LD_LIBRARY_PATH": "/usr/lib64-nvidia"}))
    assert found is not None
    by = {(d.path, d.via): d for d in found.libcuda_dirs}
    conf = by[("/usr/lib/x86_64-linux-gnu", "ld.so.conf")]
    assert (conf.cached, conf.has_soname, conf.has_unversioned) == (("libcuda.so.1",), True, False)
    ld = by[("/usr/lib64-nvidia", "LD_LIBRARY_PATH")]
    assert (ld.cached, ld.has_soname, ld.has_unversioned) == ((), True, True)
    assert "ld.so.conf" in found.cache_note
