"""``cudadoctor usage`` on NVML answers recorded on a real H200 under four known loads.

tests/fixtures/health/usage-h200.json was captured on the device (driver 580.159.04, torch 2.11.0+cu130) with
query_health(utilization=True, sample_seconds=1.0) while child processes ran: nothing (idle); one process
holding 4 GiB and launching nothing (held); that holder plus a one-thread torch.cuda._sleep loop (spin);
a bf16 matmul loop (gemm). Records for GPUs without GPM, MIG and NVML failures change one answer of those.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest

from cudadoctor.probes.nvml_health import NullHealthSource, RecordedHealthSource
from cudadoctor.usage import (
    CANNOT_TELL,
    USAGE_KIND,
    render_usage_json,
    render_usage_text,
    usage_command,
    usage_view,
)

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "health", "usage-h200.json")


def scenario(name: str) -> dict[str, Any]:
    with open(FIXTURE, encoding="utf-8") as handle:
        return copy.deepcopy(json.load(handle)["scenarios"][name])


def test_idle_gpu_reads_idle_over_the_drivers_buffer():
    (gpu,) = usage_view(scenario("idle"), 1.0).gpus
    assert gpu.verdict == "idle"
    assert gpu.samples == 71 and gpu.window_s == 14.0 and gpu.duty_max == 0
    assert gpu.processes == ()
    assert gpu.explanation == ("No kernel ran in the last 14 s.",)


def test_memory_held_by_a_process_that_runs_nothing_is_allocated_but_idle():
    (gpu,) = usage_view(scenario("held"), 1.0).gpus
    assert gpu.verdict == "allocated-but-idle"
    (proc,) = gpu.processes
    assert proc.name == "python3" and proc.memory_mib == 4614 and proc.sm_percent == 0 and proc.idle is True
    assert "hold 4.5 GiB of GPU memory, and no kernel ran in the last 14 s" in gpu.explanation[0]


def test_one_thread_kernel_reads_100_percent_but_fills_under_one_percent_of_the_sms():
    """The issue's case: utilization.gpu 100 %, GPM SM activity 0.76 %, power at the idle level."""
    (gpu,) = usage_view(scenario("spin"), 1.0).gpus
    assert gpu.util_now == 100 and gpu.gpm["sm"] == pytest.approx(0.76, abs=0.01)
    assert gpu.power_w is not None and gpu.power_w < 125
    assert gpu.verdict == "busy-but-light"
    text = render_usage_text(usage_view(scenario("spin"), 1.0))
    assert "utilization.gpu reads 100 % now" in text and "SMs had work only 0.76 % of the 1 s window" in text
    # the holder from the previous scenario is still there, idle beside the spinning process
    holder = next(p for p in gpu.processes if p.memory_mib and p.memory_mib > 4000)
    spinner = next(p for p in gpu.processes if p is not holder)
    assert holder.idle is True and spinner.sm_percent == 60
    assert any(f"Process {holder.pid} (python3) holds 4.5 GiB" in s for s in gpu.explanation)


def test_a_real_gemm_is_busy_with_the_sms_full():
    (gpu,) = usage_view(scenario("gemm"), 1.0).gpus
    assert gpu.verdict == "busy"
    assert gpu.gpm["sm"] > 90 and gpu.gpm["tensor"] > 90
    assert gpu.power_w is not None and gpu.power_w > 600


def test_without_gpm_the_view_says_what_it_cannot_measure_and_hints_from_power():
    record = scenario("spin")
    device = record["devices"][0]
    device["gpm_supported"] = {"v": 0}
    del device["gpm"]
    device["architecture"] = {"v": 7}  # an A100: no GPM
    (gpu,) = usage_view(record, 1.0).gpus
    assert gpu.verdict == "busy-unmeasured"
    assert "GPM needs Hopper or newer" in gpu.explanation[0]
    assert "119 W of its 700 W limit" in gpu.explanation[1] and "a hint, not a measurement" in gpu.explanation[1]
    assert "GPM               not supported on this GPU" in render_usage_text(usage_view(record, 1.0))


def test_busy_without_a_window_asks_for_one():
    record = scenario("gemm")
    del record["devices"][0]["gpm"]
    (gpu,) = usage_view(record, 0.0).gpus
    assert gpu.verdict == "busy-unmeasured"
    assert "run with --sample 1" in gpu.explanation[0]
    assert len(gpu.explanation) == 1  # 692 W of 700 W: no low-power hint


def test_kernels_earlier_in_the_buffer_but_none_now_is_partly_busy():
    record = scenario("spin")
    record["devices"][0]["utilization_rates"] = {"v": {"gpu": 0, "memory": 0}}
    (gpu,) = usage_view(record, 1.0).gpus
    assert gpu.verdict == "partly-busy"
    assert gpu.explanation[0].startswith("utilization.gpu reads 0 % now; kernels ran 52 % of the last 14 s")


def test_mig_gpu_without_utilization_is_unknown_not_idle():
    record = scenario("idle")
    device = record["devices"][0]
    device["utilization_rates"] = {"e": "Not Supported", "c": 3}
    device["samples_gpu"] = {"e": "Not Supported", "c": 3}
    device["mig_mode"] = {"v": [1, 1]}
    (gpu,) = usage_view(record, 1.0).gpus
    assert gpu.verdict == "unknown"
    assert "MIG mode" in gpu.explanation[0]


