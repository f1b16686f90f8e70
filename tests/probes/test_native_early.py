"""NVML and libcuda queries started early are taken once by the live probes, never twice, never stale."""

from __future__ import annotations

import threading

import pytest

from cudadoctor.probes import native, nvml_health
from cudadoctor.probes.native import LibcudaResult, NvmlResult, RealNative


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"nvml": 0, "libcuda": 0, "health": 0}

    def nvml() -> NvmlResult:
        counts["nvml"] += 1
        return NvmlResult(driver_version=f"580.0{counts['nvml']}")

    def libcuda() -> LibcudaResult:
        counts["libcuda"] += 1
        return LibcudaResult(version=13000)

    def health(utilization: bool = False, sample_seconds: float = 0.0) -> dict[str, object]:
        counts["health"] += 1
        return {"schema": 1, "count": counts["health"]}

    monkeypatch.setattr(native, "_query_nvml", nvml)
    monkeypatch.setattr(native, "_query_libcuda", libcuda)
    monkeypatch.setattr(nvml_health, "query_health", health)
    monkeypatch.setattr(native, "_EARLY", {})
    return counts


def test_probes_take_the_early_answers(calls: dict[str, int]) -> None:
    native.start_early(health=True)
    probe = RealNative()
    assert probe.nvml().driver_version == "580.01"
    assert probe.libcuda_version().version == 13000
    assert nvml_health.RealHealthSource().query() == {"schema": 1, "count": 1}
    assert calls == {"nvml": 1, "libcuda": 1, "health": 1}


def test_an_early_answer_is_taken_once(calls: dict[str, int]) -> None:
    native.start_early(health=False)
    assert RealNative().nvml().driver_version == "580.01"
    assert RealNative().nvml().driver_version == "580.02"  # a second run asks anew
    assert nvml_health.RealHealthSource().query() == {"schema": 1, "count": 1}  # health was not started early
    assert calls["nvml"] == 2


def test_utilization_never_takes_the_plain_health_answer(calls: dict[str, int]) -> None:
    native.start_early(health=True)
    nvml_health.RealHealthSource().query(utilization=True, sample_seconds=0.0)
    assert native.take_early("health", 1.0, None) is not None  # still there for the plain query


def test_a_wedged_early_query_times_out(monkeypatch: pytest.MonkeyPatch, calls: dict[str, int]) -> None:
    release = threading.Event()

    def wedged() -> NvmlResult:
        release.wait(5)
        return NvmlResult(driver_version="late")

    monkeypatch.setattr(native, "_query_nvml", wedged)
    native.start_early(health=False)
    try:
        assert RealNative(timeout=0.05).nvml().error == "NVML timed out after 0.05 s"
    finally:
        release.set()
