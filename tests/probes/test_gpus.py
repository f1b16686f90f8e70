"""Tests for cudadoctor.probes.gpus: the information-file parser, the three GPU sources in order,
the compute capability lookup in the GPU table, and the visibility variables and device nodes."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from cudadoctor import gpu_models
from cudadoctor.data.load import parse_table
from cudadoctor.errors import CompatDataError
from cudadoctor.facts.model import GpuInfo, Source, SourceKind, VisibleDevices
from cudadoctor.probes.driver import probe_driver
from cudadoctor.probes.gpus import GpuInformation, parse_gpu_information, probe_gpus, probe_visible
from cudadoctor.probes.native import NvmlDevice, NvmlResult
from tests.conftest import FIXTURES, FakeNative, FakeRunner, fixture_text, make_ctx
from tests.h200_fixture import NVML, SMI_OUTPUT, SMI_QUERY, build_tree, h200_runner

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# Read at collection time, before any fake file system is switched on.
SMALL_TABLE = parse_table("gpus", tomllib.loads(fixture_text("gpus", "gpus.toml"))).rows("gpu")
H200_INFO = "/proc/driver/nvidia/gpus/0000:00:06.0/information"
H200_INFO_TEXT = fixture_text("h200", "tree", "proc", "driver", "nvidia", "gpus", "0000:00:06.0", "information")
SMI_MIG_OUTPUT = fixture_text("gpus", "nvidia-smi-query-mig.txt")
TABLE = Source(SourceKind.FILE, "compat/gpus.toml")
NO_NVML = NvmlResult(error="NVML Shared Library Not Found")


@pytest.fixture(autouse=True)
def small_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU probe looks models up in the test subset, not the growing bundled table."""
    monkeypatch.setattr(gpu_models, "load_models", lambda: SMALL_TABLE)


@pytest.fixture
def h200(fs):
    fs.add_real_directory(FIXTURES)
    build_tree("/")
    return fs


# --- parse_gpu_information --------------------------------------------------------------------------


def test_parse_gpu_information_h200() -> None:
    info = parse_gpu_information(H200_INFO_TEXT)
    assert info == GpuInformation(model="NVIDIA H200", bus_location="0000:00:06.0", device_minor=0)
    assert "GPU-" not in repr(info)  # the UUID is never kept


def test_parse_gpu_information_unknown_model_fixture() -> None:
    info = parse_gpu_information(fixture_text("gpus", "information-unknown-model.txt"))
    assert info == GpuInformation(model="NVIDIA Zorblax 9000", bus_location="0000:00:07.0", device_minor=1)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "IRQ:   \t\t 41\nGPU UUID: \t GPU-538b6ea1\n",
        "Model: \t\t \n",
        "\x00\x01\x02\ufffd\ufffd",
        "Model",
    ],
    ids=["empty", "blank", "no-model-line", "empty-model", "binary", "key-without-colon"],
)
def test_parse_gpu_information_rejects_junk(text: str) -> None:
    assert parse_gpu_information(text) is None


# --- probe_gpus -------------------------------------------------------------------------------------


def test_gpus_from_nvml(h200) -> None:
    runner = h200_runner()
    ctx = make_ctx(runner=runner, native=FakeNative(nvml_result=NVML))
    gpus = probe_gpus(ctx)

    assert gpus == (
        GpuInfo(
            index=0,
            name="NVIDIA H200",
            compute_capability="9.0",
            source=Source(SourceKind.API, "nvml"),
            memory_mib=143771,
            mig_mode="Disabled",
            pci_bus_id="00000000:00:06.0",
            brand="NVIDIA",
        ),
    )
    assert runner.calls == []  # NVML answered: no nvidia-smi
    assert ctx.errors == []


def test_mig_enabled_gpu_is_listed_once(fs) -> None:
    nvml = NvmlResult(
        driver_version="580.159.04",
        cuda_driver_version=13000,
        devices=(NvmlDevice(0, "NVIDIA A100-SXM4-80GB", "8.0", 81920, "Enabled", "00000000:07:00.0", "NVIDIA"),),
    )
    ctx = make_ctx(native=FakeNative(nvml_result=nvml))
    (gpu,) = probe_gpus(ctx)

    assert (gpu.name, gpu.compute_capability, gpu.mig_mode) == ("NVIDIA A100-SXM4-80GB", "8.0", "Enabled")
    assert ctx.errors == []