def test_processes_without_a_sample_are_not_called_idle():
    record = scenario("gemm")
    record["devices"][0]["process_samples"] = {"e": "Not Found", "c": 6}
    (gpu,) = usage_view(record, 1.0).gpus
    (proc,) = gpu.processes
    assert proc.sm_percent is None and proc.idle is None
    assert "no per-process sample from NVML" in render_usage_text(usage_view(record, 1.0))


def test_json_is_versioned_and_says_what_one_look_cannot_tell():
    document = json.loads(render_usage_json(usage_view(scenario("held"), 1.0)))
    assert document["kind"] == USAGE_KIND and document["schema_version"] == 1
    assert document["cannot_tell"] == list(CANNOT_TELL)
    (gpu,) = document["gpus"]
    assert gpu["verdict"] == "allocated-but-idle" and gpu["processes"][0]["idle"] is True
    assert gpu["gpm"]["sm"] == 0.0 and gpu["memory_total_mib"] == 143771


def test_text_always_says_what_one_look_can_and_cannot_tell():
    text = render_usage_text(usage_view(scenario("gemm"), 1.0))
    assert "What one look can tell:" in text and "What it cannot:" in text
    assert "needs monitoring over time" in text


def test_command_exit_codes():
    text, code = usage_command(RecordedHealthSource(scenario("spin")), 1.0, "text")
    assert code == 0 and "busy but light" in text
    failed = {"schema": 1, "init": {"e": "NVML did not answer within 6 s", "c": -1}}
    text, code = usage_command(RecordedHealthSource(failed), 1.0, "json")
    assert code == 3 and json.loads(text)["error"] == "NVML did not answer within 6 s"
    text, code = usage_command(NullHealthSource("no NVML"), 0.0, "text")
    assert code == 3 and "no NVML" in text


@pytest.mark.parametrize("seconds", [-1.0, 61.0])
def test_sample_window_is_bounded(seconds: float):
    from cudadoctor.errors import UsageError

    with pytest.raises(UsageError, match="--sample"):
        usage_command(RecordedHealthSource(scenario("idle")), seconds, "text")


def test_cli_usage_command(monkeypatch: pytest.MonkeyPatch):
    from typer.testing import CliRunner

    from cudadoctor import cli
    from cudadoctor.probes import native

    asked: list[tuple[bool, float]] = []

    class Source(RecordedHealthSource):
        def query(self, *, utilization: bool = False, sample_seconds: float = 0.0) -> dict[str, Any]:
            asked.append((utilization, sample_seconds))
            return super().query()

    monkeypatch.setattr(native, "RealHealthSource", lambda: Source(scenario("held")))
    result = CliRunner().invoke(cli.app, ["usage", "--sample", "0.5", "-f", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["gpus"][0]["verdict"] == "allocated-but-idle"
    assert asked == [(True, 0.5)]
    assert CliRunner().invoke(cli.app, ["usage", "--sample", "100"]).exit_code == 2


class _FakeNvml:
    """Just enough of pynvml for the GPM window: records the order of calls."""

    class NVMLError(Exception):
        value = 999

    def __init__(self) -> None:
        self.calls: list[str] = []

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlGpmSampleAlloc(self) -> object:
        return object()

    def nvmlGpmSampleFree(self, sample: object) -> None:
        self.calls.append("free")

    def nvmlGpmSampleGet(self, handle: int, sample: object) -> None:
        self.calls.append(f"sample {handle}")


def test_gpm_window_is_shared_by_all_gpus(monkeypatch: pytest.MonkeyPatch):
    """Eight GPUs take one window, not eight: first samples of all, one sleep, then the second samples."""
    from cudadoctor.probes import nvml_health

    nv = _FakeNvml()
    slept: list[float] = []
    monkeypatch.setattr("cudadoctor.probes.nvml_health.time.sleep", slept.append)

    def fake_gpm_metrics(nv_, h, first, s):
        nv.calls.append(f"metrics {h}")
        return {}

    monkeypatch.setattr(nvml_health, "_gpm_metrics", fake_gpm_metrics)
    devices: list[dict[str, Any]] = [{"index": i, "gpm_supported": {"v": 1}} for i in range(3)]
    devices.append({"index": 3, "gpm_supported": {"v": 0}})
    nvml_health._gpm_window(nv, devices, 1.0)
    assert slept == [1.0]
    assert nv.calls == ["sample 0", "sample 1", "sample 2", "metrics 0", "metrics 1", "metrics 2"]
    assert "gpm" not in devices[3] and all(d["gpm"] == {"v": {}} for d in devices[:3])


def test_the_recorder_itself_on_the_h200():
    """This branch's RealHealthSource on the device: GPM and fabric come back as objects, one window, ~1.1 s."""
    with open(os.path.join(os.path.dirname(FIXTURE), "usage-h200-live.json"), encoding="utf-8") as handle:
        record = json.load(handle)
    device = record["devices"][0]
    assert isinstance(device["gpm"]["v"], dict) and isinstance(device["fabric"]["v"], dict)
    assert record["took_s"] < 1.5
    (gpu,) = usage_view(record, 1.0).gpus
    assert gpu.verdict == "busy-but-light" and gpu.util_now == 100 and gpu.gpm["sm"] < 1
    assert sorted(p.sm_percent or 0 for p in gpu.processes) == [0, 41]
    from cudadoctor.probes.health_parse import parse_gpu

    assert parse_gpu(device).fabric_state == 0
