"""CD1xx on the real H200's facts, healthy and broken the ways seen on that machine (tests/fixtures/h200-deep/)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudadoctor.checks.findings import Status
from cudadoctor.checks.visible import parse_visible_devices
from cudadoctor.facts.model import (
    DriverReading,
    DriverVersion,
    LibcudaFile,
    RootKind,
    RootMarker,
    Source,
    SourceKind,
    VisibleDevices,
)
from cudadoctor.testing import run_check
from tests.checks.conftest import with_env

COMPAT = "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"
HOST = "/usr/local/nvidia/lib64/libcuda.so.580.159.04"


@pytest.mark.parametrize("code", ["CD101", "CD102", "CD103", "CD104"])
def test_healthy_h200_is_clean(h200, code):
    assert run_check(code, h200).status is Status.OK


def _compat_first(facts):
    """S1: LD_LIBRARY_PATH=/usr/local/cuda/compat:... (compat 580.95.05 < kernel 580.159.04)."""
    files = tuple(replace(f, on_search_path=True) if f.kind == "compat" else f for f in facts.driver.libcuda_files)
    driver = replace(facts.driver, libcuda_files=files, loaded_libcuda=COMPAT)
    facts = replace(facts, driver=driver)
    return with_env(facts, LD_LIBRARY_PATH="/usr/local/cuda/compat:/usr/local/nvidia/lib64:/usr/local/nvidia/lib")


def test_cd102_compat_older_than_kernel_module_picked_first(h200):
    finding = run_check("CD102", _compat_first(h200))
    assert finding.status is Status.FAIL
    assert "580.95.05 is older than the kernel module 580.159.04" in finding.message
    assert "error 803" in finding.message
    assert finding.remediation.commands == ("export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib",)


def test_cd102_compat_on_path_but_not_first_is_a_warning(h200):
    facts = _compat_first(h200)
    facts = replace(facts, driver=replace(facts.driver, loaded_libcuda=HOST))
    assert run_check("CD102", facts).status is Status.WARN


def test_cd102_newer_compat_is_forward_compatibility_not_a_problem(h200):
    files = tuple(
        replace(f, on_search_path=True, version=DriverVersion("590.44.01")) if f.kind == "compat" else f
        for f in h200.driver.libcuda_files
    )
    facts = replace(h200, driver=replace(h200.driver, libcuda_files=files))
    assert run_check("CD102", facts).status is Status.OK


def test_cd101_not_confused_by_compat(h200):
    # In S1 the loaded file's name says 580.95.05, but that is the compat copy, CD102's business.
    assert run_check("CD101", _compat_first(h200)).status is Status.OK


def test_cd101_kernel_module_differs_from_user_space(h200):
    readings = tuple(
        replace(r, version=DriverVersion("575.57.08")) if r.source.kind is SourceKind.API and r.version else r
        for r in h200.driver.readings
    )
    facts = replace(h200, driver=replace(h200.driver, readings=readings))
    finding = run_check("CD101", facts)
    assert finding.status is Status.FAIL
    assert "kernel module is 580.159.04 but the user-space driver is 575.57.08" in finding.message


def test_cd101_image_without_driver_files_is_not_applicable(h200):
    """The H200's libcuda lies in the runtime's /usr/local/nvidia mount: nothing baked into the image."""
    assert run_check("CD101", replace(h200, mode="root:/img")).status is Status.NOT_APPLICABLE


BAKED = "/usr/lib/x86_64-linux-gnu/lib*.so.565.57.01"
DOCKERENV = Source(SourceKind.FILE, "/.dockerenv")
IMAGE = RootKind("image", DOCKERENV, (RootMarker("image", DOCKERENV),))


def _image_with_baked_driver(h200, baked: str, *, assume: str | None):
    """An image root (no kernel module) shipping libcuda.so.<baked>, the host's driver from --assume-driver."""
    path = f"/usr/lib/x86_64-linux-gnu/libcuda.so.{baked}"
    baked_file = LibcudaFile(path, DriverVersion(baked), "driver", True, Source(SourceKind.FILENAME, path))
    readings = (
        (DriverReading(Source(SourceKind.ASSUMED, "--assume-driver"), version=DriverVersion(assume)),) if assume else ()
    )
    driver = replace(
        h200.driver, kernel_module=None, readings=readings, libcuda_files=(baked_file,), loaded_libcuda=None
    )
    return replace(h200, mode="root:/img", driver=driver, root_kind=IMAGE)


def test_cd101_image_ships_a_newer_driver_than_the_host(h200):
    finding = run_check("CD101", _image_with_baked_driver(h200, "565.57.01", assume="535.216.01"))
    assert finding.status is Status.FAIL
    assert "565.57.01" in finding.message and "535.216.01" in finding.message
    assert finding.remediation.commands == (f"rm -f {BAKED} && ldconfig",)


def test_cd101_image_ships_an_older_driver_than_the_host(h200):
    finding = run_check("CD101", _image_with_baked_driver(h200, "565.57.01", assume="580.95.05"))
    assert finding.status is Status.WARN