def test_nvml_device_without_compute_capability_uses_table(fs) -> None:
    nvml = NvmlResult(devices=(NvmlDevice(0, "Tesla T4"),), device_errors=("device 1: Unknown Error",))
    ctx = make_ctx(native=FakeNative(nvml_result=nvml))
    (gpu,) = probe_gpus(ctx)

    assert (gpu.compute_capability, gpu.compute_capability_source) == ("7.5", TABLE)
    assert [(e.probe, e.message, e.source) for e in ctx.errors] == [("gpus", "NVML: device 1: Unknown Error", "nvml")]


def test_gpus_from_nvidia_smi_shared_with_driver(h200) -> None:
    runner = FakeRunner()
    runner.add(SMI_QUERY, SMI_OUTPUT)
    ctx = make_ctx(runner=runner, native=FakeNative(nvml_result=NO_NVML))
    driver = probe_driver(ctx)
    gpus = probe_gpus(ctx)

    assert driver is not None
    assert gpus == (
        GpuInfo(
            index=0,
            name="NVIDIA H200",
            compute_capability="9.0",
            source=Source(SourceKind.COMMAND, " ".join(SMI_QUERY)),
            memory_mib=143771,
            mig_mode="Disabled",
            pci_bus_id="00000000:00:06.0",
        ),
    )
    assert runner.calls == [SMI_QUERY]  # one run for both probes
    assert runner.timeouts == [10]


def test_gpus_from_nvidia_smi_mig_and_not_applicable(fs) -> None:
    runner = FakeRunner()
    runner.add(SMI_QUERY, SMI_MIG_OUTPUT)
    gpus = probe_gpus(make_ctx(runner=runner, native=FakeNative(nvml_result=NO_NVML)))

    assert [(g.index, g.compute_capability, g.mig_mode) for g in gpus] == [
        (0, "8.0", "Enabled"),
        (1, "7.5", None),
    ]


def test_nvidia_smi_without_compute_cap_uses_table(fs) -> None:
    runner = FakeRunner()
    runner.add(SMI_QUERY, "0, NVIDIA L40S, 00000000:01:00.0, 535.104.05, [N/A], 46068, Disabled\n")
    (gpu,) = probe_gpus(make_ctx(runner=runner, native=FakeNative(nvml_result=NO_NVML)))

    assert (gpu.compute_capability, gpu.compute_capability_source) == ("8.9", TABLE)
    assert gpu.source.kind is SourceKind.COMMAND


def test_gpus_from_proc_with_table_lookup(h200) -> None:
    runner = FakeRunner()  # nvidia-smi: not found
    ctx = make_ctx(runner=runner, native=FakeNative(nvml_result=NO_NVML))
    gpus = probe_gpus(ctx)

    assert gpus == (
        GpuInfo(
            index=0,
            name="NVIDIA H200",
            compute_capability="9.0",
            source=Source(SourceKind.FILE, H200_INFO),
            pci_bus_id="0000:00:06.0",
            compute_capability_source=TABLE,
        ),
    )
    assert runner.calls == [SMI_QUERY]
    assert ctx.errors == []


def test_unknown_model_from_proc(h200) -> None:
    path = "/proc/driver/nvidia/gpus/0000:00:07.0/information"
    h200.create_file(path, contents=fixture_text("gpus", "information-unknown-model.txt"))
    ctx = make_ctx(native=FakeNative(nvml_result=NO_NVML))
    gpus = probe_gpus(ctx)

    assert [(g.index, g.name, g.compute_capability, g.compute_capability_source) for g in gpus] == [
        (0, "NVIDIA H200", "9.0", TABLE),
        (1, "NVIDIA Zorblax 9000", None, None),
    ]
    assert [(e.probe, e.message, e.source) for e in ctx.errors] == [
        ("gpus", "unknown GPU model 'NVIDIA Zorblax 9000': compute capability not in compat/gpus.toml", path)
    ]


