"""TensorFlow opens cuDNN by name from ``libtensorflow_framework.so.2`` (compat/runtime_libraries.toml).

The layouts are the PyPI wheels' as read (``pypi-tensorflow-2.16.1``, ``pypi-tensorflow-2.16.2-2.17.1``,
``pypi-tensorflow-2.18``): ``tensorflow/libtensorflow_framework.so.2`` needs no CUDA library and its copy of the
DSO loader is the one that runs, so its RUNPATH is where ``dlopen("libcudnn.so.<major>")`` looks. 2.16.1's
RUNPATH holds only the cuda_runtime and tensorrt directories: with ``pip install tensorflow[and-cuda]==2.16.1``
and no LD_LIBRARY_PATH the GPU is not registered (tensorflow/tensorflow#63362), which 2.16.2 fixed.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import InstalledPackage, Source, SourceKind
from cudadoctor.probes import interpreter
from cudadoctor.testing import run_check
from tests.elfwriter import shared_object
from tests.probes.test_linkage import SITE, dist, need, put, view

FRAMEWORK = f"{SITE}/tensorflow/libtensorflow_framework.so.2"
#: DT_NEEDED of libtensorflow_framework.so.2 in the 2.16.1 to 2.18.1 wheels (no CUDA library)
NEEDED = ["libm.so.6", "librt.so.1", "libdl.so.2", "libpthread.so.0", "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6"]
#: its RUNPATH in 2.16.1 and in 2.17.1, as read
RUNPATH_2161 = ["$ORIGIN/", "$ORIGIN/../../tensorrt", "$ORIGIN/../tensorrt",
                "$ORIGIN/../../nvidia/cuda_runtime/lib", "$ORIGIN/../nvidia/cuda_runtime/lib"]  # fmt: skip
_WHEELS = ("cublas", "cudnn", "cufft", "cusolver", "cusparse")
RUNPATH_2171 = ["$ORIGIN/", "$ORIGIN/../../tensorrt", "$ORIGIN/../tensorrt"] + [
    f"$ORIGIN/{up}nvidia/{d}/lib" for d in _WHEELS for up in ("../../", "../")
] + ["$ORIGIN/../../tensorrt", "$ORIGIN/../tensorrt", "$ORIGIN/../../nvidia/cuda_runtime/lib",
     "$ORIGIN/../nvidia/cuda_runtime/lib"]  # fmt: skip


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(interpreter, "site_paths", lambda ctx: (SITE,))
    return tmp_path / "tree"


def tensorflow(tree, version: str, runpath: list[str], cudnn: str | None = "8.9.7.29") -> None:
    """The tensorflow wheel's framework library and, with ``cudnn``, the [and-cuda] extra's cuDNN wheel."""
    dist(tree, "tensorflow", version)
    put(tree, FRAMEWORK, shared_object(NEEDED, "libtensorflow_framework.so.2", runpath))
    if cudnn is not None:
        dist(tree, "nvidia-cudnn-cu12", cudnn)
        put(tree, f"{SITE}/nvidia/cudnn/lib/libcudnn.so.{cudnn.split('.')[0]}")


def test_the_rows_match_the_wheels_read():
    matrix = CompatMatrix(cache_dir=False)
    rows = {v: matrix.runtime_loads_for("tensorflow", Version(v), "x86_64") for v in ("2.16.1", "2.17.1", "2.18.0")}
    assert [r.object_runpath for r in rows["2.16.1"]] == [tuple(RUNPATH_2161)]
    assert [r.object_runpath for r in rows["2.17.1"]] == [tuple(RUNPATH_2171)]
    assert [r.sonames for r in rows["2.16.1"] + rows["2.17.1"]] == [("libcudnn.so.8",)] * 2
    assert [r.sonames for r in rows["2.18.0"]] == [("libcudnn.so.9",)]
    assert all(r.object == "tensorflow/libtensorflow_framework.so.2" for rs in rows.values() for r in rs)
    assert matrix.runtime_loads_for("tensorflow", Version("2.13.1"), "x86_64") == ()  # not read
    # 2.15.x: its framework library's RUNPATH reaches the cuDNN wheel (read from 2.15.0's, compat/notes)
    (row_215,) = matrix.runtime_loads_for("tensorflow", Version("2.15.1"), "x86_64")
    assert row_215.sonames == ("libcudnn.so.8",) and "$ORIGIN/../nvidia/cudnn/lib" in row_215.object_runpath


def test_2_16_1_does_not_find_the_cudnn_wheel_without_ld_library_path(tree):
    tensorflow(tree, "2.16.1", RUNPATH_2161)
    result, _ctx = view(tree)
    cudnn = need(result, "tensorflow", "libcudnn.so.8")
    assert cudnn.how == "dlopen" and cudnn.needer == FRAMEWORK and not cudnn.optional
    assert cudnn.loaded is not None and cudnn.loaded.via == "wheel, off this object's search path"
    result, _ctx = view(tree, {"LD_LIBRARY_PATH": f"{SITE}/nvidia/cudnn/lib"})  # the workaround of #63362
    cudnn = need(result, "tensorflow", "libcudnn.so.8")
    assert cudnn.loaded is not None and cudnn.loaded.via == "LD_LIBRARY_PATH"


def test_2_17_1_finds_it_through_the_framework_librarys_runpath(tree):
    tensorflow(tree, "2.17.1", RUNPATH_2171)
    result, _ctx = view(tree)
    cudnn = need(result, "tensorflow", "libcudnn.so.8")
    assert cudnn.loaded is not None and cudnn.loaded.via == "RUNPATH"
    assert cudnn.loaded.distribution == "nvidia-cudnn-cu12" and cudnn.loaded.version == Version("8.9.7.29")


def test_without_the_cudnn_wheel_the_library_is_optional(tree):
    tensorflow(tree, "2.17.1", RUNPATH_2171, cudnn=None)  # plain `pip install tensorflow`: it runs on the CPU
    result, _ctx = view(tree)
    assert need(result, "tensorflow", "libcudnn.so.8").optional


def _pkg(name: str, version: str) -> InstalledPackage:
    return InstalledPackage(name, Version(version), SITE, Source(SourceKind.METADATA, f"{SITE}/{name}"))


def test_cd304_fails_for_2_16_1_with_the_ld_library_path_fix(h200, tree):
    """Nothing else loads from nvidia/cudnn/lib: TensorFlow registers no GPU (tensorflow/tensorflow#63362)."""
    tensorflow(tree, "2.16.1", RUNPATH_2161)
    loader, _ctx = view(tree)
    installed = {"tensorflow": _pkg("tensorflow", "2.16.1"), "nvidia-cudnn-cu12": _pkg("nvidia-cudnn-cu12", "8.9.7.29")}
    finding = run_check("CD304", replace(h200, loader=loader, packages=installed))
    assert finding.status is Status.FAIL
    assert "tensorflow opens libcudnn.so.8 (nvidia-cudnn-cu12) by name" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == (f"export LD_LIBRARY_PATH={SITE}/nvidia/cudnn/lib:$LD_LIBRARY_PATH",)


def test_a_second_run_takes_the_openers_runpath_from_the_scan_cache(tree, monkeypatch):
    """libtensorflow_framework.so.2 links no CUDA library, so the scan keeps no entry for it; its RUNPATH is cached
    by (size, mtime) on its own, and a warm run reads no ELF file at all."""
    from cudadoctor.probes import elf, scancache

    tensorflow(tree, "2.17.1", RUNPATH_2171)
    first, _ctx = view(tree)

    def no_read(*_args: object) -> None:
        raise AssertionError("an ELF file was read on a warm run")

    monkeypatch.setattr(scancache, "read_dynamic", no_read)
    monkeypatch.setattr(elf, "read_dynamic", no_read)
    again, _ctx = view(tree)
    assert need(again, "tensorflow", "libcudnn.so.8") == need(first, "tensorflow", "libcudnn.so.8")
    assert need(again, "tensorflow", "libcudnn.so.8").loaded.via == "RUNPATH"