def test_cd101_image_driver_matching_the_host_is_ok(h200):
    assert run_check("CD101", _image_with_baked_driver(h200, "565.57.01", assume="565.57.01")).status is Status.OK


def test_cd101_image_driver_without_a_host_driver_cannot_be_judged(h200):
    finding = run_check("CD101", _image_with_baked_driver(h200, "565.57.01", assume=None))
    assert finding.status is Status.UNKNOWN and "--assume-driver" in finding.reason


def test_cd101_live_without_nvml_judges_the_files(h200):
    """No NVML answer: libcuda.so.<version> on the loader path against the kernel module (unattended upgrade)."""
    facts = _image_with_baked_driver(h200, "580.200.01", assume=None)
    module = Source(SourceKind.FILE, "/proc/driver/nvidia/version")
    facts = replace(facts, mode="live", driver=replace(facts.driver, kernel_module=h200.driver.kernel_module),
                    root_kind=RootKind("host", module, (RootMarker("host", module),)))  # fmt: skip
    finding = run_check("CD101", facts)
    assert finding.status is Status.FAIL and "580.159.04" in finding.message
    assert finding.remediation.commands == ("sudo reboot",)  # a host's new driver, waiting for the reboot


def test_cd103_stub_picked(h200):
    # S2: a directory holding the stub renamed libcuda.so.1 first on LD_LIBRARY_PATH; cuDriverGetVersion -> 34.
    stub = DriverReading(
        Source(SourceKind.API, "cuDriverGetVersion"),
        detail="/tmp/stub/libcuda.so.1: stub library (CUDA_ERROR_STUB_LIBRARY, rc 34)",
    )
    driver = replace(
        h200.driver,
        readings=(*h200.driver.readings, stub),
        loaded_libcuda="/tmp/stub/libcuda.so.1",
        libcuda_files=(LibcudaFile("/tmp/stub/libcuda.so.1", None, "driver", True), *h200.driver.libcuda_files),
    )
    facts = with_env(replace(h200, driver=driver), LD_LIBRARY_PATH="/tmp/stub:/usr/local/nvidia/lib64")
    finding = run_check("CD103", facts)
    assert finding.status is Status.FAIL
    assert "error 34" in finding.message
    assert finding.remediation.commands == ("export LD_LIBRARY_PATH=/usr/local/nvidia/lib64",)


def test_cd103_stubs_dir_on_ld_library_path_is_a_warning(h200):
    facts = with_env(h200, LD_LIBRARY_PATH="/usr/local/cuda/lib64/stubs:/usr/local/nvidia/lib64")
    finding = run_check("CD103", facts)
    assert finding.status is Status.WARN
    assert finding.remediation.commands == ("export LD_LIBRARY_PATH=/usr/local/nvidia/lib64",)


def test_cd103_library_path_stubs_are_fine(h200):
    # The nvidia/cuda images set LIBRARY_PATH=/usr/local/cuda/lib64/stubs: link time only, harmless.
    assert any(v.name == "LIBRARY_PATH" and "stubs" in v.value for v in h200.host.env)
    assert run_check("CD103", h200).status is Status.OK


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("", Status.FAIL),
        ("-1", Status.FAIL),
        ("1", Status.FAIL),
        ("0", Status.OK),
        ("0,1", Status.WARN),
        ("GPU-<redacted>", Status.OK),
        ("MIG-<redacted>", Status.OK),
        (None, Status.OK),
    ],
    ids=["empty", "minus-one", "out-of-range", "zero", "zero-and-invalid", "uuid", "mig-uuid", "unset"],
)
def test_cd104_visible_devices(h200, value, status):
    facts = replace(h200, visible=replace(h200.visible, cuda_visible_devices=value))
    finding = run_check("CD104", facts)
    assert finding.status is status
    if status is Status.FAIL:
        assert "error 100" in finding.message


def test_cd104_without_gpus_is_skipped(h200):
    facts = replace(h200, gpus=(), visible=VisibleDevices(cuda_visible_devices=""))
    assert run_check("CD104", facts).status is Status.NOT_APPLICABLE


@pytest.mark.parametrize(
    ("value", "count", "expected"),
    [
        ("0,1", 2, ["0", "1"]),
        ("1,0", 2, ["1", "0"]),
        ("0,5,1", 2, ["0"]),
        ("", 2, []),
        ("0,0", 2, ["0"]),
        ("MIG-abc", 1, None),
        (" 0 ", 1, ["0"]),
    ],
)
def test_parse_visible_devices(value, count, expected):
    assert parse_visible_devices(value, count) == expected


def _pkg(name: str, version: str):
    from packaging.version import Version

    from cudadoctor.facts.model import InstalledPackage

    return InstalledPackage(name, Version(version), "/usr/lib/python3/dist-packages", Source(SourceKind.FILE, "x"))


def _with_packages(facts, *pkgs):
    return replace(facts, packages={**facts.packages, **{p.name: p for p in pkgs}})