def test_garbled_information_file(h200) -> None:
    os.remove(H200_INFO)
    h200.create_file(H200_INFO, contents=b"\x00\xff\xfe\x00")
    ctx = make_ctx(native=FakeNative(nvml_result=NO_NVML))

    assert probe_gpus(ctx) == ()
    assert [(e.probe, e.source) for e in ctx.errors] == [("gpus", H200_INFO)]


def test_gpu_table_unavailable(h200, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> tuple[gpu_models.GpuModel, ...]:
        raise CompatDataError("compat/gpus.toml: cannot read: No such file or directory")

    monkeypatch.setattr(gpu_models, "load_models", broken)
    h200.create_file("/proc/driver/nvidia/gpus/0000:00:07.0/information", contents=H200_INFO_TEXT)
    ctx = make_ctx(native=FakeNative(nvml_result=NO_NVML))
    gpus = probe_gpus(ctx)

    assert [g.compute_capability for g in gpus] == [None, None]
    # Recorded once for the run, not once per GPU.
    assert [(e.probe, e.message, e.source) for e in ctx.errors] == [
        ("gpus", "compat/gpus.toml: cannot read: No such file or directory", "compat/gpus.toml")
    ]


def test_no_gpus_anywhere(fs) -> None:
    ctx = make_ctx()
    assert probe_gpus(ctx) == ()
    assert ctx.errors == []  # the driver probe records why NVML and nvidia-smi gave nothing


def test_image_root_reads_no_commands(tmp_path) -> None:
    runner = FakeRunner()
    ctx = make_ctx(root=str(tmp_path), runner=runner, native=FakeNative(nvml_result=NVML))
    assert probe_gpus(ctx) == ()
    assert runner.calls == []


# --- probe_visible ----------------------------------------------------------------------------------


def _char_device(fs, path: str) -> None:
    fs.create_file(path, st_mode=stat.S_IFCHR | 0o666)


def test_visible_unset_and_device_nodes(fs) -> None:
    # The H200's /dev (capture.txt `ls -la /dev | grep -i nvidia`).
    for name in ("nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"):
        _char_device(fs, f"/dev/{name}")
    for name in ("nvidia-cap1", "nvidia-cap2"):
        _char_device(fs, f"/dev/nvidia-caps/{name}")
    visible = probe_visible(make_ctx(env={"NVIDIA_VISIBLE_DEVICES": "0"}))

    assert visible == VisibleDevices(
        cuda_visible_devices=None,
        nvidia_visible_devices="0",
        device_nodes=(
            "/dev/nvidia-uvm",
            "/dev/nvidia-uvm-tools",
            "/dev/nvidia0",
            "/dev/nvidiactl",
            "/dev/nvidia-caps/nvidia-cap1",
            "/dev/nvidia-caps/nvidia-cap2",
        ),
        live_dev=False,  # no /dev/null in this tree
    )


@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, None), ({"CUDA_VISIBLE_DEVICES": ""}, ""), ({"CUDA_VISIBLE_DEVICES": "1,0"}, "1,0")],
    ids=["unset", "set-empty", "set"],
)
def test_cuda_visible_devices_unset_vs_empty(fs, env: dict[str, str], expected: str | None) -> None:
    # tests/fixtures/h200-deep/deep-s3.json: "" hides every GPU (cuInit 100), unset hides none.
    visible = probe_visible(make_ctx(env=env))
    assert visible.cuda_visible_devices == expected
    assert visible.nvidia_visible_devices is None


def test_visible_wsl_dxg(fs) -> None:
    _char_device(fs, "/dev/dxg")
    assert probe_visible(make_ctx()).device_nodes == ("/dev/dxg",)


def test_visible_no_dev(fs) -> None:
    assert probe_visible(make_ctx()) == VisibleDevices(live_dev=False)


def test_visible_dev_of_a_running_system_holds_dev_null(fs) -> None:
    """/dev/null a character device: a running machine's or container's /dev; a file of that name is not."""
    fs.create_file("/img/dev/null")
    assert probe_visible(make_ctx(root="/img")).live_dev is False
    _char_device(fs, "/ctr/dev/null")
    assert probe_visible(make_ctx(root="/ctr")).live_dev is True
