"""Issue #17 Deliver 3: TensorRT 8.0.0 EA and 8.0.1, which were never on PyPI, from their support matrices."""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.suggest import Constraints, suggest_tensorrt

M = CompatMatrix()


def test_a_tarball_install_of_tensorrt_8_0_1_has_its_own_matrixs_cuda_and_no_invented_cudnn():
    row = M.tensorrt_release(Version("8.0.1"))
    assert row is not None
    cuda, builds, cudnn = M.tensorrt_support(row)
    assert cuda[0] == "11.3 update 1" and cuda[-1] == "10.2" and builds == ()
    assert cudnn is None  # the 8.0.1 matrix's cuDNN row was not read; 8.0.3's is not copied back
    assert M.tensorrt_plain_install(row)[0] == "absent"


def test_tensorrt_8_0_0_is_the_early_access_build_with_cudnn_8_2_0():
    row = M.tensorrt_release(Version("8.0.0"))
    assert row is not None and row.early_access
    assert M.tensorrt_support(row)[2] == Version("8.2.0")


def test_suggest_never_plans_a_tensorrt_8_0_install_from_pypi():
    s = suggest_tensorrt(M, Constraints(python=Version("3.8")), "tensorrt==8.0.1")
    assert not s.plans
