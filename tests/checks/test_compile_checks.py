"""CD210-CD213 (torch.compile / Triton readiness) on the real H200 snapshot, given a CompileEnv one part at a time;
and the libcuda rule of cudadoctor/rules/compile.py per Triton release."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.compile import CCompiler, CompileEnv, LibcudaDir, PtxasBinary, PythonHeaders
from cudadoctor.facts.model import Facts, GpuInfo, InstalledPackage, ToolkitInstall
from cudadoctor.facts.source import Source, SourceKind
from cudadoctor.rules.compile import libcuda_lookup, ptxas_knows, sm_number
from cudadoctor.testing import run_check

MATRIX = CompatMatrix()
_SITE = "/usr/local/lib/python3.12/dist-packages"
_LIB = "/usr/lib/x86_64-linux-gnu"
_SRC = Source(SourceKind.FILENAME, "test")


def _dir(path: str, via: str, *, so: bool = False, so1: bool = False, cached: tuple[str, ...] = ()) -> LibcudaDir:
    return LibcudaDir(path, via, cached, so, so1)


_HEALTHY_DIRS = (
    _dir(_LIB, "ld.so.cache", so=True, so1=True, cached=("libcuda.so.1", "libcuda.so")),
    _dir(_LIB, "default", so=True, so1=True),
)


def _env(version: str = "3.4.0", **changes: object) -> CompileEnv:
    row = MATRIX.triton_release(Version(version))
    assert row is not None
    ptxas = PtxasBinary(f"{_SITE}/{row.ptxas_file}", "bundled", True, row.ptxas, _SRC)
    env = CompileEnv(
        triton="triton",
        triton_version=Version(version),
        ptxas=(ptxas,),
        libcuda_dirs=_HEALTHY_DIRS,
        compiler=CCompiler("gcc", "/usr/bin/gcc", _SRC),
        headers=PythonHeaders("/usr/include/python3.12", True, _SRC),
    )
    return replace(env, **changes)  # type: ignore[arg-type]


def _facts(h200: Facts, env: CompileEnv | None, **changes: object) -> Facts:
    return replace(h200, compile_env=env, **changes)  # type: ignore[arg-type]


def test_healthy_triton_passes_all_four(h200: Facts) -> None:
    facts = _facts(h200, _env())
    assert [run_check(c, facts).status for c in ("CD210", "CD211", "CD212", "CD213")] == [Status.OK] * 4


def test_not_applicable_without_torch_2_or_triton(h200: Facts) -> None:
    facts = _facts(h200, None)
    assert {run_check(c, facts).status for c in ("CD210", "CD211", "CD212", "CD213")} == {Status.NOT_APPLICABLE}
    torch_only = _facts(h200, replace(_env(), triton=None, triton_version=None))
    finding = run_check("CD212", torch_only)
    assert finding.status is Status.NOT_APPLICABLE and "triton is not installed" in (finding.reason or "")


# --- CD210 --------------------------------------------------------------------------------------------


def test_cd210_triton_2_1_needs_the_unversioned_link_next_to_the_cached_soname(h200: Facts) -> None:
    dirs = (_dir(_LIB, "ld.so.cache", so1=True, cached=("libcuda.so.1",)), _dir(_LIB, "default", so1=True))
    finding = run_check("CD210", _facts(h200, _env("2.1.0", libcuda_dirs=dirs)))
    assert finding.status is Status.WARN and "cannot found" in finding.message
    assert finding.remediation is not None
    assert f"sudo ln -s libcuda.so.1 {_LIB}/libcuda.so && sudo ldconfig" in finding.remediation.commands


def test_cd210_triton_3_0_asserts_on_the_soname_but_links_against_the_unversioned_name(h200: Facts) -> None:
    dirs = (_dir(_LIB, "ld.so.cache", so1=True, cached=("libcuda.so.1",)), _dir(_LIB, "default", so1=True))
    finding = run_check("CD210", _facts(h200, _env("3.0.0", libcuda_dirs=dirs)))
    assert finding.status is Status.WARN and "cannot find -lcuda" in finding.message
    # 3.6 links -l:libcuda.so.1: the same directories are enough
    assert run_check("CD210", _facts(h200, _env("3.6.0", libcuda_dirs=dirs))).status is Status.OK


def test_cd210_nothing_in_the_cache_falls_back_to_ld_library_path_from_2_2(h200: Facts) -> None:
    colab = "/usr/lib64-nvidia"
    dirs = (_dir(colab, "LD_LIBRARY_PATH", so=True, so1=True), _dir(_LIB, "default"))
    old = run_check("CD210", _facts(h200, _env("2.1.0", libcuda_dirs=dirs)))
    assert old.status is Status.WARN and "directories: none" in old.message
    assert run_check("CD210", _facts(h200, _env("2.2.0", libcuda_dirs=dirs))).status is Status.OK


def test_cd210_triton_libcuda_path_replaces_the_search(h200: Facts) -> None:
    dirs = (_dir("/opt/driver", "TRITON_LIBCUDA_PATH", so=True, so1=True), _dir(_LIB, "default"))
    assert run_check("CD210", _facts(h200, _env("3.4.0", libcuda_dirs=dirs))).status is Status.OK
    # 2.1.0 does not read the variable
    assert run_check("CD210", _facts(h200, _env("2.1.0", libcuda_dirs=dirs))).status is Status.WARN


def test_cd210_could_not_judge_an_unknown_build(h200: Facts) -> None:
    env = _env(triton="pytorch-triton", triton_version=Version("3.5.0+git7416ffcb"))
    finding = run_check("CD210", _facts(h200, env))
    assert finding.status is Status.UNKNOWN and "compat/triton.toml" in (finding.reason or "")


@pytest.mark.parametrize(
    ("version", "dirs", "ok"),
    [
        ("2.0.0", (_dir(_LIB, "default", so=True),), True),
        ("2.0.0", (_dir(_LIB, "default", so1=True),), False),
        ("3.9.0", (_dir("/x", "ld.so.cache", so1=True, cached=("libcuda.so.1",)),), True),
        ("3.9.0", (_dir("/x", "ld.so.cache", so=True, cached=("libcuda.so",)),), False),
        (
            "3.2.0",
            (_dir("/x", "ld.so.cache", so1=True, cached=("libcuda.so.1",)), _dir("/s", "LIBRARY_PATH", so=True)),
            True,
        ),
    ],
    ids=["2.0-whereis-finds", "2.0-no-link", "3.9-soname", "3.9-only-unversioned-cached", "3.2-library-path"],
)
def test_libcuda_rule_per_release(version: str, dirs: tuple[LibcudaDir, ...], ok: bool) -> None:
    row = MATRIX.triton_release(Version(version))
    assert row is not None
    assert libcuda_lookup(row, dirs).is_ok is ok


# --- CD211 --------------------------------------------------------------------------------------------


def _gpu(cc: str) -> tuple[GpuInfo, ...]:
    return (GpuInfo(0, "NVIDIA GeForce RTX 5090", cc, _SRC),)


def test_cd211_ptxas_12_4_does_not_know_sm_120(h200: Facts) -> None:
    facts = _facts(h200, _env("3.2.0"), gpus=_gpu("12.0"))
    finding = run_check("CD211", facts)
    assert finding.status is Status.WARN and "sm_120" in finding.message and "12.4.99" in finding.message


def test_cd211_the_blackwell_ptxas_of_3_3_serves_sm_120(h200: Facts) -> None:
    row = MATRIX.triton_release(Version("3.3.1"))
    assert row is not None and row.ptxas_blackwell is not None and row.ptxas_blackwell_file is not None
    blackwell = PtxasBinary(f"{_SITE}/{row.ptxas_blackwell_file}", "bundled", True, row.ptxas_blackwell, _SRC,
                            "ptxas-blackwell")  # fmt: skip
    env = _env("3.3.1")
    facts = _facts(h200, replace(env, ptxas=(*env.ptxas, blackwell)), gpus=_gpu("12.0"))
    assert run_check("CD211", facts).status is Status.OK


def test_cd211_fix_names_a_toolkit_ptxas_and_a_torch_whose_triton_knows_the_gpu(h200: Facts) -> None:
    tk = ToolkitInstall("/usr/local/cuda-12.8", Version("12.8.93"), _SRC)
    torch = InstalledPackage("torch", Version("2.6.0+cu126"), _SITE, _SRC, cuda_variant="cu126", cuda_build="12.6")
    facts = _facts(h200, _env("3.2.0"), gpus=_gpu("12.0"), toolkits=(tk,), packages={"torch": torch})
    finding = run_check("CD211", facts)
    assert finding.remediation is not None
    commands = finding.remediation.commands
    assert commands[0] == "export TRITON_PTXAS_PATH=/usr/local/cuda-12.8/bin/ptxas"
    assert any("torch==2.7.0+cu126" in c for c in commands), commands


def test_cd211_missing_ptxas_and_unreadable_version(h200: Facts) -> None:
    env = _env("3.4.0")
    missing = replace(env, ptxas=(replace(env.ptxas[0], present=False),))
    assert run_check("CD211", _facts(h200, missing)).status is Status.WARN
    unread = replace(env, ptxas=(replace(env.ptxas[0], version=None),), unread=("ptxas: too short",))
    finding = run_check("CD211", _facts(h200, unread))
    assert finding.status is Status.UNKNOWN and "too short" in (finding.reason or "")


def test_ptxas_rule() -> None:
    arch = MATRIX.gpu_arch("12.0")
    assert ptxas_knows(Version("12.8.61"), arch, "12.0").is_ok
    assert ptxas_knows(Version("12.4.99"), arch, "12.0").is_problem
    # CUDA 13 dropped Volta (compute capability 7.0)
    assert ptxas_knows(Version("13.1.80"), MATRIX.gpu_arch("7.0"), "7.0").is_problem
    assert ptxas_knows(Version("12.9.86"), None, "99.0").is_unknown
    assert [sm_number(c) for c in ("12.0", "9.0", "x", "")] == [120, 90, None, None]


# --- CD212, CD213 -------------------------------------------------------------------------------------


def test_cd212_no_compiler_and_a_cc_that_names_nothing(h200: Facts) -> None:
    finding = run_check("CD212", _facts(h200, _env(compiler=None)))
    assert finding.status is Status.WARN and "Failed to find C compiler" in finding.message
    assert finding.remediation is not None and finding.remediation.commands
    bad_cc = _env(compiler=CCompiler("/opt/gcc-13", None, Source(SourceKind.ENV, "CC")))
    assert "CC='/opt/gcc-13'" in run_check("CD212", _facts(h200, bad_cc)).message


def test_cd213_missing_headers_and_could_not_judge(h200: Facts) -> None:
    finding = run_check("CD213", _facts(h200, _env(headers=PythonHeaders("/usr/include/python3.12", False, _SRC))))
    assert finding.status is Status.WARN and "Python.h" in finding.message
    unknown = run_check("CD213", _facts(h200, _env(headers=None, unread=("Python.h: version unknown",))))
    assert unknown.status is Status.UNKNOWN and "version unknown" in (unknown.reason or "")


def test_ptxas_rule_infers_a_revision_from_its_family() -> None:
    # compat/gpu_archs.toml has no first CUDA for 8.6; 8.0's is 11.0, so a CUDA 12 ptxas knows 8.6 (inferred)
    arch, family = MATRIX.gpu_arch("8.6"), MATRIX.gpu_arch("8.0")
    assert arch is not None and arch.first_cuda is None
    verdict = ptxas_knows(Version("12.4.99"), arch, "8.6", family)
    assert verdict.is_ok and verdict.inferred
    assert ptxas_knows(Version("11.8.89"), arch, "8.6", family).is_unknown


def test_cd212_cd213_not_applicable_without_a_driver_or_gpu(h200: Facts) -> None:
    facts = _facts(h200, _env(compiler=None), driver=None, gpus=())
    finding = run_check("CD212", facts)
    assert finding.status is Status.NOT_APPLICABLE and "no NVIDIA driver" in (finding.reason or "")


def test_cd210_not_applicable_to_an_image_root(h200: Facts) -> None:
    dirs = (_dir(_LIB, "default"),)
    facts = _facts(h200, _env("3.4.0", libcuda_dirs=dirs), mode="root:/img")
    finding = run_check("CD210", facts)
    assert finding.status is Status.NOT_APPLICABLE and "image root" in (finding.reason or "")


def test_cd210_a_triton_libcuda_path_without_the_library(h200: Facts) -> None:
    # the linker still finds libcuda.so.1 in its default directories: only where they lack it does the link fail
    fine = (_dir("/nowhere", "TRITON_LIBCUDA_PATH"), _dir(_LIB, "default", so1=True))
    assert run_check("CD210", _facts(h200, _env("3.6.0", libcuda_dirs=fine))).status is Status.OK
    dirs = (_dir("/nowhere", "TRITON_LIBCUDA_PATH"), _dir(_LIB, "default"))
    finding = run_check("CD210", _facts(h200, _env("3.6.0", libcuda_dirs=dirs)))
    assert finding.status is Status.WARN and "-l:libcuda.so.1" in finding.message
    assert finding.remediation is not None and finding.remediation.commands[0].startswith("export TRITON_LIBCUDA_PATH=")
