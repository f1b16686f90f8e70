"""The report from the real H200 machine, replayed, and checked against what the machine itself said.

``tests/fixtures/h200-device/`` holds one device run (``.whl/run.sh`` style, 2026-11-30): cudadoctor's
snapshot and JSON report, and ``truth.txt`` — nvidia-smi, /proc, nvcc, and torch's own answers in a
separate process (including the libraries its process mapped). These tests hold cudadoctor's facts
to the machine's own word, and replay the snapshot through ``check --from``.
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from cudadoctor.cli import app
from tests.conftest import fixture_path, fixture_text

SNAPSHOT = fixture_path("h200-device", "snapshot.json")


@pytest.fixture(scope="module")
def facts() -> dict:
    return json.loads(fixture_text("h200-device", "snapshot.json"))["facts"]


@pytest.fixture(scope="module")
def truth() -> str:
    return fixture_text("h200-device", "truth.txt")


def test_driver_matches_nvidia_smi_and_proc(facts, truth):
    smi = re.search(r"Driver Version: (\S+)\s+CUDA Version: (\S+)", truth)
    assert (facts["driver"]["version"], facts["driver"]["cuda_api"]) == smi.groups() == ("580.159.04", "13.0")
    assert facts["driver"]["kernel_module"]["version"] in truth.split("== proc")[1]
    agreeing = {r["source"]["where"] for r in facts["driver"]["readings"] if r["version"] == "580.159.04"}
    assert len(agreeing) >= 3
    cuda_sources = {r["source"]["where"] for r in facts["driver"]["readings"] if r["cuda_api"] == "13.0"}
    assert cuda_sources == {"nvml", "cuDriverGetVersion"}


def test_gpu_matches_torch(facts, truth):
    name, major, minor = re.search(r"device (.+) \((\d+), (\d+)\) 1", truth).groups()
    assert [(g["name"], g["compute_capability"]) for g in facts["gpus"]] == [(name, f"{major}.{minor}")]
    assert facts["gpus"][0]["memory_mib"] == 143771


def test_toolkit_and_nvcc_match(facts, truth):
    assert "No such file or directory" in truth.split("== toolkit")[1]  # no version.json on this image
    (toolkit,) = facts["toolkits"]
    assert toolkit["version"] == "13.0" and toolkit["source"]["where"].endswith("cuda.h")
    assert facts["nvcc"]["version"] == re.search(r"release [\d.]+, V([\d.]+)", truth).group(1) == "13.0.88"


def test_libraries_match_what_torch_loads(facts, truth):
    cudnn = {(c["origin"], c["version"]) for c in facts["cudnn"]}
    assert cudnn == {("pip", "9.19.0.56"), ("system", "9.14.0")}
    assert "cudnn 91900" in truth  # torch.backends.cudnn.version(): the pip copy
    pip_cudnn = next(c for c in facts["cudnn"] if c["origin"] == "pip")
    loaded = [line for line in truth.splitlines() if "libcudnn.so" in line]
    assert loaded == [p for p in pip_cudnn["lib_paths"] if p.endswith("libcudnn.so.9")]
    nccl = {(c["origin"], c["version"]) for c in facts["nccl"]}
    assert nccl == {("pip", "2.28.9"), ("system", "2.28.3")}
    assert "nccl (2, 28, 9)" in truth


def test_torch_build_and_context(facts, truth):
    torch = facts["packages"]["torch"]
    assert (torch["torch_build"]["version"], torch["cuda_build"]) == ("2.11.0+cu130", "13.0")
    assert "torch 2.11.0+cu130 cuda 13.0" in truth
    assert facts["host"]["container"]["in_container"] is True
    compat = [(f["version"], f["on_search_path"]) for f in facts["driver"]["libcuda_files"] if f["kind"] == "compat"]
    assert compat == [("580.95.05", False)]
    assert "libcuda.so.580.95.05" in truth
    assert facts["errors"] == []


def test_replaying_the_device_snapshot():
    result = CliRunner().invoke(app, ["check", "--from", SNAPSHOT])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for line in (
        "[✓] NVIDIA driver: 580.159.04 (open kernel module), supports CUDA 13.0",
        "[✓] GPUs: 1× NVIDIA H200 (compute capability 9.0)",
        "[✓] cuDNN: 9.19.0.56 (pip nvidia-cudnn-cu13 pinned by torch), 9.14.0 (system)",
        "[✓] NCCL: 2.28.9 (pip nvidia-nccl-cu13 pinned by torch), 2.28.3 (system)",
        "[-] TensorRT: not installed",
    ):
        assert line in out
