"""check --deep on the real H200 (2026-11-30), healthy and broken three ways, replayed through check --from.

The reports in tests/fixtures/h200-deep/ were written on the machine by ``cudadoctor check --deep -f json``
(see that folder's text.txt for the terminal output of the same runs):

* healthy;
* S1: ``LD_LIBRARY_PATH=/usr/local/cuda/compat:...`` (cuda-compat 580.95.05 ahead of the 580.159.04 driver);
* S2: a directory holding the toolkit's stub renamed ``libcuda.so.1`` first on ``LD_LIBRARY_PATH``;
* S3: ``CUDA_VISIBLE_DEVICES=""``.

Replaying them re-runs today's checks on those facts, so the diagnosis is held to real outputs.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cudadoctor.cli import app
from tests.conftest import fixture_path


def replay(name: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["check", "--from", fixture_path("h200-deep", f"{name}.json"), "-f", "json"])
    return result.exit_code, json.loads(result.stdout)


def failing(doc: dict) -> dict[str, str]:
    return {f["code"]: f["message"] for f in doc["findings"] if f["status"] in ("fail", "error")}


def test_healthy_machine_is_clean_and_names_the_loaded_libraries():
    code, doc = replay("deep-healthy")
    assert code == 0 and failing(doc) == {}
    runtime = doc["facts"]["runtime"]
    assert runtime["driver"]["init_rc"] == 0 and runtime["driver"]["device_count"] == 1
    torch = next(f for f in runtime["frameworks"] if f["framework"] == "torch")
    assert torch["gpu_op"] is True
    assert (torch["cudnn"], torch["nccl"]) == ("9.19.0", "2.28.9")
    mapped = {lib["name"]: lib["path"] for lib in torch["libraries"]}
    assert mapped["cudnn"].endswith("site-packages/nvidia/cudnn/lib/libcudnn.so.9")  # the pip copy, not apt 9.14
    assert mapped["nccl"].endswith("site-packages/nvidia/nccl/lib/libnccl.so.2")
    assert mapped["cudart"].endswith("site-packages/nvidia/cu13/lib/libcudart.so.13")
    assert mapped["cuda"] == "/usr/local/nvidia/lib64/libcuda.so.580.159.04"
    frameworks = {f["framework"]: f["gpu_op"] for f in runtime["frameworks"]}
    assert frameworks == {"torch": True, "jax": True, "cupy": True}


def test_s1_older_compat_libcuda_first_is_803_with_its_cause():
    code, doc = replay("deep-s1")
    assert code == 1
    found = failing(doc)
    assert set(found) == {"CD102", "CD801", "CD802"}
    assert found["CD801"].startswith("cuInit fails with 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH")
    assert "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05" in found["CD801"]
    assert "not newer than the kernel module 580.159.04" in found["CD801"]
    # nvidia-smi / NVML still look healthy in this state: the fast path sees the driver fine.
    assert doc["facts"]["driver"]["cuda_api"] == "13.0"


def test_s2_stub_libcuda_first_is_34():
    code, doc = replay("deep-s2")
    assert code == 1
    found = failing(doc)
    assert set(found) == {"CD103", "CD801", "CD802"}
    assert found["CD801"].startswith("cuInit fails with 34 CUDA_ERROR_STUB_LIBRARY")
    assert "link-time stub" in found["CD801"]


def test_s3_hidden_devices_is_100_and_names_the_variable():
    code, doc = replay("deep-s3")
    assert code == 1
    found = failing(doc)
    assert set(found) == {"CD104", "CD801", "CD802"}
    assert found["CD801"].startswith("cuInit fails with 100 CUDA_ERROR_NO_DEVICE: CUDA_VISIBLE_DEVICES=''")


@pytest.mark.parametrize("name", ["deep-s1", "deep-s2", "deep-s3"])
def test_framework_failures_point_at_the_cause(name):
    _code, doc = replay(name)
    assert "cuInit itself fails" in failing(doc)["CD802"]


def test_two_gpu_machine_reports_both_gpus_fast_and_deep():
    code, doc = replay("deep-2gpu")
    assert code == 0 and failing(doc) == {}
    assert [(g["index"], g["name"], g["compute_capability"]) for g in doc["facts"]["gpus"]] == [
        (0, "NVIDIA H200", "9.0"),
        (1, "NVIDIA H200", "9.0"),
    ]
    runtime = doc["facts"]["runtime"]
    assert runtime["driver"]["device_count"] == 2
    assert [d["compute_capability"] for d in runtime["driver"]["devices"]] == ["9.0", "9.0"]
    torch = next(f for f in runtime["frameworks"] if f["framework"] == "torch")
    assert len(torch["devices"]) == 2 and torch["gpu_op"] is True


def test_nccl_all_reduce_on_two_real_gpus():
    code, doc = replay("deep-nccl-2gpu")
    assert code == 0 and failing(doc) == {}
    smoke = doc["facts"]["runtime"]["nccl_smoke"]
    assert (smoke["world_size"], smoke["ok"], smoke["nccl"], smoke["error"]) == (2, True, "2.28.9", None)
    assert {f["code"]: f["status"] for f in doc["findings"]}["CD806"] == "ok"
