"""CD1xx on the real H200's facts, healthy and broken the ways seen on that machine (tests/fixtures/h200-deep/)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudadoctor.checks.driver import parse_visible_devices
from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import DriverReading, DriverVersion, LibcudaFile, Source, SourceKind, VisibleDevices
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


def test_cd101_skipped_for_an_image_root(h200):
    assert run_check("CD101", replace(h200, mode="root:/img")).status is Status.NOT_APPLICABLE


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
        ("0,1", Status.OK),
        ("GPU-<redacted>", Status.OK),
        (None, Status.OK),
    ],
    ids=["empty", "minus-one", "out-of-range", "zero", "zero-and-invalid", "uuid", "unset"],
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