@pytest.mark.parametrize(("torch", "status"), [("1.13.0", Status.WARN), ("2.0.0", Status.OK), (None, Status.OK)])
def test_cd104_gpu_uuid_under_old_torch(h200, torch, status):
    facts = replace(h200, visible=replace(h200.visible, cuda_visible_devices="GPU-8932f937"))
    packages = {k: v for k, v in facts.packages.items() if k != "torch"}
    facts = replace(facts, packages=packages)
    if torch is not None:
        facts = _with_packages(facts, _pkg("torch", torch))
    finding = run_check("CD104", facts)
    assert finding.status is status
    if status is Status.WARN:
        assert "90543" in finding.message and "torch>=2.0" in finding.remediation.commands[0]


def test_cd104_mig_uuid_under_old_torch_is_valid(h200):
    facts = _with_packages(h200, _pkg("torch", "1.13.0"))
    facts = replace(facts, visible=replace(facts.visible, cuda_visible_devices="MIG-4f7e"))
    assert run_check("CD104", facts).status is Status.OK


def test_cd104_ray_fix_is_num_gpus(h200):
    facts = _with_packages(h200, _pkg("ray", "2.41.0"))
    facts = replace(facts, visible=replace(facts.visible, cuda_visible_devices=""))
    finding = run_check("CD104", facts)
    assert finding.status is Status.FAIL
    assert finding.remediation.commands == ("@ray.remote(num_gpus=1)",)
    assert "ray" in finding.evidence["scheduler"]


def test_cd104_ray_installed_with_an_index_is_not_ray(h200):
    facts = _with_packages(h200, _pkg("ray", "2.41.0"))
    facts = replace(facts, visible=replace(facts.visible, cuda_visible_devices="-1"))
    finding = run_check("CD104", facts)
    assert finding.status is Status.FAIL and "unset CUDA_VISIBLE_DEVICES" in finding.remediation.commands


def test_cd104_slurm_fix_is_gres(h200):
    facts = with_env(h200, SLURM_JOB_ID="4242")
    facts = replace(facts, visible=replace(facts.visible, cuda_visible_devices="3"))
    finding = run_check("CD104", facts)
    assert finding.status is Status.FAIL
    assert any("--gres=gpu:" in c for c in finding.remediation.commands)
    assert not any("unset" in c for c in finding.remediation.commands)


def test_cd104_kubernetes_fix_is_the_resource_limit(h200):
    facts = replace(h200, host=replace(h200.host, container=None))
    facts = with_env(facts, KUBERNETES_SERVICE_HOST="10.0.0.1")
    facts = replace(facts, visible=replace(facts.visible, cuda_visible_devices=""))
    finding = run_check("CD104", facts)
    assert finding.status is Status.FAIL
    assert "nvidia.com/gpu" in finding.remediation.commands[0]


def test_cd104_counts_gpus_from_device_nodes(h200):
    """No NVML and no /proc: the /dev/nvidiaN nodes still say how many GPUs there are (issue #16 k)."""
    nodes = ("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm")
    facts = replace(h200, gpus=(), visible=VisibleDevices(cuda_visible_devices="1", device_nodes=nodes))
    assert run_check("CD104", facts).status is Status.OK
    facts = replace(facts, visible=replace(facts.visible, cuda_visible_devices="2"))
    finding = run_check("CD104", facts)
    assert finding.status is Status.FAIL and finding.evidence["GPUs present"] == "2"


def test_cd104_control_nodes_alone_are_no_gpu(h200):
    nodes = ("/dev/nvidiactl", "/dev/nvidia-uvm")
    facts = replace(h200, gpus=(), visible=VisibleDevices(cuda_visible_devices="", device_nodes=nodes))
    assert run_check("CD104", facts).status is Status.NOT_APPLICABLE


def test_cd104_gpu_probe_crashed_cannot_judge(h200):
    from cudadoctor.facts.model import ProbeError

    crash = ProbeError("gpus", "probe crashed: OSError", crashed=True)
    facts = replace(h200, gpus=(), visible=VisibleDevices(cuda_visible_devices=""), errors=(crash,))
    finding = run_check("CD104", facts)
    assert finding.status is Status.UNKNOWN and "could not read gpus" in finding.reason


@pytest.mark.parametrize(
    ("env", "packages", "value", "expected"),
    [
        ({"SLURM_JOB_ID": "7"}, {"ray": 1}, "", "slurm"),
        ({"RAY_ADDRESS": "auto"}, {}, "0", "ray"),
        ({}, {"ray": 1}, "", "ray"),
        ({}, {"ray": 1}, "0", None),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, {}, "", "kubernetes"),
        ({}, {}, "", None),
    ],
)
def test_detect_scheduler(env, packages, value, expected):
    from cudadoctor.rules.scheduler import detect_scheduler

    found = detect_scheduler(env, packages, value)
    assert (found.name if found else None) == expected


def test_detect_kubernetes_from_the_container_probe():
    from cudadoctor.rules.scheduler import detect_scheduler

    found = detect_scheduler({}, {}, "", ("KUBERNETES_SERVICE_HOST",))
    assert found is not None and found.name == "kubernetes"
