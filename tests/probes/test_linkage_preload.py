"""Frameworks that load NVIDIA wheel libraries by full path when imported (compat/runtime_libraries.toml
``preload``): the loader view takes their copy as the one that loads."""

from __future__ import annotations

import os

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
