"""Frameworks that load NVIDIA wheel libraries by full path when imported (compat/runtime_libraries.toml
``preload``): the loader view takes their copy as the one that loads."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import LinkedFile, NeededLibrary
from cudadoctor.probes import linkage
from tests.corpus.builder import CORPUS, load_case
from tests.corpus.replay import replay

MATRIX = CompatMatrix()
#: pytorch/pytorch#140797: torch 2.5.1's wheels with LD_LIBRARY_PATH on a CUDA 12.2 toolkit (older nvJitLink)
CASE = os.path.join(CORPUS, "cases", "pytorch-140797-ld-library-path-nvjitlink-12-2", "case.toml")
SITE = "/home/user/venv/lib/python3.10/site-packages"


def _with_torch(version: str) -> dict[str, object]:
    case = load_case(CASE)
    for package in case["env"]["packages"]:
        if package["name"] == "torch":
            package["version"] = version
    return case


@pytest.mark.parametrize(("version", "errors"), [("2.5.1", ("CD302:fail",)), ("2.6.0", ()), ("2.8.0", ())])
def test_torch_2_6_preloads_the_wheels_nvjitlink_ahead_of_ld_library_path(version, errors):
    # PR #141063 (torch 2.6) preloads nvidia/nvjitlink/lib/libnvJitLink.so.12 once cudart came from the wheel
    assert replay(_with_torch(version), MATRIX).errors == errors


def _row(version: str, when: str) -> object:
    return next(r for r in MATRIX.framework_preloads if r.when == when and r.versions.contains(version))


def _file(path: str, via: str, distribution: str | None = None) -> LinkedFile:
    return LinkedFile(path, via, Version("12.4.127"), distribution)


def test_the_wheel_cudart_condition_reads_torchs_own_cudart():
    row = _row("2.6.0", "wheel_cudart")
    wheel = NeededLibrary("torch", f"{SITE}/torch/lib/libtorch_global_deps.so", "libcudart.so.12",
                          _file(f"{SITE}/nvidia/cuda_runtime/lib/libcudart.so.12", "RPATH"))  # fmt: skip
    system = NeededLibrary(
        "torch", wheel.needer, "libcudart.so.12", _file("/usr/local/cuda/lib64/libcudart.so.12", "LD_LIBRARY_PATH")
    )
    assert linkage._preload_runs(row, [wheel])
    assert not linkage._preload_runs(row, [system])


def test_the_fallback_runs_only_when_torchs_own_search_fails():
    row = _row("2.0.0", "load_failure")
    found = NeededLibrary("torch", f"{SITE}/torch/lib/libtorch_cuda.so", "libcublas.so.12",
                          _file(f"{SITE}/nvidia/cublas/lib/libcublas.so.12", "RPATH"))  # fmt: skip
    elsewhere = _file("/other/site/nvidia/cublas/lib/libcublas.so.12", "wheel, off this object's search path")
    off_path = NeededLibrary("torch", found.needer, "libcublas.so.12", elsewhere)
    assert not linkage._preload_runs(row, [found])
    assert linkage._preload_runs(row, [off_path])


def test_a_wheel_another_package_uses_keeps_its_own_search():
    # a JAX plugin needing the same nvidia-cusparse wheel gets no help from torch's preload
    cusparse = _file(f"{SITE}/nvidia/cusparse/lib/libcusparse.so.12", "RPATH", "nvidia-cusparse-cu12")
    torch_need = NeededLibrary("torch", "libtorch_cuda.so", "libcusparse.so.12", cusparse)
    jax_need = NeededLibrary("jax-cuda12-plugin", "xla_cuda_plugin.so", "libcusparse.so.12", cusparse)
    wheel_need = NeededLibrary("nvidia-cusparse-cu12", "libcusparse.so.12", "libnvJitLink.so.12", None)
    assert linkage._loaded_by(wheel_need, "torch", linkage._wheel_users([torch_need, wheel_need]))
    assert not linkage._loaded_by(wheel_need, "torch", linkage._wheel_users([torch_need, jax_need, wheel_need]))
    assert linkage._loaded_by(torch_need, "torch", linkage._wheel_users([torch_need, jax_need]))


def test_the_preloaded_copy_loads_and_hides_the_one_the_search_found(tmp_path):
    from tests.conftest import make_ctx

    ctx = make_ctx()
    old = _file("/usr/local/cuda-12.2/lib64/libnvJitLink.so.12", "LD_LIBRARY_PATH")
    copy = _file(f"{SITE}/nvidia/nvjitlink/lib/libnvJitLink.so.12", "preloaded by torch 2.6.0", "nvidia-nvjitlink-cu12")
    need = NeededLibrary("nvidia-cusparse-cu12", "libcusparse.so.12", "libnvJitLink.so.12", old, (copy,))
    after = linkage._preloaded(ctx, need, copy)
    assert after.loaded == copy
    assert after.shadowed == (old,)


def _rows(package: str, version: str) -> list[object]:
    return [r for r in MATRIX.framework_preloads if r.package == package and r.versions.contains(version)]


def test_torch_2_9_and_later_preload_whenever_cudart_loaded_from_anywhere():
    # torch 2.9.0's __init__.py checks for 'libcudart.so' in /proc/self/maps, no longer the wheel's path
    row = next(r for r in _rows("torch", "2.10.0") if r.when == "cudart_loaded")
    system = NeededLibrary("torch", f"{SITE}/torch/lib/libtorch_global_deps.so", "libcudart.so.12",
                           _file("/usr/local/cuda/lib64/libcudart.so.12", "LD_LIBRARY_PATH"))  # fmt: skip
    assert linkage._preload_runs(row, [system])
    assert not linkage._preload_runs(row, [replace(system, loaded=None)])


def _tree(tmp_path, *paths: str) -> object:
    from tests.conftest import make_ctx

    for path in paths:
        target = tmp_path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"")
    return make_ctx(root=str(tmp_path))


def test_an_ordered_preload_stops_at_the_first_missing_library_and_reads_the_cuda13_folder(tmp_path):
    row = next(r for r in _rows("torch", "2.10.0") if r.when == "cudart_loaded")
    lib = f"{SITE}/nvidia/cu13/lib"
    ctx = _tree(tmp_path, f"{lib}/libcublasLt.so.13", f"{lib}/libcublas.so.13", f"{lib}/libnvJitLink.so.13")
    versions = linkage._Versions(ctx, (SITE,), {})
    copies = linkage._preloaded_copies(ctx, versions, (SITE,), row, "preloaded by torch", "13")
    # no cuDNN wheel: torch's loop raises there, so nvJitLink (later in the list) is not preloaded
    assert set(copies) == {"libcublasLt.so.13", "libcublas.so.13"}
    assert linkage._preloaded_copies(ctx, versions, (SITE,), row, "preloaded by torch", None) == {}


def test_jax_plugin_preload_serves_its_kernels_package_and_skips_missing_libraries(tmp_path):
    (row,) = _rows("jax-cuda12-pjrt", "0.7.0")
    assert row.when == "always" and not row.ordered and "jax-cuda12-plugin" in row.serves
    ctx = _tree(tmp_path, f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9")
    copies = linkage._preloaded_copies(ctx, linkage._Versions(ctx, (SITE,), {}), (SITE,), row, "preloaded by jax")
    assert set(copies) == {"libcudnn.so.9"}
    need = NeededLibrary("jax-cuda12-plugin", "cuda_plugin_extension.so", "libcudnn.so.9", None)
    assert linkage._loaded_by(need, row.package, {}, row.serves)
    assert not linkage._loaded_by(need, "torch", {})


def test_cupy_takes_nccl_from_the_wheel_only_in_the_versions_it_accepts():
    (row,) = _rows("cupy-cuda12x", "13.6.0")
    assert linkage._required(row, {"nvidia-nccl-cu12": Version("2.21.5")})
    assert not linkage._required(row, {"nvidia-nccl-cu12": Version("2.16.2")})
    assert not linkage._required(row, {})
    assert not _rows("cupy-cuda12x", "13.4.0")


def test_cupy_14_takes_any_nccl_wheel_through_cuda_pathfinder(tmp_path):
    """CuPy 14 asks cuda.pathfinder first, which takes nvidia/nccl/lib/libnccl.so.2 of the first site directory
    that has one, with no version gate (13.x's min_pypi_version check is only its fallback)."""
    for package in ("cupy-cuda12x", "cupy-cuda13x"):
        (row,) = _rows(package, "14.0.0")
        assert row.when == "always" and row.libraries == ("nccl/lib/libnccl.so.2",)
        assert linkage._required(row, {}) and linkage._required(row, {"nvidia-nccl-cu12": Version("2.16.2")})
    ctx = _tree(tmp_path, f"{SITE}/nvidia/nccl/lib/libnccl.so.2")
    (row,) = _rows("cupy-cuda12x", "14.2.0")
    copies = linkage._preloaded_copies(ctx, linkage._Versions(ctx, (SITE,), {}), (SITE,), row, "preloaded by cupy")
    assert set(copies) == {"libnccl.so.2"}
    assert not _rows("cupy-cuda12x", "14.3.0")  # not read
