"""CD137: the loaded NVIDIA kernel module took every NVIDIA GPU on the PCI bus; a GPU it refused (the open module and
a GPU before Turing, as in https://github.com/NVIDIA/open-gpu-kernel-modules/issues/696) is invisible to NVML."""

from __future__ import annotations

from typing import Any

from cudadoctor.checks.engine import run_checks
from cudadoctor.checks.findings import Finding, Status
from cudadoctor.probes.kmod import probe_nvidia_module
from tests.checks.test_kernel_module import MATRIX, UBUNTU, _facts
from tests.checks.test_kernel_module_causes import GSP_LOG
from tests.conftest import make_ctx

OPEN = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U22)\n"


def _gpu(fs: Any, address: str, device: str, bound: str | None) -> None:
    dev = f"/sys/bus/pci/devices/{address}"
    fs.create_file(f"{dev}/vendor", contents="0x10de\n")
    fs.create_file(f"{dev}/device", contents=device + "\n")
    fs.create_file(f"{dev}/class", contents="0x030000\n")
    if bound:
        if not fs.exists(f"/sys/bus/pci/drivers/{bound}"):
            fs.create_dir(f"/sys/bus/pci/drivers/{bound}")
        fs.create_symlink(f"{dev}/driver", f"../../../bus/pci/drivers/{bound}")


def _host(fs: Any, second: str = "0x1b80", *, bound: str | None = None, first: str = "0x2204") -> None:
    """An RTX 3090 the open module drives and a second GPU (a GTX 1080) it did not take."""
    fs.create_file("/etc/os-release", contents=UBUNTU)
    fs.create_dir("/sys/module/nvidia")
    fs.create_file("/proc/driver/nvidia/version", contents=OPEN)
    _gpu(fs, "0000:01:00.0", first, "nvidia")
    _gpu(fs, "0000:02:00.0", second, bound)


def _cd137() -> Finding:
    (finding,) = run_checks(_facts(), MATRIX, select=("CD137",))
    return finding


def test_a_gpu_the_open_module_refused_is_named_with_the_kernel_logs_reason(fs: Any) -> None:
    _host(fs)
    fs.create_file("/var/log/kern.log", contents=GSP_LOG)
    finding = _cd137()
    assert finding.status is Status.FAIL
    assert finding.message.startswith("the open NVIDIA kernel module refused NVIDIA GPU 10de:1b80 (0000:02:00.0)")
    assert finding.evidence["driven by it"] == "NVIDIA GeForce RTX 3090 (0000:01:00.0)"
    assert finding.evidence["module flavour"] == "open (/proc/driver/nvidia/version)"
    assert finding.remediation is not None
    assert finding.remediation.commands == ("sudo apt install nvidia-driver-580", "sudo reboot")


def test_without_a_log_the_open_flavour_and_the_open_modules_list_name_the_cause(fs: Any) -> None:
    _host(fs)
    finding = _cd137()
    assert finding.message.startswith("the open NVIDIA kernel module is installed, and NVIDIA's list")


def test_a_blackwell_beside_a_pascal_gpu_needs_two_module_flavours(fs: Any) -> None:
    _host(fs, first="0x2b85")  # an RTX 5090 driven by the open module
    finding = _cd137()
    assert finding.message.startswith("the loaded NVIDIA kernel module did not take NVIDIA GPU 10de:1b80")
    assert finding.remediation is not None and "no one NVIDIA driver drives both" in finding.remediation.text
    assert finding.remediation.commands == ()


def test_every_gpu_taken_or_passed_through_or_a_virtual_function_is_ok(fs: Any) -> None:
    _host(fs, bound="nvidia")
    assert _cd137().status is Status.OK
    state = probe_nvidia_module(make_ctx())
    assert state is not None and state.unclaimed == () and state.kernel_log is None  # a healthy run reads no log


def test_passed_through_and_virtual_functions_are_left_out(fs: Any) -> None:
    _host(fs, bound="vfio-pci")
    fs.create_file("/var/log/kern.log", contents=GSP_LOG)
    assert _cd137().status is Status.OK
    fs.create_dir("/sys/bus/pci/devices/0000:03:00.4")
    _gpu(fs, "0000:03:00.4", "0x2236", None)  # an SR-IOV virtual function, bound to nothing
    fs.create_symlink("/sys/bus/pci/devices/0000:03:00.4/physfn", "../0000:01:00.0")
    assert _cd137().status is Status.OK


def test_not_applicable_without_the_module_or_in_a_container(fs: Any) -> None:
    _host(fs)
    fs.create_file("/.dockerenv")
    assert _cd137().status is Status.NOT_APPLICABLE
    fs.remove_object("/.dockerenv")
    fs.remove_object("/sys/module/nvidia")
    fs.remove_object("/proc/driver/nvidia/version")
    fs.create_dir("/sys/module/ext4")
    assert _cd137().status is Status.NOT_APPLICABLE


def test_no_gpu_bound_although_the_module_is_loaded_could_not_judge(fs: Any) -> None:
    """The module stays loaded only with a device it initialised: links that show none went unread."""
    _host(fs)
    fs.remove_object("/sys/bus/pci/devices/0000:01:00.0/driver")
    assert _cd137().status is Status.UNKNOWN


def test_nvml_answering_for_every_gpu_on_the_bus_is_ok(fs: Any) -> None:
    from dataclasses import replace

    from cudadoctor.facts.model import GpuInfo
    from cudadoctor.facts.source import Source, SourceKind

    _host(fs)
    facts = _facts()
    source = Source(SourceKind.API, "nvmlDeviceGetName")
    both = (GpuInfo(0, "NVIDIA GeForce RTX 3090", "8.6", source), GpuInfo(1, "NVIDIA GeForce GTX 1080", "6.1", source))
    (finding,) = run_checks(replace(facts, gpus=both), MATRIX, select=("CD137",))
    assert finding.status is Status.OK
    (finding,) = run_checks(replace(facts, gpus=both[:1]), MATRIX, select=("CD137",))
    assert finding.status is Status.FAIL
