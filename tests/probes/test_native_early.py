"""NVML and libcuda queries started early are taken once by the live probes, never twice, never stale."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

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
    monkeypatch.setenv(native.BINDING_VAR, "inprocess")  # these tests are about the threads (no helper process)
    return counts


def test_probes_take_the_early_answers(calls: dict[str, int]) -> None:
    native.start_early(health=True)
    probe = RealNative()
    assert probe.nvml().driver_version == "580.01"
    assert probe.libcuda_version().version == 13000
    assert native.RealHealthSource().query() == {"schema": 1, "count": 1}
    assert calls == {"nvml": 1, "libcuda": 1, "health": 1}


def test_an_early_answer_is_taken_once(calls: dict[str, int]) -> None:
    native.start_early(health=False)
    assert RealNative().nvml().driver_version == "580.01"
    assert RealNative().nvml().driver_version == "580.02"  # a second run asks anew
    assert native.RealHealthSource().query() == {"schema": 1, "count": 1}  # health was not started early
    assert calls["nvml"] == 2


def test_utilization_never_takes_the_plain_health_answer(calls: dict[str, int]) -> None:
    native.start_early(health=True)
    native.RealHealthSource().query(utilization=True, sample_seconds=0.0)
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


# -- the helper process (cudadoctor.probes.nvml_child); the fake NVML library's run is in test_nvml_binding.py ----


@pytest.fixture
def helper(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Make start_early run ``code`` as its helper process (on any machine, with or without NVML)."""
    monkeypatch.setattr(native, "_EARLY", {})
    monkeypatch.delenv(native.BINDING_VAR, raising=False)

    def use(code: str) -> None:
        monkeypatch.setattr(native, "helper_argv", lambda health: [sys.executable, "-c", code])

    return use


@pytest.mark.parametrize(
    "code",
    [
        "import sys; sys.exit(3)",
        "print('not a literal')",
        "print('[1, 2]')",
        "print('{\"nvml\": 1}')",
        'print(\'__import__("os").system("false")\')',
    ],
    ids=["fails", "garbage", "not-a-dict", "wrong-shape", "code-not-literal"],
)
def test_a_failed_helper_leaves_the_probes_to_ask_here(helper: Callable[[str], None], code: str) -> None:
    helper(code)
    native.start_early(health=True)
    assert isinstance(native._EARLY["nvml"], native._FromHelper)
    assert RealNative().nvml() == native._query_nvml()
    assert RealNative().libcuda_version() == native._query_libcuda()
    health = native.RealHealthSource().query()
    assert health.keys() == nvml_health.query_health().keys()


def test_the_helpers_answers_become_the_records(helper: Callable[[str], None]) -> None:
    answers = {
        "nvml": {"driver_version": "580.159.04", "cuda_driver_version": 13000, "device_errors": [],
                 "devices": [{"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0", "memory_mib": 143771,
                              "mig_mode": "Disabled", "pci_bus_id": "00000000:1B:00.0", "brand": "NVIDIA",
                              "mig_devices": None}]},
        "health": {"schema": 1, "count": {"v": 1}, "power": {"v": 81.5}, "ok": {"v": True}, "none": {"v": None}},
    }  # fmt: skip
    helper(f"print({answers!r})")
    native.start_early(health=True)
    probe = RealNative()
    assert probe.nvml().devices[0].name == "NVIDIA H200"
    assert probe.nvml().cuda_driver_version == 13000
    assert probe.libcuda_version() == native._query_libcuda()  # libcuda is always asked in this process
    assert native.RealHealthSource().query() == answers["health"]


def test_a_wedged_helper_is_killed_at_its_own_deadline(helper: Callable[[str], None], monkeypatch) -> None:
    monkeypatch.setattr(native, "HELPER_DEADLINE", 0.6)
    helper("import time; time.sleep(60)")
    native.start_early(health=False)
    early = native._EARLY["nvml"]
    assert isinstance(early, native._FromHelper)
    started = time.monotonic()
    assert RealNative(timeout=0.2).nvml().error == "NVML timed out after 0.2 s"  # this asker's own timeout
    assert time.monotonic() - started < 0.5
    assert early.helper.done.wait(5)  # ... and the helper is ended at its own deadline, not left behind
    assert early.helper.started.proc.poll() is not None
    assert early.helper.failure == "the NVML helper did not answer within 0.6 s"


def test_a_short_asker_does_not_end_the_helper_for_the_others(helper: Callable[[str], None]) -> None:
    """The health probe gives up after its 5 s; the driver probe still gets NVML's answer at 6 s (review finding)."""
    answers = {"nvml": {"driver_version": "580.159.04", "devices": []}, "health": {"schema": 1}}
    helper(f"import time; time.sleep(0.6); print({answers!r})")
    native.start_early(health=True)
    timed_out = {"schema": 1, "init": {"e": "NVML did not answer", "c": -1}}
    assert native.take_early("health", 0.1, timed_out) == timed_out
    assert RealNative(timeout=5).nvml().driver_version == "580.159.04"


def test_a_helper_killed_by_a_signal_is_an_error_not_a_retry_here(
    helper: Callable[[str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVML that crashed its helper would crash the doctor if asked again in-process: it is reported instead."""
    asked_here: list[str] = []

    def fake_query_nvml():
        asked_here.append("nvml")
        return NvmlResult()

    monkeypatch.setattr(native, "_query_nvml", fake_query_nvml)
    helper("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    native.start_early(health=True)
    assert RealNative().nvml().error == "the NVML helper died of signal 11"
    health = native.RealHealthSource().query()
    assert health["init"] == {"e": "the NVML helper died of signal 11", "c": -1}
    assert asked_here == []


def test_stop_early_ends_a_helper_nobody_asked(helper: Callable[[str], None], monkeypatch) -> None:
    monkeypatch.setattr(native, "_HELPERS", [])
    helper("import time; time.sleep(60)")
    native.start_early(health=False)
    process = native._HELPERS[0].started.proc
    native.stop_early()
    assert process.wait(5) is not None


def test_the_helpers_literal_survives_nan_and_any_locale() -> None:
    import ast

    from cudadoctor.probes.nvml_child import finite

    value = {"power": float("nan"), "temp": [float("inf"), 41.5], "name": "GPU \ufffd", "ok": True, "none": None}
    assert ast.literal_eval(ascii(finite(value))) == {
        "power": None, "temp": [None, 41.5], "name": "GPU \ufffd", "ok": True, "none": None,
    }  # fmt: skip
