"""CD601: the cuDNN TensorRT's libnvinfer opens by name against the cuDNN the release was built with.

The layout is the tensorrt 8.5.3.1 wheel's, as read from PyPI (compat/runtime_libraries.toml
``pypi-tensorrt-libnvinfer``): ``tensorrt/libnvinfer.so.8`` needs no CUDA library (cudart is static), carries a
RUNPATH into the nvidia wheels, and opens ``libcudnn.so.8`` by name. torch 1.13.1+cu117 pins
nvidia-cudnn-cu11==8.5.0.96, older than the cuDNN 8.6.0 of TensorRT 8.5.3's support matrix
(pytorch/TensorRT#2028: "TensorRT was linked against cuDNN 8.6.0 but loaded cuDNN 8.5.0").
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.checks.tensorrt import cudnn_minor_older
from cudadoctor.facts.model import InstalledPackage, Source, SourceKind
from cudadoctor.probes import interpreter
from cudadoctor.testing import run_check
from tests.elfwriter import shared_object
from tests.probes.test_linkage import SITE, dist, need, put, view

NVINFER = f"{SITE}/tensorrt/libnvinfer.so.8"
#: DT_NEEDED and RUNPATH of tensorrt 8.5.3.1's (and 8.5.1.7's) libnvinfer.so.8, read from the PyPI wheels
NEEDED = ["libpthread.so.0", "libdl.so.2", "librt.so.1", "libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6"]
RUNPATH = ["$ORIGIN", "$ORIGIN/../nvidia/cuda_runtime/lib", "$ORIGIN/../nvidia/cublas/lib",
           "$ORIGIN/../nvidia/cudnn/lib", "$ORIGIN/../nvidia/cuda_nvrtc/lib"]  # fmt: skip


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(interpreter, "site_paths", lambda ctx: (SITE,))
    return tmp_path / "tree"


def tensorrt_85(tree, trt: str = "8.5.3.1", cudnn: str = "8.5.0.96") -> None:
    dist(tree, "tensorrt", trt)
    put(tree, NVINFER, shared_object(NEEDED, "libnvinfer.so.8", RUNPATH))
    dist(tree, "nvidia-cudnn-cu11", cudnn)
    put(tree, f"{SITE}/nvidia/cudnn/lib/libcudnn.so.8")
    dist(tree, "nvidia-cublas-cu11", "11.10.3.66")
    put(tree, f"{SITE}/nvidia/cublas/lib/libcublas.so.11")
    put(tree, f"{SITE}/nvidia/cublas/lib/libcublasLt.so.11")


def _pkg(name: str, version: str, requires: tuple[str, ...] = ()) -> InstalledPackage:
    return InstalledPackage(
        name, Version(version), SITE, Source(SourceKind.METADATA, f"{SITE}/{name}"), requires=requires
    )


def _facts(h200, tree, trt: str = "8.5.3.1", cudnn: str = "8.5.0.96", torch: bool = True):
    tensorrt_85(tree, trt, cudnn)
    loader, _ctx = view(tree)
    installed = {
        "tensorrt": _pkg("tensorrt", trt),
        "nvidia-cudnn-cu11": _pkg("nvidia-cudnn-cu11", cudnn),
        "nvidia-cublas-cu11": _pkg("nvidia-cublas-cu11", "11.10.3.66"),
    }
    if torch:  # torch 1.13.1's Linux wheel on PyPI pins the cuDNN 8.5.0.96 wheel
        installed["torch"] = _pkg("torch", "1.13.1", ("nvidia-cudnn-cu11==8.5.0.96",))
    return replace(h200, loader=loader, packages=installed)


def test_libnvinfer_opens_cudnn_through_its_runpath(tree):
    tensorrt_85(tree)
    result, _ctx = view(tree)
    cudnn = need(result, "tensorrt", "libcudnn.so.8")
    assert cudnn.how == "dlopen" and cudnn.optional and cudnn.needer == NVINFER
    assert cudnn.loaded is not None and cudnn.loaded.via == "RUNPATH"
    assert cudnn.loaded.distribution == "nvidia-cudnn-cu11" and cudnn.loaded.version == Version("8.5.0.96")
    assert need(result, "tensorrt", "libcublasLt.so.11").loaded is not None


def test_an_older_cudnn_minor_than_the_build_is_a_warning(h200, tree):
    finding = run_check("CD601", _facts(h200, tree))
    assert finding.status is Status.WARN
    assert "tensorrt 8.5.3.1's libnvinfer.so.8 will open libcudnn.so.8 8.5.0.96" in finding.message
    assert "pinned by torch" in finding.message and "built with cuDNN 8.6.0" in finding.message
    assert "TensorRT was linked against cuDNN 8.6.0 but loaded cuDNN 8.5.0" in finding.message
    assert finding.remediation is not None and finding.remediation.commands == ()  # torch's pin decides


def test_an_unpinned_wheel_gets_the_upgrade_command(h200, tree):
    finding = run_check("CD601", _facts(h200, tree, torch=False))
    assert finding.status is Status.WARN
    assert finding.remediation is not None
    assert finding.remediation.commands == ("python -m pip install -U 'nvidia-cudnn-cu11>=8.6,<9'",)


@pytest.mark.parametrize("cudnn", ["8.6.0.163", "8.9.2.26"])
def test_the_same_minor_or_a_newer_one_is_ok(h200, tree, cudnn):
    assert run_check("CD601", _facts(h200, tree, cudnn=cudnn, torch=False)).status is Status.OK


def test_a_release_without_its_cudnn_in_the_data_is_not_judged(h200, tree):
    finding = run_check("CD601", _facts(h200, tree, trt="8.5.2.2"))
    assert finding.status is Status.UNKNOWN
    assert "the cuDNN tensorrt 8.5.2.2 was built with (not in compat/tensorrt.toml)" in finding.reason


def test_tensorrt_10_wheels_are_not_judged_and_no_tensorrt_is_not_applicable(h200):
    trt10 = {
        **h200.packages,
        "tensorrt": _pkg("tensorrt", "10.0.1"),
        "tensorrt-cu12-libs": _pkg("tensorrt-cu12-libs", "10.0.1"),
    }
    finding = run_check("CD601", replace(h200, packages=trt10))
    assert finding.status is Status.UNKNOWN and "tensorrt-cu12-libs 10.0.1" in finding.reason
    assert run_check("CD601", h200).status is Status.NOT_APPLICABLE


def test_plain_tensorrt_sdists_leave_cd304_judged(h200):
    """From 8.6.1 on plain ``tensorrt`` is an sdist that installs other packages: it holds no object, so CD304
    does not call its by-name libraries unknown (8.5's wheels hold libnvinfer.so.8: they are in the table)."""
    trt10 = {**h200.packages, "tensorrt": _pkg("tensorrt", "10.0.1")}
    finding = run_check("CD304", replace(h200, packages=trt10))
    assert finding.status is not Status.UNKNOWN


def test_the_cudnn_compatibility_rule():
    """cuDNN's documented API compatibility: patch releases serve each other, minors serve older builds."""
    assert cudnn_minor_older(Version("8.6.0"), Version("8.5.0.96"))
    assert not cudnn_minor_older(Version("8.6.0"), Version("8.6.0.163"))
    assert not cudnn_minor_older(Version("8.6.0"), Version("8.9.7.29"))
    assert not cudnn_minor_older(Version("8.6.0"), Version("9.1.0.70"))  # another soname: not this check's


def test_a_marker_with_an_equals_is_not_a_pin() -> None:
    """`extra == "cudnn"` or `platform_system == "Linux"` in a Requires-Dist marker pins nothing (review finding)."""
    from packaging.version import Version

    from cudadoctor.checks.tensorrt import _pinned_by
    from cudadoctor.facts.model import InstalledPackage, Source, SourceKind

    def pkg(name: str, *requires: str) -> InstalledPackage:
        return InstalledPackage(name, Version("1.0"), "/s", Source(SourceKind.METADATA, "/s"), requires=requires)

    packages = {
        "onnxruntime-gpu": pkg("onnxruntime-gpu", 'nvidia-cudnn-cu12~=9.0; extra == "cudnn"'),
        "other": pkg("other", 'nvidia-cudnn-cu11>=8.6; platform_system == "Linux"'),
        "torch": pkg(
            "torch", 'nvidia-cudnn-cu11==8.5.0.96; platform_system == "Linux" and platform_machine == "x86_64"'
        ),
    }
    assert _pinned_by("nvidia-cudnn-cu12", packages) is None
    assert _pinned_by("nvidia-cudnn-cu11", packages) == "torch"


def test_a_second_tensorrt_the_data_does_not_cover_is_not_passed_over(h200, tree):
    """TensorRT 8.5 judged fine (its cuDNN 8.6 matches the build) beside tensorrt-cu12-libs 10.0.1, whose
    libnvinfer's cuDNN no data row says: could not judge, never ok."""
    facts = _facts(h200, tree, cudnn="8.6.0.163", torch=False)
    assert run_check("CD601", facts).status is Status.OK
    both = replace(facts, packages={**facts.packages, "tensorrt-cu12-libs": _pkg("tensorrt-cu12-libs", "10.0.1")})
    finding = run_check("CD601", both)
    assert finding.status is Status.UNKNOWN and "tensorrt-cu12-libs 10.0.1" in finding.reason
