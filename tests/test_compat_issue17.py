"""Issue #17 data gaps: each new record is read by the check or planner that needs it (facts from the records)."""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.suggest import Constraints, suggest_torch
from tests.machines import described

M = CompatMatrix()


def _h200(driver: str) -> Constraints:
    return described(driver, ("H200", "9.0"))


def test_cu129_and_cu132_have_their_index_urls():
    variants = M.torch_variants
    assert variants["cu129"].index_url == "https://download.pytorch.org/whl/cu129"
    assert variants["cu132"].index_url == "https://download.pytorch.org/whl/cu132"


def test_releases_without_variants_before_now_have_them():
    # pytorch/test-infra's release matrix while each was the stable release
    expected = {
        "2.4.0": {"cu118", "cu121", "cu124", "cpu"},
        "2.4.1": {"cu118", "cu121", "cu124", "cpu"},
        "2.5.0": {"cu118", "cu121", "cu124", "cpu"},
        "2.7.0": {"cu118", "cu126", "cu128", "cpu"},
    }
    for version, tags in expected.items():
        release = M.torch_release(Version(version))
        assert release is not None and tags <= set(release.variants), version
        assert M.torch_variants_complete(release)


def test_a_cu132_plan_is_made_for_torch_2_13_and_a_cu129_plan_for_2_8():
    for requirement, tag in (("torch==2.13.0", "cu132"), ("torch==2.8.0", "cu129")):
        plans = suggest_torch(M, _h200("595.58.03"), requirement).plans
        chosen = [p for p in plans if p.variant == tag]
        assert chosen and chosen[0].index_url == f"https://download.pytorch.org/whl/{tag}", requirement


def test_onnxruntime_gpu_from_1_11_carries_its_documented_cuda_and_cudnn_majors():
    row = next(r for r in M.onnxruntime_releases if r.version == Version("1.14.1"))
    wheel = M.onnxruntime_wheel(row)
    assert (wheel["cuda_major"], wheel["cudnn_major"]) == (11, 8)
    assert ("11.6", "8.2.4", True) in wheel["docs_builds"]  # the CUDA EP page's "1.14 1.13" row
    assert min(r.version for r in M.onnxruntime_releases) == Version("1.11.0")  # PyPI's oldest


def test_tensorflow_rows_from_2_0_and_the_planner_only_plans_the_and_cuda_extra():
    from cudadoctor.suggest.per_major import tensorflow_releases

    tested = {r.version: M.tensorflow_tested(r) for r in M.tensorflow_releases}
    assert tested[Version("2.4.0")][:2] == (Version("11.0"), Version("8.0"))
    assert tested[Version("2.1.0")][:2] == (Version("10.1"), Version("7.6"))
    assert tested[Version("2.0.0")] == (None, None, None)  # the GPU build of 2.0 was tensorflow-gpu
    planned = {r.version for r in tensorflow_releases(M)}
    assert planned and min(planned) >= Version("2.14.0")  # [and-cuda] exists from 2.14.0 (wheel METADATA)
