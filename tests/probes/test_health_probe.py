"""The health probe: NVML records replayed, sysfs and /dev/kmsg from pyfakefs."""

from __future__ import annotations

import json
import os

from cudadoctor.probes.health import probe_health
from cudadoctor.probes.health_parse import parse_kmsg, short_pci
from cudadoctor.probes.nvml_health import NullHealthSource, RecordedHealthSource
from tests.conftest import make_ctx

FIXTURE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "fixtures", "health", "h200.json"))

# /dev/kmsg records (priority,sequence,microseconds,flags;message), the Xid form NVIDIA documents.
KMSG = (
    "6,0,0,-;Linux version 6.8.0\n"
    "4,812,5321000,-;NVRM: Xid (PCI:0000:00:06): 79, pid=0, name=python, GPU has fallen off the bus.\n"
    "4,813,5400000,-;NVRM: Xid (PCI:0000:18:00): 13, pid=42, Graphics SM Warp Exception\n"
)


def _record() -> dict:
    with open(FIXTURE, encoding="utf-8") as handle:
        return json.load(handle)


def _machine(fs) -> None:
    fs.add_real_file(FIXTURE)
    for bdf, klass in (("0000:00:06.0", "0x030200"), ("0000:18:00.0", "0x030200"), ("0000:00:01.0", "0x060400")):
        fs.create_file(f"/sys/bus/pci/devices/{bdf}/vendor", contents="0x10de\n")
        fs.create_file(f"/sys/bus/pci/devices/{bdf}/class", contents=klass + "\n")
    fs.create_dir("/sys/bus/nvidia")
    fs.create_symlink("/sys/bus/pci/devices/0000:00:06.0/driver", "/sys/bus/pci/drivers/nvidia")
    fs.create_symlink("/sys/bus/pci/devices/0000:18:00.0/driver", "/sys/bus/pci/drivers/vfio-pci")
    fs.create_file("/proc/uptime", contents="3600.5 7000.1\n")
    fs.create_file("/proc/modules", contents="nvidia_peermem 16384 0 - Live 0x0\nnvidia 1 0 - Live 0x0\n")
    fs.create_file("/sys/class/infiniband/mlx5_0/ports/1/state", contents="4: ACTIVE\n")
    fs.create_dir("/dev/shm")


def test_probe_parses_the_record_and_the_host(fs):
    _machine(fs)
    fs.create_file("/dev/kmsg", contents=KMSG)
    ctx = make_ctx()
    ctx.health_source = RecordedHealthSource(_record())
    info = probe_health(ctx)
    assert info is not None and info.driver_version == "580.159.04" and info.query_ms == _record()["elapsed_ms"]
    (gpu,) = info.gpus
    assert (gpu.ecc_current, gpu.remap_pending, gpu.recovery_action, gpu.architecture) == (True, False, 0, 9)
    assert "retired_pages_pending" in gpu.unsupported and gpu.retired_pages is None
    # the real H200 was idle after boot: no power-brake time yet, and no NVLink on this PCIe card
    assert gpu.violation_power_ns == 0 and gpu.nvlink_active == ()
    host = info.host
    assert host.pci_functions == ("0000:00:06.0", "0000:18:00.0")
    assert host.pci_drivers == ("nvidia", "vfio-pci")
    assert [(x.code, x.pci) for x in host.xids] == [(79, "0000:00:06"), (13, "0000:18:00")]
    assert host.kernel_log_first_s == 0.0 and host.uptime_s == 3600.5
    assert host.modules == ("nvidia_peermem",) and host.ib_ports == {"mlx5_0/1": "4: ACTIVE"}


def test_an_unreadable_kernel_log_says_why(fs):
    from pyfakefs.fake_filesystem import reset_ids, set_uid

    _machine(fs)
    fs.create_file("/dev/kmsg", contents=KMSG)
    os.chmod("/dev/kmsg", 0o600)
    fs.create_file("/proc/sys/kernel/dmesg_restrict", contents="1\n")
    ctx = make_ctx()
    ctx.health_source = RecordedHealthSource(_record())
    try:
        set_uid(65534)  # the measured case: uid nobody under kernel.dmesg_restrict=1
        info = probe_health(ctx)
    finally:
        reset_ids()
    assert info is not None and "dmesg_restrict=1" in (info.host.kernel_log_error or "")
    assert info.host.xids == ()


def test_no_health_and_an_image_root_give_no_facts(fs):
    assert probe_health(make_ctx()) is None  # NullHealthSource: health not examined
    fs.create_dir("/image")
    fs.add_real_file(FIXTURE)
    ctx = make_ctx(root="/image")
    ctx.health_source = RecordedHealthSource(_record())
    assert probe_health(ctx) is None


def test_nvml_init_failure_is_recorded_with_host_facts(fs):
    _machine(fs)
    ctx = make_ctx()
    ctx.health_source = RecordedHealthSource({"schema": 1, "init": {"e": "Driver Not Loaded", "c": 9}})
    info = probe_health(ctx)
    assert info is not None and info.nvml_error == "Driver Not Loaded" and info.gpus == ()
    assert info.host.pci_functions


def test_no_nvml_library_means_health_is_not_examined(fs):
    _machine(fs)
    ctx = make_ctx()
    ctx.health_source = RecordedHealthSource({"schema": 1, "init": {"e": "NVML Shared Library Not Found", "c": -3}})
    assert probe_health(ctx) is None


def test_null_source_record_says_why():
    assert NullHealthSource("--no-health").query() == {"schema": 1, "skipped": "--no-health"}


def test_kmsg_and_saved_dmesg_lines_and_bus_ids():
    first, xids = parse_kmsg("[  5.3] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, DBE\n")
    assert first is None and xids[0].code == 48 and xids[0].seconds_after_boot is None
    assert short_pci("00000000:00:06.0") == "0000:00:06" == short_pci("0000:00:06")


def test_the_pci_bus_is_read_once_for_the_module_and_the_health_probe(fs):
    from cudadoctor.probes.health import host_health
    from cudadoctor.probes.kmod import probe_nvidia_module

    _machine(fs)
    fs.create_file("/sys/bus/pci/devices/0000:c0:00.0/vendor", contents="0x10de\n")
    fs.create_file("/sys/bus/pci/devices/0000:c0:00.0/class", contents="0x068000\n")  # an NVSwitch
    fs.create_file("/sys/bus/pci/devices/0000:00:06.0/device", contents="0x2335\n")
    fs.create_dir("/sys/module/nvidia")
    ctx = make_ctx()
    state = probe_nvidia_module(ctx)
    assert state is not None and (state.pci_gpus[0].address, state.pci_gpus[0].device) == ("0000:00:06.0", "2335")
    fs.remove_object("/sys/bus/pci/devices")  # the health probe answers from the same reading of the bus
    host = host_health(ctx)
    assert host.pci_functions == ("0000:00:06.0", "0000:18:00.0") and host.pci_drivers == ("nvidia", "vfio-pci")
    assert host.nvswitches == 1
    assert host_health(make_ctx()).pci_functions == ()  # a new run reads the bus again
